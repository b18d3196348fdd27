package spans_test

import (
	"crypto/sha256"
	"strings"
	"testing"
	"time"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/session"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/spans"
)

const sid = "s-1"

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func at(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }

func main() session.Where           { return session.Where{SessionID: sid, Project: "/p"} }
func inTurn(t string) session.Where { w := main(); w.TurnID = t; return w }
func inAgent(a string) session.Where {
	w := main()
	w.AgentID = a
	return w
}

// Unit builders for the tests.
func sessStart() *session.Session {
	return &session.Session{Where: main(), Cwd: "/p", GitBranch: "main", Version: "2.1.0", Slug: "slug", Start: at(0)}
}
func sessEnd(end int) *session.Session {
	s := sessStart()
	s.End, s.Ended, s.Turns, s.Title = at(end), true, 1, "title"
	return s
}
func turn(id string, start, end int) *session.Turn {
	return &session.Turn{Where: inTurn(id), PromptUUID: id, Number: 1, Start: at(start), End: at(end), Prompt: "hello", Requests: 1}
}
func req(w session.Where, msg string, start, end int, tools ...string) *session.Request {
	return &session.Request{Where: w, MessageID: msg, RequestID: "req_" + msg, Model: "claude-x", StopReason: "tool_use",
		Tokens: session.Tokens{Input: 3, Output: 50, CacheRead: 100, CacheWrite5m: 20, CacheWrite1h: 7},
		Start:  at(start), End: at(end), ToolUseIDs: tools, Text: "answer", Thinking: "hmm"}
}
func tool(w session.Where, id, msg, name string, start, end int, out session.Outcome) *session.ToolCall {
	return &session.ToolCall{Where: w, ToolUseID: id, Name: name, MessageID: msg, Outcome: out,
		Start: at(start), End: at(end), HasDuration: true, Input: `{"x":1}`, Output: "result"}
}
func agent(id, toolID string, start, end int) *session.Subagent {
	return &session.Subagent{Where: inAgent(id), AgentType: "Explore", Description: "look", ToolUseID: toolID,
		Start: at(start), End: at(end), Ended: true}
}

// collect runs feed against a builder and returns its spans by name
// (first span of each name) and all of them.
type result struct {
	all   []spans.Span
	stats spans.Stats
}

func (r result) byID(id spans.SpanID) *spans.Span {
	for i := range r.all {
		if r.all[i].SpanID == id {
			return &r.all[i]
		}
	}
	return nil
}

func run(cfg spans.Config, feed func(b *spans.Builder)) result {
	var r result
	b := spans.NewBuilder(cfg, func(s spans.Span) { r.all = append(r.all, s) })
	feed(b)
	r.stats = b.Stats()
	return r
}

func attr(t *testing.T, s *spans.Span, k string) any {
	t.Helper()
	v, ok := s.Attr(k)
	if !ok {
		return nil
	}
	return v.Any()
}

func TestTreeAndIDs(t *testing.T) {
	// Units in the order a one-shot run gives them: tools and subagents
	// while reading, requests at the final flush, then turn and session.
	r := run(spans.Config{}, func(b *spans.Builder) {
		b.Session(sessStart())
		b.ToolCall(tool(inTurn("p1"), "tu1", "m1", "Task", 2, 9, session.OutcomeOK))
		b.Subagent(agent("a1", "tu1", 2, 9))
		b.ToolCall(tool(inAgent("a1"), "tu2", "m2", "Read", 4, 5, session.OutcomeError))
		b.Request(req(inTurn("p1"), "m1", 1, 2, "tu1"))
		b.Request(req(inAgent("a1"), "m2", 3, 4, "tu2"))
		b.Compaction(&session.Compaction{Where: inTurn("p1"), UUID: "c1", Trigger: "auto", PreTokens: 1000, Time: at(10)})
		b.Turn(turn("p1", 1, 11))
		b.Session(sessEnd(12))
	})
	trace := spans.SessionTraceID(sid)
	want := []struct {
		id     spans.SpanID
		parent spans.SpanID
		name   string
		kind   spans.Kind
	}{
		{spans.RootSpanID(sid), spans.SpanID{}, "session p s-1", spans.KindInternal},
		{spans.TurnSpanID(sid, "p1"), spans.RootSpanID(sid), "invoke_agent claude-code turn 1", spans.KindInternal},
		{spans.RequestSpanID(sid, "m1"), spans.TurnSpanID(sid, "p1"), "chat claude-x", spans.KindClient},
		{spans.ToolSpanID(sid, "tu1"), spans.TurnSpanID(sid, "p1"), "execute_tool Task", spans.KindInternal},
		{spans.AgentSpanID(sid, "a1"), spans.ToolSpanID(sid, "tu1"), "invoke_agent Explore", spans.KindInternal},
		{spans.RequestSpanID(sid, "m2"), spans.AgentSpanID(sid, "a1"), "chat claude-x", spans.KindClient},
		{spans.ToolSpanID(sid, "tu2"), spans.AgentSpanID(sid, "a1"), "execute_tool Read", spans.KindInternal},
		{spans.CompactionSpanID(sid, "c1"), spans.TurnSpanID(sid, "p1"), "compaction", spans.KindInternal},
	}
	if len(r.all) != len(want) {
		t.Fatalf("%d spans, want %d", len(r.all), len(want))
	}
	for _, w := range want {
		s := r.byID(w.id)
		if s == nil {
			t.Errorf("no span %s (%s)", w.id, w.name)
			continue
		}
		if s.TraceID != trace || s.ParentSpanID != w.parent || s.Name != w.name || s.Kind != w.kind {
			t.Errorf("%s: trace %s parent %s kind %s, want %s %s %s", s.Name, s.TraceID, s.ParentSpanID, s.Kind, trace, w.parent, w.kind)
		}
		if attr(t, s, spans.AttrConversationID) != sid || attr(t, s, spans.AttrSessionID) != sid {
			t.Errorf("%s: no conversation id or session.id", s.Name)
		}
		// A tool span sits beside the chat span that asked for it, linked.
		if tu, ok := map[spans.SpanID]string{spans.ToolSpanID(sid, "tu1"): "m1", spans.ToolSpanID(sid, "tu2"): "m2"}[w.id]; ok {
			if len(s.Links) != 1 || s.Links[0].SpanID != spans.RequestSpanID(sid, tu) || s.Links[0].TraceID != trace {
				t.Errorf("%s: links %+v, want the chat span of %s", s.Name, s.Links, tu)
			}
		}
		if op, _ := s.Attr(spans.AttrOperationName); op.Str == "" {
			t.Errorf("%s: no %s", s.Name, spans.AttrOperationName)
		}
		if !s.End.After(s.Start) {
			t.Errorf("%s: times %v..%v, want a positive duration", s.Name, s.Start, s.End)
		}
	}
}

