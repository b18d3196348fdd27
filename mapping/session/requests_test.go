package session

import (
	"strings"
	"testing"
	"time"
)

// TestOneRequestPerMessageIDWholeWinningLine pins design §2.1: the lines
// of one API response (same message.id) make one Request, labelled and
// counted from the single line with the highest output_tokens (ties:
// largest total), never from per-field maxima.
func TestOneRequestPerMessageIDWholeWinningLine(t *testing.T) {
	const id = "msg_018tJTkVrMR8EwNkMTaSiAmQ"
	const req = "req_011CaUcCHn4WDA7jQqjRR5iE"
	prompt := U{UUID: "u1", Sec: 0, Text: "Build the foundation checkpoint."}.String()
	tests := []struct {
		name  string
		lines []string
		want  Request // MessageID, RequestID, Model, StopReason, Tokens
		dups  int64   // Stats().DuplicateRequestLines
	}{
		{
			name: "streamed lines count once with the final line's usage",
			lines: []string{
				A{UUID: "a1", Parent: "u1", Sec: 1, Msg: id, Req: req, In: 3, Out: 1, Read: 13921, Write: 30882, W1h: 30882, Blocks: blocks(thinkingB())}.String(),
				A{UUID: "a2", Parent: "a1", Sec: 2, Msg: id, Req: req, In: 3, Out: 1, Read: 13921, Write: 30882, W1h: 30882}.String(),
				A{UUID: "a3", Parent: "a2", Sec: 3, Msg: id, Req: req, In: 3, Out: 409, Read: 13921, Write: 30882, W1h: 30882, Stop: "tool_use", Blocks: blocks(toolUseB("toolu_01", "Bash", ""))}.String(),
			},
			want: Request{MessageID: id, RequestID: req, Model: modelSonnet, StopReason: "tool_use", Tokens: Tokens{Input: 3, Output: 409, CacheRead: 13921, CacheWrite1h: 30882}},
			dups: 2,
		},
		{
			name: "later line with higher output but lower input wins whole",
			lines: []string{
				A{UUID: "a1", Parent: "u1", Sec: 1, Msg: id, Req: req, In: 900, Out: 7, Read: 5000, Write: 200}.String(),
				A{UUID: "a2", Parent: "a1", Sec: 2, Msg: id, Req: req, In: 850, Out: 300, Read: 4000, Write: 100, Stop: "end_turn"}.String(),
			},
			want: Request{MessageID: id, RequestID: req, Model: modelSonnet, StopReason: "end_turn", Tokens: Tokens{Input: 850, Output: 300, CacheRead: 4000, CacheWrite5m: 100}},
			dups: 1,
		},
		{
			name: "final line first, placeholder copy later does not replace it",
			lines: []string{
				A{UUID: "a2", Parent: "a1", Sec: 2, Msg: id, Req: req, In: 850, Out: 300, Read: 4000, Stop: "end_turn"}.String(),
				A{UUID: "a1", Parent: "u1", Sec: 1, Msg: id, Req: req, In: 900, Out: 2, Read: 5000, Write: 200}.String(),
			},
			want: Request{MessageID: id, RequestID: req, Model: modelSonnet, StopReason: "end_turn", Tokens: Tokens{Input: 850, Output: 300, CacheRead: 4000}},
			dups: 1,
		},
		{
			name: "tie on output broken by the larger total",
			lines: []string{
				A{UUID: "a1", Parent: "u1", Sec: 1, Msg: id, Req: req, In: 10, Out: 120, Read: 100, Stop: "tool_use"}.String(),
				A{UUID: "a2", Parent: "a1", Sec: 2, Msg: id, Req: req, In: 10, Out: 120, Read: 100, Write: 50, Stop: "end_turn"}.String(),
			},
			want: Request{MessageID: id, RequestID: req, Model: modelSonnet, StopReason: "end_turn", Tokens: Tokens{Input: 10, Output: 120, CacheRead: 100, CacheWrite5m: 50}},
			dups: 1,
		},
		{
			name: "tie on output with a smaller total keeps the first line",
			lines: []string{
				A{UUID: "a1", Parent: "u1", Sec: 1, Msg: id, Req: req, In: 10, Out: 120, Read: 100, Write: 50, Stop: "tool_use"}.String(),
				A{UUID: "a2", Parent: "a1", Sec: 2, Msg: id, Req: req, In: 10, Out: 120, Read: 100, Stop: "end_turn"}.String(),
			},
			want: Request{MessageID: id, RequestID: req, Model: modelSonnet, StopReason: "tool_use", Tokens: Tokens{Input: 10, Output: 120, CacheRead: 100, CacheWrite5m: 50}},
			dups: 1,
		},
		{
			name: "model fallback mid-stream takes labels from the winning line",
			lines: []string{
				A{UUID: "a1", Parent: "u1", Sec: 1, Msg: id, Req: req, Model: modelOpus, In: 3, Out: 2, Read: 20000}.String(),
				A{UUID: "a2", Parent: "a1", Sec: 2, Msg: id, Req: req, Model: modelSonnet, In: 3, Out: 512, Read: 20000, Stop: "end_turn"}.String(),
			},
			want: Request{MessageID: id, RequestID: req, Model: modelSonnet, StopReason: "end_turn", Tokens: Tokens{Input: 3, Output: 512, CacheRead: 20000}},
			dups: 1,
		},
		{
			name: "model of a losing later line is not used",
			lines: []string{
				A{UUID: "a1", Parent: "u1", Sec: 1, Msg: id, Req: req, Model: modelOpus, In: 3, Out: 512, Read: 20000, Stop: "end_turn"}.String(),
				A{UUID: "a2", Parent: "a1", Sec: 2, Msg: id, Req: req, Model: modelHaiku, In: 3, Out: 4, Read: 20000}.String(),
			},
			want: Request{MessageID: id, RequestID: req, Model: modelOpus, StopReason: "end_turn", Tokens: Tokens{Input: 3, Output: 512, CacheRead: 20000}},
			dups: 1,
		},
		{
			name: "lines without requestId make one request",
			lines: []string{
				A{UUID: "a1", Parent: "u1", Sec: 1, Msg: "msg_2026010813392048a8bab873234b28", Model: "glm-4.7", In: 11466, Out: 1, NoBreakdown: true}.String(),
				A{UUID: "a2", Parent: "a1", Sec: 2, Msg: "msg_2026010813392048a8bab873234b28", Model: "glm-4.7", In: 11466, Out: 88, NoBreakdown: true, Stop: "tool_use"}.String(),
			},
			want: Request{MessageID: "msg_2026010813392048a8bab873234b28", Model: "glm-4.7", StopReason: "tool_use", Tokens: Tokens{Input: 11466, Output: 88}},
			dups: 1,
		},
		{
			name: "gateway writing input 0 on early lines counts the final input",
			lines: []string{
				A{UUID: "a1", Parent: "u1", Sec: 1, Msg: "gw_1", Model: "glm-4.7", In: 0, Out: 3, NoBreakdown: true}.String(),
				A{UUID: "a2", Parent: "a1", Sec: 2, Msg: "gw_1", Model: "glm-4.7", In: 1200, Out: 40, NoBreakdown: true, Stop: "tool_use"}.String(),
			},
			want: Request{MessageID: "gw_1", Model: "glm-4.7", StopReason: "tool_use", Tokens: Tokens{Input: 1200, Output: 40}},
			dups: 1,
		},
		{
			name: "requestId taken from a later line when the first had none",
			lines: []string{
				A{UUID: "a1", Parent: "u1", Sec: 1, Msg: id, In: 3, Out: 1}.String(),
				A{UUID: "a2", Parent: "a1", Sec: 2, Msg: id, Req: req, In: 3, Out: 90, Stop: "end_turn"}.String(),
			},
			want: Request{MessageID: id, RequestID: req, Model: modelSonnet, StopReason: "end_turn", Tokens: Tokens{Input: 3, Output: 90}},
			dups: 1,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			log, st := run(t, file{sessionPath(sessA), append([]string{prompt}, tc.lines...)})
			got := one(t, "requests", log.requests)
			if got.MessageID != tc.want.MessageID || got.RequestID != tc.want.RequestID || got.Model != tc.want.Model ||
				got.StopReason != tc.want.StopReason || got.Tokens != tc.want.Tokens {
				t.Errorf("request\n got  id=%s req=%s model=%s stop=%q %+v\n want id=%s req=%s model=%s stop=%q %+v",
					got.MessageID, got.RequestID, got.Model, got.StopReason, got.Tokens,
					tc.want.MessageID, tc.want.RequestID, tc.want.Model, tc.want.StopReason, tc.want.Tokens)
			}
			if len(log.updates) != 0 {
				t.Errorf("updates %+v, want none (nothing was emitted before the best line)", log.updates)
			}
			if st.DuplicateRequestLines != tc.dups {
				t.Errorf("Stats().DuplicateRequestLines = %d, want %d", st.DuplicateRequestLines, tc.dups)
			}
		})
	}
}

