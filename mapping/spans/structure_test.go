package spans_test

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/metrics"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/session"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/spans"
)

// issued records, independently of the builder, which request issued
// each tool call, which tool launched each subagent and the output tokens
// of every request, from the units themselves.
type issued struct {
	toolMsg     map[string]string // session\x00tool_use id → message id
	agentTool   map[string]string // session\x00agent id → tool_use id
	outputTotal int64
	requests    int
	tools       int
	agents      int
	turns       int
	sessions    int
	compactions int
	// timeless counts ended sessions that never had a time nor any other
	// unit: they get no span (no trace dated 1970).
	timeless int
	timed    map[string]bool // session id → some unit of it had a time or was not a Session unit
	// failed counts API errors that stand for a failed request (a chat
	// span with an error status each).
	failed int
	// sessTokens sums the tokens of each session's requests (first
	// copies, as the chat spans carry them).
	sessTokens map[string]session.Tokens
	// untyped counts Task/Agent calls issued without a subagent_type.
	untyped int
}

func newIssued() *issued {
	return &issued{toolMsg: map[string]string{}, agentTool: map[string]string{}, timed: map[string]bool{},
		sessTokens: map[string]session.Tokens{}}
}

func (x *issued) Session(u *session.Session) {
	if !u.Start.IsZero() || !u.End.IsZero() {
		x.timed[u.SessionID] = true
	}
	if !u.Ended {
		return
	}
	if x.timed[u.SessionID] || u.Turns > 0 {
		x.sessions++
	} else {
		x.timeless++
	}
}
func (x *issued) Turn(u *session.Turn) {
	if u.Again {
		return // a turn's later active time: no span of its own
	}
	x.turns++
	x.timed[u.SessionID] = true
}
func (x *issued) Request(u *session.Request) {
	x.timed[u.SessionID] = true
	x.requests++
	x.outputTotal += u.Tokens.Output
	x.sessTokens[u.SessionID] = addTokens(x.sessTokens[u.SessionID], u.Tokens)
	for _, id := range u.ToolUseIDs {
		x.toolMsg[u.SessionID+"\x00"+id] = u.MessageID
	}
}
func (x *issued) RequestUpdate(u *session.RequestUpdate) { x.outputTotal += u.Delta.Output }
func (x *issued) ToolCall(u *session.ToolCall) {
	x.tools++
	x.timed[u.SessionID] = true
	if u.SubagentType == session.DefaultSubagentType {
		x.untyped++
	}
}
func (x *issued) Subagent(u *session.Subagent) {
	x.timed[u.SessionID] = true
	x.agents++
	x.agentTool[u.SessionID+"\x00"+u.AgentID] = u.ToolUseID
}
func (x *issued) Compaction(u *session.Compaction) { x.compactions++; x.timed[u.SessionID] = true }
func (x *issued) PullRequest(*session.PullRequest) {}
func (x *issued) APIError(u *session.APIError) {
	if spans.FailedRequest(u.Kind) {
		x.failed++
	}
}

func addTokens(a, b session.Tokens) session.Tokens {
	return session.Tokens{Input: a.Input + b.Input, Output: a.Output + b.Output, CacheRead: a.CacheRead + b.CacheRead,
		CacheWrite5m: a.CacheWrite5m + b.CacheWrite5m, CacheWrite1h: a.CacheWrite1h + b.CacheWrite1h}
}

// corpusConfig is the builder's configuration in the structural tests:
// the metrics' price table, as the daemon passes it.
func corpusConfig(g spans.Granularity) spans.Config {
	return spans.Config{Granularity: g, Price: defaultPrice()}
}

// defaultPrice prices requests with the embedded price table.
func defaultPrice() func(string, session.Tokens, *session.Request) (float64, bool) {
	prices := metrics.DefaultPrices()
	return func(model string, t session.Tokens, r *session.Request) (float64, bool) {
		return prices.RequestCost(model, metrics.RequestTime(r), t, metrics.ModifiersOf(r.Attribution))
	}
}

// isRoot and isTurn tell root and turn spans by their attributes.
func isRoot(s *spans.Span) bool { _, ok := s.Attr(spans.AttrSessionTurns); return ok }
func isTurn(s *spans.Span) bool { _, ok := s.Attr(spans.AttrTurnRequests); return ok }

func intAttr(s *spans.Span, k string) int64 { v, _ := s.Attr(k); return v.Int }