func TestIDScheme(t *testing.T) {
	sum := sha256.Sum256([]byte("trace\x00" + sid))
	if got := spans.SessionTraceID(sid); string(got[:]) != string(sum[:16]) {
		t.Errorf("trace id %s, want first 16 bytes of sha256(trace\\0+session)", got)
	}
	sum = sha256.Sum256([]byte("trace\x00" + sid + "\x00p1"))
	if got := spans.TurnTraceID(sid, "p1"); string(got[:]) != string(sum[:16]) {
		t.Errorf("turn trace id %s", got)
	}
	sum = sha256.Sum256([]byte(sid + "\x00request\x00m1"))
	if got := spans.RequestSpanID(sid, "m1"); string(got[:]) != string(sum[:8]) {
		t.Errorf("span id %s, want first 8 bytes of sha256(session\\0kind\\0id)", got)
	}
	ids := map[spans.SpanID]string{}
	for _, k := range []spans.SpanID{spans.RootSpanID(sid), spans.TurnSpanID(sid, "x"), spans.RequestSpanID(sid, "x"),
		spans.ToolSpanID(sid, "x"), spans.AgentSpanID(sid, "x"), spans.CompactionSpanID(sid, "x"), spans.RequestSpanID("s-2", "x")} {
		if k.IsZero() {
			t.Error("zero span id")
		}
		if _, dup := ids[k]; dup {
			t.Errorf("kinds share span id %s", k)
		}
		ids[k] = ""
	}
}

func TestSameUnitsSameIDs(t *testing.T) {
	feed := func(b *spans.Builder) {
		b.Request(req(inTurn("p1"), "m1", 1, 2, "tu1"))
		b.ToolCall(tool(inTurn("p1"), "tu1", "m1", "Bash", 2, 3, session.OutcomeOK))
		b.Turn(turn("p1", 1, 3))
		b.Session(sessEnd(3))
	}
	a, b := run(spans.Config{}, feed), run(spans.Config{}, feed)
	for i := range a.all {
		if a.all[i].TraceID != b.all[i].TraceID || a.all[i].SpanID != b.all[i].SpanID || a.all[i].ParentSpanID != b.all[i].ParentSpanID {
			t.Errorf("span %d differs between runs", i)
		}
	}
}