// TestRequestTimesAndToolUseIDs pins the request's span data: it starts
// at the record that triggered it (its parent), ends at its last line,
// sits in the turn of its prompt, and lists its tool_use ids once each.
func TestRequestTimesAndToolUseIDs(t *testing.T) {
	log, _ := run(t, file{sessionPath(sessA), []string{
		U{UUID: "u1", Sec: 10, Text: "List the files."}.String(),
		A{UUID: "a1", Parent: "u1", Sec: 14, Msg: "msg_1", Req: "req_1", In: 3, Out: 1, Blocks: blocks(thinkingB())}.String(),
		A{UUID: "a2", Parent: "a1", Sec: 15, Msg: "msg_1", Req: "req_1", In: 3, Out: 1, Blocks: blocks(toolUseB("toolu_A", "Bash", ""))}.String(),
		A{UUID: "a3", Parent: "a2", Sec: 16, Msg: "msg_1", Req: "req_1", In: 3, Out: 70, Stop: "tool_use", Blocks: blocks(toolUseB("toolu_B", "Read", `{"file_path":"/x"}`))}.String(),
		// A copy of the line carrying toolu_A (a resumed session's copy) adds nothing.
		A{UUID: "a2", Parent: "a1", Sec: 15, Msg: "msg_1", Req: "req_1", In: 3, Out: 1, Blocks: blocks(toolUseB("toolu_A", "Bash", ""))}.String(),
	}})
	r := one(t, "requests", log.requests)
	if !r.Start.Equal(at(10)) || !r.End.Equal(at(16)) {
		t.Errorf("request start %v end %v, want %v (parent) and %v (last line)", r.Start, r.End, at(10), at(16))
	}
	if r.SessionID != sessA || r.TurnID != "u1" || r.AgentID != "" || r.Project != cwdA {
		t.Errorf("request where = %+v, want session %s, turn u1, main conversation, project %s", r.Where, sessA, cwdA)
	}
	if len(r.ToolUseIDs) != 2 || r.ToolUseIDs[0] != "toolu_A" || r.ToolUseIDs[1] != "toolu_B" {
		t.Errorf("ToolUseIDs = %v, want [toolu_A toolu_B]", r.ToolUseIDs)
	}
}

