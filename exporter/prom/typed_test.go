package prom

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/metrics"
)

// tokenReq is one request's tokens as the mapper passes them.
type tokenReq struct {
	model, project, spender string
	attrs                   metrics.Attributes
	n                       metrics.TokenCounts
	at                      time.Time
	span                    string // "" for no exemplar
}

// A request's tokens counted at once (AddRequestTokens) make the same
// series, values, exemplars and history as its five types counted one at
// a time (AddTokens and AddAttributedTokens), whatever the requests
// before it: the same labels again, more combinations than the typed
// cache holds, label values that differ only where the type goes, zero
// counts.
func TestRequestTokensCountAsEachTypeDoes(t *testing.T) {
	end := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	at := func(k int) time.Time { return end.Add(-time.Duration(400-k) * 37 * time.Minute) }
	attrs := metrics.Attributes{Skill: "none", Plugin: "none", MCPServer: "none", Effort: "high", Speed: "standard"}
	tests := []struct {
		name string
		reqs func() []tokenReq
	}{
		{"one combination again and again", func() []tokenReq {
			var out []tokenReq
			for k := range 50 {
				out = append(out, tokenReq{"opus", "p", "main", attrs, metrics.TokenCounts{int64(k), 2, 3, 4, 5}, at(k), ""})
			}
			return out
		}},
		{"more combinations than the cache holds, alternating", func() []tokenReq {
			var out []tokenReq
			for k := range 400 {
				a := attrs
				a.Skill = fmt.Sprintf("skill-%d", k%7)
				out = append(out, tokenReq{
					model: fmt.Sprintf("model-%d", k%5), project: fmt.Sprintf("p%d", k%11), spender: []string{"main", "subagent:Explore", "warmup"}[k%3],
					attrs: a, n: metrics.TokenCounts{int64(k % 3), int64(k), 0, int64(k * 7 % 13), int64(k % 2)}, at: at(k),
				})
			}
			return out
		}},
		{"values that differ only where the type goes", func() []tokenReq {
			return []tokenReq{
				{"input", "", "main", metrics.Attributes{}, metrics.TokenCounts{1, 1, 1, 1, 1}, at(1), ""},
				{"", "input", "main", metrics.Attributes{}, metrics.TokenCounts{2, 0, 0, 0, 0}, at(2), ""},
				{"", "", "", metrics.Attributes{}, metrics.TokenCounts{0, 3, 0, 0, 0}, at(3), ""},
				{"input", "", "main", metrics.Attributes{Speed: "input"}, metrics.TokenCounts{0, 0, 4, 0, 0}, at(4), ""},
			}
		}},
		{"with exemplars, some requests without", func() []tokenReq {
			var out []tokenReq
			for k := range 60 {
				span := ""
				if k%4 != 3 {
					span = fmt.Sprintf("%016x", k+1)
				}
				out = append(out, tokenReq{"opus", fmt.Sprintf("p%d", k%3), "main", attrs, metrics.TokenCounts{int64(k), 0, int64(k % 5), 1, 0}, at(k), span})
			}
			return out
		}},
	}
	om := expfmt.NewFormat(expfmt.TypeOpenMetrics)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			at, each := NewMetrics(prometheus.NewRegistry(), 0, time.Now), NewMetrics(prometheus.NewRegistry(), 0, time.Now)
			hAt, hEach := NewHistory(time.Hour, 48*time.Hour), NewHistory(time.Hour, 48*time.Hour)
			at.RecordHistory(hAt)
			each.RecordHistory(hEach)
			for _, r := range tc.reqs() {
				for _, m := range []*Metrics{at, each} {
					m.At(r.at)
					if r.span != "" {
						m.Exemplar(metrics.Exemplar{TraceID: strings.Repeat("ab", 16), SpanID: r.span})
					}
				}
				at.AddRequestTokens(r.model, r.project, r.spender, r.attrs, r.n)
				for i, typ := range metrics.TokenTypes() {
					each.AddTokens(r.model, typ, r.project, r.spender, r.n[i])
					each.AddAttributedTokens(r.attrs, typ, r.project, r.n[i])
				}
				at.Exemplar(metrics.Exemplar{})
				each.Exemplar(metrics.Exemplar{})
			}
			var gotText, wantText UsageText
			at.Format(&gotText, om, nil)
			each.Format(&wantText, om, nil)
			if got, want := string(gotText.buf), string(wantText.buf); got != want || !strings.Contains(got, "claude_transcript_attributed_tokens_total{") {
				t.Fatalf("exposition differs from the one counted a type at a time: %s", firstDifference(want, got))
			}
			var gotHist, wantHist strings.Builder
			if err := hAt.WriteOpenMetrics(&gotHist, at, end, true); err != nil {
				t.Fatal(err)
			}
			if err := hEach.WriteOpenMetrics(&wantHist, each, end, true); err != nil {
				t.Fatal(err)
			}
			if gotHist.String() != wantHist.String() {
				t.Fatalf("history differs from the one counted a type at a time: %s", firstDifference(wantHist.String(), gotHist.String()))
			}
		})
	}
}