func TestAttributes(t *testing.T) {
	tests := []struct {
		name  string
		feed  func(b *spans.Builder)
		span  spans.SpanID
		want  map[string]any
		unset []string
	}{
		{
			name: "chat span counts",
			feed: func(b *spans.Builder) { b.Request(req(inTurn("p1"), "m1", 1, 2)) },
			span: spans.RequestSpanID(sid, "m1"),
			want: map[string]any{
				spans.AttrOperationName: "chat", spans.AttrProviderName: "anthropic",
				spans.AttrRequestModel: "claude-x", spans.AttrResponseModel: "claude-x", spans.AttrResponseID: "m1",
				spans.AttrResponseFinishReasons: []string{"tool_use"},
				spans.AttrUsageInputTokens:      int64(3 + 100 + 20 + 7), spans.AttrUsageOutputTokens: int64(50),
				spans.AttrUsageCacheReadTokens: int64(100), spans.AttrUsageCacheWriteTokens: int64(27),
				spans.AttrRawInputTokens: int64(3), spans.AttrCacheWrite5mTokens: int64(20), spans.AttrCacheWrite1hTokens: int64(7),
				spans.AttrRequestID: "req_m1",
			},
			unset: []string{spans.AttrOutputMessages, spans.AttrRequestInterrupted, spans.AttrAgentID, spans.AttrCostUSD, spans.AttrUsageCost},
		},
		{
			name: "unknown stop reason has no finish_reasons",
			feed: func(b *spans.Builder) {
				r := req(inTurn("p1"), "m1", 1, 2)
				r.StopReason, r.RequestID = "", ""
				b.Request(r)
			},
			span:  spans.RequestSpanID(sid, "m1"),
			unset: []string{spans.AttrResponseFinishReasons, spans.AttrRequestID},
		},
		{
			name: "tool error",
			feed: func(b *spans.Builder) {
				b.ToolCall(tool(inTurn("p1"), "tu1", "m1", "Bash", 1, 2, session.OutcomeError))
			},
			span: spans.ToolSpanID(sid, "tu1"),
			want: map[string]any{
				spans.AttrOperationName: "execute_tool", spans.AttrToolName: "Bash", spans.AttrToolCallID: "tu1",
				spans.AttrToolType: "function", spans.AttrToolOutcome: "error", spans.AttrErrorType: "tool_error",
			},
			unset: []string{spans.AttrToolCallArguments, spans.AttrToolCallResult},
		},
		{
			name: "unanswered tool",
			feed: func(b *spans.Builder) {
				c := tool(inTurn("p1"), "tu1", "m1", "Bash", 1, 0, session.OutcomeUnanswered)
				c.End, c.HasDuration = time.Time{}, false
				b.ToolCall(c)
			},
			span:  spans.ToolSpanID(sid, "tu1"),
			want:  map[string]any{spans.AttrToolOutcome: "unanswered"},
			unset: []string{spans.AttrErrorType},
		},
		{
			name: "turn carries the session facts",
			feed: func(b *spans.Builder) { b.Session(sessStart()); b.Turn(turn("p1", 1, 2)); b.Session(sessEnd(3)) },
			span: spans.TurnSpanID(sid, "p1"),
			want: map[string]any{
				spans.AttrOperationName: "invoke_agent", spans.AttrAgentName: "claude-code",
				spans.AttrSessionID: sid, spans.AttrConversationID: sid, spans.AttrProject: "p",
				spans.AttrVersion: "2.1.0", spans.AttrSlug: "slug", spans.AttrPromptID: "p1", spans.AttrTurnRequests: int64(1),
				spans.AttrPromptNumber: int64(1),
			},
			// The branch identifies: only with Identifying.
			unset: []string{spans.AttrInputMessages, spans.AttrGitBranch, spans.AttrProviderName},
		},
		{
			name: "root",
			feed: func(b *spans.Builder) { b.Session(sessStart()); b.Session(sessEnd(9)) },
			span: spans.RootSpanID(sid),
			want: map[string]any{spans.AttrSessionID: sid, spans.AttrConversationID: sid, spans.AttrSessionTurns: int64(1),
				spans.AttrOperationName: "invoke_agent", spans.AttrAgentName: "claude-code",
				spans.AttrVersion: "2.1.0", spans.AttrSlug: "slug", spans.AttrProject: "p"},
			// The title is content (written from the prompt): captured only
			// with prompts; the branch identifies: only with Identifying.
			unset: []string{spans.AttrSessionTitle, spans.AttrGitBranch},
		},
		{
			name: "warmup subagent",
			feed: func(b *spans.Builder) {
				a := agent("a1", "", 1, 2)
				a.Warmup, a.AgentType, a.Description = true, "unknown", ""
				b.Subagent(a)
				b.Session(sessEnd(9)) // a subagent's span waits for its session's end
			},
			span:  spans.AgentSpanID(sid, "a1"),
			want:  map[string]any{spans.AttrAgentWarmup: true, spans.AttrAgentID: "a1", spans.AttrAgentName: "unknown"},
			unset: []string{spans.AttrAgentDescription},
		},
		{
			name: "subagent",
			feed: func(b *spans.Builder) { b.Subagent(agent("a1", "tu1", 1, 2)); b.Session(sessEnd(9)) },
			span: spans.AgentSpanID(sid, "a1"),
			want: map[string]any{spans.AttrOperationName: "invoke_agent", spans.AttrAgentID: "a1",
				spans.AttrAgentName: "Explore"},
			// The description is part of the tool input: captured only with tools.
			unset: []string{spans.AttrAgentWarmup, spans.AttrAgentStandIn, spans.AttrAgentDescription},
		},
		{
			name: "interrupted request",
			feed: func(b *spans.Builder) {
				r := req(inTurn("p1"), "m1", 1, 2)
				r.Interrupted = true
				b.Request(r)
			},
			span: spans.RequestSpanID(sid, "m1"),
			want: map[string]any{spans.AttrRequestInterrupted: true},
		},
		{
			name: "compaction",
			feed: func(b *spans.Builder) {
				b.Compaction(&session.Compaction{Where: inAgent("a1"), UUID: "c1", Trigger: "manual", PreTokens: 42, Time: at(3)})
			},
			span: spans.CompactionSpanID(sid, "c1"),
			want: map[string]any{spans.AttrCompactionTrigger: "manual", spans.AttrCompactionPreTokens: int64(42),
				spans.AttrOperationName: "chat", spans.AttrSessionID: sid},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := run(spans.Config{}, tc.feed)
			s := r.byID(tc.span)
			if s == nil {
				t.Fatalf("no span %s among %d", tc.span, len(r.all))
			}
			for k, v := range tc.want {
				got := attr(t, s, k)
				if gs, ok := got.([]string); ok {
					if ws, ok := v.([]string); !ok || strings.Join(gs, ",") != strings.Join(ws, ",") {
						t.Errorf("%s = %v, want %v", k, got, v)
					}
					continue
				}
				if got != v {
					t.Errorf("%s = %#v, want %#v", k, got, v)
				}
			}
			for _, k := range tc.unset {
				if _, ok := s.Attr(k); ok {
					t.Errorf("%s set, want unset", k)
				}
			}
		})
	}
}

func TestStatusAndEvents(t *testing.T) {
	r := run(spans.Config{}, func(b *spans.Builder) {
		b.ToolCall(tool(inTurn("p1"), "tu1", "m1", "Bash", 1, 2, session.OutcomeError))
		rq := req(inTurn("p1"), "m1", 1, 2)
		rq.Interrupted = true
		b.Request(rq)
	})
	if s := r.byID(spans.ToolSpanID(sid, "tu1")); s.Status != spans.StatusError || s.StatusMessage == "" {
		t.Errorf("tool error: status %s %q", s.Status, s.StatusMessage)
	}
	s := r.byID(spans.RequestSpanID(sid, "m1"))
	if s.Status != spans.StatusUnset || len(s.Events) != 1 || s.Events[0].Name != spans.EventInterrupted || !s.Events[0].Time.Equal(at(2)) {
		t.Errorf("interrupted request: status %s events %+v", s.Status, s.Events)
	}
}

