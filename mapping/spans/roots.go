package spans

// Root and turn spans: names, session facts and totals, and the turns
// held until their requests are in.

import (
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/session"
)

// Session handles the session's first unit (metadata for the turn spans)
// and its last (the root span).
func (b *Builder) Session(u *session.Session) {
	s := b.sess(u.SessionID)
	s.cwd, s.branch, s.version, s.slug, s.title, s.project = u.Cwd, u.GitBranch, u.Version, u.Slug, u.Title, u.Project
	s.touch(u.Start)
	s.touch(u.End)
	if !u.Ended {
		return
	}
	b.releaseAgents(s)
	b.standIns(s)
	b.finishTurns(s)
	if s.last.IsZero() && u.Turns == 0 && s.sent == 0 {
		b.stats.Timeless++
		delete(b.sessions, s.id)
		return
	}
	start, end := b.times(s, u.Start, u.End)
	start, end = s.extent.widen(start, end)
	attrs := make([]Attr, 0, 24)
	attrs = append(attrs,
		String(AttrOperationName, OperationAgent),
		String(AttrAgentName, MainAgentName),
	)
	if p := s.total.provider(); p != "" {
		attrs = append(attrs, String(AttrProviderName, p))
	}
	attrs = b.metaAttrs(s, attrs)
	// A title is written by the model from the prompt (ai-title) or by
	// the human (custom-title): content, captured with prompts only.
	title := ""
	if s.title != "" && b.cfg.Capture.Prompts {
		title = b.cut(s.title)
		attrs = append(attrs, String(AttrSessionTitle, title))
	}
	attrs = append(attrs, Int(AttrSessionTurns, int64(u.Turns)))
	attrs = b.totalAttrs(attrs, &s.total)
	// What GenAI tools show for the session: its first prompt and last
	// response (captured content only).
	if s.firstPrompt != "" {
		attrs = append(attrs, String(AttrInputValue, s.firstPrompt))
	}
	if s.lastText != "" {
		attrs = append(attrs, String(AttrOutputValue, s.lastText))
	}
	sp := Span{
		TraceID: SessionTraceID(s.id),
		SpanID:  RootSpanID(s.id),
		Name:    RootName(b.cfg.Project(s.cwdOrProject()), s.id, title),
		Kind:    KindInternal,
		Start:   start,
		End:     end,
		Attrs:   attrs,
	}
	b.takeEvents(&sp, &s.root)
	b.out(sp)
	// The session is over: what still waits for its turn will not learn
	// it. Send it in the session's trace.
	for len(s.pendingQ) > 0 {
		key := s.pendingQ[0]
		s.pendingQ = s.pendingQ[1:]
		b.unlink(s, key)
	}
	delete(b.sessions, s.id)
}

// finishTurns emits the turn spans still waiting for requests that never
// came, in the order of their prompts.
func (b *Builder) finishTurns(s *sessState) {
	var ids []string
	for id, tot := range s.turnTotal {
		if tot.held {
			ids = append(ids, id)
		}
	}
	slices.SortFunc(ids, func(x, y string) int {
		return cmpInt(intAttrOf(&s.turnTotal[x].span, AttrPromptNumber), intAttrOf(&s.turnTotal[y].span, AttrPromptNumber), x, y)
	})
	for _, id := range ids {
		b.finishTurn(s, id)
	}
	clear(s.turnTotal)
}

func intAttrOf(sp *Span, k string) int64 { v, _ := sp.Attr(k); return v.Int }

func cmpInt(a, b int64, x, y string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return strings.Compare(x, y)
}

// cwdOrProject is the session's working directory: the raw project of
// its units, else its cwd.
func (s *sessState) cwdOrProject() string {
	if s.project != "" {
		return s.project
	}
	return s.cwd
}

// RootName is the name of a session's root span: "session", the project
// (when it has one), the session id's first 8 characters and, when
// given (capture of prompts), the title cut to 60 bytes.
func RootName(project, sessionID, title string) string {
	var sb strings.Builder
	sb.WriteString(SpanSession)
	if project != "" {
		sb.WriteString(" ")
		sb.WriteString(project)
	}
	sb.WriteString(" ")
	sb.WriteString(cutBytes(sessionID, 8))
	if title != "" {
		sb.WriteString(": ")
		sb.WriteString(cutBytes(title, 60))
	}
	return sb.String()
}

// TurnName is the name of a turn span: "invoke_agent claude-code" and,
// when known (n > 0), "turn" and the prompt's number in the session.
func TurnName(n int) string {
	if n <= 0 {
		return OperationAgent + " " + MainAgentName
	}
	return OperationAgent + " " + MainAgentName + " " + SpanTurn + " " + strconv.Itoa(n)
}

