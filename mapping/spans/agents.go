package spans

// Subagent spans: where a subagent sits (inside its launching call, or
// under the root linked to it), and the spans held until the session ends
// so that each covers all its subagent did.

import (
	"cmp"
	"slices"
	"strings"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/session"
)

// standIns emits a span for each subagent that spans of the session sit
// in but that never came as a Subagent unit of the session, so that no
// span's parent is missing from the trace. It sits under the root, spans
// its children's times and is marked claude_code.agent.stand_in.
func (b *Builder) standIns(s *sessState) {
	if len(s.agentRefs) == 0 {
		return
	}
	ids := make([]string, 0, len(s.agentRefs))
	for id := range s.agentRefs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		r := s.agentRefs[id]
		b.stats.StandInAgents++
		b.agentSpan(s, &session.Subagent{
			Where:     session.Where{SessionID: s.id, AgentID: id, Project: s.project},
			AgentType: "unknown",
			Start:     r.start,
			End:       r.end,
			Ended:     true,
		}, true)
	}
	clear(s.agentRefs)
}

// Subagent emits the invoke_agent span of a subagent run, under the tool
// call that launched it (or the session root when that is unknown).
func (b *Builder) Subagent(u *session.Subagent) {
	s := b.sess(u.SessionID)
	s.touch(u.End)
	if !u.Ended {
		return
	}
	// The span waits for the session's end, so that it covers all the
	// subagent did: a background agent works on after its call returned,
	// a warmup agent's requests come after its prompt, a resumed agent
	// works again later. With a trace per turn, its spans wait with it
	// (up to MaxPending), since its place decides their trace.
	if _, done := s.agentsDone[u.AgentID]; done {
		return
	}
	// A held subagent is part of the daemon's state file (HeldAgents):
	// the file moves past its lines while its span waits.
	if _, held := s.heldAgents[u.AgentID]; !held {
		c := *u
		s.heldAgents[u.AgentID] = &c
	}
}

// HeldAgents returns the subagent runs whose spans wait for their
// session's end, in the order of their sessions, starts and ids. A state
// file keeps them: past a crash, the lines that made them are not read
// again, and RestoreHeldAgents gives them back.
func (b *Builder) HeldAgents() []session.Subagent {
	var out []session.Subagent
	for _, s := range b.sessions {
		for _, u := range s.heldAgents {
			out = append(out, *u)
		}
	}
	slices.SortFunc(out, func(x, y session.Subagent) int {
		return cmp.Or(strings.Compare(x.SessionID, y.SessionID), agentOrder(&x, &y))
	})
	return out
}

// RestoreHeldAgents holds again the subagent runs a state file kept
// (HeldAgents); their spans go out when their sessions end.
func (b *Builder) RestoreHeldAgents(us []session.Subagent) {
	for i := range us {
		if us[i].Ended {
			b.Subagent(&us[i])
		}
	}
}

// runsInCall says a subagent ran inside the call that launched it: the
// call's span exists and did not return before the work was done
// (neither a background nor a warmup agent).
func (s *sessState) runsInCall(u *session.Subagent) bool {
	if u.ToolUseID == "" || u.Background || u.Warmup {
		return false
	}
	_, ok := s.agentTools[u.ToolUseID]
	return ok
}

// traceOfTool is the trace a tool span went to: the session's, or under
// GranularityTurn its turn's when known.
func (s *sessState) traceOfTool(id string) TraceID {
	if s.toolScope != nil {
		if sc, ok := s.toolScope[id]; ok {
			if tr, missing := s.resolve(sc); missing == "" {
				return tr
			}
		}
	}
	return s.trace
}

// agentOrder orders subagent runs by their starts, then ids.
func agentOrder(x, y *session.Subagent) int {
	return cmp.Or(x.Start.Compare(y.Start), strings.Compare(x.AgentID, y.AgentID))
}

// releaseAgents emits the held subagent spans when their session ends, in
// the order of their starts.
func (b *Builder) releaseAgents(s *sessState) {
	if len(s.heldAgents) == 0 {
		return
	}
	held := make([]*session.Subagent, 0, len(s.heldAgents))
	for _, u := range s.heldAgents {
		held = append(held, u)
	}
	slices.SortFunc(held, agentOrder)
	for _, u := range held {
		b.agentSpan(s, u, false)
	}
	clear(s.heldAgents)
}

func (b *Builder) agentSpan(s *sessState, u *session.Subagent, standIn bool) {
	if _, done := s.agentsDone[u.AgentID]; done {
		return
	}
	s.agentsDone[u.AgentID] = struct{}{}
	start, end := b.times(s, u.Start, u.End)
	// Spans of the subagent already out (its requests settled before the
	// tool call that launched it returned, or its file was read first)
	// widen its span: it covers what it did.
	if r := s.agentRefs[u.AgentID]; r != nil {
		if !r.start.IsZero() && r.start.Before(start) {
			start = r.start
		}
		if r.end.After(end) {
			end = r.end
		}
		delete(s.agentRefs, u.AgentID)
	}
	// A subagent sits in the call that launched it when the call returned
	// after its work; otherwise (background, warmup, a call not seen, a
	// stand-in) under the root, linked to the call when its span exists.
	parent, sc := RootSpanID(s.id), scope{}
	call, callSent := s.agentTools[u.ToolUseID]
	callSent = callSent && u.ToolUseID != ""
	inCall := !standIn && s.runsInCall(u)
	if inCall && (start.Before(call.start) || end.After(call.end)) {
		// It worked outside its call too (resumed later): under the root.
		inCall = false
	}
	var links []Link
	switch {
	case inCall:
		parent, sc = ToolSpanID(s.id, u.ToolUseID), scope{tool: u.ToolUseID}
	case callSent:
		links = []Link{{TraceID: s.traceOfTool(u.ToolUseID), SpanID: ToolSpanID(s.id, u.ToolUseID)}}
	}
	attrs := make([]Attr, 0, 10)
	attrs = append(attrs, String(AttrOperationName, OperationAgent))
	attrs = sessionAttrs(attrs, s.id)
	attrs = append(attrs,
		String(AttrAgentID, u.AgentID),
		String(AttrAgentName, u.AgentType),
	)
	// The description is part of the Task/Agent call's input: content,
	// captured with tools only.
	if u.Description != "" && b.cfg.Capture.Tools {
		attrs = append(attrs, String(AttrAgentDescription, b.cut(u.Description)))
	}
	if u.Warmup {
		attrs = append(attrs, Bool(AttrAgentWarmup, true))
	}
	if u.Background {
		attrs = append(attrs, Bool(AttrAgentBackground, true))
	}
	if standIn {
		attrs = append(attrs, Bool(AttrAgentStandIn, true))
	}
	sp := Span{
		SpanID:       AgentSpanID(s.id, u.AgentID),
		ParentSpanID: parent,
		Links:        links,
		Name:         OperationAgent + " " + u.AgentType,
		Kind:         KindInternal,
		Start:        start,
		End:          end,
		Attrs:        attrs,
	}
	if buf := s.agents[u.AgentID]; buf != nil {
		b.takeEvents(&sp, buf)
		delete(s.agents, u.AgentID)
	}
	if s.agentScope != nil {
		s.agentScope[u.AgentID] = sc
		b.release(s, "a:"+u.AgentID)
	}
	b.send(s, sc, sp)
}