func TestAPIErrorEvents(t *testing.T) {
	apiErr := func(w session.Where, kind string, sec int) *session.APIError {
		return &session.APIError{Where: w, Kind: kind, Status: 429, Time: at(sec), Text: "You've hit your limit"}
	}
	tests := []struct {
		name       string
		feed       func(b *spans.Builder)
		on         spans.SpanID
		kinds      []string
		moved, end int
	}{
		{
			name: "on the open turn, stretching its end",
			feed: func(b *spans.Builder) {
				b.APIError(apiErr(inTurn("p1"), "retry", 5))
				b.Turn(turn("p1", 1, 3))
				b.Session(sessEnd(6))
			},
			on: spans.TurnSpanID(sid, "p1"), kinds: []string{"retry"}, end: 5,
		},
		{
			name: "on the subagent",
			feed: func(b *spans.Builder) {
				b.APIError(apiErr(inAgent("a1"), "retry", 2))
				b.Subagent(agent("a1", "tu1", 1, 3))
				b.Session(sessEnd(4))
			},
			on: spans.AgentSpanID(sid, "a1"), kinds: []string{"retry"}, end: 3,
		},
		{
			name: "outside any turn: on the root",
			feed: func(b *spans.Builder) {
				b.APIError(apiErr(main(), "synthetic", 1))
				b.Session(sessEnd(4))
			},
			on: spans.RootSpanID(sid), kinds: []string{"synthetic"}, end: 4,
		},
		{
			// (A subagent's span waits for the session's end: an error
			// after its Subagent unit still lands on it.)
			name: "after its turn went out: moved to the root",
			feed: func(b *spans.Builder) {
				b.Turn(turn("p1", 1, 3))
				b.APIError(apiErr(inTurn("p1"), "no_response", 3))
				b.Subagent(agent("a1", "tu1", 1, 3))
				b.APIError(apiErr(inAgent("a1"), "retry", 3))
				b.Session(sessEnd(4))
			},
			on: spans.RootSpanID(sid), kinds: []string{"no_response"}, moved: 1, end: 4,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := run(spans.Config{}, tc.feed)
			s := r.byID(tc.on)
			if s == nil {
				t.Fatal("span missing")
			}
			var kinds []string
			for _, e := range s.Events {
				if e.Name != spans.EventAPIError {
					t.Errorf("event %q", e.Name)
				}
				kinds = append(kinds, e.Attrs[0].Value.Str)
				if st, _ := (&spans.Span{Attrs: e.Attrs}).Attr(spans.AttrHTTPStatusCode); st.Int != 429 {
					t.Errorf("status %d", st.Int)
				}
				if _, ok := (&spans.Span{Attrs: e.Attrs}).Attr(spans.AttrErrorText); ok {
					t.Error("error text without capture")
				}
			}
			if strings.Join(kinds, ",") != strings.Join(tc.kinds, ",") {
				t.Errorf("events %v, want %v", kinds, tc.kinds)
			}
			if int(r.stats.EventsMoved) != tc.moved {
				t.Errorf("moved %d, want %d", r.stats.EventsMoved, tc.moved)
			}
			if !s.End.Equal(at(tc.end)) {
				t.Errorf("end %v, want %v", s.End, at(tc.end))
			}
		})
	}
}

// A <synthetic> line reporting an API error stands for a request that
// failed: it becomes a chat span with error.type and an error status,
// where the request would have sat.
func TestFailedRequest(t *testing.T) {
	tests := []struct {
		name   string
		u      session.APIError
		id     spans.SpanID
		parent spans.SpanID
	}{
		{"in a turn", session.APIError{Where: inTurn("p1"), ID: "e1", Kind: "rate_limit", Status: 429, Time: at(5)},
			spans.ErrorSpanID(sid, "e1"), spans.TurnSpanID(sid, "p1")},
		{"in a subagent", session.APIError{Where: inAgent("a1"), ID: "e2", Kind: "api_error", Time: at(5)},
			spans.ErrorSpanID(sid, "e2"), spans.AgentSpanID(sid, "a1")},
		{"no id: keyed by time and kind", session.APIError{Where: main(), Kind: "authentication_failed", Time: at(5)},
			spans.ErrorSpanID(sid, "@2026-01-02T03:04:10Z/authentication_failed"), spans.RootSpanID(sid)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := run(spans.Config{}, func(b *spans.Builder) { b.APIError(&tc.u) })
			s := r.byID(tc.id)
			if s == nil {
				t.Fatalf("no error span among %d", len(r.all))
			}
			if s.Status != spans.StatusError || s.Kind != spans.KindClient || s.ParentSpanID != tc.parent || s.Name != "chat" {
				t.Errorf("span %s kind %s status %s parent %s", s.Name, s.Kind, s.Status, s.ParentSpanID)
			}
			if attr(t, s, spans.AttrErrorType) != tc.u.Kind || attr(t, s, spans.AttrOperationName) != "chat" ||
				attr(t, s, spans.AttrSessionID) != sid {
				t.Errorf("attrs %+v", s.Attrs)
			}
			if tc.u.Status != 0 && attr(t, s, spans.AttrHTTPStatusCode) != tc.u.Status {
				t.Errorf("status code %v", attr(t, s, spans.AttrHTTPStatusCode))
			}
			if !s.Start.Equal(at(5)) || !s.End.Equal(at(5).Add(spans.MinDuration)) {
				t.Errorf("times %v..%v", s.Start, s.End)
			}
		})
	}
	// After its subagent's Subagent unit: the subagent's span waits for
	// the session's end, so the failed request sits under it and the
	// subagent's span covers it.
	r := run(spans.Config{}, func(b *spans.Builder) {
		b.Subagent(agent("a1", "tu1", 1, 3))
		b.APIError(&session.APIError{Where: inAgent("a1"), ID: "e3", Kind: "rate_limit", Time: at(4)})
		b.Session(sessEnd(5))
	})
	s, ag := r.byID(spans.ErrorSpanID(sid, "e3")), r.byID(spans.AgentSpanID(sid, "a1"))
	if s == nil || ag == nil || s.ParentSpanID != spans.AgentSpanID(sid, "a1") || s.End.After(ag.End) {
		t.Errorf("after its subagent: %+v under %+v", s, ag)
	}
	for _, k := range []string{"retry", "no_response", "synthetic", ""} {
		if spans.FailedRequest(k) {
			t.Errorf("%q counted as a failed request", k)
		}
	}
}

