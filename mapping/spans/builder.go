package spans

import (
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/metrics"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/session"
)

// Granularity says how sessions map to traces.
type Granularity uint8

// Granularities (--traces.granularity).
const (
	// GranularitySession makes one trace per session, rooted at the
	// session span.
	GranularitySession Granularity = iota
	// GranularityTurn makes one trace per turn, rooted at the turn span;
	// what happens outside any turn (requests before the first prompt,
	// warmup agents) stays in the session's trace with the session span.
	// Each turn links to its session span and carries
	// gen_ai.conversation.id, so the turns of a session stay findable.
	GranularityTurn
)

// Capture says which content goes on spans. All off by default: no text
// leaves the machine unless asked for.
type Capture struct {
	Prompts   bool // the human prompt, on the turn span
	Responses bool // response text on chat spans, API error text on events
	Tools     bool // tool input and output, on tool spans
	Thinking  bool // thinking text, on chat spans
}

// Config of a Builder. Zero values take defaults.
type Config struct {
	Granularity Granularity
	Capture     Capture
	// CaptureMaxBytes cuts each captured text (at a UTF-8 boundary).
	CaptureMaxBytes int
	// MaxEvents bounds the events buffered for one span until it is
	// emitted; more are counted (Stats.EventsDropped and the span's
	// claude_code.events.dropped attribute).
	MaxEvents int
	// MaxPending bounds, under GranularityTurn, the spans of one session
	// held back because the turn they belong to is not known yet (a
	// subagent's spans seen before the tool call that launched it). Past
	// the bound the oldest waiting spans go to the session's trace.
	MaxPending int
	// Price returns the estimated USD cost of a request's tokens and
	// whether its model is priced: the metrics' price table
	// (metrics.Prices.Lookup). Nil: spans carry no cost.
	Price func(model string, t session.Tokens) (float64, bool)
	// Project turns a session's working directory into the
	// claude_code.project attribute and the root span's name, in the form
	// of the metrics' project label; "" leaves it out. Nil: the
	// directory's basename (metrics.Basename).
	Project func(cwd string) string
	// Identifying adds the git branch to the root and turn spans. Off by
	// default: a branch name often names a person or a ticket.
	Identifying bool
}

// Defaults of Config.
const (
	DefaultCaptureMaxBytes = 4096
	DefaultMaxEvents       = 128
	DefaultMaxPending      = 16384
)

// Stats counts what the builder met that is worth a self-metric.
type Stats struct {
	Spans int64 // spans emitted
	// Clamped counts spans whose end came before their start: the end was
	// set to the start.
	Clamped int64
	// Untimed counts spans without any time in the transcript: they take
	// the session's latest time.
	Untimed int64
	// EventsDropped counts events past Config.MaxEvents on one span.
	EventsDropped int64
	// EventsMoved counts events whose span was already emitted: they went
	// to the session span instead.
	EventsMoved int64
	// EventsLost counts events that arrived after the session span too.
	EventsLost int64
	// Unlinked counts spans (GranularityTurn) whose turn never became
	// known: they were sent in the session's trace.
	Unlinked int64
	// StandInAgents counts subagent spans made up at the end of a session
	// because spans of the session named a subagent that never came as a
	// Subagent unit of that session (one legacy agent file can hold
	// records of two sessions; the assembler reports the agent once).
	StandInAgents int64
	// Timeless counts sessions without any timestamp and without any span
	// of their own (a transcript of file-history snapshots only): they get
	// no trace, since a session dated 1970 is noise in every backend.
	Timeless int64
}

// Builder turns session units into spans. It implements session.Sink:
// every unit is turned into its span at once and handed to emit, except
// API errors (events, buffered until their span is emitted) and, under
// GranularityTurn, spans whose trace is not known yet. It is pure and not
// safe for concurrent use.
//
// RequestUpdate units (a better copy of a request already emitted) are
// ignored: the span went out with the counts known then. Metrics, which
// are cumulative, take the update; spans keep the first copy.
type Builder struct {
	cfg      Config
	emit     func(Span)
	sessions map[string]*sessState
	stats    Stats
	held     int // spans waiting for their trace, all sessions
}

var _ session.Sink = (*Builder)(nil)

