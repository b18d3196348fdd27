package indepcount

import (
	"encoding/json"
	"strings"
)

// spender says who spent a request first read in agent's thread: main,
// compaction (agent-acompact-*), internal (agent-aprompt_suggestion-*),
// warmup (first prompt "Warmup"), or subagent:<type>, the type from the
// agent's .meta.json, else its Task/Agent call, else unknown.
func (c *counter) spender(agent string) string {
	switch {
	case agent == "":
		return "main"
	case strings.HasPrefix(agent, "acompact-"):
		return "compaction"
	case strings.HasPrefix(agent, "aprompt_suggestion-"), strings.HasPrefix(agent, "aside_question-"):
		return "internal"
	case c.warmup[agent]:
		return "warmup"
	}
	if typ := c.metaType[agent]; typ != "" {
		return "subagent:" + typ
	}
	if typ := c.taskType[c.agentTool[agent]]; typ != "" {
		return "subagent:" + typ
	}
	return "subagent:unknown"
}

// readerRank orders the threads that read one request: the main thread
// (2) before a subagent (1) before a fork Claude Code runs for itself and
// whose first lines copy its parent's history (0: compaction, side
// questions, prompt suggestions, agent type "fork").
func readerRank(agent, metaType string) int {
	switch {
	case agent == "":
		return 2
	case strings.HasPrefix(agent, "acompact-"), strings.HasPrefix(agent, "aside_question-"),
		strings.HasPrefix(agent, "aprompt_suggestion-"), metaType == "fork":
		return 0
	}
	return 1
}

// sidechainAgents gives, for each line of a session file, the subagent of
// a sidechain written inside it (Claude Code up to 2.0), "" for the rest.
// A sidechain is the isSidechain lines that chain by parentUuid to a
// first line without parent; it belongs to the first Task/Agent call of
// the main thread written before that first line that no earlier
// sidechain took and whose result comes after it ("side-<call id>"), else
// it is "side-<first line uuid>". Lines whose chain is not in the file go
// with the sidechain before them. Whole-file, two passes.
func sidechainAgents(lines [][]byte) []string {
	type rec struct {
		side         bool
		uuid, parent string
		calls        []string // Task/Agent calls (main thread)
		results      []string // tool_use ids answered (main thread)
	}
	recs := make([]rec, len(lines))
	found := false
	for i, l := range lines {
		var r struct {
			IsSidechain bool
			UUID        string `json:"uuid"`
			ParentUUID  string `json:"parentUuid"`
			Message     struct {
				Content any
			}
		}
		if json.Unmarshal(l, &r) != nil {
			continue
		}
		recs[i] = rec{side: r.IsSidechain, uuid: r.UUID, parent: r.ParentUUID}
		if r.IsSidechain {
			found = true
			continue
		}
		blocks, _ := r.Message.Content.([]any)
		for _, b := range blocks {
			m, _ := b.(map[string]any)
			switch str(m["type"]) {
			case "tool_use":
				if n := str(m["name"]); n == "Task" || n == "Agent" {
					recs[i].calls = append(recs[i].calls, str(m["id"]))
				}
			case "tool_result":
				recs[i].results = append(recs[i].results, str(m["tool_use_id"]))
			}
		}
	}
	if !found {
		return nil
	}
	answeredAt := map[string]int{}
	for i, r := range recs {
		for _, id := range r.results {
			if _, ok := answeredAt[id]; !ok {
				answeredAt[id] = i
			}
		}
	}
	out := make([]string, len(lines))
	byUUID := map[string]string{}
	taken := map[string]bool{}
	last := ""
	for i, r := range recs {
		if !r.side {
			continue
		}
		agent, ok := byUUID[r.parent]
		switch {
		case ok && r.parent != "":
		case r.parent != "" && last != "":
			agent = last
		default:
			agent = "side-" + r.uuid
		search:
			for j := 0; j < i; j++ {
				for _, id := range recs[j].calls {
					at, answered := answeredAt[id]
					if !taken[id] && (!answered || at > i) {
						taken[id] = true
						agent = "side-" + id
						break search
					}
				}
			}
		}
		if r.uuid != "" {
			byUUID[r.uuid] = agent
		}
		out[i] = agent
		last = agent
	}
	return out
}