func TestEventCapAndLoss(t *testing.T) {
	r := run(spans.Config{MaxEvents: 2}, func(b *spans.Builder) {
		for i := range 5 {
			b.APIError(&session.APIError{Where: inTurn("p1"), Kind: "retry", Time: at(i)})
		}
		b.Turn(turn("p1", 0, 5))
		b.Session(sessEnd(6))
		b.APIError(&session.APIError{Where: main(), Kind: "retry", Time: at(7)})
	})
	s := r.byID(spans.TurnSpanID(sid, "p1"))
	if len(s.Events) != 2 || attr(t, s, spans.AttrEventsDropped) != int64(3) {
		t.Errorf("%d events, dropped %v; want 2 and 3", len(s.Events), attr(t, s, spans.AttrEventsDropped))
	}
	if r.stats.EventsDropped != 3 {
		t.Errorf("stats dropped %d", r.stats.EventsDropped)
	}
	// The last error came after the session ended: its state was freed,
	// and the event waits for a root that a new Session unit would emit.
	if r.stats.EventsLost != 0 {
		t.Errorf("lost %d", r.stats.EventsLost)
	}
}

func TestTimes(t *testing.T) {
	tests := []struct {
		name             string
		unit             func(b *spans.Builder)
		id               spans.SpanID
		start, end       time.Time
		clamped, untimed int64
	}{
		{"end before start is clamped", func(b *spans.Builder) { b.Request(req(inTurn("p1"), "m1", 5, 3)) },
			spans.RequestSpanID(sid, "m1"), at(5), at(5).Add(spans.MinDuration), 1, 0},
		{"missing end is the start", func(b *spans.Builder) {
			c := tool(inTurn("p1"), "tu1", "m1", "Bash", 4, 0, session.OutcomeUnanswered)
			c.End = time.Time{}
			b.ToolCall(c)
		}, spans.ToolSpanID(sid, "tu1"), at(4), at(4).Add(spans.MinDuration), 0, 0},
		{"missing start is the end", func(b *spans.Builder) {
			a := agent("a1", "", 0, 6)
			a.Start = time.Time{}
			b.Subagent(a)
			b.Session(sessEnd(9))
		}, spans.AgentSpanID(sid, "a1"), at(6), at(6).Add(spans.MinDuration), 0, 0},
		{"no time at all takes the session's latest", func(b *spans.Builder) {
			b.Turn(turn("p0", 1, 8))
			r := req(inTurn("p1"), "m1", 0, 0)
			r.Start, r.End = time.Time{}, time.Time{}
			b.Request(r)
		}, spans.RequestSpanID(sid, "m1"), at(8), at(8).Add(spans.MinDuration), 0, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := run(spans.Config{}, tc.unit)
			s := r.byID(tc.id)
			if !s.Start.Equal(tc.start) || !s.End.Equal(tc.end) {
				t.Errorf("times %v..%v, want %v..%v", s.Start, s.End, tc.start, tc.end)
			}
			if r.stats.Clamped != tc.clamped || r.stats.Untimed != tc.untimed {
				t.Errorf("stats %+v", r.stats)
			}
		})
	}
}

func TestCapture(t *testing.T) {
	feed := func(b *spans.Builder) {
		tu := turn("p1", 1, 2)
		tu.Prompt = "héllo wörld, a long prompt"
		b.Turn(tu)
		b.Request(req(inTurn("p1"), "m1", 1, 2))
		b.ToolCall(tool(inTurn("p1"), "tu1", "m1", "Bash", 1, 2, session.OutcomeOK))
		b.APIError(&session.APIError{Where: main(), ID: "e1", Kind: "rate_limit", Time: at(1), Text: "limit"})
		b.Subagent(agent("a1", "tu1", 1, 2))
		b.Session(sessEnd(3))
	}
	off := run(spans.Config{}, feed)
	for _, s := range off.all {
		for _, a := range s.Attrs {
			switch a.Key {
			case spans.AttrInputMessages, spans.AttrOutputMessages, spans.AttrSystemInstructions,
				spans.AttrToolCallArguments, spans.AttrToolCallResult, spans.AttrErrorText,
				spans.AttrSessionTitle, spans.AttrAgentDescription:
				t.Errorf("capture off: %s on %s", a.Key, s.Name)
			}
		}
	}
	on := run(spans.Config{Capture: spans.Capture{Prompts: true, Responses: true, Tools: true, Thinking: true}, CaptureMaxBytes: 2}, feed)
	// The GenAI conventions' structure: messages of a role and parts.
	if v := attr(t, on.byID(spans.TurnSpanID(sid, "p1")), spans.AttrInputMessages); v != `[{"role":"user","parts":[{"type":"text","content":"h"}]}]` {
		t.Errorf("prompt cut at a rune boundary: %s", v)
	}
	rq := on.byID(spans.RequestSpanID(sid, "m1"))
	if v := attr(t, rq, spans.AttrOutputMessages); v != `[{"role":"assistant","parts":[{"type":"reasoning","content":"hm"},{"type":"text","content":"an"}],"finish_reason":"tool_call"}]` {
		t.Errorf("output messages %s", v)
	}
	tl := on.byID(spans.ToolSpanID(sid, "tu1"))
	if attr(t, tl, spans.AttrToolCallArguments) != `{"` || attr(t, tl, spans.AttrToolCallResult) != "re" {
		t.Errorf("tool input %v output %v", attr(t, tl, spans.AttrToolCallArguments), attr(t, tl, spans.AttrToolCallResult))
	}
	root := on.byID(spans.RootSpanID(sid))
	if v := attr(t, on.byID(spans.ErrorSpanID(sid, "e1")), spans.AttrErrorText); v != "li" {
		t.Errorf("error text %q", v)
	}
	if root.Name != "session p s-1: ti" {
		t.Errorf("root name with capture %q", root.Name)
	}
	if attr(t, root, spans.AttrSessionTitle) != "ti" || attr(t, on.byID(spans.AgentSpanID(sid, "a1")), spans.AttrAgentDescription) != "lo" {
		t.Errorf("title %v description %v", attr(t, root, spans.AttrSessionTitle), attr(t, on.byID(spans.AgentSpanID(sid, "a1")), spans.AttrAgentDescription))
	}
	only := run(spans.Config{Capture: spans.Capture{Tools: true}}, feed)
	if _, ok := only.byID(spans.TurnSpanID(sid, "p1")).Attr(spans.AttrInputMessages); ok {
		t.Error("tools capture put the prompt on")
	}
}

