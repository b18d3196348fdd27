package session

// Subagents of closed sessions are most of a long history's subagents,
// and nothing is left to do with them: their span is out. They are kept
// because a line may still name one (a legacy agent-*.jsonl read after its
// session closed, lines appended to its file, a resumed session's copy, a
// Task result), and a state file keeps them. As agentState structs in two
// maps (by id and by Task call) they took about 450 bytes each with their
// strings (50,000 subagents: 22 MB). Once its session closes and no
// context reads it, a subagent that is out is packed into one string of
// about 100 bytes (ids inline or as UUID bytes, the type and project as
// indexes into the closed sessions' table of shared strings, times as
// closed sessions write them), found by a hash of its id and of its Task
// call's id. A line that needs it unpacks it (Assembler.agent); a lookup
// that only reads it decodes a copy (Assembler.peekAgent).
//
// Hashes may collide: the record holds the ids and a lookup checks them;
// a subagent whose hash is taken by another stays unpacked.

import (
	"encoding/binary"
	"iter"
	"time"
)

// packedAgents are the packed subagents of closed sessions.
type packedAgents struct {
	// byID holds each packed subagent by the hash of its id (agentKey).
	byID map[uint64]string
	// byTool holds the id hash of the subagent a Task call's id (by its
	// hash, toolKey) links to, for the subagents that were the call's
	// (Assembler.byTool).
	byTool map[uint64]uint64
}

func agentKey(id string) uint64 { return idKey("agent:", id) }
func toolKey(id string) uint64  { return idKey("agent-tool:", id) }

// Flags of a packed subagent.
const (
	agentWarmup = 1 << iota
	agentWarmupKnown
	agentBackground
	agentEmitted
	agentOwnsTool // it is byTool's subagent for its toolUseID
)

// putAgent packs ag (owner: it is byTool's subagent for its call) and
// reports whether it did: not when another subagent's hash takes its
// place.
func (c *closedSessions) putAgent(ag *agentState, owner bool) bool {
	p := &c.agents
	k := agentKey(ag.id)
	if _, taken := p.byID[k]; taken {
		return false
	}
	var tk uint64
	if owner && ag.toolUseID != "" {
		tk = toolKey(ag.toolUseID)
		if _, taken := p.byTool[tk]; taken {
			return false
		}
	}
	if p.byID == nil {
		p.byID, p.byTool = map[uint64]string{}, map[uint64]uint64{}
	}
	c.ensureStrs()
	b := appendInline(c.scratch[:0], ag.id)
	b = appendID(b, ag.sessionID)
	b = c.appendShared(b, ag.agentType)
	b = appendInline(b, ag.description)
	b = appendInline(b, ag.toolUseID)
	var flags byte
	for _, f := range [...]struct {
		on  bool
		bit byte
	}{{ag.warmup, agentWarmup}, {ag.warmupKnown, agentWarmupKnown}, {ag.background, agentBackground}, {ag.emitted, agentEmitted}, {owner && ag.toolUseID != "", agentOwnsTool}} {
		if f.on {
			flags |= f.bit
		}
	}
	b = append(b, flags)
	b = binary.AppendUvarint(b, ag.seq)
	b = appendClosedTime(b, ag.start, time.Time{})
	b = appendClosedTime(b, ag.end, ag.start)
	b = c.appendShared(b, ag.project)
	p.byID[k] = string(b)
	if owner && ag.toolUseID != "" {
		p.byTool[tk] = k
	}
	c.scratch = b
	return true
}

// peekAgent decodes the packed subagent id without unpacking it.
func (c *closedSessions) peekAgent(id string) (*agentState, bool) {
	b, ok := c.agents.byID[agentKey(id)]
	if !ok {
		return nil, false
	}
	if ag, _ := decodeAgent(b, c.strs); ag.id == id {
		return ag, true
	}
	return nil, false
}

// peekAgentByTool decodes the packed subagent the Task call toolUseID is
// linked to (Assembler.byTool), without unpacking it.
func (c *closedSessions) peekAgentByTool(toolUseID string) (*agentState, bool) {
	k, ok := c.agents.byTool[toolKey(toolUseID)]
	if !ok {
		return nil, false
	}
	b := c.agents.byID[k]
	ag, owner := decodeAgent(b, c.strs)
	if !owner || ag.toolUseID != toolUseID {
		return nil, false
	}
	return ag, true
}

// takeAgent unpacks the subagent id and removes it from the packed ones;
// owner says it was byTool's subagent for its call.
func (c *closedSessions) takeAgent(id string) (ag *agentState, owner bool) {
	k := agentKey(id)
	b, ok := c.agents.byID[k]
	if !ok {
		return nil, false
	}
	ag, owner = decodeAgent(b, c.strs)
	if ag.id != id {
		return nil, false
	}
	delete(c.agents.byID, k)
	if owner {
		delete(c.agents.byTool, toolKey(ag.toolUseID))
	}
	return ag, owner
}

// decodeAgent reads a packed subagent, whose shared strings are in strs,
// and whether it was byTool's subagent for its call.
func decodeAgent(b string, strs []string) (*agentState, bool) {
	u := unpacker{strs: strs, b: []byte(b)}
	ag := &agentState{id: u.inline(), sessionID: u.id(), agentType: u.str(), description: u.inline(), toolUseID: u.inline()}
	flags := u.byte()
	ag.warmup, ag.warmupKnown = flags&agentWarmup != 0, flags&agentWarmupKnown != 0
	ag.background, ag.emitted = flags&agentBackground != 0, flags&agentEmitted != 0
	ag.seq = u.uvarint()
	ag.start = u.closedTime(time.Time{})
	ag.end = u.closedTime(ag.start)
	ag.project = u.str()
	if u.err == nil && len(u.b) != 0 {
		u.err = errPacked
	}
	if u.err != nil {
		panic(u.err) // packed by putAgent on this goroutine: it cannot be damaged
	}
	return ag, flags&agentOwnsTool != 0
}

// withPacked yields the subagents of live, then those packed (their
// shared strings in strs), as State.Agents holds them.
func withPacked(live iter.Seq[AgentState], packed iter.Seq[string], strs []string) iter.Seq[AgentState] {
	return func(yield func(AgentState) bool) {
		for ag := range live {
			if !yield(ag) {
				return
			}
		}
		for b := range packed {
			if ag, _ := decodeAgent(b, strs); !yield(ag.state()) {
				return
			}
		}
	}
}

func (c *closedSessions) agentsLen() int { return len(c.agents.byID) }

// ensureStrs makes the table of shared strings ready.
func (c *closedSessions) ensureStrs() {
	if c.index == nil {
		c.strs, c.index = []string{""}, map[string]uint32{"": 0}
	}
}
