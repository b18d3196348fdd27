package session

import (
	"fmt"
	"time"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/transcript"
)

// StateVersion is the version of State's layout.
const StateVersion = 1

// State is everything the assembler needs to go on exactly after a
// restart: what it has counted (for global dedup and for growing counts
// by differences), what is still open (pending requests, tool calls
// without a result, current turns, subagents), and per-session facts.
// It is plain data, for the checkpoint to serialise.
type State struct {
	Version  int            `json:"version"`
	Seq      uint64         `json:"seq"`
	Requests []RequestState `json:"requests"`
	Tools    []ToolState    `json:"tools"`
	Done     []string       `json:"done_tools"`
	Early    []EarlyState   `json:"early_results,omitempty"`
	Seen     []string       `json:"seen"`
	Sessions []SessionState `json:"sessions"`
	Agents   []AgentState   `json:"agents"`
	Stats    Stats          `json:"stats"`
}

// RequestState is one request, emitted or pending.
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
	Emitted   bool             `json:"x,omitempty"`
	Counted   Tokens           `json:"c"`
	CountedAs string           `json:"cm,omitempty"`
	Interrupt bool             `json:"i,omitempty"`
	ToolIDs   []string         `json:"t,omitempty"`
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
	Emitted     bool      `json:"x,omitempty"`
	Start       time.Time `json:"s"`
	End         time.Time `json:"e"`
	Project     string    `json:"p,omitempty"`
}

// State returns a copy of the assembler's state, in no particular order
// (sorting a large history on the pipeline goroutine would pause it).
// Call it between Adds.
func (a *Assembler) State() State {
	st := State{Version: StateVersion, Seq: a.seq, Stats: a.stats}
	for _, r := range a.requests {
		rs := RequestState{Seq: r.seq, Where: r.where, MsgID: r.msgID, Model: r.model, Usage: r.usage,
			Emitted: r.emitted, Counted: r.counted, CountedAs: r.countedModel}
		if r.reqLive != nil {
			rs.RequestID, rs.Stop, rs.Start, rs.End, rs.Interrupt, rs.ToolIDs = r.requestID, r.stop, r.start, r.end, r.interrupt, r.toolIDs
		}
		st.Requests = append(st.Requests, rs)
	}
	for id, t := range a.tools {
		if t.done {
			st.Done = append(st.Done, id)
		} else {
			st.Tools = append(st.Tools, ToolState{Seq: t.seq, Call: t.call})
		}
	}
	for id, e := range a.early {
		st.Early = append(st.Early, EarlyState{ID: id, IsError: e.isError, T: e.t, Task: e.task})
	}
	for k := range a.seen {
		st.Seen = append(st.Seen, k)
	}
	for _, s := range a.sessions {
		ss := SessionState{Seq: s.seq, ID: s.id, Cwd: s.cwd, Branch: s.branch, Version: s.version, Slug: s.slug, Title: s.title,
			ProjectDir: s.projectDir, Started: s.started, Ended: s.ended, HasMain: s.hasMain, Start: s.start, Last: s.last,
			Turns: s.turns}
		if s.turn != nil {
			t := *s.turn
			ss.Turn = &t
		}
		for id := range s.openTools {
			ss.OpenTools = append(ss.OpenTools, id)
		}
		for id := range s.agents {
			ss.Agents = append(ss.Agents, id)
		}
		st.Sessions = append(st.Sessions, ss)
	}
	for _, ag := range a.agents {
		st.Agents = append(st.Agents, AgentState{Seq: ag.seq, ID: ag.id, SessionID: ag.sessionID, AgentType: ag.agentType,
			Description: ag.description, ToolUseID: ag.toolUseID, Warmup: ag.warmup, WarmupKnown: ag.warmupKnown,
			Emitted: ag.emitted, Start: ag.start, End: ag.end, Project: ag.project})
	}
	return st
}

// Restore replaces the assembler's state with st. Call it once, before
// any Add. now is the processing time given to restored sessions and
// pending requests (for settling and idle timeouts).
func (a *Assembler) Restore(st State, now time.Time) error {
	if st.Version != StateVersion {
		return fmt.Errorf("restore assembler state: version %d, want %d", st.Version, StateVersion)
	}
	a.seq = st.Seq
	a.stats = st.Stats
	clear(a.requests)
	clear(a.pending)
	clear(a.tools)
	clear(a.early)
	clear(a.seen)
	clear(a.sessions)
	clear(a.open)
	clear(a.agents)
	clear(a.byTool)
	clear(a.ctxs)
	for _, r := range st.Requests {
		rs := &reqState{seq: r.Seq, where: r.Where, msgID: r.MsgID, model: r.Model, usage: r.Usage, emitted: r.Emitted,
			counted: r.Counted, countedModel: r.CountedAs}
		if !r.Emitted {
			rs.reqLive = &reqLive{requestID: r.RequestID, stop: r.Stop, start: r.Start, end: r.End, lastSeen: now,
				interrupt: r.Interrupt, toolIDs: r.ToolIDs}
		}
		a.requests[r.MsgID] = rs
		if !rs.emitted {
			a.pending[r.MsgID] = rs
		}
	}
	for _, id := range st.Done {
		a.tools[id] = a.doneTool
	}
	for _, t := range st.Tools {
		a.tools[t.Call.ToolUseID] = &toolState{seq: t.Seq, call: t.Call}
	}
	for _, e := range st.Early {
		a.early[e.ID] = &earlyResult{isError: e.IsError, t: e.T, task: e.Task}
	}
	for _, k := range st.Seen {
		a.seen[k] = struct{}{}
	}
	for _, s := range st.Sessions {
		ss := &sessState{seq: s.Seq, id: s.ID, cwd: s.Cwd, branch: s.Branch, version: s.Version, slug: s.Slug, title: s.Title,
			projectDir: s.ProjectDir, started: s.Started, ended: s.Ended, hasMain: s.HasMain, start: s.Start, last: s.Last,
			lastSeen: now, turn: s.Turn, turns: s.Turns, openTools: map[string]struct{}{}, agents: map[string]struct{}{}}
		for _, id := range s.OpenTools {
			ss.openTools[id] = struct{}{}
		}
		for _, id := range s.Agents {
			ss.agents[id] = struct{}{}
		}
		a.sessions[s.ID] = ss
		if !ss.ended {
			a.open[s.ID] = ss
		}
	}
	for _, ag := range st.Agents {
		a.agents[ag.ID] = &agentState{seq: ag.Seq, id: ag.ID, sessionID: ag.SessionID, agentType: ag.AgentType,
			description: ag.Description, toolUseID: ag.ToolUseID, warmup: ag.Warmup, warmupKnown: ag.WarmupKnown,
			emitted: ag.Emitted, start: ag.Start, end: ag.End, project: ag.Project}
		if ag.ToolUseID != "" {
			a.byTool[ag.ToolUseID] = a.agents[ag.ID]
		}
	}
	return nil
}