// tokensOf reads the token counts of a span by type: a chat span's
// gen_ai.usage.* and raw counts, a root's or turn's totals (under
// claude_code.usage.* only).
func tokensOf(s *spans.Span) session.Tokens {
	out, read := spans.AttrUsageOutputTokens, spans.AttrUsageCacheReadTokens
	if isRoot(s) || isTurn(s) {
		out, read = spans.AttrTotalOutputTokens, spans.AttrTotalCacheReadTokens
	}
	return session.Tokens{Input: intAttr(s, spans.AttrRawInputTokens), Output: intAttr(s, out),
		CacheRead: intAttr(s, read), CacheWrite5m: intAttr(s, spans.AttrCacheWrite5mTokens),
		CacheWrite1h: intAttr(s, spans.AttrCacheWrite1hTokens)}
}

// genaiUsageKeys are the attributes GenAI tools (Langfuse) add up over
// every span of a trace: only chat spans may carry them.
var genaiUsageKeys = []string{spans.AttrUsageInputTokens, spans.AttrUsageOutputTokens, spans.AttrUsageCacheReadTokens,
	spans.AttrUsageCacheWriteTokens, spans.AttrUsageCost}

// checkNames checks, on every span, what a user scanning a trace list or
// a GenAI tool needs (issue 12): the root names its project and session
// and carries the session's token totals and cost; each turn names its
// prompt number and carries its requests' totals and cost; every span
// has session.id beside gen_ai.conversation.id, gen_ai.operation.name and
// a positive duration; no subagent is "unknown" when its launching call
// is known; the provider is anthropic for Claude models only; failed
// requests carry error.type and an error status; and, capture and the
// identifying flag off, no git branch nor a project path.
func checkNames(t *testing.T, all []spans.Span, x *issued) {
	t.Helper()
	byID := map[spans.SpanID]*spans.Span{}
	for i := range all {
		byID[all[i].SpanID] = &all[i]
	}
	turnSums := map[spans.SpanID]session.Tokens{}
	turnNums := map[string]map[int64]bool{}
	failed := 0
	for i := range all {
		s := &all[i]
		conv, _ := s.Attr(spans.AttrConversationID)
		if sess, _ := s.Attr(spans.AttrSessionID); sess.Str != conv.Str || sess.Str == "" {
			t.Errorf("%s: session.id %q beside conversation id %q", s.Name, sess.Str, conv.Str)
		}
		op, _ := s.Attr(spans.AttrOperationName)
		if op.Str == "" {
			t.Errorf("%s: no %s", s.Name, spans.AttrOperationName)
		}
		if !s.End.After(s.Start) {
			t.Errorf("%s %s: duration %v, want positive", s.Name, s.SpanID, s.End.Sub(s.Start))
		}
		if s.Start.Year() < 2000 {
			t.Errorf("%s %s: dated %v", s.Name, s.SpanID, s.Start)
		}
		for _, k := range []string{spans.AttrGitBranch, spans.AttrInputMessages, spans.AttrOutputMessages,
			spans.AttrToolCallArguments, spans.AttrToolCallResult, spans.AttrSessionTitle} {
			if _, ok := s.Attr(k); ok {
				t.Errorf("%s: %s without capture or --traces.identifying-attributes", s.Name, k)
			}
		}
		if p, ok := s.Attr(spans.AttrProject); ok && p.Str != metrics.Basename(p.Str) {
			t.Errorf("%s: project %q, want the basename", s.Name, p.Str)
		}
		model, _ := s.Attr(spans.AttrRequestModel)
		prov, hasProv := s.Attr(spans.AttrProviderName)
		claude := strings.HasPrefix(metrics.NormalizeModel(model.Str), "claude")
		if op.Str == spans.OperationChat && model.Str != "" && (claude != hasProv || hasProv && prov.Str != spans.ProviderAnthropic) {
			t.Errorf("%s: provider %q for model %q", s.Name, prov.Str, model.Str)
		}
		if strings.HasPrefix(s.Name, "invoke_agent unknown") {
			agent, _ := s.Attr(spans.AttrAgentID)
			if x.agentTool[conv.Str+"\x00"+agent.Str] != "" {
				t.Errorf("%s %s: launched by a known call, still unknown", s.Name, agent.Str)
			}
		}
		if e, ok := s.Attr(spans.AttrErrorType); ok && op.Str == spans.OperationChat {
			failed++
			if s.Status != spans.StatusError || e.Str == "" {
				t.Errorf("%s: failed request with status %s error.type %q", s.Name, s.Status, e.Str)
			}
		}
		if op.Str == spans.OperationChat && model.Str != "" && isTurn(byID[s.ParentSpanID]) {
			turnSums[s.ParentSpanID] = addTokens(turnSums[s.ParentSpanID], tokensOf(s))
		}
		cost, hasCost := s.Attr(spans.AttrCostUSD)
		switch {
		case isRoot(s):
			want := spans.RootName(mustAttr(t, s, spans.AttrProject), conv.Str, "")
			if s.Name != want || !strings.Contains(s.Name, conv.Str[:min(8, len(conv.Str))]) {
				t.Errorf("root named %q, want %q", s.Name, want)
			}
			if got, want := tokensOf(s), x.sessTokens[conv.Str]; got != want {
				t.Errorf("%s: totals %+v, want the requests' %+v", s.Name, got, want)
			}
			if !hasCost || math.IsNaN(cost.Float()) || cost.Float() < 0 {
				t.Errorf("%s: cost %v", s.Name, cost.Str)
			}
		case isTurn(s):
			n := intAttr(s, spans.AttrPromptNumber)
			if n <= 0 || s.Name != spans.TurnName(int(n)) {
				t.Errorf("turn %q: prompt number %d", s.Name, n)
			}
			if turnNums[conv.Str] == nil {
				turnNums[conv.Str] = map[int64]bool{}
			}
			if turnNums[conv.Str][n] {
				t.Errorf("%s: prompt number %d twice in session %s", s.Name, n, conv.Str)
			}
			turnNums[conv.Str][n] = true
			if !hasCost {
				t.Errorf("%s: no cost", s.Name)
			}
		}
	}
	for id, sum := range turnSums {
		if got := tokensOf(byID[id]); got != sum {
			t.Errorf("%s: totals %+v, want its chat spans' %+v", byID[id].Name, got, sum)
		}
	}
	if failed != x.failed {
		t.Errorf("%d failed-request spans, want %d", failed, x.failed)
	}
}