// Root and turn spans carry token totals by type and the estimated cost
// of their requests; a turn closed before its requests were emitted (a
// one-shot run settles them later) waits for them.
func TestTotalsAndNames(t *testing.T) {
	price := func(model string, tk session.Tokens, _ *session.Request) (float64, bool) {
		if model != "claude-x" {
			return 0, false
		}
		return float64(tk.Output) / 100, true
	}
	r := run(spans.Config{Price: price}, func(b *spans.Builder) {
		b.Session(sessStart())
		b.Request(req(inTurn("p1"), "m1", 1, 2))
		tu := turn("p1", 1, 5)
		tu.Number, tu.Requests = 3, 3
		b.Turn(tu)
		glm := req(inTurn("p1"), "m2", 2, 3)
		glm.Model = "glm-4.7"
		b.Request(glm)
		b.Request(req(inAgent("a1"), "m3", 3, 4)) // a subagent's: the root's total only
		b.Request(req(inTurn("p1"), "m4", 4, 5))
		b.Session(sessEnd(9))
	})
	turnSpan, root := r.byID(spans.TurnSpanID(sid, "p1")), r.byID(spans.RootSpanID(sid))
	if turnSpan.Name != "invoke_agent claude-code turn 3" || attr(t, turnSpan, spans.AttrPromptNumber) != int64(3) {
		t.Errorf("turn %q number %v", turnSpan.Name, attr(t, turnSpan, spans.AttrPromptNumber))
	}
	if root.Name != "session p s-1" {
		t.Errorf("root %q", root.Name)
	}
	checks := []struct {
		s    *spans.Span
		k    string
		want any
	}{
		{turnSpan, spans.AttrTotalOutputTokens, int64(150)},
		{turnSpan, spans.AttrRawInputTokens, int64(9)},
		{turnSpan, spans.AttrTotalCacheReadTokens, int64(300)},
		{turnSpan, spans.AttrCacheWrite5mTokens, int64(60)},
		{turnSpan, spans.AttrCacheWrite1hTokens, int64(21)},
		{turnSpan, spans.AttrCostUSD, 1.0},
		{turnSpan, spans.AttrUnpricedTokens, int64(180)},
		{turnSpan, spans.AttrProviderName, nil}, // mixed: claude-x and glm-4.7
		// Totals never repeat under gen_ai.usage.*: GenAI tools add those
		// up over every span of a trace.
		{turnSpan, spans.AttrUsageOutputTokens, nil},
		{turnSpan, spans.AttrUsageInputTokens, nil},
		{turnSpan, spans.AttrUsageCacheReadTokens, nil},
		{turnSpan, spans.AttrUsageCacheWriteTokens, nil},
		{turnSpan, spans.AttrUsageCost, nil},
		{root, spans.AttrTotalOutputTokens, int64(200)},
		{root, spans.AttrUsageOutputTokens, nil},
		{root, spans.AttrUsageCost, nil},
		{root, spans.AttrCostUSD, 1.5},
		{r.byID(spans.RequestSpanID(sid, "m1")), spans.AttrCostUSD, 0.5},
		{r.byID(spans.RequestSpanID(sid, "m1")), spans.AttrUsageCost, 0.5},
		{r.byID(spans.RequestSpanID(sid, "m1")), spans.AttrUsageOutputTokens, int64(50)},
		{r.byID(spans.RequestSpanID(sid, "m2")), spans.AttrCostUSD, nil},
		{r.byID(spans.RequestSpanID(sid, "m2")), spans.AttrUsageCost, nil},
		{r.byID(spans.RequestSpanID(sid, "m2")), spans.AttrProviderName, nil},
		{r.byID(spans.RequestSpanID(sid, "m1")), spans.AttrProviderName, "anthropic"},
	}
	for _, c := range checks {
		if got := attr(t, c.s, c.k); got != c.want {
			t.Errorf("%s %s = %v, want %v", c.s.Name, c.k, got, c.want)
		}
	}
	// The turn went out with its last request, before the root.
	if i, j := indexOf(r.all, spans.TurnSpanID(sid, "p1")), indexOf(r.all, spans.RequestSpanID(sid, "m4")); i != j+1 {
		t.Errorf("turn emitted at %d, last request at %d", i, j)
	}
}

func indexOf(all []spans.Span, id spans.SpanID) int {
	for i := range all {
		if all[i].SpanID == id {
			return i
		}
	}
	return -1
}

func TestProvider(t *testing.T) {
	for model, want := range map[string]string{
		"claude-opus-4-5-20251101": "anthropic", "us.anthropic.claude-sonnet-4-5-v1:0": "anthropic",
		"claude-opus-4.6-1m": "anthropic", "glm-4.7": "", "MiniMax-M2": "", "qwen3-coder": "", "": "", "<synthetic>": "",
	} {
		if got := spans.Provider(model); got != want {
			t.Errorf("Provider(%q) = %q, want %q", model, got, want)
		}
	}
}

func TestPrivacy(t *testing.T) {
	feed := func(b *spans.Builder) {
		st := sessStart()
		st.Cwd, st.Project = `C:\Users\alice\repo`, `C:\Users\alice\repo`
		b.Session(st)
		b.Turn(&session.Turn{Where: session.Where{SessionID: sid, TurnID: "p1"}, PromptUUID: "p1", Number: 1, Start: at(1), End: at(2)})
		end := sessEnd(3)
		end.Cwd, end.Project = st.Cwd, st.Project
		b.Session(end)
	}
	def := run(spans.Config{}, feed)
	for _, s := range def.all {
		if attr(t, &s, spans.AttrProject) != "repo" || attr(t, &s, spans.AttrGitBranch) != nil {
			t.Errorf("default: %s project %v branch %v", s.Name, attr(t, &s, spans.AttrProject), attr(t, &s, spans.AttrGitBranch))
		}
		if strings.Contains(s.Name, "alice") {
			t.Errorf("default: name %q", s.Name)
		}
	}
	full := run(spans.Config{Project: func(p string) string { return p }, Identifying: true}, feed)
	root := full.byID(spans.RootSpanID(sid))
	if attr(t, root, spans.AttrProject) != `C:\Users\alice\repo` || attr(t, root, spans.AttrGitBranch) != "main" {
		t.Errorf("path and identifying: %+v", root.Attrs)
	}
	none := run(spans.Config{Project: func(string) string { return "" }}, feed)
	if root := none.byID(spans.RootSpanID(sid)); root.Name != "session s-1" || attr(t, root, spans.AttrProject) != nil {
		t.Errorf("no project: %q %+v", root.Name, root.Attrs)
	}
}

