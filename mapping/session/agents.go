package session

// Subagents: their files, the sidechains written inside session files,
// the Task/Agent calls that launch them, forks, and who spent a request.

import (
	"strings"
	"time"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/transcript"
)

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
	// ctxs is how many reading contexts hold it (ctxState.agent): it is
	// packed only when none does.
	ctxs int
}

// agent returns the subagent id, unpacked if it was packed (nil when
// there is none), for a caller that may change it.
func (a *Assembler) agent(id string) *agentState {
	if ag := a.agents[id]; ag != nil {
		return ag
	}
	ag, owner := a.closed.takeAgent(id)
	if ag == nil {
		return nil
	}
	a.agents[id] = ag
	if owner && a.byTool[ag.toolUseID] == nil {
		a.byTool[ag.toolUseID] = ag
	}
	return ag
}

// peekAgent returns the subagent id, or a copy of it if it is packed, for
// a caller that only reads it (nil when there is none).
func (a *Assembler) peekAgent(id string) *agentState {
	if ag := a.agents[id]; ag != nil {
		return ag
	}
	ag, _ := a.closed.peekAgent(id)
	return ag
}

// packAgents packs those of the subagents ids that are out and that no
// context reads (agents_packed.go).
func (a *Assembler) packAgents(ids []string) {
	for _, id := range ids {
		ag := a.agents[id]
		if ag == nil || !ag.emitted || ag.ctxs > 0 {
			continue
		}
		owner := ag.toolUseID != "" && a.byTool[ag.toolUseID] == ag
		if !a.closed.putAgent(ag, owner) {
			continue
		}
		delete(a.agents, id)
		if owner {
			delete(a.byTool, ag.toolUseID)
		}
	}
}

// repackAgent packs the subagent id again when a line that opened no
// context (a Task call's result) unpacked it after its session closed.
func (a *Assembler) repackAgent(id string) {
	ag := a.agents[id]
	if ag == nil || !ag.emitted || ag.ctxs > 0 {
		return
	}
	if _, closed := a.closed.lookup(keyOf(ag.sessionID)); closed {
		a.packAgents([]string{id})
	}
}

// sidechainAgent names the subagent of a sidechain line written inside a
// session file, as Claude Code wrote them up to 2.0: a Task call, then
// the subagent's lines (isSidechain, chained by parentUuid from a first
// prompt without parent), then the call's result. A first line takes the
// session's oldest Task/Agent call no sidechain has taken (returned as
// task, to link); its subagent is "side-" and that call's id ("side-"
// and the line's uuid when no call is waiting). Later lines follow their
// parent; a line whose parent is unknown (read after a restart) goes with
// the session's last sidechain.
func (a *Assembler) sidechainAgent(s *sessState, r *transcript.Record) (agentID, task string) {
	if s.side == nil {
		s.side = map[string]string{}
	}
	defer func() {
		if r.UUID != "" {
			s.side[r.UUID] = agentID
		}
		s.lastSide = agentID
	}()
	if id, ok := s.side[r.ParentUUID]; ok && r.ParentUUID != "" {
		return id, ""
	}
	if id, ok := a.sideRoots[r.UUID]; ok && r.UUID != "" {
		return id, "" // a resumed session's copy
	}
	if r.ParentUUID != "" && s.lastSide != "" {
		return s.lastSide, ""
	}
	if len(s.pendingTasks) > 0 {
		task = s.pendingTasks[0]
		s.pendingTasks = s.pendingTasks[1:]
		agentID = "side-" + task
	} else {
		agentID = "side-" + r.UUID
	}
	if r.UUID != "" {
		a.sideRoots[r.UUID] = agentID
	}
	return agentID, task
}

// rank orders the readers of one request: its main thread first, then a
// subagent, then a fork whose first lines copy its parent's history
// (compaction, side questions, prompt suggestions). A request read by
// several is theirs who ranks first, whatever order the files are read in.
func (a *Assembler) rank(w Where) int {
	switch {
	case w.AgentID == "":
		return 2
	case isFork(w.AgentID):
		return 0
	}
	if ag := a.peekAgent(w.AgentID); ag != nil && ag.agentType == "fork" {
		return 0
	}
	return 1
}

// forks are the forks of a session Claude Code runs for itself, told by
// their agent id's prefix: who spends their tokens, and the agent type
// they are known by (none: what their .meta.json or call says).
var forks = [...]struct{ prefix, spender, agentType string }{
	{"acompact-", SpenderCompaction, "compact"},            // compaction
	{"aside_question-", SpenderInternal, "aside_question"}, // a /btw side question
	{"aprompt_suggestion-", SpenderInternal, ""},           // the next prompt's suggestion
}

// forkOf returns the fork an agent id names, if it names one.
func forkOf(agentID string) (spender, agentType string, ok bool) {
	for _, f := range forks {
		if strings.HasPrefix(agentID, f.prefix) {
			return f.spender, f.agentType, true
		}
	}
	return "", "", false
}

// isFork says an agent id is one of the forks Claude Code runs for itself.
func isFork(agentID string) bool {
	_, _, ok := forkOf(agentID)
	return ok
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

// agentByTool returns the subagent the Task call toolUseID launched, or a
// copy of it if it is packed, to read.
func (a *Assembler) agentByTool(toolUseID string) *agentState {
	if ag := a.byTool[toolUseID]; ag != nil {
		return ag
	}
	ag, _ := a.closed.peekAgentByTool(toolUseID)
	return ag
}

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
	if p, ok := a.projectOf(ag.sessionID); ok {
		w.Project = p
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
	if typ == "" {
		_, typ, _ = forkOf(ag.id)
	}
	if typ == "" {
		typ = "unknown"
	}
	return typ
}

// spender says who spent a request read at w: the main thread, or the
// subagent w.AgentID is (compaction and other forks Claude Code runs for
// itself are told by their agent id; warmups by their first prompt).
func (a *Assembler) spender(w Where) string {
	if w.AgentID == "" {
		return SpenderMain
	}
	if spender, _, ok := forkOf(w.AgentID); ok {
		return spender
	}
	ag := a.peekAgent(w.AgentID)
	if ag == nil {
		return SpenderSubagentPrefix + "unknown"
	}
	if ag.warmup {
		return SpenderWarmup
	}
	return SpenderSubagentPrefix + a.agentType(ag)
}
