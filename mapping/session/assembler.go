package session

import (
	"cmp"
	"slices"
	"time"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/transcript"
)

// Config tunes the assembler. Zero values take defaults.
type Config struct {
	// Settle is how long a request without a stop reason must go without
	// a new line before a non-final Flush emits it: a response is written
	// as several lines, and the labels (model, stop reason) come from the
	// best one. A request whose line carries a stop reason is complete: the
	// next Flush emits it at once (later copies still grow it).
	Settle time.Duration
	// IdleTimeout closes a session (open turn, unanswered tools, its
	// subagents) after this long without a record, on a non-final Flush.
	// Zero: sessions close only on a final Flush.
	IdleTimeout time.Duration
}

// DefaultSettle is the default Config.Settle.
const DefaultSettle = 3 * time.Second

// Assembler turns decoded records into units (requests, tool calls,
// turns, subagents, compactions, API errors, sessions) and hands them to a
// Sink. Deduplication is global: the same message.id, tool_use id, prompt
// uuid or compact boundary seen in several files counts once. It is pure
// (time is passed in) and not safe for concurrent use.
type Assembler struct {
	cfg  Config
	sink Sink
	seq  uint64

	// requests holds the requests not yet emitted, by message id; done
	// the emitted ones, by idKey (see index.go).
	requests  map[string]*reqState
	done      doneIndex
	labelSet  map[reqLabels]uint32
	labelList []reqLabels
	// lastLabel is the index labels returned last.
	lastLabel uint32
	// tools holds the tool calls without a result, and the finished
	// Task/Agent calls (a subagent read later takes its type and
	// description from them); doneTools the other finished ones, by idKey.
	tools     map[string]*toolState
	doneTools keySet
	// results seen before their tool_use (order across files is free).
	early    map[string]*earlyResult
	seen     keySet // prompts, compactions and API errors counted, by idKey
	sessions map[string]*sessState
	// closed holds the closed sessions with nothing open, packed
	// (closed.go); a session is in sessions or in closed, not both.
	closed closedSessions
	// open holds the sessions not closed, so that a flush does not walk
	// every session of the history.
	open   map[string]*sessState
	agents map[string]*agentState
	// byTool finds the subagent a Task/Agent call launched.
	byTool map[string]*agentState
	ctxs   map[ctxKey]*ctxState
	// last is the reading context of the record before: a file's
	// records come one after another with the same session and agent,
	// and looking both up (two maps keyed by strings) for each was a
	// fifth of the assembly's map work. It is forgotten whenever a
	// session or a context leaves its map (forgetLast).
	last struct {
		sess    *sessState
		agentID string
		ctx     *ctxState
	}
	// sideRoots names the subagent of each sidechain written inside a
	// session file (Claude Code up to 2.0), by its first line's uuid, so
	// that a resumed session's copy of it is the same subagent.
	sideRoots map[string]string

	stats Stats
	// version grows with every change of state, so that the daemon can
	// tell whether there is anything new to save.
	version uint64
	// gen counts the pauses of FlushHistory.
	gen uint64
	// req is the Request handed to the sink: one per emitted request
	// would be the largest garbage of a backfill, and a Sink must not
	// retain a unit past the call.
	req Request
	// freeReqs and freeTools hold emitted requests' and dropped tool
	// calls' states for reuse (freelist.go).
	freeReqs  freeList[reqState]
	freeTools freeList[toolState]
}

// Stats counts what the assembler met that is worth a self-metric.
type Stats struct {
	DuplicateRequestLines int64 // assistant lines of a message already seen
	OrphanToolResults     int64 // tool results never matched (at final flush)
	ClampedTimes          int64 // spans whose end came before their start
	OrphanTurnDurations   int64 // turn_duration records outside any turn (counted alone)
	NoMessageID           int64 // assistant lines without message.id
}

type ctxKey struct{ session, agent string }

type ctxState struct {
	sess  *sessState
	agent *agentState // nil in the main conversation
	// inline says the subagent's lines are written inside its session's
	// file (a legacy sidechain): they are the main turn's work too.
	inline bool
	// recent remembers the last records' uuids, times and message ids:
	// a request's parent (the record that triggered it) and an interrupt's
	// target are almost always among the last few lines.
	recent []recInfo
	next   int
}

