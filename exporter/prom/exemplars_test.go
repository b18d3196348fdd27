package prom

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/metrics"
)

// exemplarsOf returns the exemplar of every series of family name, by the
// series' label values joined with "|" (nil: the series has none).
func exemplarsOf(t *testing.T, reg *prometheus.Registry, name string) map[string]*dto.Exemplar {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.Exemplar{}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			var lv []string
			for _, l := range m.GetLabel() {
				lv = append(lv, l.GetValue())
			}
			out[strings.Join(lv, "|")] = m.GetCounter().GetExemplar()
		}
	}
	return out
}

func exemplarLabels(e *dto.Exemplar) map[string]string {
	out := map[string]string{}
	for _, l := range e.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

// The token and cost counters carry the span of the latest request that
// added to them (by the request's time), with what that request added;
// nothing else carries one, and additions without an exemplar keep the
// series' last one.
func TestTokensAndCostCarryTheRequestsSpan(t *testing.T) {
	t0 := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		feed func(m *Metrics)
		// want: series of tokens_total (model|project|spender|type: by label name) or
		// cost_usd_total (model|project|spender) → span id and value;
		// "" for none.
		tokens, cost map[string]struct {
			span  string
			value float64
		}
	}{
		{
			name: "one request names its span",
			feed: func(m *Metrics) {
				m.At(t0)
				m.Exemplar(metrics.Exemplar{TraceID: "aa", SpanID: "s1"})
				m.AddTokens("opus", "output", "p", "main", 12)
				m.AddTokens("opus", "cache_write_1h", "p", "main", 0)
				m.AddCost("opus", "p", "main", 0.25)
				m.AddRequest("opus", "end_turn", "p")
				m.Exemplar(metrics.Exemplar{})
			},
			tokens: map[string]struct {
				span  string
				value float64
			}{"opus|p|main|output": {"s1", 12}, "opus|p|main|cache_write_1h": {"", 0}},
			cost: map[string]struct {
				span  string
				value float64
			}{"opus|p|main": {"s1", 0.25}},
		},
		{
			name: "a later request replaces it, an earlier one read afterwards does not",
			feed: func(m *Metrics) {
				for _, r := range []struct {
					at   time.Time
					span string
					n    int64
				}{{t0, "s1", 5}, {t0.Add(time.Hour), "s2", 7}, {t0.Add(time.Minute), "s3", 9}} {
					m.At(r.at)
					m.Exemplar(metrics.Exemplar{TraceID: "aa", SpanID: r.span})
					m.AddTokens("opus", "output", "p", "main", r.n)
					m.Exemplar(metrics.Exemplar{})
				}
			},
			tokens: map[string]struct {
				span  string
				value float64
			}{"opus|p|main|output": {"s2", 7}},
		},
		{
			name: "a request whose span was not sent names none and keeps the last",
			feed: func(m *Metrics) {
				m.At(t0)
				m.Exemplar(metrics.Exemplar{TraceID: "aa", SpanID: "s1"})
				m.AddTokens("opus", "output", "p", "main", 5)
				m.Exemplar(metrics.Exemplar{})
				m.At(t0.Add(time.Hour))
				m.AddTokens("opus", "output", "p", "main", 3)
				m.AddTokens("opus", "input", "p", "main", 3)
			},
			tokens: map[string]struct {
				span  string
				value float64
			}{"opus|p|main|output": {"s1", 5}, "opus|p|main|input": {"", 0}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			m := NewMetrics(reg, time.Minute, time.Now)
			tc.feed(m)
			for name, want := range map[string]map[string]struct {
				span  string
				value float64
			}{Namespace + "_tokens_total": tc.tokens, Namespace + "_cost_usd_total": tc.cost} {
				got := exemplarsOf(t, reg, name)
				for series, w := range want {
					e := got[series]
					if w.span == "" {
						if e != nil {
							t.Errorf("%s{%s}: exemplar %v, want none", name, series, e)
						}
						continue
					}
					l := exemplarLabels(e)
					if e == nil || l[ExemplarSpanID] != w.span || l[ExemplarTraceID] != "aa" || e.GetValue() != w.value {
						t.Errorf("%s{%s}: exemplar %v, want span %s value %v", name, series, e, w.span, w.value)
					}
				}
			}
			for _, name := range []string{"requests_total"} {
				for series, e := range exemplarsOf(t, reg, Namespace+"_"+name) {
					if e != nil {
						t.Errorf("%s{%s} carries exemplar %v", name, series, e)
					}
				}
			}
		})
	}
}

// The OpenMetrics exposition shows the exemplar with the request's time.
func TestOpenMetricsExpositionShowsExemplars(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg, time.Minute, time.Now)
	at := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	m.At(at)
	m.Exemplar(metrics.Exemplar{TraceID: "0af7651916cd43dd8448eb211c80319c", SpanID: "b7ad6b7169203331"})
	m.AddTokens("opus", "output", "p", "main", 12)
	m.Exemplar(metrics.Exemplar{})
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeOpenMetrics))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			t.Fatal(err)
		}
	}
	line := ""
	for _, l := range strings.Split(buf.String(), "\n") {
		if strings.HasPrefix(l, Namespace+"_tokens_total{") {
			line = l
		}
	}
	for _, want := range []string{`trace_id="0af7651916cd43dd8448eb211c80319c"`, `span_id="b7ad6b7169203331"`, "} 12.0 1.7951688e+09"} { // the value, then 2026-11-20T10:00:00Z
		if !strings.Contains(line, want) {
			t.Errorf("exposition line %q lacks %s", line, want)
		}
	}
}
