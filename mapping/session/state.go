package session

import (
	"fmt"
	"iter"
	"maps"
	"slices"
	"time"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/transcript"
)

// StateVersion is the version of State's layout. Version 2 keeps the
// dedup index as 64-bit keys (index.go); Restore still reads version 1,
// whose string ids it hashes.
const StateVersion = 2

// State is everything the assembler needs to go on exactly after a
// restart: what it has counted (for global dedup and for growing counts
// by differences), what is still open (pending requests, tool calls
// without a result, current turns, subagents), and per-session facts.
// It is plain data, for the checkpoint to serialise.
type State struct {
	Version int    `json:"version"`
	Seq     uint64 `json:"seq"`
	// Requests are the requests not yet emitted (version 1: all of them).
	Requests []RequestState `json:"requests"`
	// DoneRequests are the emitted ones, with the labels they were
	// counted under in Labels.
	DoneRequests []DoneRequest  `json:"done_requests"`
	Labels       []LabelState   `json:"labels"`
	Tools        []ToolState    `json:"tools"`
	DoneTools    []uint64       `json:"done_tool_keys"`
	Early        []EarlyState   `json:"early_results,omitempty"`
	SeenKeys     []uint64       `json:"seen_keys"`
	Sessions     []SessionState `json:"sessions"`
	Agents       []AgentState   `json:"agents"`
	Stats        Stats          `json:"stats"`

	// Version 1 only: finished tool ids and "p:"/"c:"/"e:" keys.
	Done []string `json:"done_tools,omitempty"`
	Seen []string `json:"seen,omitempty"`
}

// DoneRequest is an emitted request in the dedup index.
type DoneRequest struct {
	Key     uint64 `json:"k"`
	Label   uint32 `json:"l"`
	Counted Tokens `json:"c"`
	Out     int64  `json:"o"`
	Total   int64  `json:"t"`
	// Day is the request's UTC day (since version 3 of the state file).
	Day int32 `json:"d,omitempty"`
}

// LabelState is a set of labels requests were counted under.
type LabelState struct {
	Project string `json:"p"`
	Model   string `json:"m"`
	// Since version 3 of the state file.
	Attribution Attribution `json:"a"`
}

// RequestState is a request not yet emitted (version 1: or emitted).
type RequestState struct {
	Seq       uint64           `json:"q"`
	Where     Where            `json:"w"`
	MsgID     string           `json:"id"`
	RequestID string           `json:"rid,omitempty"`
	Model     string           `json:"m"`
	Stop      string           `json:"sr,omitempty"`
	Usage     transcript.Usage `json:"u"`
	Start     time.Time        `json:"s"`
	End       time.Time        `json:"e"`
	// UsageAt is the time of the line whose usage counts (zero in states
	// written before it was kept).
	UsageAt time.Time `json:"ua,omitempty"`
	// Version 1 only.
	Emitted   bool     `json:"x,omitempty"`
	Counted   Tokens   `json:"c"`
	CountedAs string   `json:"cm,omitempty"`
	Interrupt bool     `json:"i,omitempty"`
	ToolIDs   []string `json:"t,omitempty"`
	// Since version 3 of the state file.
	Advisor         []transcript.AdvisorUsage `json:"adv,omitempty"`
	Skill           string                    `json:"sk,omitempty"`
	Plugin          string                    `json:"pl,omitempty"`
	Effort          string                    `json:"ef,omitempty"`
	MCPServer       string                    `json:"mcp,omitempty"`
	CacheMiss       string                    `json:"cm2,omitempty"`
	CacheMissTokens int64                     `json:"cmt,omitempty"`
}

// ToolState is an open tool call (no result yet).
type ToolState struct {
	Seq  uint64   `json:"q"`
	Call ToolCall `json:"call"`
}