// TestSettleEmitsOnNonFinalFlush pins when a request is emitted: a line
// with a stop reason completes it, so the next Flush emits it at once; a
// request whose lines carry no stop reason (a placeholder still streaming,
// gateways, older versions) waits until it has had no new line for Settle;
// a final Flush emits everything.
func TestSettleEmitsOnNonFinalFlush(t *testing.T) {
	tests := []struct {
		name    string
		stop    string        // stop reason of the last line
		flushAt time.Duration // after the last line was processed
		final   bool
		want    int
	}{
		{"stop reason: emitted at once", "end_turn", 0, false, 1},
		{"stop reason tool_use: emitted at once", "tool_use", 0, false, 1},
		{"no stop reason: not settled yet", "", 2 * time.Second, false, 0},
		{"no stop reason: settled exactly", "", 3 * time.Second, false, 1},
		{"no stop reason: long settled", "", time.Minute, false, 1},
		{"final flush does not wait", "", 0, true, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFeeder(t, Config{Settle: 3 * time.Second})
			f.add(sessionPath(sessA), at(100), U{UUID: "u1", Sec: 0, Text: "hi"}.String())
			f.add(sessionPath(sessA), at(101), A{UUID: "a1", Parent: "u1", Sec: 1, Msg: "msg_1", In: 3, Out: 1}.String())
			f.flush(at(101), false)
			if len(f.log.requests) != 0 {
				t.Fatalf("a placeholder line without stop reason was emitted at once")
			}
			f.add(sessionPath(sessA), at(102), A{UUID: "a2", Parent: "a1", Sec: 2, Msg: "msg_1", In: 3, Out: 50, Stop: tc.stop}.String())
			f.flush(at(102).Add(tc.flushAt), tc.final)
			if len(f.log.requests) != tc.want {
				t.Fatalf("requests emitted %d, want %d", len(f.log.requests), tc.want)
			}
			if tc.want == 1 && (f.log.requests[0].Tokens.Output != 50 || f.log.requests[0].StopReason != tc.stop) {
				t.Errorf("emitted output %d stop %q, want 50 %q (the best line so far)",
					f.log.requests[0].Tokens.Output, f.log.requests[0].StopReason, tc.stop)
			}
		})
	}
}

