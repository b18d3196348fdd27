package session

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
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
	// tools holds the tool calls without a result, and the finished
	// Task/Agent calls (a subagent read later takes its type and
	// description from them); doneTools the other finished ones, by idKey.
	tools     map[string]*toolState
	doneTools keySet
	// results seen before their tool_use (order across files is free).
	early    map[string]*earlyResult
	seen     keySet // prompts, compactions and API errors counted, by idKey
	sessions map[string]*sessState
	// open holds the sessions not closed, so that a flush does not walk
	// every session of the history.
	open   map[string]*sessState
	agents map[string]*agentState
	// byTool finds the subagent a Task/Agent call launched.
	byTool map[string]*agentState
	ctxs   map[ctxKey]*ctxState

	stats Stats
	// version grows with every change of state, so that the daemon can
	// tell whether there is anything new to save.
	version uint64
	// gen counts the pauses of FlushHistory.
	gen uint64
}

// Stats counts what the assembler met that is worth a self-metric.
type Stats struct {
	DuplicateRequestLines int64 // assistant lines of a message already seen
	OrphanToolResults     int64 // tool results never matched (at final flush)
	ClampedTimes          int64 // spans whose end came before their start
	NoMessageID           int64 // assistant lines without message.id
}

type ctxKey struct{ session, agent string }

