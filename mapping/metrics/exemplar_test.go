package metrics

import (
	"slices"
	"testing"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/session"
)

// exRec records which exemplar each token and cost observation was made
// under.
type exRec struct {
	*rec
	cur    Exemplar
	tokens []string // span id of each AddRequestTokens ("" without exemplar)
	costs  []string
}

func (r *exRec) Exemplar(e Exemplar) { r.cur = e }
func (r *exRec) AddRequestTokens(model, project, spender string, a Attributes, n TokenCounts) {
	r.tokens = append(r.tokens, r.cur.SpanID)
	r.rec.AddRequestTokens(model, project, spender, a, n)
}
func (r *exRec) AddCost(model, project, spender string, usd float64) {
	r.costs = append(r.costs, r.cur.SpanID)
	r.rec.AddCost(model, project, spender, usd)
}

// A request's token and cost observations (its advisor's too) are made
// under the exemplar Config.Exemplar names for it, and nothing else is:
// not a request whose span was not sent, not a request update, not what
// follows the request.
func TestRequestObservationsCarryTheirSpan(t *testing.T) {
	sent := func(r *session.Request) (Exemplar, bool) {
		if r.MessageID == "held" {
			return Exemplar{}, false
		}
		return Exemplar{TraceID: "t", SpanID: "span-" + r.MessageID}, true
	}
	req := func(id string) *session.Request {
		return &session.Request{Where: session.Where{SessionID: "s", Project: "/p"}, MessageID: id, Model: "claude-opus-4-6",
			Tokens: session.Tokens{Input: 1, Output: 2}}
	}
	tests := []struct {
		name          string
		exemplar      func(*session.Request) (Exemplar, bool)
		feed          func(m *Mapper)
		tokens, costs []string // per observation, in order
	}{
		{"sent request", sent, func(m *Mapper) { m.Request(req("m1")) },
			[]string{"span-m1"}, []string{"span-m1"}},
		{"held-back request", sent, func(m *Mapper) { m.Request(req("held")) },
			[]string{""}, []string{""}},
		{"advisor tokens count under the request's span", sent, func(m *Mapper) {
			r := req("m1")
			r.Advisor = []session.ModelTokens{{Model: "claude-sonnet-4-6", Tokens: session.Tokens{Output: 3}}}
			m.Request(r)
		}, []string{"span-m1", "span-m1"}, []string{"span-m1", "span-m1"}},
		{"a request update names none", sent, func(m *Mapper) {
			m.Request(req("m1"))
			m.RequestUpdate(&session.RequestUpdate{Where: session.Where{SessionID: "s"}, Model: "claude-opus-4-6", Delta: session.Tokens{Output: 1}})
		}, []string{"span-m1", ""}, []string{"span-m1", ""}},
		{"no Config.Exemplar: none", nil, func(m *Mapper) { m.Request(req("m1")) },
			[]string{""}, []string{""}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := &exRec{rec: newRec()}
			tc.feed(NewMapper(Config{Exemplar: tc.exemplar}, r))
			if !slices.Equal(r.tokens, tc.tokens) || !slices.Equal(r.costs, tc.costs) {
				t.Errorf("tokens under %q, costs under %q; want %q and %q", r.tokens, r.costs, tc.tokens, tc.costs)
			}
			if r.cur != (Exemplar{}) {
				t.Errorf("exemplar %v still set after the request", r.cur)
			}
		})
	}
}