// EarlyState is a tool result seen before its tool_use.
type EarlyState struct {
	ID      string                 `json:"id"`
	IsError bool                   `json:"err,omitempty"`
	T       time.Time              `json:"t"`
	Task    *transcript.TaskResult `json:"task,omitempty"`
	// Since version 3 of the state file.
	Rejected bool                  `json:"rej,omitempty"`
	Edit     transcript.EditResult `json:"edit,omitempty"`
	PRURL    string                `json:"pr,omitempty"`
}

// SessionState is one session's facts.
type SessionState struct {
	Seq        uint64    `json:"q"`
	ID         string    `json:"id"`
	Cwd        string    `json:"cwd,omitempty"`
	Branch     string    `json:"branch,omitempty"`
	Version    string    `json:"version,omitempty"`
	Slug       string    `json:"slug,omitempty"`
	Title      string    `json:"title,omitempty"`
	ProjectDir string    `json:"pdir,omitempty"`
	Started    bool      `json:"started,omitempty"`
	Ended      bool      `json:"ended,omitempty"`
	HasMain    bool      `json:"main,omitempty"`
	Start      time.Time `json:"s"`
	Last       time.Time `json:"l"`
	Turn       *Turn     `json:"turn,omitempty"`
	Turns      int       `json:"turns"`
	OpenTools  []string  `json:"open,omitempty"`
	Agents     []string  `json:"agents,omitempty"`
}

// AgentState is one subagent's facts.
type AgentState struct {
	Seq         uint64    `json:"q"`
	ID          string    `json:"id"`
	SessionID   string    `json:"sid"`
	AgentType   string    `json:"type,omitempty"`
	Description string    `json:"desc,omitempty"`
	ToolUseID   string    `json:"tool,omitempty"`
	Warmup      bool      `json:"warmup,omitempty"`
	WarmupKnown bool      `json:"wk,omitempty"`
	Background  bool      `json:"bg,omitempty"`
	Emitted     bool      `json:"x,omitempty"`
	Start       time.Time `json:"s"`
	End         time.Time `json:"e"`
	Project     string    `json:"p,omitempty"`
}

// State returns a copy of the assembler's state, in no particular order
// (sorting a large history on the pipeline goroutine would pause it).
// Call it between Adds.
func (a *Assembler) State() State {
	st := a.StateHead()
	st.Agents = make([]AgentState, 0, len(a.agents)+a.closed.agentsLen())
	for ag := range a.agentStates() {
		st.Agents = append(st.Agents, ag)
	}
	// Sized up front: a history's state is large, and growing these by
	// doubling would be most of a snapshot's garbage.
	st.Sessions = make([]SessionState, 0, len(a.sessions)+a.closed.len())
	for _, s := range a.sessions {
		st.Sessions = append(st.Sessions, s.state())
	}
	for ss, err := range a.closed.all() {
		if err != nil {
			// Packed by put on this goroutine: it cannot be damaged.
			panic(err)
		}
		st.Sessions = append(st.Sessions, ss)
	}
	st.DoneRequests = make([]DoneRequest, 0, a.done.len())
	a.done.each(func(k uint64, d doneReq) {
		st.DoneRequests = append(st.DoneRequests, doneRequestState(k, d))
	})
	st.SeenKeys = a.seen.appendTo(make([]uint64, 0, a.seen.len()))
	return st
}

