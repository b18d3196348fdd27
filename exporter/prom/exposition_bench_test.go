package prom

import (
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/metrics"
)

// BenchmarkScrape serves the series of bench/gensessions' 100,000-file
// tree (200 projects: 3,800 usage series) in OpenMetrics, as Prometheus
// asks: written straight from the store (what /metrics does) against
// gathered and encoded by client_golang (what it did, and still does for
// protobuf). Compression is left out: both pay it alike.
func BenchmarkScrape(b *testing.B) {
	all, own := prometheus.NewRegistry(), prometheus.NewRegistry()
	now := time.Now()
	m := NewMetrics(all, time.Minute, func() time.Time { return now })
	m.RegisterUnwritten(own)
	NewSelf(both{all, own})
	for i := range 200 {
		p := fmt.Sprintf("project-%03d", i)
		m.At(now)
		m.Exemplar(metrics.Exemplar{TraceID: "0af7651916cd43dd8448eb211c80319c", SpanID: fmt.Sprintf("%016x", i)})
		for _, typ := range []string{"input", "output", "cache_read", "cache_write_5m", "cache_write_1h"} {
			m.AddTokens("claude-opus-4-6", typ, p, "main", 1000)
			m.AddTokens("claude-haiku-4-5", typ, p, "subagent:Explore", 10)
			m.AddAttributedTokens(metrics.Attributes{Skill: "none", Plugin: "none", MCPServer: "none", Effort: "high", Speed: "standard"}, typ, p, 1000)
		}
		m.AddCost("claude-opus-4-6", p, "main", 0.5)
		m.Exemplar(metrics.Exemplar{})
		m.AddAttributedCost(metrics.Attributes{Skill: "none", Plugin: "none", MCPServer: "none", Effort: "high", Speed: "standard"}, p, 0.5)
		m.AddRequest("claude-opus-4-6", "end_turn", p)
		m.AddRequest("claude-opus-4-6", "tool_use", p)
		m.AddToolCall("Bash", "ok", p)
		m.AddSession(p)
		m.AddTurn(p)
		m.Activity("s"+p, p, now)
	}
	f := expfmt.NewFormat(expfmt.TypeOpenMetrics)
	b.Run("written", func(b *testing.B) {
		var text UsageText
		b.ReportAllocs()
		for b.Loop() {
			m.Format(&text, f, nil)
			mfs, err := own.Gather()
			if err != nil {
				b.Fatal(err)
			}
			if err := text.WriteTo(io.Discard, mfs, f); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("gathered", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			mfs, err := all.Gather()
			if err != nil {
				b.Fatal(err)
			}
			enc := expfmt.NewEncoder(io.Discard, f)
			for _, mf := range mfs {
				if err := enc.Encode(mf); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