// NewBuilder returns a builder that hands each complete span to emit.
func NewBuilder(cfg Config, emit func(Span)) *Builder {
	if cfg.CaptureMaxBytes <= 0 {
		cfg.CaptureMaxBytes = DefaultCaptureMaxBytes
	}
	if cfg.MaxEvents <= 0 {
		cfg.MaxEvents = DefaultMaxEvents
	}
	if cfg.MaxPending <= 0 {
		cfg.MaxPending = DefaultMaxPending
	}
	if cfg.Project == nil {
		cfg.Project = metrics.Basename
	}
	return &Builder{cfg: cfg, emit: emit, sessions: map[string]*sessState{}}
}

// Stats returns the builder's counts so far.
func (b *Builder) Stats() Stats { return b.stats }

// Held returns the number of spans built and held back (GranularityTurn:
// waiting for their turn to be known).
func (b *Builder) Held() int { return b.held }

// Open returns the number of sessions the builder holds state for (not
// yet ended).
func (b *Builder) Open() int { return len(b.sessions) }

// sessState is what the builder keeps per open session: metadata for the
// turn spans, events waiting for their span, and (GranularityTurn) what is
// needed to find each span's trace.
type sessState struct {
	id                                string
	trace                             TraceID // SessionTraceID(id)
	rootID                            SpanID  // RootSpanID(id)
	cwd, branch, version, slug, title string
	project                           string
	last                              time.Time
	sent                              int // spans placed by send (requests, tools, agents, compactions)

	// total sums the requests of the session (subagents' too); turnTotal
	// those of each turn not emitted yet (its own requests, emitted
	// before the turn).
	total     totals
	turnTotal map[string]*totals

	root       eventBuf
	turns      map[string]*eventBuf // events of turns not emitted yet
	turnsDone  map[string]struct{}
	agents     map[string]*eventBuf // events of subagents not emitted yet
	agentsDone map[string]struct{}
	// agentRefs are subagents that spans of this session sit in and whose
	// own span is not out yet, with the time range of those spans.
	agentRefs map[string]*timeRange

	// extent is the time range of every span of the session sent so
	// far: the root span covers it.
	extent timeRange
	// agentTools are the Task/Agent tool spans sent, by tool_use id: a
	// subagent sits under its launching call only when that span exists.
	agentTools map[string]timeRange
	// heldAgents are subagent spans kept until the session ends: those
	// whose work goes on after their launching call (background agents,
	// warmup agents) or whose call was not seen. Their span then covers
	// all they did.
	heldAgents map[string]*session.Subagent

	// GranularityTurn only.
	toolScope  map[string]scope  // tool_use id → where the tool span sits
	agentScope map[string]scope  // agent id → where its span sits
	pending    map[string][]Span // link key ("t:"+tool id, "a:"+agent id) → spans waiting for it
	pendingQ   []string          // link keys in the order they started waiting
	pendingN   int
}

// scope places a span: in a turn, in a subagent, under a tool call (a
// subagent's own span), or, all empty, directly under the session.
type scope struct{ turn, agent, tool string }

type timeRange struct{ start, end time.Time }

// widen returns start and end widened to cover r.
func (r *timeRange) widen(start, end time.Time) (time.Time, time.Time) {
	if !r.start.IsZero() && r.start.Before(start) {
		start = r.start
	}
	if r.end.After(end) {
		end = r.end
	}
	return start, end
}

func (r *timeRange) add(start, end time.Time) {
	if !start.IsZero() && (r.start.IsZero() || start.Before(r.start)) {
		r.start = start
	}
	if end.After(r.end) {
		r.end = end
	}
}

// refAgent notes that a span at w sits in a subagent.
func (s *sessState) refAgent(w *session.Where, start, end time.Time) {
	if w.AgentID == "" {
		return
	}
	if _, done := s.agentsDone[w.AgentID]; done {
		return
	}
	r := s.agentRefs[w.AgentID]
	if r == nil {
		r = &timeRange{}
		s.agentRefs[w.AgentID] = r
	}
	r.add(start, end)
}

type eventBuf struct {
	events  []Event
	dropped int64
}

func (b *Builder) sess(id string) *sessState {
	s := b.sessions[id]
	if s == nil {
		s = &sessState{
			id:         id,
			trace:      SessionTraceID(id),
			rootID:     RootSpanID(id),
			turns:      map[string]*eventBuf{},
			turnsDone:  map[string]struct{}{},
			agents:     map[string]*eventBuf{},
			agentsDone: map[string]struct{}{},
			agentRefs:  map[string]*timeRange{},
			turnTotal:  map[string]*totals{},
			agentTools: map[string]timeRange{},
			heldAgents: map[string]*session.Subagent{},
		}
		if b.cfg.Granularity == GranularityTurn {
			s.toolScope = map[string]scope{}
			s.agentScope = map[string]scope{}
			s.pending = map[string][]Span{}
		}
		b.sessions[id] = s
	}
	return s
}