// TestCompleteRequestGrowsWithALaterBetterCopy: a request emitted at its
// stop reason still grows by the difference when a better copy of the same
// message arrives later, and a tool_use on a later line of the message
// becomes a tool call under it.
func TestCompleteRequestGrowsWithALaterBetterCopy(t *testing.T) {
	f := newFeeder(t, Config{Settle: time.Hour})
	f.add(sessionPath(sessA), at(100), U{UUID: "u1", Sec: 0, Text: "hi"}.String())
	f.add(sessionPath(sessA), at(101), A{UUID: "a1", Parent: "u1", Sec: 1, Msg: "msg_1", In: 3, Out: 40, Stop: "tool_use"}.String())
	f.flush(at(101), false)
	if len(f.log.requests) != 1 || f.log.requests[0].Tokens.Output != 40 {
		t.Fatalf("requests %+v, want one with 40 output tokens at once", f.log.requests)
	}
	f.add(sessionPath(sessA), at(102), A{UUID: "a2", Parent: "a1", Sec: 2, Msg: "msg_1", In: 3, Out: 55, Stop: "tool_use",
		Blocks: blocks(toolUseB("toolu_late", "Bash", ""))}.String())
	f.flush(at(102), false)
	if len(f.log.updates) != 1 || f.log.updates[0].Delta.Output != 15 {
		t.Errorf("updates %+v, want one of +15 output tokens", f.log.updates)
	}
	f.add(sessionPath(sessA), at(103), U{UUID: "u2", Parent: "a2", Sec: 3, Blocks: blocks(toolResultB("toolu_late", false))}.String())
	f.flush(at(103), true)
	if len(f.log.tools) != 1 || f.log.tools[0].MessageID != "msg_1" {
		t.Errorf("tools %+v, want toolu_late under msg_1", f.log.tools)
	}
}

