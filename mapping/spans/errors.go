package spans

// API errors: failed requests as chat spans, the other kinds as events
// buffered until their span is emitted.

import (
	"time"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/session"
)

// APIError becomes an event on the span of its turn, else of its
// subagent, else of the session; it is buffered until that span is
// emitted. When that span is already out, the event goes to the session
// span (and is lost if that is out too).
func (b *Builder) APIError(u *session.APIError) {
	s := b.sess(u.SessionID)
	s.touch(u.Time)
	if FailedRequest(u.Kind) {
		b.failedRequest(s, u)
		return
	}
	t := u.Time
	if t.IsZero() {
		t = s.last
	}
	ev := Event{Name: EventAPIError, Time: t, Attrs: []Attr{String(AttrAPIErrorKind, u.Kind)}}
	if u.Status != 0 {
		ev.Attrs = append(ev.Attrs, Int(AttrHTTPStatusCode, u.Status))
	}
	if b.cfg.Capture.Responses && u.Text != "" {
		ev.Attrs = append(ev.Attrs, String(AttrErrorText, b.cut(u.Text)))
	}
	moved := false
	switch {
	case u.TurnID != "":
		if _, done := s.turnsDone[u.TurnID]; !done {
			b.addEvent(bufOf(s.turns, u.TurnID), ev)
			return
		}
		moved = true
		ev.Attrs = append(ev.Attrs, String(AttrPromptID, u.TurnID))
	case u.AgentID != "":
		if _, done := s.agentsDone[u.AgentID]; !done {
			b.addEvent(bufOf(s.agents, u.AgentID), ev)
			return
		}
		moved = true
		ev.Attrs = append(ev.Attrs, String(AttrAgentID, u.AgentID))
	}
	if moved {
		b.stats.EventsMoved++
	}
	b.addEvent(&s.root, ev)
}

// FailedRequest reports whether an API error of kind stands for a request
// that failed (a <synthetic> line reporting an API error or a limit),
// rather than a retry notice or a synthetic message such as "No response
// requested.".
func FailedRequest(kind string) bool {
	switch kind {
	case "retry", "no_response", "synthetic", "":
		return false
	}
	return true
}

// failedRequest emits the chat span of a request that failed: error.type
// is the error's kind, the status is an error, and it sits where the
// request would have (its turn, subagent or the root).
func (b *Builder) failedRequest(s *sessState, u *session.APIError) {
	w := u.Where
	var moved []Attr
	// When the span of its turn or subagent is out already, the failed
	// request goes under the root (which is sent last and covers the
	// session), naming where it was, as API error events do.
	if _, done := s.turnsDone[w.TurnID]; done && w.TurnID != "" {
		if tt := s.turnTotal[w.TurnID]; tt == nil || !tt.held {
			moved = append(moved, String(AttrPromptID, w.TurnID))
			w.TurnID, w.AgentID = "", ""
		}
	} else if _, done := s.agentsDone[w.AgentID]; done && w.AgentID != "" && w.TurnID == "" {
		w.AgentID = ""
		moved = append(moved, String(AttrAgentID, u.AgentID))
	}
	parent, sc := parentOf(&w)
	start, end := b.times(s, u.Time, u.Time)
	s.refAgent(&w, start, end)
	id := u.ID
	if id == "" {
		id = "@" + u.Time.UTC().Format(time.RFC3339Nano) + "/" + u.Kind
	}
	attrs := make([]Attr, 0, 8)
	attrs = append(attrs, String(AttrOperationName, OperationChat))
	attrs = sessionAttrs(attrs, s.id)
	attrs = append(attrs, String(AttrErrorType, u.Kind), String(AttrAPIErrorKind, u.Kind))
	if u.Status != 0 {
		attrs = append(attrs, Int(AttrHTTPStatusCode, u.Status))
	}
	if w.AgentID != "" {
		attrs = append(attrs, String(AttrAgentID, w.AgentID))
	}
	attrs = append(attrs, moved...)
	if b.cfg.Capture.Responses && u.Text != "" {
		attrs = append(attrs, String(AttrErrorText, b.cut(u.Text)))
	}
	b.send(s, sc, Span{
		SpanID:        ErrorSpanID(s.id, id),
		ParentSpanID:  parent,
		Name:          OperationChat,
		Kind:          KindClient,
		Start:         start,
		End:           end,
		Attrs:         attrs,
		Status:        StatusError,
		StatusMessage: u.Kind,
	})
}

func bufOf(m map[string]*eventBuf, k string) *eventBuf {
	buf := m[k]
	if buf == nil {
		buf = &eventBuf{}
		m[k] = buf
	}
	return buf
}

func (b *Builder) addEvent(buf *eventBuf, ev Event) {
	if len(buf.events) >= b.cfg.MaxEvents {
		buf.dropped++
		b.stats.EventsDropped++
		return
	}
	buf.events = append(buf.events, ev)
}

// takeEvents moves the buffered events onto sp and stretches its end to
// the last of them: an API error or limit notice is a record of the turn
// (or subagent) too.
func (b *Builder) takeEvents(sp *Span, buf *eventBuf) {
	for _, e := range buf.events {
		if e.Time.After(sp.End) {
			sp.End = e.Time
		}
	}
	sp.Events = append(sp.Events, buf.events...)
	if buf.dropped > 0 {
		sp.Attrs = append(sp.Attrs, Int(AttrEventsDropped, buf.dropped))
	}
	buf.events, buf.dropped = nil, 0
}

// PullRequest implements session.Sink: a linked pull request is counted
// by the metrics; it makes no span.
func (b *Builder) PullRequest(*session.PullRequest) {}