func mustAttr(t *testing.T, s *spans.Span, k string) string {
	t.Helper()
	v, ok := s.Attr(k)
	if !ok {
		t.Errorf("%s: no %s", s.Name, k)
	}
	return v.Str
}

type spanKey struct {
	trace spans.TraceID
	span  spans.SpanID
}

// TestStructureOnEveryTree checks, on every real tree and at both
// granularities, that the spans form the tree of design §5: one span per
// unit, unique ids, every parent present in the same trace, tools under
// the request that issued them, subagents (and everything they did)
// under the tool call that launched them, times in order, and output
// tokens summing to the requests' total.
func TestStructureOnEveryTree(t *testing.T) {
	for _, dir := range corpusTrees(t) {
		for _, g := range []spans.Granularity{spans.GranularitySession, spans.GranularityTurn} {
			name := filepath.Base(dir) + "/session"
			if g == spans.GranularityTurn {
				name = filepath.Base(dir) + "/turn"
			}
			t.Run(name, func(t *testing.T) {
				x := newIssued()
				all, st := treeSpans(t, dir, corpusConfig(g), x)
				checkTree(t, all, x, g, st)
				checkNames(t, all, x)
				if st.Unlinked != 0 || st.EventsLost != 0 || st.EventsDropped != 0 {
					t.Errorf("stats: %+v", st)
				}
				t.Logf("%d spans (%d sessions, %d turns, %d requests, %d tools, %d subagents, %d compactions); stats %+v",
					len(all), x.sessions, x.turns, x.requests, x.tools, x.agents, x.compactions, st)
			})
		}
	}
}

