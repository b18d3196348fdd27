package spans

import (
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
	// Price returns the estimated USD cost of tokens t spent under model
	// in request r (its date and price modifiers) and whether the model
	// is priced: the metrics' price table (metrics.Prices.RequestCost),
	// so that spans and counters price alike. Nil: spans carry no cost.
	Price func(model string, t session.Tokens, r *session.Request) (float64, bool)
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
// waiting for their turn to be known). While it is not 0 the state file
// must not move: their lines are what rebuilds them after a crash.
// (Subagent spans waiting for their session's end are kept in the state
// file instead: HeldAgents.)
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

	// With capture: the prompt of the session's first turn (its number)
	// and the main thread's latest response text, the root's input.value
	// and output.value.
	firstPrompt string
	firstNum    int
	lastText    string
	sent        int // spans placed by send (requests, tools, agents, compactions)

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
	s.total.add(b, u, t)
	for _, adv := range u.Advisor {
		s.total.addAdvisor(b, u, adv)
	}
	if u.TurnID != "" {
		tt := s.turnTotal[u.TurnID]
		if _, done := s.turnsDone[u.TurnID]; !done && tt == nil {
			tt = &totals{}
			s.turnTotal[u.TurnID] = tt
		}
		if tt != nil {
			tt.add(b, u, t)
			for _, adv := range u.Advisor {
				tt.addAdvisor(b, u, adv)
			}
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
	// The request's tokens and cost include its advisor's inferences
	// (billed under the advisor's model; claude_code.advisor.* says how
	// many were the advisor's), as the metrics count them: summed over
	// the chat spans they give the token and cost counters. Unpriced
	// parts are left out of the cost.
	all := t
	for _, adv := range u.Advisor {
		all = all.Add(adv.Tokens)
	}
	attrs = usageAttrs(attrs, all)
	if b.cfg.Price != nil {
		usd, priced := b.cfg.Price(u.Model, t, u)
		for _, adv := range u.Advisor {
			if a, ok := b.cfg.Price(adv.Model, adv.Tokens, u); ok {
				usd += a
				priced = true
			}
		}
		if priced {
			attrs = append(attrs, Float(AttrUsageCost, usd), Float(AttrCostUSD, usd))
		}
	}
	if u.RequestID != "" {
		attrs = append(attrs, String(AttrRequestID, u.RequestID))
	}
	if u.AgentID != "" {
		attrs = append(attrs, String(AttrAgentID, u.AgentID))
	}
	attrs = requestAttrs(attrs, u)
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
	if text != "" && u.AgentID == "" {
		// The main thread's latest response: the turn's and the
		// session's output.value.
		s.lastText = text
		if tt := s.turnTotal[u.TurnID]; u.TurnID != "" && tt != nil {
			tt.last = text
		}
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

// requestAttrs adds who spent a request and how it was made, why its
// prompt cache missed, and its advisor's tokens (summed over advisor
// models; the model named is the first).
func requestAttrs(attrs []Attr, u *session.Request) []Attr {
	if u.Spender != "" {
		attrs = append(attrs, String(AttrSpender, u.Spender))
	}
	speed := u.Speed
	if speed == "standard" {
		speed = "" // the usual: only a modifier is worth an attribute
	}
	for _, kv := range [...]struct{ k, v string }{{AttrSpeed, speed}, {AttrEffort, u.Effort}, {AttrSkill, u.Skill}, {AttrPlugin, u.Plugin}, {AttrMCPServer, u.MCPServer}} {
		if kv.v != "" {
			attrs = append(attrs, String(kv.k, kv.v))
		}
	}
	if u.CacheMiss != "" {
		attrs = append(attrs, String(AttrCacheMissReason, u.CacheMiss), Int(AttrCacheMissTokens, u.CacheMissTokens))
	}
	if len(u.Advisor) > 0 {
		var t session.Tokens
		for _, a := range u.Advisor {
			t = t.Add(a.Tokens)
		}
		attrs = append(attrs, String(AttrAdvisorModel, u.Advisor[0].Model), Int(AttrAdvisorInputTotal, t.InputTotal()),
			Int(AttrAdvisorOutput, t.Output))
	}
	return attrs
}