func TestRequestUpdateIsIgnored(t *testing.T) {
	r := run(spans.Config{}, func(b *spans.Builder) {
		b.Request(req(inTurn("p1"), "m1", 1, 2))
		b.RequestUpdate(&session.RequestUpdate{Where: inTurn("p1"), MessageID: "m1", Model: "claude-x", Delta: session.Tokens{Output: 10}})
	})
	if len(r.all) != 1 {
		t.Errorf("%d spans", len(r.all))
	}
}

func TestStandInSubagent(t *testing.T) {
	// A request names a subagent that never comes as a unit of this
	// session: the session end makes a stand-in so the parent exists.
	r := run(spans.Config{}, func(b *spans.Builder) {
		b.Request(req(inAgent("ghost"), "m1", 3, 4))
		b.ToolCall(tool(inAgent("ghost"), "tu1", "m1", "Read", 4, 6, session.OutcomeOK))
		b.Session(sessEnd(9))
	})
	s := r.byID(spans.AgentSpanID(sid, "ghost"))
	if s == nil {
		t.Fatal("no stand-in")
	}
	if s.ParentSpanID != spans.RootSpanID(sid) || attr(t, s, spans.AttrAgentStandIn) != true || !s.Start.Equal(at(3)) || !s.End.Equal(at(6)) {
		t.Errorf("stand-in %+v", s)
	}
	if r.stats.StandInAgents != 1 || len(r.all) != 4 {
		t.Errorf("stats %+v, %d spans", r.stats, len(r.all))
	}
}

func TestTurnGranularity(t *testing.T) {
	cfg := spans.Config{Granularity: spans.GranularityTurn}
	t.Run("turn is a root linked to the session", func(t *testing.T) {
		r := run(cfg, func(b *spans.Builder) {
			b.Request(req(inTurn("p1"), "m1", 1, 2, "tu1"))
			b.ToolCall(tool(inTurn("p1"), "tu1", "m1", "Task", 2, 9, session.OutcomeOK))
			b.Request(req(main(), "m0", 0, 1))
			b.Turn(turn("p1", 1, 9))
			b.Session(sessEnd(9))
		})
		tr := spans.TurnTraceID(sid, "p1")
		turnSpan := r.byID(spans.TurnSpanID(sid, "p1"))
		if turnSpan.TraceID != tr || !turnSpan.ParentSpanID.IsZero() || len(turnSpan.Links) != 1 ||
			turnSpan.Links[0].SpanID != spans.RootSpanID(sid) || turnSpan.Links[0].TraceID != spans.SessionTraceID(sid) {
			t.Errorf("turn span %+v", turnSpan)
		}
		for _, id := range []spans.SpanID{spans.RequestSpanID(sid, "m1"), spans.ToolSpanID(sid, "tu1")} {
			if s := r.byID(id); s.TraceID != tr {
				t.Errorf("%s in trace %s, want the turn's", s.Name, s.TraceID)
			}
		}
		if s := r.byID(spans.RequestSpanID(sid, "m0")); s.TraceID != spans.SessionTraceID(sid) || s.ParentSpanID != spans.RootSpanID(sid) {
			t.Errorf("request before any turn: %+v", s)
		}
	})
	t.Run("subagent spans wait for their turn", func(t *testing.T) {
		var held int
		r := run(cfg, func(b *spans.Builder) {
			// Legacy layout read first: the subagent's work, then the
			// session file that launched it.
			b.Request(req(inAgent("a1"), "m2", 3, 4, "tu2"))
			b.ToolCall(tool(inAgent("a1"), "tu2", "m2", "Read", 4, 5, session.OutcomeOK))
			held = b.Held()
			b.ToolCall(tool(inTurn("p1"), "tu1", "m1", "Task", 2, 9, session.OutcomeOK))
			b.Subagent(agent("a1", "tu1", 2, 9))
			b.Request(req(inTurn("p1"), "m1", 1, 2, "tu1"))
			b.Turn(turn("p1", 1, 9))
			b.Session(sessEnd(9))
		})
		if held != 2 {
			t.Errorf("held %d spans, want 2", held)
		}
		tr := spans.TurnTraceID(sid, "p1")
		for _, s := range r.all {
			if !strings.HasPrefix(s.Name, "session ") && s.TraceID != tr {
				t.Errorf("%s in trace %s, want the turn's", s.Name, s.TraceID)
			}
		}
		if r.stats.Unlinked != 0 || len(r.all) != 7 {
			t.Errorf("stats %+v, %d spans", r.stats, len(r.all))
		}
	})
	t.Run("launching call never seen: under the root, in the session trace", func(t *testing.T) {
		// What a session whose main file is gone leaves: the subagent's
		// file names a call that never comes.
		r := run(cfg, func(b *spans.Builder) {
			b.Request(req(inAgent("a1"), "m2", 3, 4))
			b.Subagent(agent("a1", "tu-missing", 2, 9))
			b.Session(sessEnd(9))
		})
		if r.stats.Unlinked != 0 {
			t.Errorf("unlinked %d, want 0: the subagent's place is known at the session's end", r.stats.Unlinked)
		}
		for _, s := range r.all {
			if s.TraceID != spans.SessionTraceID(sid) {
				t.Errorf("%s not in the session trace", s.Name)
			}
		}
		if ag := r.byID(spans.AgentSpanID(sid, "a1")); ag == nil || ag.ParentSpanID != spans.RootSpanID(sid) || len(ag.Links) != 0 {
			t.Errorf("subagent %+v, want it under the root, unlinked", ag)
		}
	})
	t.Run("bounded", func(t *testing.T) {
		var held int
		r := run(spans.Config{Granularity: spans.GranularityTurn, MaxPending: 3}, func(b *spans.Builder) {
			for i := range 5 {
				b.Request(req(inAgent("a"+string(rune('0'+i))), "m"+string(rune('0'+i)), 1, 2))
			}
			held = b.Held()
		})
		if held != 3 || r.stats.Unlinked != 2 || len(r.all) != 2 {
			t.Errorf("held %d, unlinked %d, emitted %d", held, r.stats.Unlinked, len(r.all))
		}
	})
}