// TestCountersGrowByTheDifference pins design §2.1's "counters grow by the
// difference": a request emitted by a non-final Flush (after Settle) that
// receives a better line later yields a RequestUpdate whose Delta is the
// positive per-type growth over what was already counted, never a
// decrease, and nothing at all for a line that is not better.
func TestCountersGrowByTheDifference(t *testing.T) {
	const id = "msg_01EmdLyetoxaTxDhRzb9gjKq"
	first := A{UUID: "a1", Parent: "u1", Sec: 1, Msg: id, Req: "req_1", In: 100, Out: 1, Read: 2000, Write: 500}
	tests := []struct {
		name  string
		later []A
		want  []Tokens // the deltas, in order
		total Tokens   // what the counter ends at
	}{
		{
			name:  "better line adds only the growth",
			later: []A{{UUID: "a2", Parent: "a1", Sec: 9, Msg: id, Req: "req_1", In: 100, Out: 400, Read: 2000, Write: 500, Stop: "end_turn"}},
			want:  []Tokens{{Output: 399}},
			total: Tokens{Input: 100, Output: 400, CacheRead: 2000, CacheWrite5m: 500},
		},
		{
			name:  "better line with lower input never decreases",
			later: []A{{UUID: "a2", Parent: "a1", Sec: 9, Msg: id, Req: "req_1", In: 60, Out: 400, Read: 2500, Write: 300, Stop: "end_turn"}},
			want:  []Tokens{{Output: 399, CacheRead: 500}},
			total: Tokens{Input: 100, Output: 400, CacheRead: 2500, CacheWrite5m: 500},
		},
		{
			name: "two better lines in turn: each adds over the running maximum",
			later: []A{
				{UUID: "a2", Parent: "a1", Sec: 9, Msg: id, Req: "req_1", In: 60, Out: 200, Read: 2000, Write: 500},
				{UUID: "a3", Parent: "a2", Sec: 10, Msg: id, Req: "req_1", In: 120, Out: 400, Read: 2000, Write: 500, Stop: "end_turn"},
			},
			want:  []Tokens{{Output: 199}, {Input: 20, Output: 200}},
			total: Tokens{Input: 120, Output: 400, CacheRead: 2000, CacheWrite5m: 500},
		},
		{
			name:  "worse line yields no update",
			later: []A{{UUID: "a0", Parent: "u1", Sec: 9, Msg: id, Req: "req_1", In: 500, Out: 1, Read: 1000}},
			total: Tokens{Input: 100, Output: 1, CacheRead: 2000, CacheWrite5m: 500},
		},
		{
			name:  "identical copy yields no update",
			later: []A{first},
			total: Tokens{Input: 100, Output: 1, CacheRead: 2000, CacheWrite5m: 500},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFeeder(t, Config{Settle: 3 * time.Second})
			f.add(sessionPath(sessA), at(0), U{UUID: "u1", Sec: 0, Text: "hi"}.String(), first.String())
			f.flush(at(5), false)
			one(t, "requests after settling", f.log.requests)
			for _, a := range tc.later {
				f.add(sessionPath(sessA), at(6), a.String())
			}
			f.flush(at(60), true)
			one(t, "requests after the better lines", f.log.requests)
			if len(f.log.updates) != len(tc.want) {
				t.Fatalf("updates %+v, want deltas %+v", f.log.updates, tc.want)
			}
			for i, u := range f.log.updates {
				if u.Delta != tc.want[i] {
					t.Errorf("update %d delta %+v, want %+v", i, u.Delta, tc.want[i])
				}
				if u.MessageID != id || u.SessionID != sessA || u.TurnID != "u1" {
					t.Errorf("update %d: id %s where %+v", i, u.MessageID, u.Where)
				}
			}
			if got := f.log.tokenSum()[modelSonnet]; got != tc.total {
				t.Errorf("counter total %+v, want %+v", got, tc.total)
			}
		})
	}
}

// TestRequestUpdateKeepsTheEmittedLabels pins units.go's RequestUpdate
// contract ("Delta holds the per-type growth under the request's original
// labels"): when the better line that arrives after emission names
// another model (fallback mid-stream), the delta must still be booked to
// the model the Request was counted under, or a single request's tokens
// end up split over two models and the per-model counters disagree with
// the per-model request counts.
func TestRequestUpdateKeepsTheEmittedLabels(t *testing.T) {
	f := newFeeder(t, Config{Settle: 3 * time.Second})
	f.add(sessionPath(sessA), at(0),
		U{UUID: "u1", Sec: 0, Text: "hi"}.String(),
		A{UUID: "a1", Parent: "u1", Sec: 1, Msg: "msg_1", Model: modelOpus, In: 3, Out: 2, Read: 20000}.String())
	f.flush(at(5), false)
	f.add(sessionPath(sessA), at(6), A{UUID: "a2", Parent: "a1", Sec: 9, Msg: "msg_1", Model: modelSonnet, In: 3, Out: 512, Read: 20000, Stop: "end_turn"}.String())
	f.flush(at(60), true)
	r := one(t, "requests", f.log.requests)
	u := one(t, "updates", f.log.updates)
	if u.Delta != (Tokens{Output: 510}) {
		t.Errorf("delta %+v, want output 510", u.Delta)
	}
	if u.Model != r.Model {
		t.Errorf("RequestUpdate.Model = %q, want the emitted request's model %q", u.Model, r.Model)
	}
}