type ctxState struct {
	sess  *sessState
	agent *agentState // nil in the main conversation
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
	start, last                time.Time
	lastSeen                   time.Time
	// gen is the Assembler.gen of the group of history that last touched
	// the session (see FlushHistory); hasCtx says it may have reading
	// contexts in Assembler.ctxs (see dropContexts).
	gen     uint64
	hasCtx  bool
	turn    *Turn
	turns   int
	hasMain bool
	// openTools and agents are made on first use and dropped when the
	// session closes.
	openTools map[string]struct{}
	agents    map[string]struct{}
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

// reqState is a request not yet emitted. Once emitted, it leaves only a
// doneReq in the index.
type reqState struct {
	seq       uint64
	where     Where
	msgID     string
	model     string
	usage     transcript.Usage
	requestID string
	stop      string
	start     time.Time
	end       time.Time
	lastSeen  time.Time
	// complete is set by a line with a stop reason: the response has
	// ended, so the request need not wait for the settle time.
	complete  bool
	interrupt bool
	toolIDs   []string
	text      string
	thinking  string
	// advisor is the winning copy's advisor iterations (a copy of them:
	// the decoder reuses its record).
	advisor []transcript.AdvisorUsage
	// skill, plugin and effort are the first a line of the request names;
	// cacheMiss and cacheMissTokens the first cache-miss reason.
	skill, plugin, effort string
	mcpServer             string
	cacheMiss             string
	cacheMissTokens       int64
}

// note takes what any line of a request may say once: attribution and
// the cache-miss reason.
func (st *reqState) note(r *transcript.Record) {
	if st.skill == "" {
		st.skill = r.Skill
	}
	if st.plugin == "" {
		st.plugin = r.Plugin
	}
	if st.effort == "" {
		st.effort = r.Effort
	}
	if st.mcpServer == "" {
		st.mcpServer = r.MCPServer
	}
	if st.cacheMiss == "" && r.Message.CacheMiss != "" {
		st.cacheMiss, st.cacheMissTokens = r.Message.CacheMiss, r.Message.CacheMissTokens
	}
}

type toolState struct {
	seq  uint64
	call ToolCall
	done bool
}

// earlyResult is a tool result: kept until its call is seen when it
// arrives first.
type earlyResult struct {
	isError  bool
	t        time.Time
	task     *transcript.TaskResult
	output   string
	rejected bool
	edit     transcript.EditResult
	prURL    string
}

type agentState struct {
	seq         uint64
	id          string
	sessionID   string
	agentType   string
	description string
	toolUseID   string
	warmup      bool
	warmupKnown bool
	background  bool
	emitted     bool
	start, end  time.Time
	project     string
}

// New returns an assembler that sends units to sink.
func New(cfg Config, sink Sink) *Assembler {
	if cfg.Settle <= 0 {
		cfg.Settle = DefaultSettle
	}
	return &Assembler{
		cfg:      cfg,
		sink:     sink,
		requests: make(map[string]*reqState),
		labelSet: make(map[reqLabels]uint32),
		tools:    make(map[string]*toolState),
		early:    make(map[string]*earlyResult),
		sessions: make(map[string]*sessState),
		open:     make(map[string]*sessState),
		agents:   make(map[string]*agentState),
		byTool:   make(map[string]*agentState),
		ctxs:     make(map[ctxKey]*ctxState),
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
		agentID := r.ProgressAgentID
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
	c := a.ctxFor(sess, agentID, now)
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
	s := a.sessions[id]
	if s == nil {
		s = &sessState{seq: a.next(), id: id, projectDir: src.ProjectDir}
		a.sessions[id] = s
	}
	return s
}

func (a *Assembler) ctxFor(s *sessState, agentID string, now time.Time) *ctxState {
	k := ctxKey{s.id, agentID}
	c := a.ctxs[k]
	if c == nil {
		c = &ctxState{sess: s}
		if agentID != "" {
			ag := a.agents[agentID]
			if ag == nil {
				ag = &agentState{seq: a.next(), id: agentID, sessionID: s.id}
				a.agents[agentID] = ag
			}
			s.addAgent(agentID)
			c.agent = ag
		}
		a.ctxs[k] = c
		s.hasCtx = true
	}
	return c
}

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
		if s := a.sessions[c.agent.sessionID]; s != nil && s != c.sess {
			w.SessionID, w.Project = s.id, a.project(s)
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

func (a *Assembler) project(s *sessState) string {
	if s.cwd != "" {
		return s.cwd
	}
	return s.projectDir
}

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
	if s.ended || a.open[s.id] == nil {
		s.ended = false
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
	if r.Title != "" && (r.Kind == transcript.KindCustomTitle || r.Kind == transcript.KindAITitle) && (s.title == "" || r.Kind == transcript.KindCustomTitle) {
		s.title = r.Title
	}
	if !r.Timestamp.IsZero() {
		if s.start.IsZero() || r.Timestamp.Before(s.start) {
			s.start = r.Timestamp
		}
		s.last = laterOf(s.last, r.Timestamp)
		if c.agent == nil && s.turn != nil && !IsHumanPrompt(r) {
			s.turn.End = laterOf(s.turn.End, r.Timestamp)
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

// prLink emits a pull request a session linked, once per pull request:
// Claude Code writes the record again on resume and compaction, and
// after a gh pr create whose output named the same pull request (counted
// with that call). A pull request is known by PullRequestKey.
func (a *Assembler) prLink(c *ctxState, r *transcript.Record) {
	key := PullRequestKey(r.PRURL, r.PRRepo, r.PRNumber)
	if key == "" {
		return
	}
	// State written before the key was PullRequestKey knew a linked pull
	// request by its URL.
	legacy := r.PRURL != "" && a.seen.has(idKey(keyPR, r.PRURL))
	if !a.firstSeen(keyPR, key) || legacy {
		return
	}
	a.version++
	a.sink.PullRequest(&PullRequest{Where: a.where(c), At: r.Timestamp})
}

// PullRequestKey names a pull request for dedup: "owner/repo#n" (lower
// case) from a URL of the form …/owner/repo/pull/n[/…], else from its
// repository and number; else the URL itself; "" when nothing is known.
func PullRequestKey(url, repo string, number int64) string {
	if i := strings.LastIndex(url, "/pull/"); i > 0 {
		n := url[i+len("/pull/"):]
		if j := strings.IndexAny(n, "/?#"); j >= 0 {
			n = n[:j]
		}
		path := strings.Split(url[:i], "/")
		if num, err := strconv.ParseInt(n, 10, 64); err == nil && num > 0 && len(path) >= 5 && path[len(path)-1] != "" && path[len(path)-2] != "" {
			return strings.ToLower(path[len(path)-2]+"/"+path[len(path)-1]) + "#" + strconv.FormatInt(num, 10)
		}
	}
	if repo != "" && number > 0 {
		return strings.ToLower(repo) + "#" + strconv.FormatInt(number, 10)
	}
	return url
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

func (a *Assembler) assistant(c *ctxState, r *transcript.Record, now time.Time) {
	m := &r.Message
	if m.Model == transcript.SyntheticModel {
		a.synthetic(c, r)
		return
	}
	if m.ID == "" {
		a.stats.NoMessageID++
		c.remember(r.UUID, r.Timestamp, "")
		return
	}
	st := a.requests[m.ID]
	var where Where
	switch {
	case st != nil:
		a.stats.DuplicateRequestLines++
		where = st.where
		if !r.Timestamp.IsZero() {
			st.end = laterOf(st.end, r.Timestamp)
			if st.start.IsZero() {
				st.start = r.Timestamp
			}
		}
		if better(m.Usage.Output, m.Usage.Total(), st.usage.Output, st.usage.Total()) {
			st.model, st.usage, st.stop = m.Model, m.Usage, m.StopReason
			st.advisor = append(st.advisor[:0], m.Advisor...)
			if r.RequestID != "" {
				st.requestID = r.RequestID
			}
		}
		st.note(r)
		st.lastSeen = now
		st.complete = st.complete || m.StopReason != ""
		if m.Text != "" {
			st.text = joinCapped(st.text, m.Text)
		}
		if m.Thinking != "" {
			st.thinking = joinCapped(st.thinking, m.Thinking)
		}
	default:
		key := idKey(keyRequest, m.ID)
		if d, ok := a.done.get(key); ok {
			// A copy of a request already emitted: count what it adds,
			// under the labels it was counted with. Tool calls it brings
			// sit where it is read.
			a.stats.DuplicateRequestLines++
			lab := a.labelList[d.lab]
			where = a.where(c)
			if out, tot := m.Usage.Output, m.Usage.Total(); better(out, tot, d.out, d.total) {
				a.version++
				d.out, d.total = out, tot
				a.grow(key, &d, lab, where, m.ID, TokensOf(m.Usage), false, r.Timestamp)
				a.done.put(key, d)
				// The advisor's inferences follow the winning copy.
				for _, adv := range AdvisorTokensOf(m.Advisor) {
					ak := advisorKey(m.ID, adv.Model)
					ad, ok := a.done.get(ak)
					if !ok {
						al := lab
						al.model = adv.Model
						ad = doneReq{lab: a.labels(al), day: d.day}
					}
					a.grow(ak, &ad, a.labelList[ad.lab], where, m.ID, adv.Tokens, true, r.Timestamp)
					a.done.put(ak, ad)
				}
			}
			break
		}
		st = &reqState{seq: a.next(), where: a.where(c), msgID: m.ID, start: r.Timestamp, end: r.Timestamp}
		if p, ok := c.lookup(r.ParentUUID); ok && !p.t.IsZero() && (r.Timestamp.IsZero() || !p.t.After(r.Timestamp)) {
			st.start = p.t
		}
		st.model, st.stop, st.usage, st.requestID = m.Model, m.StopReason, m.Usage, r.RequestID
		st.advisor = append(st.advisor, m.Advisor...)
		st.note(r)
		st.lastSeen = now
		st.complete = m.StopReason != ""
		st.text, st.thinking = m.Text, m.Thinking
		where = st.where
		a.requests[m.ID] = st
		if c.agent == nil && c.sess.turn != nil {
			c.sess.turn.Requests++
		}
	}
	for i := range m.ToolUses {
		tu := &m.ToolUses[i]
		if tu.ID == "" {
			continue
		}
		if _, ok := a.tools[tu.ID]; ok || a.toolDone(tu.ID) {
			continue
		}
		ts := &toolState{seq: a.next(), call: ToolCall{
			Where:         where,
			ToolUseID:     tu.ID,
			Name:          tu.Name,
			MessageID:     m.ID,
			Start:         r.Timestamp,
			SubagentType:  SubagentType(tu),
			Description:   tu.Description,
			Background:    tu.Background,
			Input:         tu.Input,
			Ext:           tu.Ext,
			NotebookLines: tu.NotebookLines,
			InputLines:    tu.InputLines,
			Shell:         tu.Shell,
		}}
		a.tools[tu.ID] = ts
		if st != nil {
			st.toolIDs = append(st.toolIDs, tu.ID)
		}
		c.sess.addOpenTool(tu.ID)
		if ag := a.agentByTool(tu.ID); ag != nil {
			ts.call.AgentID = ag.id
		}
		if e, ok := a.early[tu.ID]; ok {
			delete(a.early, tu.ID)
			a.finishTool(ts, e)
		}
	}
	// A server-side tool (server_tool_use) is answered inside the stream:
	// a …_tool_result block, or a gateway's tool_result, in an assistant
	// message.
	a.takeResults(r)
	c.remember(r.UUID, r.Timestamp, m.ID)
}

// DefaultSubagentType is the type Claude Code runs a Task/Agent call
// without subagent_type as.
const DefaultSubagentType = "general-purpose"

// SubagentType is the subagent type a tool call launches: its
// subagent_type, general-purpose for a Task/Agent call without one, ""
// for any other tool.
func SubagentType(tu *transcript.ToolUse) string {
	if tu.SubagentType == "" && (tu.Name == "Task" || tu.Name == "Agent") {
		return DefaultSubagentType
	}
	return tu.SubagentType
}

func joinCapped(cur, add string) string {
	if cur == "" {
		return add
	}
	return cur + "\n" + add
}

func (a *Assembler) agentByTool(toolUseID string) *agentState { return a.byTool[toolUseID] }

func (a *Assembler) linkAgentTool(ag *agentState, toolUseID string) {
	ag.toolUseID = toolUseID
	a.byTool[toolUseID] = ag
	if t := a.tools[toolUseID]; t != nil {
		t.call.AgentID = ag.id
		if ag.agentType == "" && t.call.SubagentType != "" {
			ag.agentType = t.call.SubagentType
		}
		if ag.description == "" {
			ag.description = t.call.Description
		}
	}
}

func (a *Assembler) synthetic(c *ctxState, r *transcript.Record) {
	key := r.Message.ID
	if key == "" {
		key = r.UUID
	}
	if key != "" && !a.firstSeen(keyError, key) {
		return
	}
	kind := SyntheticKind(r)
	a.sink.APIError(&APIError{Where: a.where(c), ID: key, Kind: kind, Status: r.APIErrorStatus, Time: r.Timestamp, Text: r.Message.Text})
	c.remember(r.UUID, r.Timestamp, "")
}

// SyntheticKind classifies a <synthetic> assistant line: the API error it
// names ("rate_limit", "authentication_failed", ...), a limit notice, a
// generic API error, or a synthetic notice such as "No response
// requested.".
func SyntheticKind(r *transcript.Record) string {
	text := strings.ToLower(r.Message.TextHead)
	switch {
	case r.Error != "":
		return r.Error
	case strings.Contains(text, "limit"):
		return "rate_limit"
	case r.IsAPIErrorMessage:
		return "api_error"
	case strings.HasPrefix(text, "no response requested"):
		return "no_response"
	}
	return "synthetic"
}

// takeResults matches a record's tool results with their calls: those of
// a user record, and a server tool's results inside an assistant stream.
func (a *Assembler) takeResults(r *transcript.Record) {
	m := &r.Message
	for i := range m.ToolResults {
		tr := &m.ToolResults[i]
		if tr.ToolUseID == "" {
			continue
		}
		res := &earlyResult{isError: tr.IsError, t: r.Timestamp, output: tr.Content, rejected: tr.Rejected}
		if len(m.ToolResults) == 1 {
			// toolUseResult belongs to the record: to its only result.
			res.task, res.edit, res.prURL = r.TaskResult, r.Edit, r.OutputPRURL
		}
		t := a.tools[tr.ToolUseID]
		switch {
		case t == nil:
			if a.toolDone(tr.ToolUseID) {
				continue
			}
			if _, ok := a.early[tr.ToolUseID]; !ok {
				a.early[tr.ToolUseID] = res
			}
		case !t.done:
			a.finishTool(t, res)
		}
	}
}

func (a *Assembler) user(c *ctxState, r *transcript.Record, now time.Time) {
	m := &r.Message
	a.takeResults(r)
	if c.agent != nil && !c.agent.warmupKnown && r.HasMessage && len(m.ToolResults) == 0 {
		c.agent.warmupKnown = true
		c.agent.warmup = m.FirstTextIs("Warmup")
		if c.agent.warmup {
			a.emitAgent(c.agent)
		}
	}
	if IsInterruptMarker(r) {
		if p, ok := c.lookup(r.ParentUUID); ok && p.msgID != "" {
			if st := a.requests[p.msgID]; st != nil {
				st.interrupt = true
			}
		}
	}
	if c.agent == nil && IsHumanPrompt(r) && r.UUID != "" && a.firstSeen(keyPrompt, r.UUID) {
		s := c.sess
		var since time.Duration
		if s.turn != nil {
			s.turn.Closed = r.Timestamp
			a.sink.Turn(s.turn)
			if !s.turn.End.IsZero() && !r.Timestamp.IsZero() && r.Timestamp.After(s.turn.End) {
				since = r.Timestamp.Sub(s.turn.End)
			}
		}
		s.turns++
		s.turn = &Turn{
			Where:         Where{SessionID: s.id, Project: a.project(s), TurnID: r.UUID},
			PromptUUID:    r.UUID,
			Number:        s.turns,
			Start:         r.Timestamp,
			End:           r.Timestamp,
			Prompt:        m.Text,
			SincePrevious: since,
		}
	}
	c.remember(r.UUID, r.Timestamp, "")
}

func (a *Assembler) finishTool(t *toolState, res *earlyResult) {
	at, task := res.t, res.task
	t.done = true
	call := &t.call
	call.Outcome = OutcomeOK
	if res.isError {
		call.Outcome = OutcomeError
	}
	call.End = at
	call.Output = res.output
	call.Rejected, call.Edit = res.rejected, res.edit
	if call.Shell&transcript.ShellPRCreate != 0 && call.Outcome == OutcomeOK && res.prURL != "" {
		// The pull request gh pr create opened counts once, with this
		// call, unless a pr-link naming it came first.
		call.PRSeenBefore = !a.firstSeen(keyPR, PullRequestKey(res.prURL, "", 0))
	}
	if !call.Start.IsZero() && !at.IsZero() {
		if at.Before(call.Start) {
			a.stats.ClampedTimes++
			call.End = call.Start
		}
		call.HasDuration = true
	}
	if s := a.sessions[call.SessionID]; s != nil && s.openTools != nil {
		delete(s.openTools, call.ToolUseID)
	}
	a.refreshProject(&call.Where)
	if task != nil && task.AgentID != "" {
		call.AgentID = task.AgentID
		ag := a.agents[task.AgentID]
		if ag == nil {
			ag = &agentState{seq: a.next(), id: task.AgentID, sessionID: call.SessionID}
			a.agents[task.AgentID] = ag
			if s := a.sessions[call.SessionID]; s != nil {
				s.addAgent(task.AgentID)
			}
		}
		if ag.agentType == "" {
			ag.agentType = task.AgentType
		}
		if ag.toolUseID == "" {
			a.linkAgentTool(ag, call.ToolUseID)
		}
	}
	a.sink.ToolCall(call)
	a.forget(t)
	if call.AgentID != "" {
		if ag := a.agents[call.AgentID]; ag != nil && !ag.emitted {
			if ag.agentType == "" {
				ag.agentType = call.SubagentType
			}
			if ag.description == "" {
				ag.description = call.Description
			}
			if ag.start.IsZero() {
				ag.start = call.Start
			}
			ag.end = laterOf(ag.end, call.End)
			ag.warmupKnown = true
			a.emitAgent(ag)
		}
	}
}

// forget drops a finished tool call's details, keeping its id for dedup;
// Task/Agent calls keep theirs (a subagent read later takes its type and
// description from them).
func (a *Assembler) forget(t *toolState) {
	if t.call.SubagentType == "" && t.call.Description == "" && t.call.AgentID == "" {
		delete(a.tools, t.call.ToolUseID)
		a.doneTools.add(idKey(keyTool, t.call.ToolUseID))
	}
}

func (a *Assembler) emitAgent(ag *agentState) {
	if ag.emitted {
		return
	}
	ag.emitted = true
	typ := a.agentType(ag)
	if t := a.tools[ag.toolUseID]; t != nil && ag.toolUseID != "" && t.call.Background {
		ag.background = true
	}
	w := Where{SessionID: ag.sessionID, AgentID: ag.id}
	if s := a.sessions[ag.sessionID]; s != nil {
		w.Project = a.project(s)
	}
	if w.Project == "" {
		w.Project = ag.project
	}
	a.sink.Subagent(&Subagent{
		Where:       w,
		AgentType:   typ,
		Description: ag.description,
		ToolUseID:   ag.toolUseID,
		Warmup:      ag.warmup,
		Background:  ag.background,
		Start:       ag.start,
		End:         ag.end,
		Ended:       true,
	})
}

func (a *Assembler) system(c *ctxState, r *transcript.Record) {
	switch r.Subtype {
	case "compact_boundary":
		if r.UUID != "" && !a.firstSeen(keyCompaction, r.UUID) {
			return
		}
		trigger := r.CompactTrigger
		if trigger == "" {
			trigger = "unknown"
		}
		a.sink.Compaction(&Compaction{Where: a.where(c), UUID: r.UUID, Trigger: trigger, PreTokens: r.CompactPreTokens, Time: r.Timestamp})
	case "api_error":
		if r.UUID != "" && !a.firstSeen(keyError, r.UUID) {
			return
		}
		a.sink.APIError(&APIError{Where: a.where(c), ID: r.UUID, Kind: "retry", Time: r.Timestamp})
	}
	c.remember(r.UUID, r.Timestamp, "")
}

// Flush emits what is ready. A final flush (end of input, shutdown)
// emits every pending request, marks tool calls without a result
// unanswered, and closes turns, subagents and sessions. A non-final flush
// emits requests that have settled and closes sessions idle past the idle
// timeout.
func (a *Assembler) Flush(now time.Time, final bool) { a.flush(now, final, false, false) }

// FlushHistory is a non-final Flush for a pause while history is read in
// groups of files: it settles and closes what it can, so that memory
// holds one group's open state, but it leaves open the sessions whose
// project (working directory) is not known yet, since a file read later
// (a legacy subagent transcript) may tell it; those drop their reading
// contexts once a whole group goes by without them.
// Every request read so far is complete (the history is on disk), so
// none waits for the settle time.
func (a *Assembler) FlushHistory(now time.Time) { a.flush(now, false, true, true) }

// FlushRead is a non-final Flush after the history has been read: every
// request read so far is emitted without waiting for the settle time (what
// was on disk is complete; a request being streamed right now then grows
// by the difference), and sessions whose last record is older than the
// idle timeout close at once.
func (a *Assembler) FlushRead(now time.Time) {
	for _, st := range a.requests {
		st.complete = true
	}
	a.flush(now, false, false, true)
}

// read says everything read so far is on disk whole (a pause in the
// history or its end): a session whose last record is older than the
// idle timeout closes at once instead of after the settle time, so that
// a backfill holds one group's sessions, not the history's.
func (a *Assembler) flush(now time.Time, final, history, read bool) {
	var ready []*reqState
	for _, st := range a.requests {
		if final || history || st.complete || now.Sub(st.lastSeen) >= a.cfg.Settle {
			ready = append(ready, st)
		}
	}
	slices.SortFunc(ready, func(x, y *reqState) int { return cmp.Compare(x.seq, y.seq) })
	for _, st := range ready {
		a.emitRequest(st)
	}
	var closing []*sessState
	for _, s := range a.open {
		if history && s.cwd == "" {
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
		a.closeSession(s)
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
	if s := a.sessions[w.SessionID]; s != nil {
		if p := a.project(s); p != "" {
			w.Project = p
		}
	}
}

// Version returns a number that grows whenever the state changes.
func (a *Assembler) Version() uint64 { return a.version }

func (a *Assembler) emitRequest(st *reqState) {
	a.version++
	delete(a.requests, st.msgID)
	a.refreshProject(&st.where)
	counted := TokensOf(st.usage)
	end := st.end
	if !st.start.IsZero() && end.Before(st.start) {
		a.stats.ClampedTimes++
		end = st.start
	}
	attr := Attribution{Spender: a.spender(st.where), Skill: st.skill, Plugin: st.plugin, Effort: st.effort,
		MCPServer: st.mcpServer, Speed: st.usage.Speed, Geo: st.usage.Geo}
	lab := reqLabels{project: st.where.Project, model: st.model, attr: attr}
	day := DayOf(laterOf(st.start, end))
	a.done.put(idKey(keyRequest, st.msgID), doneReq{counted: counted, out: st.usage.Output, total: st.usage.Total(),
		lab: a.labels(lab), day: day})
	advisor := AdvisorTokensOf(st.advisor)
	for _, adv := range advisor {
		al := lab
		al.model = adv.Model
		a.done.put(advisorKey(st.msgID, adv.Model), doneReq{counted: adv.Tokens, out: adv.Tokens.Output,
			total: adv.Tokens.Input + adv.Tokens.Output + adv.Tokens.CacheRead + adv.Tokens.CacheWrite5m + adv.Tokens.CacheWrite1h,
			lab:   a.labels(al), day: day})
	}
	a.sink.Request(&Request{
		Where:           st.where,
		MessageID:       st.msgID,
		RequestID:       st.requestID,
		Model:           st.model,
		StopReason:      st.stop,
		Tokens:          counted,
		Attribution:     attr,
		Advisor:         advisor,
		CacheMiss:       st.cacheMiss,
		CacheMissTokens: st.cacheMissTokens,
		Start:           st.start,
		End:             end,
		Interrupted:     st.interrupt,
		ToolUseIDs:      st.toolIDs,
		Text:            st.text,
		Thinking:        st.thinking,
	})
}

// agentType is the type a subagent is known by so far: from its
// .meta.json or its Task/Agent call; "compact" for the compaction fork,
// "unknown" when nothing says.
func (a *Assembler) agentType(ag *agentState) string {
	typ := ag.agentType
	if typ == "" && ag.toolUseID != "" {
		if t := a.tools[ag.toolUseID]; t != nil {
			typ = t.call.SubagentType
		}
	}
	if typ == "" && strings.HasPrefix(ag.id, "acompact-") {
		// Claude Code runs compaction as a subagent with this id prefix.
		typ = "compact"
	}
	if typ == "" {
		typ = "unknown"
	}
	return typ
}

// grow counts what a later, better copy of an emitted request (or of its
// advisor's inferences) adds to d, under the labels it was first counted
// with; it moves no counter down.
func (a *Assembler) grow(key uint64, d *doneReq, lab reqLabels, where Where, msgID string, cur Tokens, advisor bool, at time.Time) {
	delta := cur.Sub(d.counted)
	if delta.IsZero() {
		return
	}
	before := d.counted
	d.counted = d.counted.Max(cur)
	where.Project = lab.project
	a.sink.RequestUpdate(&RequestUpdate{Where: where, MessageID: msgID, Model: lab.model, Delta: delta,
		Attribution: lab.attr, Before: before, Day: d.day, Advisor: advisor, At: at})
}

// advisorKey is the dedup key of the advisor's inferences under one model
// in a request: they are counted, and grow, like a request of their own.
func advisorKey(msgID, model string) uint64 {
	return idKey(keyRequest, msgID+"\x00advisor\x00"+model)
}

// spender says who spent a request read at w: the main thread, or the
// subagent w.AgentID is (compaction and other forks Claude Code runs for
// itself are told by their agent id; warmups by their first prompt).
func (a *Assembler) spender(w Where) string {
	if w.AgentID == "" {
		return SpenderMain
	}
	switch {
	case strings.HasPrefix(w.AgentID, "acompact-"):
		return SpenderCompaction
	case strings.HasPrefix(w.AgentID, "aprompt_suggestion-"):
		return SpenderInternal
	}
	ag := a.agents[w.AgentID]
	if ag == nil {
		return SpenderSubagentPrefix + "unknown"
	}
	if ag.warmup {
		return SpenderWarmup
	}
	return SpenderSubagentPrefix + a.agentType(ag)
}

// dropContexts forgets what a quiet session reads with (its recent
// records, for parent lookups): a record that comes later starts afresh.
func (a *Assembler) dropContexts(s *sessState) {
	if !s.hasCtx {
		return // already dropped: a session kept open is met at every pause
	}
	s.hasCtx = false
	delete(a.ctxs, ctxKey{s.id, ""})
	for id := range s.agents {
		delete(a.ctxs, ctxKey{s.id, id})
	}
}

func (a *Assembler) closeSession(s *sessState) {
	a.version++
	// Requests of this session still settling are emitted first, so that
	// their tool calls and turn close after them.
	var ready []*reqState
	for _, st := range a.requests {
		if st.where.SessionID == s.id {
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
	for _, t := range open {
		t.done = true
		a.refreshProject(&t.call.Where)
		t.call.Outcome = OutcomeUnanswered
		a.sink.ToolCall(&t.call)
		a.forget(t)
	}
	s.openTools = nil
	var agents []*agentState
	for id := range s.agents {
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
		if !s.turn.End.IsZero() {
			s.turn.Closed = s.turn.End.Add(a.cfg.IdleTimeout)
		}
		a.sink.Turn(s.turn)
		s.turn = nil
	}
	a.dropContexts(s)
	s.agents = nil
	s.ended = true
	delete(a.open, s.id)
	a.sink.Session(a.sessionUnit(s, true))
}
