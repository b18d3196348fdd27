package daemon

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/exporter/prom"
)

func newTestHandler(t *testing.T) (*metricsHandler, registries, *atomic.Bool) {
	t.Helper()
	regs := newRegistries()
	usage := prom.NewMetrics(regs.all, 0, time.Now)
	usage.RegisterUnwritten(regs.own)
	self := prom.NewSelf(regs)
	usage.AddTokens("m", "output", "p", "main", 5)
	usage.AddUnpricedTokens("glm", 2)
	self.LinesRead.Add(3)
	var ready atomic.Bool
	return newMetricsHandler(regs, usage, &ready, slog.New(slog.NewTextHandler(io.Discard, nil))), regs, &ready
}

func serveOnce(h http.Handler, header http.Header) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	req.Header = header
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// The handler compresses exactly when promhttp's would, for any
// Accept-Encoding a client may send.
func TestMetricsAreCompressedWhenPromhttpWouldCompressThem(t *testing.T) {
	h, regs, _ := newTestHandler(t)
	ref := promhttp.HandlerFor(regs.all, promhttp.HandlerOpts{EnableOpenMetrics: true})
	for _, ae := range []string{"", "gzip", "GZIP", " gzip ", "*", "*;q=0", "gzip;q=0", "identity;q=0, gzip", "gzip;q=0.5, identity;q=0.6",
		"identity;q=0.5, gzip;q=0.5", "deflate", "br, gzip;q=0.1", "gzip;q=1.0, identity; q=0.5, *;q=0", "gzip;q=bad", "identity, gzip",
		"gzip deflate", "gzip(1)", "x=1, gzip", "br=1,gzip", "gzip;level=1", "gzip ; q=0.9 , identity;q=0.8", "identity;q=0.5x, gzip", "x-gzip, gzip;q=.5"} {
		hdr := http.Header{}
		if ae != "" {
			hdr.Set("Accept-Encoding", ae)
		}
		got := serveOnce(h, hdr.Clone()).Header().Get("Content-Encoding")
		want := serveOnce(ref, hdr.Clone()).Header().Get("Content-Encoding")
		if got != want {
			t.Errorf("Accept-Encoding %q: Content-Encoding %q, promhttp's %q", ae, got, want)
		}
	}
}

// Before the backfill is done, every format serves the exporter's own
// series and no usage series; after it, every series.
func TestUsageSeriesWaitForTheBackfillInEveryFormat(t *testing.T) {
	h, _, ready := newTestHandler(t)
	accepts := map[string]string{
		"text":        "text/plain;version=0.0.4",
		"openmetrics": "application/openmetrics-text;version=1.0.0",
		"protobuf":    "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited",
	}
	for _, done := range []bool{false, true} {
		ready.Store(done)
		for name, accept := range accepts {
			rec := serveOnce(h, http.Header{"Accept": {accept}})
			format := expfmt.Format(rec.Header().Get("Content-Type"))
			if !strings.Contains(string(format), strings.Split(accept, ";")[0]) {
				t.Fatalf("%s: served %q", name, format)
			}
			got := map[string]bool{}
			if format.FormatType() == expfmt.TypeProtoDelim {
				dec := expfmt.NewDecoder(rec.Body, format)
				for {
					var mf dto.MetricFamily
					if err := dec.Decode(&mf); err != nil {
						break
					}
					got[strings.TrimSuffix(mf.GetName(), "_total")] = true
				}
			} else {
				for line := range strings.SplitSeq(rec.Body.String(), "\n") {
					if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
						name, _, _ := strings.Cut(rest, " ")
						got[strings.TrimSuffix(name, "_total")] = true
					}
				}
			}
			usage := got["claude_transcript_tokens"]
			own := got["claude_transcript_exporter_lines_read"] && got["claude_transcript_exporter_unpriced_tokens"] && got["claude_transcript_exporter_build_info"]
			if usage != done || !own {
				t.Errorf("%s, backfill done %v: usage series %v, exporter's %v (%d families)", name, done, usage, own, len(got))
			}
		}
	}
}
