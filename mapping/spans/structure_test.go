package spans_test

import (
	"path/filepath"
	"strings"
	"testing"

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
}

func newIssued() *issued {
	return &issued{toolMsg: map[string]string{}, agentTool: map[string]string{}, timed: map[string]bool{}}
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
func (x *issued) Turn(u *session.Turn) { x.turns++; x.timed[u.SessionID] = true }
func (x *issued) Request(u *session.Request) {
	x.timed[u.SessionID] = true
	x.requests++
	x.outputTotal += u.Tokens.Output
	for _, id := range u.ToolUseIDs {
		x.toolMsg[u.SessionID+"\x00"+id] = u.MessageID
	}
}
func (x *issued) RequestUpdate(u *session.RequestUpdate) { x.outputTotal += u.Delta.Output }
func (x *issued) ToolCall(u *session.ToolCall)           { x.tools++; x.timed[u.SessionID] = true }
func (x *issued) Subagent(u *session.Subagent) {
	x.timed[u.SessionID] = true
	x.agents++
	x.agentTool[u.SessionID+"\x00"+u.AgentID] = u.ToolUseID
}
func (x *issued) Compaction(u *session.Compaction) { x.compactions++; x.timed[u.SessionID] = true }
func (x *issued) APIError(*session.APIError)       {}

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
				all, st := treeSpans(t, dir, spans.Config{Granularity: g}, x)
				checkTree(t, all, x, g, st)
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
	if want := x.sessions + x.turns + x.requests + x.tools + x.agents + x.compactions + int(st.StandInAgents); len(all) != want {
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
	late := map[string]int{} // children ending after their parent, by parent kind
	defer func() {
		if len(late) > 0 {
			t.Logf("children ending after their parent (allowed; tools run after their request's last line): %v", late)
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
			root := s.Name == spans.SpanSession || (g == spans.GranularityTurn && s.Name == "invoke_agent claude-code")
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
		if s.End.After(parent.End) {
			pop, _ := parent.Attr(spans.AttrOperationName)
			late[pop.Str+"<-"+strings.SplitN(s.Name, " ", 2)[0]]++
		}
		op, _ := s.Attr(spans.AttrOperationName)
		switch {
		case op.Str == spans.OperationChat:
			out, _ := s.Attr(spans.AttrUsageOutputTokens)
			outSum += out.Int
			if s.Kind != spans.KindClient {
				t.Errorf("%s: kind %s", s.Name, s.Kind)
			}
		case op.Str == spans.OperationTool:
			id, _ := s.Attr(spans.AttrToolCallID)
			msg, ok := x.toolMsg[sid+"\x00"+id.Str]
			if !ok {
				t.Errorf("%s %s: no request issued it", s.Name, id.Str)
			} else if s.ParentSpanID != spans.RequestSpanID(sid, msg) {
				t.Errorf("%s %s: parent %s (%s), want the chat span of %s", s.Name, id.Str, parent.Name, s.ParentSpanID, msg)
			}
		case op.Str == spans.OperationAgent && s.Name != "invoke_agent claude-code":
			agent, _ := s.Attr(spans.AttrAgentID)
			tool := x.agentTool[sid+"\x00"+agent.Str]
			if tool == "" {
				if parent.Name != spans.SpanSession {
					t.Errorf("%s %s: no launching tool, parent %s", s.Name, agent.Str, parent.Name)
				}
				continue
			}
			callID, _ := parent.Attr(spans.AttrToolCallID)
			if callID.Str != tool || !strings.HasPrefix(parent.Name, "execute_tool ") {
				t.Errorf("%s %s: parent %q %s, want the tool span of %s", s.Name, agent.Str, parent.Name, callID.Str, tool)
			}
		}
		// Everything a subagent did sits under its span.
		if agent, ok := s.Attr(spans.AttrAgentID); ok && op.Str == spans.OperationChat {
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
		t.Errorf("sum of %s over chat spans = %d, requests total %d", spans.AttrUsageOutputTokens, outSum, x.outputTotal)
	}
}