// TestCacheWriteSplit pins design §2.4 through the assembler: the cache
// writes of a request are split into the 5m and 1h tiers.
func TestCacheWriteSplit(t *testing.T) {
	tests := []struct {
		name string
		line A
		want Tokens
	}{
		{
			name: "breakdown present",
			line: A{Write: 300, W5m: 100, W1h: 200},
			want: Tokens{CacheWrite5m: 100, CacheWrite1h: 200},
		},
		{
			name: "breakdown all 1h",
			line: A{Write: 30882, W1h: 30882},
			want: Tokens{CacheWrite1h: 30882},
		},
		{
			name: "breakdown absent: all 5m",
			line: A{Write: 500, NoBreakdown: true},
			want: Tokens{CacheWrite5m: 500},
		},
		{
			name: "breakdown sums short: remainder is 5m",
			line: A{Write: 500, W5m: 100, W1h: 300},
			want: Tokens{CacheWrite5m: 200, CacheWrite1h: 300},
		},
		{
			name: "breakdown sums short with no 5m at all",
			line: A{Write: 500, W1h: 300},
			want: Tokens{CacheWrite5m: 200, CacheWrite1h: 300},
		},
		{
			name: "breakdown above the total: the breakdown wins",
			line: A{Write: 500, W5m: 400, W1h: 200},
			want: Tokens{CacheWrite5m: 400, CacheWrite1h: 200},
		},
		{
			name: "no cache writes",
			line: A{},
			want: Tokens{},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := tc.line
			a.UUID, a.Parent, a.Sec, a.Msg, a.Req, a.In, a.Out, a.Read, a.Stop = "a1", "u1", 1, "msg_1", "req_1", 3, 40, 1000, "end_turn"
			log, _ := run(t, file{sessionPath(sessA), []string{U{UUID: "u1", Text: "hi"}.String(), a.String()}})
			got := one(t, "requests", log.requests).Tokens
			want := tc.want
			want.Input, want.Output, want.CacheRead = 3, 40, 1000
			if got != want {
				t.Errorf("tokens %+v, want %+v", got, want)
			}
		})
	}
}

// TestAssistantLineWithoutMessageIDIsNoRequest pins that an assistant line
// without message.id cannot be deduplicated and so is not counted as a
// request; it is counted in Stats().NoMessageID instead.
func TestAssistantLineWithoutMessageIDIsNoRequest(t *testing.T) {
	log, st := run(t, file{sessionPath(sessA), []string{
		U{UUID: "u1", Sec: 0, Text: "hi"}.String(),
		A{UUID: "a1", Parent: "u1", Sec: 1, In: 3, Out: 40, Stop: "end_turn"}.String(),
	}})
	if len(log.requests) != 0 {
		t.Errorf("requests %+v, want none", log.requests)
	}
	if st.NoMessageID != 1 {
		t.Errorf("Stats().NoMessageID = %d, want 1", st.NoMessageID)
	}
}

// TestReadHistoryClosesStaleSessionsAtOnce: after a group of history or
// at the end of the backfill, a session whose last record is older than
// the idle timeout closes at once (memory then holds one group's sessions,
// not the history's); a recent one stays open, and a live Flush still
// waits for the settle time.
func TestReadHistoryClosesStaleSessionsAtOnce(t *testing.T) {
	tests := []struct {
		name  string
		flush func(*Assembler, time.Time)
		want  []string
	}{
		{"history pause", func(a *Assembler, now time.Time) { a.FlushHistory(now, "") }, []string{sessA}},
		{"end of the backfill", (*Assembler).FlushRead, []string{sessA}},
		{"live flush waits for the settle time", func(a *Assembler, now time.Time) { a.Flush(now, false) }, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFeeder(t, Config{Settle: 3 * time.Second, IdleTimeout: 30 * time.Minute})
			now := at(3600)
			f.add(sessionPath(sessA), now, U{UUID: "u1", Sec: 0, Text: "old"}.String(),
				A{UUID: "a1", Parent: "u1", Sec: 1, Msg: "msg_old", In: 1, Out: 1, Stop: "end_turn"}.String())
			f.add(sessionPath(sessB), now, U{UUID: "u2", Session: sessB, Sec: 3500, Text: "recent"}.String(),
				A{UUID: "a2", Parent: "u2", Session: sessB, Sec: 3501, Msg: "msg_new", In: 1, Out: 1, Stop: "end_turn"}.String())
			tc.flush(f.asm, now)
			var closed []string
			for _, s := range f.log.sessions {
				if s.Ended {
					closed = append(closed, s.SessionID)
				}
			}
			if strings.Join(closed, ",") != strings.Join(tc.want, ",") {
				t.Errorf("closed %v, want %v", closed, tc.want)
			}
		})
	}
}

