package spans_test

import (
	"encoding/json"
	"testing"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/session"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/spans"
)

// What GenAI tools (Arize Phoenix, Langfuse) read from the spans: see the
// "GenAI tools" section of docs/traces.md and issue 23.

// Every output message names a finish reason: Phoenix validates
// gen_ai.output.messages against the conventions' schema, which requires
// it, and drops the whole payload when one message lacks it.
func TestEveryOutputMessageHasAFinishReason(t *testing.T) {
	tests := []struct {
		stop, want string
	}{
		{"end_turn", "stop"},
		{"stop_sequence", "stop"},
		{"max_tokens", "length"},
		{"tool_use", "tool_call"},
		{"refusal", "content_filter"},
		{"", spans.FinishReasonUnknown}, // a streamed line without its stop reason
		{"something_new", "something_new"},
	}
	for _, tc := range tests {
		t.Run("stop reason "+tc.stop, func(t *testing.T) {
			r := run(spans.Config{Capture: spans.Capture{Responses: true}}, func(b *spans.Builder) {
				rq := req(inTurn("p1"), "m1", 1, 2)
				rq.StopReason = tc.stop
				b.Request(rq)
			})
			v, _ := r.byID(spans.RequestSpanID(sid, "m1")).Attr(spans.AttrOutputMessages)
			var msgs []map[string]any
			if err := json.Unmarshal([]byte(v.Str), &msgs); err != nil || len(msgs) != 1 {
				t.Fatalf("output messages %q: %v", v.Str, err)
			}
			if got, ok := msgs[0]["finish_reason"]; !ok || got != tc.want {
				t.Errorf("finish_reason %v (present %v), want %q", got, ok, tc.want)
			}
		})
	}
}

// Only chat spans carry gen_ai.usage.*, with their advisor's inferences
// (as the metrics count them and as the span's cost prices them), and the
// estimated cost as gen_ai.usage.cost; the root and turns carry totals
// under claude_code.usage.* only.
func TestOnlyRequestsCarryGenAIUsage(t *testing.T) {
	price := func(model string, tk session.Tokens, _ *session.Request) (float64, bool) {
		return float64(tk.Output) / 100, true
	}
	var sum, cost int64
	var costSum float64
	r := run(spans.Config{Price: price}, func(b *spans.Builder) {
		b.Session(sessStart())
		tu := turn("p1", 1, 5)
		tu.Requests = 2
		b.Turn(tu)
		b.Request(req(inTurn("p1"), "m1", 1, 2))
		adv := req(inTurn("p1"), "m2", 2, 3)
		adv.Advisor = []session.ModelTokens{{Model: "claude-adv", Tokens: session.Tokens{Input: 1, Output: 30}}}
		b.Request(adv)
		b.Request(req(inAgent("a1"), "m3", 3, 4))
		b.Session(sessEnd(9))
	})
	for _, s := range r.all {
		v, ok := s.Attr(spans.AttrUsageOutputTokens)
		op, _ := s.Attr(spans.AttrOperationName)
		if ok && (op.Str != spans.OperationChat || s.Kind != spans.KindClient) {
			t.Errorf("%s carries %s", s.Name, spans.AttrUsageOutputTokens)
		}
		sum += v.Int
		if c, ok := s.Attr(spans.AttrUsageCost); ok {
			cost++
			costSum += c.Float()
		}
	}
	// 3 requests of 50 output tokens, one with an advisor's 30.
	if sum != 3*50+30 || cost != 3 || costSum != 1.8 {
		t.Errorf("gen_ai.usage.output_tokens sum %d, %d costs summing to %v; want 180, 3, 1.8", sum, cost, costSum)
	}
	m2 := r.byID(spans.RequestSpanID(sid, "m2"))
	if attr(t, m2, spans.AttrUsageOutputTokens) != int64(80) || attr(t, m2, spans.AttrUsageInputTokens) != int64(131) ||
		attr(t, m2, spans.AttrAdvisorOutput) != int64(30) || attr(t, m2, spans.AttrUsageCost) != 0.8 {
		t.Errorf("advised request: output %v input %v advisor %v cost %v", attr(t, m2, spans.AttrUsageOutputTokens),
			attr(t, m2, spans.AttrUsageInputTokens), attr(t, m2, spans.AttrAdvisorOutput), attr(t, m2, spans.AttrUsageCost))
	}
	root := r.byID(spans.RootSpanID(sid))
	if attr(t, root, spans.AttrTotalOutputTokens) != int64(180) || attr(t, root, spans.AttrCostUSD) != 1.8 {
		t.Errorf("root totals: output %v cost %v", attr(t, root, spans.AttrTotalOutputTokens), attr(t, root, spans.AttrCostUSD))
	}
	if tu := r.byID(spans.TurnSpanID(sid, "p1")); attr(t, tu, spans.AttrTotalOutputTokens) != int64(130) {
		t.Errorf("turn output total %v", attr(t, tu, spans.AttrTotalOutputTokens))
	}
}

// With capture, the root carries the session's first prompt and last
// main-thread response as input.value and output.value, a turn its own
// prompt and last response; without, neither.
func TestSessionAndTurnInputOutputValues(t *testing.T) {
	feed := func(b *spans.Builder) {
		b.Session(sessStart())
		t1, t2 := turn("p1", 1, 3), turn("p2", 4, 7)
		t1.Prompt, t2.Prompt, t2.Number = "first", "second", 2
		b.Turn(t1)
		r1 := req(inTurn("p1"), "m1", 1, 2)
		r1.Text = "one"
		b.Request(r1)
		r2 := req(inTurn("p2"), "m2", 4, 5)
		r2.Text = "two"
		b.Request(r2)
		sub := req(inAgent("a1"), "m3", 5, 6) // a subagent's answer is not the session's
		sub.Text = "sub"
		b.Request(sub)
		b.Turn(t2)
		b.Session(sessEnd(9))
	}
	tests := []struct {
		name    string
		capture spans.Capture
		want    map[spans.SpanID][2]any // input.value, output.value
	}{
		{"capture off", spans.Capture{}, map[spans.SpanID][2]any{
			spans.RootSpanID(sid): {nil, nil}, spans.TurnSpanID(sid, "p1"): {nil, nil}}},
		{"prompts and responses", spans.Capture{Prompts: true, Responses: true}, map[spans.SpanID][2]any{
			spans.RootSpanID(sid): {"first", "two"}, spans.TurnSpanID(sid, "p1"): {"first", "one"},
			spans.TurnSpanID(sid, "p2"): {"second", "two"}}},
		{"prompts only", spans.Capture{Prompts: true}, map[spans.SpanID][2]any{
			spans.RootSpanID(sid): {"first", nil}, spans.TurnSpanID(sid, "p2"): {"second", nil}}},
		{"responses only", spans.Capture{Responses: true}, map[spans.SpanID][2]any{
			spans.RootSpanID(sid): {nil, "two"}, spans.TurnSpanID(sid, "p1"): {nil, "one"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := run(spans.Config{Capture: tc.capture}, feed)
			for id, want := range tc.want {
				s := r.byID(id)
				if in, out := attr(t, s, spans.AttrInputValue), attr(t, s, spans.AttrOutputValue); in != want[0] || out != want[1] {
					t.Errorf("%s: input.value %v output.value %v, want %v %v", s.Name, in, out, want[0], want[1])
				}
			}
		})
	}
}