// StateHead is State without its four largest parts, one element per
// session, per request counted, per line seen and per subagent: Sessions,
// DoneRequests, SeenKeys and Agents are nil. With EachSession,
// EachDoneRequest, EachSeenKey and EachAgent it gives the whole state
// without holding a copy of any of them at once.
func (a *Assembler) StateHead() State {
	st := State{Version: StateVersion, Seq: a.seq, Stats: a.stats,
		Requests: make([]RequestState, 0, len(a.requests))}
	for _, r := range a.requests {
		// The advisor slice is copied: a better line rewrites it in place,
		// and a frozen state is read while the assembler goes on.
		st.Requests = append(st.Requests, RequestState{Seq: r.seq, Where: r.where, MsgID: r.msgID, Model: r.model, Usage: r.usage,
			RequestID: r.requestID, Stop: r.stop, Start: r.start, End: r.end, UsageAt: r.usageAt, Interrupt: r.interrupt, ToolIDs: r.toolIDs,
			Advisor: slices.Clone(r.advisor), Skill: r.skill, Plugin: r.plugin, Effort: r.effort, MCPServer: r.mcpServer, CacheMiss: r.cacheMiss, CacheMissTokens: r.cacheMissTokens})
	}
	st.Labels = make([]LabelState, len(a.labelList))
	for i, l := range a.labelList {
		st.Labels[i] = LabelState{Project: l.project, Model: l.model, Attribution: l.attr}
	}
	// Sized up front: grown by doubling it was 4 MB of garbage for 0.8 of
	// keys at 100,000 tool calls, at every state write.
	st.DoneTools = make([]uint64, 0, len(a.tools)+a.doneTools.len())
	for _, t := range a.tools {
		if t.done {
			st.DoneTools = append(st.DoneTools, idKey(keyTool, t.call.ToolUseID))
		} else {
			st.Tools = append(st.Tools, ToolState{Seq: t.seq, Call: t.call})
		}
	}
	st.DoneTools = a.doneTools.appendTo(st.DoneTools)
	for id, e := range a.early {
		st.Early = append(st.Early, EarlyState{ID: id, IsError: e.isError, T: e.t, Task: e.task, Rejected: e.rejected, Edit: e.edit, PRURL: e.prURL})
	}
	return st
}

// agentStates yields the subagents as State.Agents holds them, unpacked
// and packed.
func (a *Assembler) agentStates() iter.Seq[AgentState] {
	live := func(yield func(AgentState) bool) {
		for _, ag := range a.agents {
			if !yield(ag.state()) {
				return
			}
		}
	}
	return withPacked(live, maps.Values(a.closed.agents.byID), a.closed.strs)
}

// EachAgent calls fn with the subagents (State.Agents), at most n at a
// time, in a buffer fn must not keep; it stops at fn's first error. Call
// it between Adds.
func (a *Assembler) EachAgent(n int, fn func([]AgentState) error) error {
	return eachBatch(a.agentStates(), n, fn)
}

// EachSeenKey calls fn with the keys of the lines seen (State.SeenKeys),
// at most n at a time, in a buffer fn must not keep; it stops at fn's
// first error. Call it between Adds.
func (a *Assembler) EachSeenKey(n int, fn func([]uint64) error) error {
	return eachBatch(a.seen.all(), n, fn)
}

// EachSession calls fn with the sessions' states (State.Sessions), at most
// n at a time, in a buffer fn must not keep; it stops at fn's first error.
// Call it between Adds.
func (a *Assembler) EachSession(n int, fn func([]SessionState) error) error {
	live := func(yield func(SessionState, error) bool) {
		for _, s := range a.sessions {
			if !yield(s.state(), nil) {
				return
			}
		}
	}
	return eachSessionBatch(live, a.closed.allInto, n, fn)
}

// eachSessionBatch calls fn with the sessions of live and then of closed,
// at most n at a time (see eachBatch); it stops at the first error of
// either or of fn.
//
// The closed sessions' turns are unpacked into n+1 Turns used in turn,
// not a Turn each (100,000 closed sessions: 11 MB of garbage per state
// write). The session at index k of the whole sequence has slot k mod n+1:
// a batch is k..k+n-1, and when fn gets it the session k+n is already
// unpacked (eachBatch takes it before it sees the batch is full), in the
// one slot none of them has.
func eachSessionBatch(live iter.Seq2[SessionState, error], closed func(newTurn func() *Turn) iter.Seq2[SessionState, error], n int, fn func([]SessionState) error) error {
	var bad error
	slots := make([]Turn, max(n, 1)+1)
	k := 0
	newTurn := func() *Turn { return &slots[k%len(slots)] }
	err := eachBatch(func(yield func(SessionState) bool) {
		for _, seq := range [...]iter.Seq2[SessionState, error]{live, closed(newTurn)} {
			for ss, err := range seq {
				if err != nil {
					bad = err
					return
				}
				if !yield(ss) {
					return
				}
				k++
			}
		}
	}, n, fn)
	if err != nil {
		return err
	}
	return bad
}