// TestHistoryPauseKeepsASessionOpenWhileItsForksRequestWaits: a fork's
// request (compaction, prompt suggestion) waits for the end of the
// history, so its session stays open at a pause between groups; closed
// there, its span went out without the request's tokens and model. It
// closes with the request counted once the history is read.
func TestHistoryPauseKeepsASessionOpenWhileItsForksRequestWaits(t *testing.T) {
	const fork = "aprompt_suggestion-0123456789abcdef"
	f := newFeeder(t, Config{Settle: 3 * time.Second, IdleTimeout: 30 * time.Minute})
	now := at(3600)
	f.add(sessionPath(sessA), now, U{UUID: "u1", Sec: 0, Text: "hi"}.String())
	f.add(subagentPath(sessA, fork), now,
		U{UUID: "f-u", Sec: 1, Agent: fork, Text: "Suggest."}.String(),
		A{UUID: "f-a", Parent: "f-u", Sec: 2, Msg: "msg_sugg", Agent: fork, In: 7, Out: 5, Stop: "end_turn"}.String())
	ended := func() (n int) {
		for _, s := range f.log.sessions {
			if s.Ended {
				n++
			}
		}
		return n
	}
	f.asm.FlushHistory(now, "")
	if ended() != 0 || len(f.log.requests) != 0 {
		t.Fatalf("after the pause: %d sessions ended, requests %+v; want the session open with its fork's request", ended(), f.log.requests)
	}
	f.asm.FlushRead(now)
	if r := one(t, "requests", f.log.requests); r.MessageID != "msg_sugg" || r.Tokens.Output != 5 {
		t.Errorf("request %+v, want msg_sugg with 5 output tokens", r)
	}
	if ended() != 1 {
		t.Errorf("%d sessions ended after the history, want 1", ended())
	}
}

// TestUsageAtIsTheWinningLine: a request's UsageAt is the time of the
// line whose usage counts (the first of the best), where ccusage places
// its usage entry.
func TestUsageAtIsTheWinningLine(t *testing.T) {
	const id = "msg_01UsageAt"
	prompt := U{UUID: "u1", Sec: 0, Text: "go"}.String()
	for _, tc := range []struct {
		name  string
		lines []string
		sec   int
	}{
		{"the final streamed line", []string{
			A{UUID: "a1", Parent: "u1", Sec: 1, Msg: id, Req: "r", In: 3, Out: 1}.String(),
			A{UUID: "a2", Parent: "a1", Sec: 3, Msg: id, Req: "r", In: 3, Out: 90, Stop: "end_turn"}.String(),
		}, 3},
		{"the first of equal lines", []string{
			A{UUID: "a1", Parent: "u1", Sec: 1, Msg: id, Req: "r", In: 3, Out: 9}.String(),
			A{UUID: "a2", Parent: "a1", Sec: 2, Msg: id, Req: "r", In: 3, Out: 9, Stop: "end_turn"}.String(),
		}, 1},
		{"a weaker later line does not move it", []string{
			A{UUID: "a2", Parent: "u1", Sec: 2, Msg: id, Req: "r", In: 3, Out: 300, Stop: "end_turn"}.String(),
			A{UUID: "a1", Parent: "u1", Sec: 5, Msg: id, Req: "r", In: 3, Out: 2}.String(),
		}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log, _ := run(t, file{sessionPath(sessA), append([]string{prompt}, tc.lines...)})
			if got := one(t, "requests", log.requests); !got.UsageAt.Equal(at(tc.sec)) {
				t.Errorf("UsageAt %v, want %v", got.UsageAt, at(tc.sec))
			}
		})
	}
}