type recInfo struct {
	uuid  string
	t     time.Time
	msgID string
}

// recentMax is how many records a context remembers for parent lookups.
const recentMax = 16

// lookup finds a recent record by uuid.
func (c *ctxState) lookup(uuid string) (recInfo, bool) {
	if uuid == "" {
		return recInfo{}, false
	}
	for i := range c.recent {
		if c.recent[i].uuid == uuid {
			return c.recent[i], true
		}
	}
	return recInfo{}, false
}

type sessState struct {
	seq                        uint64
	id                         string
	cwd, branch, version, slug string
	title                      string
	projectDir                 string
	started, ended             bool
	// inOpen says the session is in Assembler.open (asked of every
	// record; the map's lookup by id was a tenth of its map work).
	inOpen      bool
	start, last time.Time
	lastSeen    time.Time
	// gen is the Assembler.gen of the group of history that last touched
	// the session (see FlushHistory); hasCtx says it may have reading
	// contexts in Assembler.ctxs (see dropContexts).
	gen    uint64
	hasCtx bool
	turn   *Turn
	// turnShared says a state snapshot holds turn, which may still be
	// being written on another goroutine: ownTurn copies it before the
	// first change (a copy per session per snapshot was a third of a
	// periodic write's memory).
	turnShared bool
	turns      int
	hasMain    bool
	// openTools and agents are made on first use and dropped when the
	// session closes.
	openTools map[string]struct{}
	agents    map[string]struct{}
	// pendingTasks are the session's Task/Agent calls, in order, that
	// no sidechain of the session file has taken yet; side maps the
	// uuids of the session file's sidechain lines to their subagent, and
	// lastSide is the last one (see sidechainAgent).
	pendingTasks []string
	side         map[string]string
	lastSide     string
}

// ownTurn returns the session's turn (nil when it has none), copied
// first if a snapshot shares it. Every change to a session's turn goes
// through it.
func (s *sessState) ownTurn() *Turn {
	if s.turnShared && s.turn != nil {
		t := *s.turn
		s.turn = &t
	}
	s.turnShared = false
	return s.turn
}

func (s *sessState) addOpenTool(id string) {
	if s.openTools == nil {
		s.openTools = map[string]struct{}{}
	}
	s.openTools[id] = struct{}{}
}

func (s *sessState) addAgent(id string) {
	if s.agents == nil {
		s.agents = map[string]struct{}{}
	}
	s.agents[id] = struct{}{}
}

// New returns an assembler that sends units to sink.
func New(cfg Config, sink Sink) *Assembler {
	if cfg.Settle <= 0 {
		cfg.Settle = DefaultSettle
	}
	return &Assembler{
		cfg:       cfg,
		sink:      sink,
		requests:  make(map[string]*reqState),
		labelSet:  make(map[reqLabels]uint32),
		tools:     make(map[string]*toolState),
		early:     make(map[string]*earlyResult),
		sessions:  make(map[string]*sessState),
		open:      make(map[string]*sessState),
		agents:    make(map[string]*agentState),
		byTool:    make(map[string]*agentState),
		ctxs:      make(map[ctxKey]*ctxState),
		sideRoots: make(map[string]string),
	}
}

// Stats returns the assembler's counts so far.
func (a *Assembler) Stats() Stats { return a.stats }

func (a *Assembler) next() uint64 { a.seq++; return a.seq }

// firstSeen records the id under prefix and reports whether it is new.
func (a *Assembler) firstSeen(prefix, id string) bool {
	return a.seen.add(idKey(prefix, id))
}

// toolDone reports whether a tool call that keeps no details finished.
func (a *Assembler) toolDone(id string) bool {
	return a.doneTools.has(idKey(keyTool, id))
}