// EachDoneRequest calls fn with the counted requests (State.DoneRequests),
// at most n at a time, in a buffer fn must not keep; it stops at fn's
// first error. Call it between Adds.
func (a *Assembler) EachDoneRequest(n int, fn func([]DoneRequest) error) error {
	return eachBatch(a.done.states(), n, fn)
}

// eachBatch calls fn with the values of seq, at most n at a time, in a
// buffer fn must not keep; it stops at fn's first error. The state file
// is written from such batches, so that no copy of a large part is whole.
func eachBatch[T any](seq iter.Seq[T], n int, fn func([]T) error) error {
	buf := make([]T, 0, max(n, 1))
	var err error
	for v := range seq {
		if len(buf) == cap(buf) {
			if err = fn(buf); err != nil {
				break
			}
			clear(buf)
			buf = buf[:0]
		}
		buf = append(buf, v)
	}
	if err != nil || len(buf) == 0 {
		return err
	}
	return fn(buf)
}

func doneRequestState(k uint64, d doneReq) DoneRequest {
	return DoneRequest{Key: k, Label: d.lab, Counted: d.counted, Out: d.out, Total: d.total, Day: d.day}
}

// state copies a session's facts.
func (s *sessState) state() SessionState {
	ss := SessionState{Seq: s.seq, ID: s.id, Cwd: s.cwd, Branch: s.branch, Version: s.version, Slug: s.slug, Title: s.title,
		ProjectDir: s.projectDir, Started: s.started, Ended: s.ended, HasMain: s.hasMain, Start: s.start, Last: s.last,
		Turns: s.turns}
	if s.turn != nil {
		// Shared, not copied: the session copies it before changing it.
		ss.Turn = s.turn
		s.turnShared = true
	}
	for id := range s.openTools {
		ss.OpenTools = append(ss.OpenTools, id)
	}
	for id := range s.agents {
		ss.Agents = append(ss.Agents, id)
	}
	return ss
}

// sessionOf makes the state of a saved session; now is its processing
// time (for the idle timeout).
func sessionOf(s *SessionState, now time.Time) *sessState {
	ss := &sessState{seq: s.Seq, id: s.ID, cwd: s.Cwd, branch: s.Branch, version: s.Version, slug: s.Slug, title: s.Title,
		projectDir: s.ProjectDir, started: s.Started, ended: s.Ended, hasMain: s.HasMain, start: s.Start, last: s.Last,
		lastSeen: now, turn: s.Turn, turns: s.Turns}
	for _, id := range s.OpenTools {
		ss.addOpenTool(id)
	}
	for _, id := range s.Agents {
		ss.addAgent(id)
	}
	return ss
}

