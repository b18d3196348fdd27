package daemon

import (
	"bufio"
	"compress/gzip"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/expfmt"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/exporter/prom"
)

// registries holds the daemon's two registries: all has every family (the
// OTLP push, the landing page, protobuf scrapes); own has every family but
// the usage store's, which /metrics writes straight from its series in
// the text formats (prom.Metrics.Format, prom.UsageText.WriteTo).
type registries struct {
	all, own *prometheus.Registry
}

func newRegistries() registries {
	return registries{all: prometheus.NewRegistry(), own: prometheus.NewRegistry()}
}

// Register registers c in both registries.
func (r registries) Register(c prometheus.Collector) error {
	if err := r.all.Register(c); err != nil {
		return err
	}
	if err := r.own.Register(c); err != nil {
		r.all.Unregister(c)
		return err
	}
	return nil
}

func (r registries) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}

func (r registries) Unregister(c prometheus.Collector) bool {
	a := r.all.Unregister(c)
	return r.own.Unregister(c) || a
}

// metricsHandler serves /metrics. The text formats (the text format and
// OpenMetrics 1.0, which Prometheus asks for) get own's families merged
// with the usage families written directly; anything else (protobuf,
// OpenMetrics 2.0, a name[] filter) goes to promhttp's handler over every
// family. The headers, compression and error handling are promhttp's.
type metricsHandler struct {
	usage    *prom.Metrics
	own      prometheus.Gatherer // readyGatherer over own
	ready    *atomic.Bool
	fallback http.Handler
	errs     *prometheus.CounterVec
	logger   *slog.Logger
	// texts holds *prom.UsageText, gzips *gzip.Writer, writers
	// *bufio.Writer, from scrape to scrape.
	texts, gzips, writers sync.Pool
}

func newMetricsHandler(regs registries, usage *prom.Metrics, ready *atomic.Bool, logger *slog.Logger) *metricsHandler {
	// The counter promhttp keeps, made here so that both paths count
	// into it: promhttp finds it registered and uses it.
	errs := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "promhttp_metric_handler_errors_total",
		Help: "Total number of internal errors encountered by the promhttp metric handler.",
	}, []string{"cause"})
	errs.WithLabelValues("gathering")
	errs.WithLabelValues("encoding")
	regs.MustRegister(errs)
	return &metricsHandler{
		usage:    usage,
		own:      readyGatherer{regs.own, ready},
		ready:    ready,
		fallback: promhttp.HandlerFor(readyGatherer{regs.all, ready}, promhttp.HandlerOpts{Registry: regs.all, EnableOpenMetrics: true}),
		errs:     errs,
		logger:   logger,
	}
}

func (h *metricsHandler) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	format := expfmt.NegotiateAccept(req.Header, expfmt.DefaultOpenMetricsAcceptedFormats()...)
	if !prom.TextFormat(format) || (req.URL != nil && req.URL.Query().Has("name[]")) {
		h.fallback.ServeHTTP(w, req)
		return
	}
	text, _ := h.texts.Get().(*prom.UsageText)
	if text == nil {
		text = new(prom.UsageText)
	}
	defer func() {
		if text.Size() <= 1<<20 { // one very large exposition's bytes are not kept
			h.texts.Put(text)
		}
	}()
	h.usage.Format(text, format, func(name string) bool { return h.ready.Load() || !usageFamily(name) })
	mfs, err := h.own.Gather()
	if err != nil {
		h.logger.Error("error gathering metrics", "err", err)
		h.errs.WithLabelValues("gathering").Inc()
		http.Error(w, "An error has occurred while serving metrics:\n\n"+err.Error(), http.StatusInternalServerError)
		return
	}
	hdr := w.Header()
	hdr.Add("Vary", "Accept")
	hdr.Add("Vary", "Accept-Encoding")
	hdr.Set("Content-Type", string(format))
	var out io.Writer = w
	if acceptsGzip(req.Header) {
		hdr.Set("Content-Encoding", "gzip")
		gz, _ := h.gzips.Get().(*gzip.Writer)
		if gz == nil {
			gz = gzip.NewWriter(w)
		} else {
			gz.Reset(w)
		}
		defer func() {
			_ = gz.Close()
			h.gzips.Put(gz)
		}()
		out = gz
	}
	bw, _ := h.writers.Get().(*bufio.Writer)
	if bw == nil {
		bw = bufio.NewWriterSize(out, 32<<10)
	} else {
		bw.Reset(out)
	}
	defer h.writers.Put(bw)
	err = text.WriteTo(bw, mfs, format)
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		h.logger.Error("error encoding and sending metric family", "err", err)
		h.errs.WithLabelValues("encoding").Inc()
	}
}

// acceptsGzip says whether promhttp, offering identity then gzip, would
// pick gzip: the first offer with the highest weight wins, so gzip needs
// a weight above every other that matches identity. Codings are read as
// promhttp reads them: case-sensitive, and a malformed entry ends its line.
func acceptsGzip(h http.Header) bool {
	best, gz := -1.0, false
	for _, offer := range []string{"identity", "gzip"} {
		for _, line := range h.Values("Accept-Encoding") {
			for coding, q := range acceptEncodings(line) {
				if (coding == "*" || coding == offer) && q > best {
					best, gz = q, offer == "gzip"
				}
			}
		}
	}
	return gz && best > 0
}

// acceptEncodings yields the codings of one Accept-Encoding line with
// their weights, up to the first malformed entry.
func acceptEncodings(line string) func(yield func(string, float64) bool) {
	return func(yield func(string, float64) bool) {
		first := true
		for entry := range strings.SplitSeq(line, ",") {
			coding, param, hasParam := strings.Cut(entry, ";")
			if !first { // spaces only after a comma
				coding = strings.TrimLeft(coding, " \t")
			}
			first = false
			if coding == "" || strings.ContainsAny(strings.TrimRight(coding, " \t"), " \t") {
				return
			}
			q, ok := 1.0, true
			if hasParam {
				q, ok = weight(strings.TrimSpace(param))
			}
			if q < 0 || !yield(strings.TrimRight(coding, " \t"), q) || !ok {
				return
			}
		}
	}
}

// weight reads "q=0.5": 0 or 1, then a point and digits. It is -1 when
// that is missing; ok is false when something follows it.
func weight(p string) (q float64, ok bool) {
	v, found := strings.CutPrefix(p, "q=")
	if !found || v == "" || (v[0] != '0' && v[0] != '1') {
		return -1, false
	}
	q, v = float64(v[0]-'0'), v[1:]
	if rest, point := strings.CutPrefix(v, "."); point {
		n, d := 0, 1
		for rest != "" && rest[0] >= '0' && rest[0] <= '9' {
			n, d, rest = n*10+int(rest[0]-'0'), d*10, rest[1:]
		}
		q, v = q+float64(n)/float64(d), rest
	}
	return q, v == ""
}

// usageFamily says whether a family is one readyGatherer holds back until
// the backfill is done.
func usageFamily(name string) bool {
	return strings.HasPrefix(name, prom.Namespace+"_") && !strings.HasPrefix(name, prom.Namespace+"_exporter_")
}
