package daemon

import (
	"context"
	"encoding/hex"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	promBridge "go.opentelemetry.io/contrib/bridges/prometheus"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/exporter/prom"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/metrics"
)

// The OTLP push carries the counters' exemplars with the ids OTLP wants:
// through the real bridge, tokens_total's exemplar arrives with the
// request span's 16-byte trace id and 8-byte span id (the bridge alone
// gives their 32 and 16 bytes of hex text, which receivers reject).
func TestPushCarriesExemplarsWithOTLPIDs(t *testing.T) {
	const traceHex, spanHex = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
	reg := prometheus.NewRegistry()
	m := prom.NewMetrics(reg, time.Minute, time.Now)
	m.At(time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC))
	m.Exemplar(metrics.Exemplar{TraceID: traceHex, SpanID: spanHex})
	m.AddTokens("opus", "output", "p", "main", 12)
	m.AddCost("opus", "p", "main", 0.5)
	m.Exemplar(metrics.Exemplar{})
	m.AddRequest("opus", "end_turn", "p")

	bridge := promBridge.NewMetricProducer(promBridge.WithGatherer(reg))
	for _, tc := range []struct {
		name             string
		produce          func(context.Context) ([]metricdata.ScopeMetrics, error)
		traceLen, spanLn int
	}{
		{"the bridge alone", bridge.Produce, 32, 16},
		{"the push's producer", exemplarIDs{bridge}.Produce, 16, 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sms, err := tc.produce(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			seen := map[string]float64{}
			for _, sm := range sms {
				for _, mt := range sm.Metrics {
					sum, ok := mt.Data.(metricdata.Sum[float64])
					if !ok {
						continue
					}
					for _, dp := range sum.DataPoints {
						for _, e := range dp.Exemplars {
							if len(e.TraceID) != tc.traceLen || len(e.SpanID) != tc.spanLn {
								t.Errorf("%s: exemplar ids of %d and %d bytes, want %d and %d", mt.Name, len(e.TraceID), len(e.SpanID), tc.traceLen, tc.spanLn)
							}
							if tc.traceLen == 16 && (hex.EncodeToString(e.TraceID) != traceHex || hex.EncodeToString(e.SpanID) != spanHex) {
								t.Errorf("%s: exemplar ids %x %x", mt.Name, e.TraceID, e.SpanID)
							}
							seen[mt.Name] = e.Value
						}
					}
				}
			}
			if seen["claude_transcript_tokens_total"] != 12 || seen["claude_transcript_cost_usd_total"] != 0.5 || len(seen) != 2 {
				t.Errorf("exemplars by metric %v, want tokens_total 12 and cost_usd_total 0.5 only", seen)
			}
		})
	}
}