// Restore replaces the assembler's state with st. Call it once, before
// any Add. now is the processing time given to restored sessions and
// pending requests (for settling and idle timeouts).
func (a *Assembler) Restore(st State, now time.Time) error {
	if st.Version != StateVersion && st.Version != 1 {
		return fmt.Errorf("restore assembler state: version %d, want %d", st.Version, StateVersion)
	}
	a.seq = st.Seq
	a.stats = st.Stats
	clear(a.requests)
	a.done.reset()
	clear(a.labelSet)
	a.labelList = a.labelList[:0]
	clear(a.tools)
	a.doneTools.reset()
	clear(a.early)
	a.seen.reset()
	clear(a.sessions)
	a.closed = closedSessions{}
	clear(a.open)
	clear(a.agents)
	clear(a.byTool)
	clear(a.ctxs)
	a.forgetLast()
	labels := make([]uint32, len(st.Labels))
	for i, l := range st.Labels {
		labels[i] = a.labels(reqLabels{project: l.Project, model: l.Model, attr: l.Attribution})
	}
	for _, d := range st.DoneRequests {
		if int(d.Label) >= len(labels) {
			return fmt.Errorf("restore assembler state: request label %d of %d", d.Label, len(labels))
		}
		a.done.put(d.Key, doneReq{counted: d.Counted, out: d.Out, total: d.Total, lab: labels[d.Label], day: d.Day})
	}
	for _, r := range st.Requests {
		if r.Emitted { // version 1
			a.done.put(idKey(keyRequest, r.MsgID), doneReq{counted: r.Counted, out: r.Usage.Output, total: r.Usage.Total(),
				lab: a.labels(reqLabels{project: r.Where.Project, model: r.CountedAs})})
			continue
		}
		a.requests[r.MsgID] = &reqState{seq: r.Seq, where: r.Where, msgID: r.MsgID, key: idKey(keyRequest, r.MsgID), model: r.Model, usage: r.Usage,
			requestID: r.RequestID, stop: r.Stop, start: r.Start, end: r.End, usageAt: r.UsageAt, lastSeen: now, interrupt: r.Interrupt, toolIDs: r.ToolIDs,
			advisor: r.Advisor, skill: r.Skill, plugin: r.Plugin, effort: r.Effort, mcpServer: r.MCPServer, cacheMiss: r.CacheMiss, cacheMissTokens: r.CacheMissTokens}
	}
	for _, k := range st.DoneTools {
		a.doneTools.add(k)
	}
	for _, id := range st.Done { // version 1
		a.doneTools.add(idKey(keyTool, id))
	}
	for _, t := range st.Tools {
		a.tools[t.Call.ToolUseID] = &toolState{seq: t.Seq, key: idKey(keyTool, t.Call.ToolUseID), call: t.Call}
	}
	for _, e := range st.Early {
		a.early[e.ID] = &earlyResult{isError: e.IsError, t: e.T, task: e.Task, rejected: e.Rejected, edit: e.Edit, prURL: e.PRURL}
	}
	for _, k := range st.SeenKeys {
		a.seen.add(k)
	}
	for _, k := range st.Seen { // version 1: the prefix is part of the key
		a.seen.add(idKey("", k))
	}
	for i := range st.Sessions {
		ss := sessionOf(&st.Sessions[i], now)
		switch {
		case ss.packable():
			a.closed.put(ss)
		case ss.ended:
			a.sessions[ss.id] = ss
		default:
			a.sessions[ss.id] = ss
			a.open[ss.id] = ss
			ss.inOpen = true
		}
	}
	for _, ag := range st.Agents {
		a.agents[ag.ID] = &agentState{seq: ag.Seq, id: ag.ID, sessionID: ag.SessionID, agentType: ag.AgentType,
			description: ag.Description, toolUseID: ag.ToolUseID, warmup: ag.Warmup, warmupKnown: ag.WarmupKnown, background: ag.Background,
			emitted: ag.Emitted, start: ag.Start, end: ag.End, project: ag.Project}
		if ag.ToolUseID != "" {
			a.byTool[ag.ToolUseID] = a.agents[ag.ID]
		}
	}
	// Subagents that are out, of sessions packed, are packed too, as
	// they were when their sessions closed.
	live := map[string]bool{}
	for _, s := range a.sessions {
		for id := range s.agents {
			live[id] = true
		}
	}
	var out []string
	for id, ag := range a.agents {
		if _, closed := a.closed.lookup(keyOf(ag.sessionID)); ag.emitted && closed && !live[id] {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	a.packAgents(out)
	return nil
}

func (ag *agentState) state() AgentState {
	return AgentState{Seq: ag.seq, ID: ag.id, SessionID: ag.sessionID, AgentType: ag.agentType,
		Description: ag.description, ToolUseID: ag.toolUseID, Warmup: ag.warmup, WarmupKnown: ag.warmupKnown, Background: ag.background,
		Emitted: ag.emitted, Start: ag.start, End: ag.end, Project: ag.project}
}