func (s *sessState) touch(t time.Time) {
	if t.After(s.last) {
		s.last = t
	}
}

// times returns a span's start and end: a missing end is the start, a
// missing start the end, an end before the start is clamped to it, and a
// span without any time takes the session's latest.
func (b *Builder) times(s *sessState, start, end time.Time) (time.Time, time.Time) {
	switch {
	case start.IsZero() && end.IsZero():
		b.stats.Untimed++
		t := s.last
		if t.IsZero() {
			t = time.Unix(0, 0).UTC()
		}
		return t, t.Add(MinDuration)
	case start.IsZero():
		start = end
	case end.IsZero():
		end = start
	case end.Before(start):
		b.stats.Clamped++
		end = start
	}
	if !end.After(start) {
		end = start.Add(MinDuration)
	}
	return start, end
}

// MinDuration is the length of a span whose transcript gives it none (a
// compaction boundary, a request of one line, a warmup agent): backends
// show a zero-length span as an error ("negative duration").
const MinDuration = time.Microsecond

// cut returns text cut to the capture cap at a UTF-8 boundary.
func (b *Builder) cut(text string) string {
	n := b.cfg.CaptureMaxBytes
	if len(text) <= n {
		return text
	}
	for n > 0 && !utf8.RuneStart(text[n]) {
		n--
	}
	return text[:n]
}

// parentOf returns the parent span id and scope of a unit at w: its turn,
// else its subagent, else the session root.
func parentOf(w *session.Where) (SpanID, scope) {
	switch {
	case w.TurnID != "":
		return TurnSpanID(w.SessionID, w.TurnID), scope{turn: w.TurnID}
	case w.AgentID != "":
		return AgentSpanID(w.SessionID, w.AgentID), scope{agent: w.AgentID}
	}
	return RootSpanID(w.SessionID), scope{}
}

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
		attrs = append(attrs, String(AttrInputMessages, inputMessages(b.cut(u.Prompt))))
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

// Request emits the chat span of one API request.
func (b *Builder) Request(u *session.Request) {
	s := b.sess(u.SessionID)
	s.touch(u.End)
	parent, sc := parentOf(&u.Where)
	start, end := b.times(s, u.Start, u.End)
	s.refAgent(&u.Where, start, end)
	name := OperationChat
	if u.Model != "" {
		name += " " + u.Model
	}
	t := u.Tokens
	s.total.add(b, u.Model, t)
	if u.TurnID != "" {
		tt := s.turnTotal[u.TurnID]
		if _, done := s.turnsDone[u.TurnID]; !done && tt == nil {
			tt = &totals{}
			s.turnTotal[u.TurnID] = tt
		}
		if tt != nil {
			tt.add(b, u.Model, t)
		}
	}
	attrs := make([]Attr, 0, 20)
	attrs = append(attrs, String(AttrOperationName, OperationChat))
	if p := Provider(u.Model); p != "" {
		attrs = append(attrs, String(AttrProviderName, p))
	}
	attrs = sessionAttrs(attrs, s.id)
	if u.Model != "" {
		attrs = append(attrs, String(AttrRequestModel, u.Model), String(AttrResponseModel, u.Model))
	}
	attrs = append(attrs, String(AttrResponseID, u.MessageID))
	if u.StopReason != "" {
		attrs = append(attrs, Strings(AttrResponseFinishReasons, u.StopReason))
	}
	attrs = usageAttrs(attrs, t)
	if b.cfg.Price != nil {
		if usd, ok := b.cfg.Price(u.Model, t); ok {
			attrs = append(attrs, Float(AttrCostUSD, usd))
		}
	}
	if u.RequestID != "" {
		attrs = append(attrs, String(AttrRequestID, u.RequestID))
	}
	if u.AgentID != "" {
		attrs = append(attrs, String(AttrAgentID, u.AgentID))
	}
	var text, thinking string
	if b.cfg.Capture.Responses {
		text = b.cut(u.Text)
	}
	if b.cfg.Capture.Thinking {
		thinking = b.cut(u.Thinking)
	}
	if text != "" || thinking != "" {
		attrs = append(attrs, String(AttrOutputMessages, outputMessages(thinking, text, u.StopReason)))
	}
	sp := Span{
		SpanID:       RequestSpanID(s.id, u.MessageID),
		ParentSpanID: parent,
		Name:         name,
		Kind:         KindClient,
		Start:        start,
		End:          end,
		Attrs:        attrs,
	}
	if u.Interrupted {
		sp.Attrs = append(sp.Attrs, Bool(AttrRequestInterrupted, true))
		sp.Events = []Event{{Name: EventInterrupted, Time: end}}
	}
	if s.toolScope != nil {
		for _, id := range u.ToolUseIDs {
			b.learnTool(s, id, sc)
		}
	}
	b.send(s, sc, sp)
	if tt := s.turnTotal[u.TurnID]; tt != nil && tt.held && tt.requests >= tt.want {
		b.finishTurn(s, u.TurnID)
	}
}

