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
	dto "github.com/prometheus/client_model/go"
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
	own      prometheus.Gatherer
	ready    *atomic.Bool
	fallback http.Handler
	errs     *prometheus.CounterVec
	logger   *slog.Logger
	// text is the last scrape's formatted usage families, kept for the
	// next one (not in a sync.Pool: near the soft memory limit the
	// collector runs every few scrapes and emptied the pool, and growing
	// the text again made the garbage that ran it: 41 collections in 100
	// scrapes at 100,000 files against 13). gzips holds *gzip.Writer and
	// writers *bufio.Writer, as promhttp pools its gzip writers.
	text           atomic.Pointer[prom.UsageText]
	gzips, writers sync.Pool
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
		own:      regs.own,
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
	text := h.text.Swap(nil)
	if text == nil { // the first scrape, or one beside another
		text = new(prom.UsageText)
	}
	defer func() {
		if text.Size() <= 1<<20 { // one very large exposition's bytes are not kept
			h.text.Store(text)
		}
	}()
	// Read once: a scrape as the backfill ends holds every usage family
	// or none (readyGatherer's rule).
	ready := h.ready.Load()
	h.usage.Format(text, format, func(name string) bool { return ready || !usageFamily(name) })
	mfs, err := h.own.Gather()
	if err != nil {
		h.logger.Error("error gathering metrics", "err", err)
		h.errs.WithLabelValues("gathering").Inc()
		http.Error(w, "An error has occurred while serving metrics:\n\n"+err.Error(), http.StatusInternalServerError)
		return
	}
	if !ready {
		mfs = withoutUsage(mfs)
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
			gz.Reset(io.Discard) // the pool keeps no response
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
	defer func() {
		bw.Reset(io.Discard)
		h.writers.Put(bw)
	}()
	err = text.WriteTo(bw, mfs, format)
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		// Mostly a client gone before the end (a scrape timeout):
		// counted, as promhttp counts it, and not worth an error line.
		h.logger.Debug("error encoding and sending metric family", "err", err)
		h.errs.WithLabelValues("encoding").Inc()
	}
}

// acceptsGzip says whether promhttp, offering identity then gzip, would
// pick gzip: the first offer with the highest weight wins, so gzip needs
// a weight above every other that matches identity. Each line is read as
// promhttp's parser reads it: a coding is a run of token characters, its
// only parameter q, and anything else ends the line.
func acceptsGzip(h http.Header) bool {
	identity, gzip := -1.0, -1.0 // the best weight matching each
	for _, line := range h.Values("Accept-Encoding") {
		for s := line; ; {
			i := 0
			for i < len(s) && (isTokenChar(s[i]) || s[i] == '/') {
				i++
			}
			coding, q := s[:i], 1.0
			if coding == "" {
				break
			}
			s = strings.TrimLeft(s[i:], " \t\r\n")
			if rest, ok := strings.CutPrefix(s, ";"); ok {
				if rest, ok = strings.CutPrefix(strings.TrimLeft(rest, " \t\r\n"), "q="); !ok {
					break
				}
				if q, s = weight(rest); q < 0 {
					break
				}
			}
			if coding == "*" || coding == "identity" {
				identity = max(identity, q)
			}
			if coding == "*" || coding == "gzip" {
				gzip = max(gzip, q)
			}
			rest, ok := strings.CutPrefix(strings.TrimLeft(s, " \t\r\n"), ",")
			if !ok {
				break
			}
			s = strings.TrimLeft(rest, " \t\r\n")
		}
	}
	return gzip > identity && gzip > 0
}

// isTokenChar says c may be part of an HTTP token (RFC 9110 tchar).
func isTokenChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// weight reads a weight, "0.5": 0 or 1, then a point and digits. It is -1
// when that is missing; rest is what follows.
func weight(s string) (q float64, rest string) {
	if s == "" || (s[0] != '0' && s[0] != '1') {
		return -1, ""
	}
	q, s = float64(s[0]-'0'), s[1:]
	if r, point := strings.CutPrefix(s, "."); point {
		n, d := 0, 1
		for r != "" && r[0] >= '0' && r[0] <= '9' {
			n, d, r = n*10+int(r[0]-'0'), d*10, r[1:]
		}
		q, s = q+float64(n)/float64(d), r
	}
	return q, s
}

// withoutUsage drops the usage families (readyGatherer's rule).
func withoutUsage(mfs []*dto.MetricFamily) []*dto.MetricFamily {
	kept := mfs[:0]
	for _, mf := range mfs {
		if !usageFamily(mf.GetName()) {
			kept = append(kept, mf)
		}
	}
	return kept
}

// usageFamily says whether a family is one readyGatherer holds back until
// the backfill is done.
func usageFamily(name string) bool {
	return strings.HasPrefix(name, prom.Namespace+"_") && !strings.HasPrefix(name, prom.Namespace+"_exporter_")
}