// TestHeldSubagentsOutliveARestart: the subagent runs whose spans wait
// for their session's end are listed (a state file keeps them, since the
// lines that made them are not read again after a crash), once each and
// in order, and a builder given them back emits their spans, with the
// same ids and times, when the session ends. They do not count in Held:
// the state file may move past their lines.
func TestHeldSubagentsOutliveARestart(t *testing.T) {
	var held []session.Subagent
	heldN := -1
	before := run(spans.Config{}, func(b *spans.Builder) {
		b.Request(req(inAgent("a2"), "m3", 3, 8))
		b.Subagent(agent("a2", "", 3, 4))
		b.Subagent(agent("a1", "tu1", 2, 9))
		b.Subagent(agent("a1", "tu1", 2, 9)) // the same run again: one span
		held, heldN = b.HeldAgents(), b.Held()
	})
	if len(before.all) != 1 || heldN != 0 {
		t.Fatalf("%d spans out before the session's end, Held %d; want only the request's, 0", len(before.all), heldN)
	}
	if len(held) != 2 || held[0].AgentID != "a1" || held[1].AgentID != "a2" {
		t.Fatalf("held %+v, want a1 then a2", held)
	}
	after := run(spans.Config{}, func(b *spans.Builder) {
		b.RestoreHeldAgents(held)
		if got := b.HeldAgents(); len(got) != 2 {
			t.Errorf("restored builder holds %d subagents, want 2", len(got))
		}
		b.Session(sessEnd(9))
		if got := b.HeldAgents(); len(got) != 0 {
			t.Errorf("%d subagents still held after the session's end", len(got))
		}
	})
	for _, a := range []struct {
		id         string
		start, end int
	}{{"a1", 2, 9}, {"a2", 3, 4}} {
		s := after.byID(spans.AgentSpanID(sid, a.id))
		if s == nil || s.TraceID != spans.SessionTraceID(sid) || !s.Start.Equal(at(a.start)) || !s.End.Equal(at(a.end)) {
			t.Errorf("subagent %s after the restart: %+v, want %v..%v in the session trace", a.id, s, at(a.start), at(a.end))
		}
	}
}

func TestSubagentCoversWhatItDidBefore(t *testing.T) {
	// Live mode: the subagent's requests settle and go out before the
	// tool call that launched it returns; its span covers them.
	r := run(spans.Config{}, func(b *spans.Builder) {
		b.Request(req(inAgent("a1"), "m1", 2, 20))
		b.Subagent(agent("a1", "tu1", 3, 9))
		b.Session(sessEnd(20))
	})
	s := r.byID(spans.AgentSpanID(sid, "a1"))
	if !s.Start.Equal(at(2)) || !s.End.Equal(at(20)) {
		t.Errorf("subagent span %v..%v, want %v..%v", s.Start, s.End, at(2), at(20))
	}
}

// TestSubagentPlacement: a subagent sits in the call that launched it
// when its work lies within the call; a background subagent, or one whose
// work went on after its call returned, sits under the root, linked to the
// call, and its span lasts as long as its work.
func TestSubagentPlacement(t *testing.T) {
	tests := []struct {
		name       string
		background bool
		workEnd    int // the subagent's last request ends here; the call returns at 5
		wantParent spans.SpanID
		wantEnd    int
	}{
		{"inside its call", false, 4, spans.ToolSpanID(sid, "tu1"), 5},
		{"background", true, 30, spans.RootSpanID(sid), 30},
		{"resumed after its call returned", false, 30, spans.RootSpanID(sid), 30},
	}
	for _, tc := range tests {
		for _, g := range []spans.Granularity{spans.GranularitySession, spans.GranularityTurn} {
			t.Run(tc.name, func(t *testing.T) {
				r := run(spans.Config{Granularity: g}, func(b *spans.Builder) {
					b.Session(sessStart())
					b.Request(req(inTurn("p1"), "m1", 1, 2, "tu1"))
					b.ToolCall(tool(inTurn("p1"), "tu1", "m1", "Agent", 2, 5, session.OutcomeOK))
					a := agent("a1", "tu1", 2, 5)
					a.Background = tc.background
					b.Subagent(a)
					b.Request(req(inAgent("a1"), "m2", 3, tc.workEnd))
					b.Turn(turn("p1", 1, 6))
					b.Session(sessEnd(40))
				})
				ag := r.byID(spans.AgentSpanID(sid, "a1"))
				if ag == nil {
					t.Fatal("no subagent span")
				}
				if ag.ParentSpanID != tc.wantParent || !ag.End.Equal(at(tc.wantEnd)) {
					t.Errorf("parent %s end %v, want %s %v", ag.ParentSpanID, ag.End, tc.wantParent, at(tc.wantEnd))
				}
				if tc.wantParent == spans.RootSpanID(sid) && (len(ag.Links) != 1 || ag.Links[0].SpanID != spans.ToolSpanID(sid, "tu1")) {
					t.Errorf("links %+v, want its call", ag.Links)
				}
				if got := attr(t, ag, spans.AttrAgentBackground); (got == true) != tc.background {
					t.Errorf("background attribute %v", got)
				}
				child := r.byID(spans.RequestSpanID(sid, "m2"))
				if child == nil || child.ParentSpanID != ag.SpanID || child.TraceID != ag.TraceID || child.End.After(ag.End) {
					t.Errorf("its request %+v is not inside it", child)
				}
			})
		}
	}
}