// cutBytes cuts s to at most n bytes at a UTF-8 boundary.
func cutBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// sessionAttrs appends what every span of a session carries: the
// conversation id, under its GenAI and its general name.
func sessionAttrs(attrs []Attr, id string) []Attr {
	return append(attrs, String(AttrConversationID, id), String(AttrSessionID, id))
}

// metaAttrs appends the session facts shared by the root and turn spans.
func (b *Builder) metaAttrs(s *sessState, attrs []Attr) []Attr {
	attrs = sessionAttrs(attrs, s.id)
	if p := b.cfg.Project(s.cwdOrProject()); p != "" {
		attrs = append(attrs, String(AttrProject, p))
	}
	if s.branch != "" && b.cfg.Identifying {
		attrs = append(attrs, String(AttrGitBranch, s.branch))
	}
	if s.version != "" {
		attrs = append(attrs, String(AttrVersion, s.version))
	}
	if s.slug != "" {
		attrs = append(attrs, String(AttrSlug, s.slug))
	}
	return attrs
}

// Turn emits the span of one human turn.
func (b *Builder) Turn(u *session.Turn) {
	if u.Again {
		return // a turn's later active time, or time outside any turn: no span
	}
	s := b.sess(u.SessionID)
	s.touch(u.End)
	if _, done := s.turnsDone[u.PromptUUID]; done {
		return
	}
	s.turnsDone[u.PromptUUID] = struct{}{}
	start, end := b.times(s, u.Start, u.End)
	attrs := make([]Attr, 0, 28)
	attrs = append(attrs,
		String(AttrOperationName, OperationAgent),
		String(AttrAgentName, MainAgentName),
	)
	attrs = b.metaAttrs(s, attrs)
	attrs = append(attrs, String(AttrPromptID, u.PromptUUID))
	if u.Number > 0 {
		attrs = append(attrs, Int(AttrPromptNumber, int64(u.Number)))
	}
	attrs = append(attrs, Int(AttrTurnRequests, int64(u.Requests)))
	if b.cfg.Capture.Prompts && u.Prompt != "" {
		prompt := b.cut(u.Prompt)
		attrs = append(attrs, String(AttrInputMessages, inputMessages(prompt)), String(AttrInputValue, prompt))
		if s.firstPrompt == "" || (u.Number > 0 && u.Number < s.firstNum) {
			s.firstPrompt, s.firstNum = prompt, u.Number
		}
	}
	sp := Span{
		SpanID: TurnSpanID(s.id, u.PromptUUID),
		Name:   TurnName(u.Number),
		Kind:   KindInternal,
		Start:  start,
		End:    end,
		Attrs:  attrs,
	}
	if buf := s.turns[u.PromptUUID]; buf != nil {
		b.takeEvents(&sp, buf)
		delete(s.turns, u.PromptUUID)
	}
	tot := s.turnTotal[u.PromptUUID]
	if tot == nil {
		tot = &totals{}
		s.turnTotal[u.PromptUUID] = tot
	}
	tot.span, tot.want, tot.held = sp, u.Requests, true
	b.held++
	if tot.requests >= tot.want {
		b.finishTurn(s, u.PromptUUID)
	}
}

// finishTurn emits a turn's span, held until the requests of the turn
// were all emitted (a one-shot run settles them after the next prompt
// closed the turn) so that it carries their totals.
func (b *Builder) finishTurn(s *sessState, id string) {
	tot := s.turnTotal[id]
	delete(s.turnTotal, id)
	b.held--
	sp := tot.span
	sp.Start, sp.End = tot.extent.widen(sp.Start, sp.End)
	s.extent.add(sp.Start, sp.End)
	if p := tot.provider(); p != "" {
		sp.Attrs = append(sp.Attrs, String(AttrProviderName, p))
	}
	sp.Attrs = b.totalAttrs(sp.Attrs, tot)
	if tot.last != "" {
		sp.Attrs = append(sp.Attrs, String(AttrOutputValue, tot.last))
	}
	if b.cfg.Granularity == GranularityTurn {
		// The turn is the root of its own trace, linked to the session.
		sp.TraceID = TurnTraceID(s.id, id)
		sp.Links = []Link{{TraceID: SessionTraceID(s.id), SpanID: RootSpanID(s.id)}}
		b.out(sp)
		return
	}
	sp.TraceID = SessionTraceID(s.id)
	sp.ParentSpanID = RootSpanID(s.id)
	b.out(sp)
}