func checkTree(t *testing.T, all []spans.Span, x *issued, g spans.Granularity, st spans.Stats) {
	t.Helper()
	if want := x.sessions + x.turns + x.requests + x.tools + x.agents + x.compactions + x.failed + int(st.StandInAgents); len(all) != want {
		t.Errorf("%d spans, want one per unit: %d", len(all), want)
	}
	if int(st.Timeless) != x.timeless {
		t.Errorf("%d sessions left without a trace for want of a time, want %d", st.Timeless, x.timeless)
	}
	for _, s := range all {
		if s.Start.Unix() <= 0 {
			t.Errorf("%s %s starts at %v: no span may be dated before 1970-01-01T00:00:01", s.Name, s.SpanID, s.Start)
		}
	}
	byKey := map[spanKey]*spans.Span{}
	byID := map[spans.SpanID]*spans.Span{}
	for i := range all {
		s := &all[i]
		k := spanKey{s.TraceID, s.SpanID}
		if _, dup := byID[s.SpanID]; dup {
			t.Errorf("duplicate span id %s (%s)", s.SpanID, s.Name)
		}
		byKey[k], byID[s.SpanID] = s, s
		if s.TraceID.IsZero() || s.SpanID.IsZero() {
			t.Errorf("%s: zero id", s.Name)
		}
		if s.End.Before(s.Start) || s.Start.IsZero() {
			t.Errorf("%s %s: times %v..%v", s.Name, s.SpanID, s.Start, s.End)
		}
	}
	var outSum int64
	late := map[string]int{} // children outside their parent's times, by parent and child kind
	defer func() {
		if len(late) > 0 {
			t.Errorf("children outside their parent's time range: %v", late)
		}
	}()
	for i := range all {
		s := &all[i]
		conv, _ := s.Attr(spans.AttrConversationID)
		sid := conv.Str
		if sid == "" {
			t.Errorf("%s %s: no %s", s.Name, s.SpanID, spans.AttrConversationID)
		}
		if s.ParentSpanID.IsZero() {
			root := isRoot(s) || (g == spans.GranularityTurn && isTurn(s))
			if !root {
				t.Errorf("%s %s: no parent", s.Name, s.SpanID)
			}
			continue
		}
		parent := byKey[spanKey{s.TraceID, s.ParentSpanID}]
		if parent == nil {
			where := "nowhere"
			if p := byID[s.ParentSpanID]; p != nil {
				where = "in trace " + p.TraceID.String() + " (" + p.Name + ")"
			}
			t.Errorf("%s %s (trace %s): parent %s is not in its trace but %s", s.Name, s.SpanID, s.TraceID, s.ParentSpanID, where)
			continue
		}
		if s.End.After(parent.End) || s.Start.Before(parent.Start) {
			late[strings.SplitN(parent.Name, " ", 2)[0]+"<-"+strings.SplitN(s.Name, " ", 2)[0]]++
		}
		op, _ := s.Attr(spans.AttrOperationName)
		// Over every span, as Langfuse sums them: only chat spans count.
		out, _ := s.Attr(spans.AttrUsageOutputTokens)
		outSum += out.Int
		if op.Str != spans.OperationChat || s.Kind != spans.KindClient {
			for _, k := range genaiUsageKeys {
				if _, ok := s.Attr(k); ok {
					t.Errorf("%s: %s on a span that is not a request", s.Name, k)
				}
			}
		}
		switch {
		case op.Str == spans.OperationChat:
			if s.Kind != spans.KindClient && s.Name != spans.SpanCompaction {
				t.Errorf("%s: kind %s", s.Name, s.Kind)
			}
		case op.Str == spans.OperationTool:
			id, _ := s.Attr(spans.AttrToolCallID)
			msg, ok := x.toolMsg[sid+"\x00"+id.Str]
			if !ok {
				t.Errorf("%s %s: no request issued it", s.Name, id.Str)
			} else if chat := byKey[spanKey{s.TraceID, spans.RequestSpanID(sid, msg)}]; chat == nil {
				t.Errorf("%s %s: the chat span of %s is not in its trace", s.Name, id.Str, msg)
			} else if s.ParentSpanID != chat.ParentSpanID || len(s.Links) != 1 || s.Links[0].SpanID != chat.SpanID || s.Links[0].TraceID != chat.TraceID {
				// A tool runs after its request's response ended: it sits
				// beside the chat span that asked for it, linked to it.
				t.Errorf("%s %s: parent %s, links %v; want the parent of the chat span of %s and a link to it", s.Name, id.Str, parent.Name, s.Links, msg)
			}
		case op.Str == spans.OperationAgent && !isRoot(s) && !isTurn(s):
			agent, _ := s.Attr(spans.AttrAgentID)
			tool := x.agentTool[sid+"\x00"+agent.Str]
			if tool == "" {
				if !isRoot(parent) {
					t.Errorf("%s %s: no launching tool, parent %s", s.Name, agent.Str, parent.Name)
				}
				continue
			}
			// Inside the call that launched it, or, when its work went on
			// after the call (background, warmup, resumed), under the root
			// with a link to the call (when the call's span exists).
			callID, _ := parent.Attr(spans.AttrToolCallID)
			inCall := callID.Str == tool && strings.HasPrefix(parent.Name, "execute_tool ")
			linked := len(s.Links) == 1 && s.Links[0].SpanID == spans.ToolSpanID(sid, tool)
			if !inCall && !(isRoot(parent) && (linked || byID[spans.ToolSpanID(sid, tool)] == nil)) {
				t.Errorf("%s %s: parent %q %s, links %v; want the tool span of %s, or the root linked to it", s.Name, agent.Str, parent.Name, callID.Str, s.Links, tool)
			}
		}
		// Everything a subagent did sits under its span (a failed request
		// that came after its subagent's span went out sits under the root,
		// naming the subagent).
		_, failed := s.Attr(spans.AttrErrorType)
		if agent, ok := s.Attr(spans.AttrAgentID); ok && op.Str == spans.OperationChat && !failed {
			want := spans.AgentSpanID(sid, agent.Str)
			found := false
			for p := parent; p != nil; p = byKey[spanKey{p.TraceID, p.ParentSpanID}] {
				if p.SpanID == want {
					found = true
					break
				}
			}
			if !found {
				t.Errorf("%s in subagent %s: not under the subagent's span", s.Name, agent.Str)
			}
		}
	}
	if outSum != x.outputTotal {
		t.Errorf("sum of %s over all spans = %d, requests total %d", spans.AttrUsageOutputTokens, outSum, x.outputTotal)
	}
}
