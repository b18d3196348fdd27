package spans

// Placement: which trace a span goes to (under turn granularity, the
// turn's, known only once its subagent and tool links are), and the
// spans held until then.

// out emits a span whose trace id is set.
func (b *Builder) out(sp Span) {
	// A link without a trace points into the span's own trace (a tool
	// span's link to the chat span that asked for it).
	for i := range sp.Links {
		if sp.Links[i].TraceID.IsZero() {
			sp.Links[i].TraceID = sp.TraceID
		}
	}
	b.stats.Spans++
	b.emit(sp)
}

// send sets the trace id of a span placed at sc and emits it, or, under
// GranularityTurn when the turn of sc is not known yet, holds it back.
func (b *Builder) send(s *sessState, sc scope, sp Span) {
	s.sent++
	s.extent.add(sp.Start, sp.End)
	if sc.turn != "" {
		// The turn's span, while it waits for its requests, widens to
		// cover what happened in it.
		if tot := s.turnTotal[sc.turn]; tot != nil {
			tot.extent.add(sp.Start, sp.End)
		} else if _, done := s.turnsDone[sc.turn]; !done {
			tot = &totals{}
			tot.extent.add(sp.Start, sp.End)
			s.turnTotal[sc.turn] = tot
		}
	}
	if b.cfg.Granularity != GranularityTurn {
		sp.TraceID = s.trace
		b.out(sp)
		return
	}
	tr, missing := s.resolve(sc)
	if missing == "" {
		sp.TraceID = tr
		b.out(sp)
		return
	}
	if _, ok := s.pending[missing]; !ok {
		s.pendingQ = append(s.pendingQ, missing)
	}
	s.pending[missing] = append(s.pending[missing], sp)
	s.pendingN++
	b.held++
	for s.pendingN > b.cfg.MaxPending && len(s.pendingQ) > 0 {
		key := s.pendingQ[0]
		s.pendingQ = s.pendingQ[1:]
		b.unlink(s, key)
	}
}

// maxDepth bounds the walk up the scope chain (subagents of subagents);
// it also breaks cycles a corrupt transcript could create.
const maxDepth = 32

// resolve returns the trace of a span placed at sc, or the link key that
// is not known yet.
func (s *sessState) resolve(sc scope) (TraceID, string) {
	for range maxDepth {
		switch {
		case sc.turn != "":
			return TurnTraceID(s.id, sc.turn), ""
		case sc.agent != "":
			next, ok := s.agentScope[sc.agent]
			if !ok {
				return TraceID{}, "a:" + sc.agent
			}
			sc = next
		case sc.tool != "":
			next, ok := s.toolScope[sc.tool]
			if !ok {
				return TraceID{}, "t:" + sc.tool
			}
			sc = next
		default:
			return SessionTraceID(s.id), ""
		}
	}
	return SessionTraceID(s.id), ""
}

func (b *Builder) learnTool(s *sessState, toolUseID string, sc scope) {
	if toolUseID == "" {
		return
	}
	if _, ok := s.toolScope[toolUseID]; ok {
		return
	}
	s.toolScope[toolUseID] = sc
	b.release(s, "t:"+toolUseID)
}

// release sends again the spans waiting for key, now known.
func (b *Builder) release(s *sessState, key string) {
	waiting, ok := s.pending[key]
	if !ok {
		return
	}
	delete(s.pending, key)
	s.pendingN -= len(waiting)
	b.held -= len(waiting)
	for i, k := range s.pendingQ {
		if k == key {
			s.pendingQ = append(s.pendingQ[:i], s.pendingQ[i+1:]...)
			break
		}
	}
	for _, sp := range waiting {
		sc := scope{}
		// The span waited at key; resolve from there.
		if key[0] == 'a' {
			sc.agent = key[2:]
		} else {
			sc.tool = key[2:]
		}
		b.send(s, sc, sp)
	}
}

// unlink sends the spans waiting for key in the session's trace.
func (b *Builder) unlink(s *sessState, key string) {
	waiting := s.pending[key]
	delete(s.pending, key)
	s.pendingN -= len(waiting)
	b.held -= len(waiting)
	for _, sp := range waiting {
		sp.TraceID = SessionTraceID(s.id)
		b.stats.Unlinked++
		b.out(sp)
	}
}