// RequestUpdate is ignored: see Builder.
func (b *Builder) RequestUpdate(*session.RequestUpdate) {}

// ToolCall emits the execute_tool span of one tool call, beside the chat
// span of the request that issued it (under the same turn, subagent or
// root), with a link to that chat span.
func (b *Builder) ToolCall(u *session.ToolCall) {
	s := b.sess(u.SessionID)
	s.touch(u.End)
	parent, sc := parentOf(&u.Where)
	start, end := b.times(s, u.Start, u.End)
	s.refAgent(&u.Where, start, end)
	attrs := make([]Attr, 0, 12)
	attrs = append(attrs, String(AttrOperationName, OperationTool))
	attrs = sessionAttrs(attrs, s.id)
	attrs = append(attrs,
		String(AttrToolName, u.Name),
		String(AttrToolCallID, u.ToolUseID),
		String(AttrToolType, ToolTypeFunction),
		String(AttrToolOutcome, string(u.Outcome)),
	)
	if u.SubagentType != "" {
		attrs = append(attrs, String(AttrToolSubagentType, u.SubagentType))
	}
	if u.AgentID != "" {
		attrs = append(attrs, String(AttrAgentID, u.AgentID))
	}
	if b.cfg.Capture.Tools {
		if u.Input != "" {
			attrs = append(attrs, String(AttrToolCallArguments, b.cut(u.Input)))
		}
		if u.Output != "" {
			attrs = append(attrs, String(AttrToolCallResult, b.cut(u.Output)))
		}
	}
	sp := Span{
		SpanID:       ToolSpanID(s.id, u.ToolUseID),
		ParentSpanID: parent,
		// The chat span that asked for the call ended when its response
		// did; the tool runs after it, so it is a sibling, linked.
		Links: []Link{{SpanID: RequestSpanID(s.id, u.MessageID)}},
		Name:  OperationTool + " " + u.Name,
		Kind:  KindInternal,
		Start: start,
		End:   end,
		Attrs: attrs,
	}
	if u.Outcome == session.OutcomeError {
		sp.Status = StatusError
		sp.StatusMessage = "tool_result is_error"
		sp.Attrs = append(sp.Attrs, String(AttrErrorType, ErrorTypeToolError))
	}
	if s.toolScope != nil {
		b.learnTool(s, u.ToolUseID, sc)
	}
	if u.AgentID != "" || u.SubagentType != "" || u.Name == "Task" || u.Name == "Agent" {
		s.agentTools[u.ToolUseID] = timeRange{start: sp.Start, end: sp.End}
	}
	b.send(s, sc, sp)
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
	if _, held := s.heldAgents[u.AgentID]; !held {
		c := *u
		s.heldAgents[u.AgentID] = &c
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
	slices.SortFunc(held, func(x, y *session.Subagent) int {
		if c := x.Start.Compare(y.Start); c != 0 {
			return c
		}
		return strings.Compare(x.AgentID, y.AgentID)
	})
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

// Compaction emits a zero-length compaction span at the boundary, under
// its turn, subagent or the root.
func (b *Builder) Compaction(u *session.Compaction) {
	s := b.sess(u.SessionID)
	s.touch(u.Time)
	parent, sc := parentOf(&u.Where)
	start, end := b.times(s, u.Time, u.Time)
	s.refAgent(&u.Where, start, end)
	id := u.UUID
	if id == "" {
		id = "@" + u.Time.UTC().Format(time.RFC3339Nano)
	}
	sp := Span{
		SpanID:       CompactionSpanID(s.id, id),
		ParentSpanID: parent,
		Name:         SpanCompaction,
		Kind:         KindInternal,
		Start:        start,
		End:          end,
		Attrs: append(sessionAttrs([]Attr{String(AttrOperationName, OperationChat)}, s.id),
			String(AttrCompactionTrigger, u.Trigger),
			Int(AttrCompactionPreTokens, u.PreTokens),
		),
	}
	b.send(s, sc, sp)
}

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
