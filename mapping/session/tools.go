package session

// Tool calls: opened by an assistant line's tool_use blocks, finished by
// their results (in either order across files), and the pull requests
// they and pr-link records name.

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/transcript"
)

type toolState struct {
	seq uint64
	// key is idKey(keyTool, call.ToolUseID), hashed once when the call
	// is first seen and added to the finished calls when it is forgotten.
	key  uint64
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

// prLink emits a pull request a session linked, once per pull request:
// Claude Code writes the record again on resume and compaction, and
// after a gh pr create whose output named the same pull request (counted
// with that call). A pull request is known by PullRequestKey.
func (a *Assembler) prLink(c *ctxState, r *transcript.Record) {
	x := r.Rare()
	key := PullRequestKey(x.PRURL, x.PRRepo, x.PRNumber)
	if key == "" {
		return
	}
	// State written before the key was PullRequestKey knew a linked pull
	// request by its URL.
	legacy := x.PRURL != "" && a.seen.has(idKey(keyPR, x.PRURL))
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

// takeResults matches a record's tool results with their calls: those of
// a user record, and a server tool's results inside an assistant stream.
func (a *Assembler) takeResults(r *transcript.Record) {
	m := &r.Message
	for i := range m.ToolResults {
		tr := &m.ToolResults[i]
		if tr.ToolUseID == "" {
			continue
		}
		// On the stack: only a result that waits for its call is kept.
		res := earlyResult{isError: tr.IsError, t: r.Timestamp, output: tr.Content, rejected: tr.Rejected}
		if len(m.ToolResults) == 1 {
			// toolUseResult belongs to the record: to its only result.
			x := r.Rare()
			res.task, res.edit, res.prURL = r.TaskResult, x.Edit, x.OutputPRURL
		}
		t := a.tools[tr.ToolUseID]
		switch {
		case t == nil:
			if a.toolDone(tr.ToolUseID) {
				continue
			}
			if _, ok := a.early[tr.ToolUseID]; !ok {
				kept := res
				a.early[tr.ToolUseID] = &kept
			}
		case !t.done:
			a.finishTool(t, &res)
		}
	}
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
	if s := a.sessions[call.SessionID]; s != nil {
		if s.openTools != nil {
			delete(s.openTools, call.ToolUseID)
		}
		if i := slices.Index(s.pendingTasks, call.ToolUseID); i >= 0 {
			s.pendingTasks = slices.Delete(s.pendingTasks, i, i+1)
		}
	}
	a.refreshProject(&call.Where)
	if task != nil && task.AgentID != "" {
		call.AgentID = task.AgentID
		ag := a.agent(task.AgentID)
		if ag == nil {
			ag = &agentState{seq: a.next(), id: task.AgentID, sessionID: call.SessionID}
			a.agents[task.AgentID] = ag
			if s := a.liveSession(call.SessionID); s != nil {
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
	agentID := call.AgentID
	if a.forget(t) {
		a.freeTools.put(t)
	}
	if agentID != "" {
		a.repackAgent(agentID)
	}
}

// forget drops a finished tool call's details, keeping its id for dedup,
// as a restored state keeps it. A Task/Agent call keeps them until its
// subagent is out, linked to it: a subagent read before takes its type and
// description from the call (and one out before its call was read, typed
// by nothing, takes them here: its later requests are the call's type).
// Kept whole for good, every Task call of a history stayed: 16 MB at
// 50,000.
// It reports whether the call was dropped: then nothing references t
// any more, and the caller hands it to freeTools once done with it.
func (a *Assembler) forget(t *toolState) bool {
	c := &t.call
	if c.SubagentType != "" || c.Description != "" || c.AgentID != "" {
		ag := a.agent(c.AgentID)
		if c.AgentID == "" || ag == nil || !ag.emitted || ag.toolUseID != c.ToolUseID {
			return false
		}
		if ag.agentType == "" {
			ag.agentType = c.SubagentType
		}
		if ag.description == "" {
			ag.description = c.Description
		}
	}
	delete(a.tools, c.ToolUseID)
	a.doneTools.add(t.key)
	return true
}