// Add feeds one decoded record from src. now is the wall-clock time of
// processing (for settling and idle timeouts, never for span times).
func (a *Assembler) Add(src *Source, r *transcript.Record, now time.Time) {
	a.version++
	c := a.context(src, r, now)
	a.addIn(c, src, r, now)
	if r.Kind == transcript.KindProgress && r.HasEmbedded() {
		agentID := r.Rare().ProgressAgentID
		if agentID == "" {
			agentID = r.Embedded.AgentID
		}
		if agentID == "" {
			return
		}
		e := r.Embedded
		if e.Timestamp.IsZero() {
			e.Timestamp = r.Timestamp
		}
		if e.Cwd == "" {
			e.Cwd = r.Cwd
		}
		ec := a.ctxFor(c.sess, agentID, now)
		if ec.agent.toolUseID == "" && r.ParentToolUseID != "" {
			a.linkAgentTool(ec.agent, r.ParentToolUseID)
		}
		a.addIn(ec, src, e, now)
	}
}

func (a *Assembler) context(src *Source, r *transcript.Record, now time.Time) *ctxState {
	sessionID := src.SessionID
	if sessionID == "" {
		sessionID = r.SessionID
	}
	if sessionID == "" {
		sessionID = "unknown"
	}
	agentID := src.AgentID
	if agentID == "" && src.Kind == SourceOther && r.AgentID != "" {
		agentID = r.AgentID
	}
	sess := a.session(sessionID, src)
	var task string
	if agentID == "" && src.Kind == SourceSession && r.IsSidechain {
		agentID, task = a.sidechainAgent(sess, r)
	}
	c := a.ctxFor(sess, agentID, now)
	if task != "" {
		c.inline = true
		if c.agent.toolUseID == "" {
			a.linkAgentTool(c.agent, task)
		}
	}
	if c.agent != nil && src.Kind != SourceOther {
		ag := c.agent
		if ag.agentType == "" && src.AgentType != "" {
			ag.agentType = src.AgentType
		}
		if ag.description == "" {
			ag.description = src.Description
		}
		if ag.toolUseID == "" && src.ToolUseID != "" {
			a.linkAgentTool(ag, src.ToolUseID)
		}
	}
	return c
}

func (a *Assembler) session(id string, src *Source) *sessState {
	if a.last.sess != nil && a.last.sess.id == id {
		return a.last.sess
	}
	s := a.liveSession(id)
	if s == nil {
		s = &sessState{seq: a.next(), id: id, projectDir: src.ProjectDir}
		a.sessions[id] = s
	}
	return s
}

// liveSession returns the session id, unpacked if it was packed (nil when
// there is none).
func (a *Assembler) liveSession(id string) *sessState {
	if s := a.sessions[id]; s != nil {
		return s
	}
	s := a.closed.take(id)
	if s != nil {
		a.sessions[id] = s
	}
	return s
}

// projectOf returns the project of the session id (see project), packed
// or not.
func (a *Assembler) projectOf(id string) (string, bool) {
	if s := a.sessions[id]; s != nil {
		return a.project(s), true
	}
	return a.closed.project(id)
}

func (a *Assembler) ctxFor(s *sessState, agentID string, now time.Time) *ctxState {
	if a.last.ctx != nil && a.last.sess == s && a.last.agentID == agentID {
		return a.last.ctx
	}
	k := ctxKey{s.id, agentID}
	c := a.ctxs[k]
	if c == nil {
		c = &ctxState{sess: s}
		if agentID != "" {
			ag := a.agent(agentID)
			if ag == nil {
				ag = &agentState{seq: a.next(), id: agentID, sessionID: s.id}
				a.agents[agentID] = ag
			}
			s.addAgent(agentID)
			c.agent = ag
			ag.ctxs++
		}
		a.ctxs[k] = c
		s.hasCtx = true
	}
	a.last.sess, a.last.agentID, a.last.ctx = s, agentID, c
	return c
}

// forgetLast forgets the context of the record before (see last); every
// change that takes a session or a context out of its map calls it.
func (a *Assembler) forgetLast() { a.last.sess, a.last.ctx = nil, nil }

func (c *ctxState) remember(uuid string, t time.Time, msgID string) {
	if uuid == "" {
		return
	}
	if len(c.recent) < recentMax {
		c.recent = append(c.recent, recInfo{uuid: uuid, t: t, msgID: msgID})
		return
	}
	c.recent[c.next] = recInfo{uuid: uuid, t: t, msgID: msgID}
	c.next = (c.next + 1) % recentMax
}

func (a *Assembler) where(c *ctxState) Where {
	w := Where{SessionID: c.sess.id, Project: a.project(c.sess)}
	if c.agent != nil {
		// A subagent's work belongs to the session that first ran it,
		// wherever a copy of it is read (a resumed session's file).
		if id := c.agent.sessionID; id != c.sess.id {
			if p, ok := a.projectOf(id); ok {
				w.SessionID, w.Project = id, p
			}
		}
		w.AgentID = c.agent.id
		if c.agent.project != "" && w.Project == "" {
			w.Project = c.agent.project
		}
	} else if c.sess.turn != nil {
		w.TurnID = c.sess.turn.PromptUUID
	}
	return w
}

func (a *Assembler) project(s *sessState) string { return cmp.Or(s.cwd, s.projectDir) }

func laterOf(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func (a *Assembler) addIn(c *ctxState, src *Source, r *transcript.Record, now time.Time) {
	s := c.sess
	s.lastSeen = now
	s.gen = a.gen
	// A session closed by the idle timeout that gets new records is open
	// again (it is not counted again).
	if s.ended || !s.inOpen {
		s.ended, s.inOpen = false, true
		a.open[s.id] = s
	}
	isMsg := r.Kind == transcript.KindUser || r.Kind == transcript.KindAssistant
	if r.Cwd != "" {
		if c.agent == nil && (s.cwd == "" || !s.hasMain) && isMsg {
			s.cwd = r.Cwd
		}
		if c.agent != nil && c.agent.project == "" {
			c.agent.project = r.Cwd
		}
		if s.cwd == "" {
			s.cwd = r.Cwd
		}
	}
	if c.agent == nil && isMsg {
		if r.GitBranch != "" {
			s.branch = r.GitBranch
		}
		if r.Version != "" {
			s.version = r.Version
		}
		if r.Slug != "" {
			s.slug = r.Slug
		}
	}
	if (r.Kind == transcript.KindCustomTitle || r.Kind == transcript.KindAITitle) && (s.title == "" || r.Kind == transcript.KindCustomTitle) {
		if t := r.Rare().Title; t != "" {
			s.title = t
		}
	}
	if !r.Timestamp.IsZero() {
		if s.start.IsZero() || r.Timestamp.Before(s.start) {
			s.start = r.Timestamp
		}
		s.last = laterOf(s.last, r.Timestamp)
		if (c.agent == nil || c.inline) && s.turn != nil && IsTurnWork(r) {
			s.ownTurn().work(r.Timestamp)
		}
		if c.agent != nil {
			if c.agent.start.IsZero() || r.Timestamp.Before(c.agent.start) {
				c.agent.start = r.Timestamp
			}
			c.agent.end = laterOf(c.agent.end, r.Timestamp)
		}
	}
	if c.agent == nil && isMsg && src.Kind != SourceOther && !r.IsSidechain {
		if !s.hasMain {
			s.hasMain = true
		}
		if !s.started {
			s.started = true
			a.sink.Session(a.sessionUnit(s, false))
		}
	}
	switch r.Kind {
	case transcript.KindAssistant:
		a.assistant(c, r, now)
	case transcript.KindUser:
		a.user(c, r, now)
	case transcript.KindSystem:
		a.system(c, r)
	case transcript.KindPRLink:
		a.prLink(c, r)
	}
}

func (a *Assembler) sessionUnit(s *sessState, ended bool) *Session {
	return &Session{
		Where:     Where{SessionID: s.id, Project: a.project(s)},
		Cwd:       s.cwd,
		GitBranch: s.branch,
		Version:   s.version,
		Slug:      s.slug,
		Title:     s.title,
		Start:     s.start,
		End:       s.last,
		Ended:     ended,
		Turns:     s.turns,
	}
}

// Flush emits what is ready. A final flush (end of input, shutdown)
// emits every pending request, marks tool calls without a result
// unanswered, and closes turns, subagents and sessions. A non-final flush
// emits requests that have settled and closes sessions idle past the idle
// timeout.
func (a *Assembler) Flush(now time.Time, final bool) { a.flush(now, final, false, false, "") }

// FlushHistory is a non-final Flush for a pause while history is read in
// groups of files: it settles and closes what it can, so that memory
// holds one group's open state, but it leaves open the sessions whose
// project (working directory) is not known yet, since a file read later
// (a legacy subagent transcript) may tell it, and those whose forks'
// requests wait for the end of the history, and those of the project
// directory reading ("" for none) whose files go on after the pause (a
// group that ends inside a project: a later file of it may hold more of
// them, a resumed session or a legacy subagent transcript); those drop
// their reading contexts once a whole group goes by without them.
// Every request read so far is complete (the history is on disk), so
// none waits for the settle time.
func (a *Assembler) FlushHistory(now time.Time, reading string) {
	a.flush(now, false, true, true, reading)
}

// FlushRead is a non-final Flush after the history has been read: every
// request read so far is emitted without waiting for the settle time (what
// was on disk is complete; a request being streamed right now then grows
// by the difference), and sessions whose last record is older than the
// idle timeout close at once.
func (a *Assembler) FlushRead(now time.Time) {
	for _, st := range a.requests {
		st.complete = true
	}
	a.flush(now, false, false, true, "")
}

// read says everything read so far is on disk whole (a pause in the
// history or its end): a session whose last record is older than the
// idle timeout closes at once instead of after the settle time, so that
// a backfill holds one group's sessions, not the history's.
func (a *Assembler) flush(now time.Time, final, history, read bool, reading string) {
	var ready, staying []*reqState
	// forked are the sessions whose forks' requests wait: they stay open
	// with them, or their spans would go out without those requests.
	var forked map[string]bool
	for _, st := range a.requests {
		if history && a.rank(st.where) == 0 {
			// A fork's request waits for the end of the history: its
			// parent's file, read later, may hold the same request.
			staying = append(staying, st)
			if forked == nil {
				forked = make(map[string]bool)
			}
			forked[st.where.SessionID] = true
			continue
		}
		if final || history || st.complete || now.Sub(st.lastSeen) >= a.cfg.Settle {
			ready = append(ready, st)
		} else {
			staying = append(staying, st)
		}
	}
	slices.SortFunc(ready, func(x, y *reqState) int { return cmp.Compare(x.seq, y.seq) })
	// Most requests go (a group's leave at its pause): start a new table,
	// emit, and put back those that stay, rather than delete each that
	// goes, which hashed its id again and missed the cache on a table of
	// thousands. emitRequest's delete finds the table empty; nothing else
	// reads it while requests are emitted. (A new table, not a cleared
	// one: a map keeps its size, and every session closing after this
	// scans it, see closeSession.)
	anew := len(ready) > 0 && len(staying) <= len(ready)
	if anew {
		a.requests = make(map[string]*reqState, len(staying))
	}
	for _, st := range ready {
		a.emitRequest(st)
	}
	if anew {
		for _, st := range staying {
			a.requests[st.msgID] = st
		}
	}
	var closing []*sessState
	for _, s := range a.open {
		if history && (s.cwd == "" || forked[s.id] || reading != "" && s.projectDir == reading) {
			if s.gen != a.gen {
				a.dropContexts(s)
			}
			continue
		}
		if final || a.idle(s, now) || read && a.stale(s, now) {
			closing = append(closing, s)
		}
	}
	slices.SortFunc(closing, func(x, y *sessState) int { return cmp.Compare(x.seq, y.seq) })
	for _, s := range closing {
		a.closeSession(s, history)
	}
	if history {
		// Sessions kept open that the next group does not touch lose
		// their reading contexts at the next pause.
		a.gen++
	}
	if final {
		a.stats.OrphanToolResults = int64(len(a.early))
	}
}

// idle reports whether a session has been quiet for the idle timeout: no
// new line read for that long, or (once its lines have settled) a newest
// record older than that, which closes sessions of the history read at
// start right away so that their spans go out.
func (a *Assembler) idle(s *sessState, now time.Time) bool {
	if a.cfg.IdleTimeout <= 0 {
		return false
	}
	if now.Sub(s.lastSeen) >= a.cfg.IdleTimeout {
		return true
	}
	return !s.last.IsZero() && now.Sub(s.lastSeen) >= a.cfg.Settle && now.Sub(s.last) >= a.cfg.IdleTimeout
}

// stale says a session's last record is older than the idle timeout.
func (a *Assembler) stale(s *sessState, now time.Time) bool {
	return a.cfg.IdleTimeout > 0 && !s.last.IsZero() && now.Sub(s.last) >= a.cfg.IdleTimeout
}

// refreshProject sets w.Project from its session as known now: a
// subagent's file can be read before its session's, and the session's
// working directory is the project.
func (a *Assembler) refreshProject(w *Where) {
	if p, _ := a.projectOf(w.SessionID); p != "" {
		w.Project = p
	}
}

// Version returns a number that grows whenever the state changes.
func (a *Assembler) Version() uint64 { return a.version }

// dropContexts forgets what a quiet session reads with (its recent
// records, for parent lookups): a record that comes later starts afresh.
func (a *Assembler) dropContexts(s *sessState) {
	if !s.hasCtx {
		return // already dropped: a session kept open is met at every pause
	}
	s.hasCtx = false
	a.forgetLast()
	delete(a.ctxs, ctxKey{s.id, ""})
	for id := range s.agents {
		k := ctxKey{s.id, id}
		if c := a.ctxs[k]; c != nil && c.agent != nil {
			c.agent.ctxs--
		}
		delete(a.ctxs, k)
	}
}

func (a *Assembler) closeSession(s *sessState, history bool) {
	a.version++
	// Requests of this session still settling are emitted first, so that
	// their tool calls and turn close after them (a fork's wait for the
	// end of the history, see flush).
	var ready []*reqState
	for _, st := range a.requests {
		if st.where.SessionID == s.id && !(history && a.rank(st.where) == 0) {
			ready = append(ready, st)
		}
	}
	slices.SortFunc(ready, func(x, y *reqState) int { return cmp.Compare(x.seq, y.seq) })
	for _, st := range ready {
		a.emitRequest(st)
	}
	var open []*toolState
	for id := range s.openTools {
		if t := a.tools[id]; t != nil && !t.done {
			open = append(open, t)
		}
	}
	slices.SortFunc(open, func(x, y *toolState) int { return cmp.Compare(x.seq, y.seq) })
	// The subagents to pack once the session is: its own, and those its
	// open Task calls name (forget may unpack one to type it).
	ids := make([]string, 0, len(s.agents)+len(open))
	for _, t := range open {
		if t.call.AgentID != "" {
			ids = append(ids, t.call.AgentID)
		}
		t.done = true
		a.refreshProject(&t.call.Where)
		t.call.Outcome = OutcomeUnanswered
		a.sink.ToolCall(&t.call)
		if a.forget(t) {
			a.freeTools.put(t)
		}
	}
	s.openTools = nil
	var agents []*agentState
	for id := range s.agents {
		ids = append(ids, id)
		if ag := a.agents[id]; ag != nil && !ag.emitted {
			agents = append(agents, ag)
		}
	}
	slices.SortFunc(agents, func(x, y *agentState) int { return cmp.Compare(x.seq, y.seq) })
	for _, ag := range agents {
		if ag.agentType == "" && ag.toolUseID != "" {
			if t := a.tools[ag.toolUseID]; t != nil {
				ag.agentType = t.call.SubagentType
			}
		}
		a.emitAgent(ag)
	}
	if s.turn != nil {
		// The turn is counted now, but kept: work that comes after the
		// session went idle (a permission answered later, Claude Code's
		// turn_duration) still belongs to it, as it does read at once.
		var closed time.Time
		if !s.turn.End.IsZero() {
			closed = s.turn.End.Add(a.cfg.IdleTimeout)
		}
		a.emitTurn(s.ownTurn(), closed)
	}
	a.dropContexts(s)
	s.agents = nil
	s.side, s.pendingTasks = nil, nil
	s.ended = true
	delete(a.open, s.id)
	s.inOpen = false
	a.sink.Session(a.sessionUnit(s, true))
	if s.packable() {
		a.forgetLast()
		a.closed.put(s)
		delete(a.sessions, s.id)
	}
	a.packAgents(ids)
}
