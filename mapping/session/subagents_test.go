package session

import (
	"testing"
	"time"
)

// TestSubagents pins how subagent runs are found, typed and linked in
// every layout (design §1, §2.7, §2.8): new layout with .meta.json,
// workflows, legacy agent files typed from the parent's Task input via
// toolUseResult.agentId, progress records; Warmup agents; the "unknown"
// type; exactly one Subagent unit per agent, linked both ways to the
// Task call that launched it, while its requests stay counted.
func TestSubagents(t *testing.T) {
	const (
		newAgent    = "a2244978809bf394d"
		wfAgent     = "ad05375a05aa61f4e"
		legacyAgent = "a24fba1"
		progAgent   = "a5f27cb"
		taskID      = "toolu_01Dz2Z5Ldkq7148yyi1kACKL"
		wfPath      = projDir + "/" + sessA + "/subagents/workflows/wf_c823ff03-725/agent-" + wfAgent + ".jsonl"
	)
	prompt := U{UUID: "u1", Sec: 0, Text: "Build all the views."}.String()
	taskUse := func(subagentType string) string {
		return A{UUID: "a1", Parent: "u1", Sec: 1, Msg: "msg_task", Req: "req_task", In: 3, Out: 150, Stop: "tool_use", Blocks: blocks(taskUseB(taskID, subagentType, "Build all Laravel Blade views"))}.String()
	}
	taskRes := func(toolUseResult string) string {
		return U{UUID: "r1", Parent: "a1", Sec: 60, Blocks: blocks(toolResultB(taskID, false)), ToolUseResult: toolUseResult}.String()
	}
	// agentLines are a subagent's own records: its prompt and one request.
	agentLines := func(agent, first string) []string {
		return []string{
			U{UUID: agent + "-u", Sec: 2, Agent: agent, Text: first}.String(),
			A{UUID: agent + "-a1", Parent: agent + "-u", Sec: 3, Msg: "msg_" + agent, Req: "req_" + agent, Model: modelHaiku, Agent: agent, In: 3, Out: 1}.String(),
			A{UUID: agent + "-a2", Parent: agent + "-a1", Sec: 50, Msg: "msg_" + agent, Req: "req_" + agent, Model: modelHaiku, Agent: agent, In: 3, Out: 700, Read: 13000, Stop: "end_turn"}.String(),
		}
	}
	parent := func(lines ...string) file { return file{sessionPath(sessA), append([]string{prompt}, lines...)} }

	type wantAgent struct {
		typ       string
		toolUseID string
		warmup    bool
	}
	tests := []struct {
		name   string
		metas  map[string]subagentMeta
		files  []file
		agents map[string]wantAgent // every Subagent unit expected
		// taskAgent is the AgentID the Task ToolCall must carry ("" when
		// there is no Task call).
		taskAgent string
		// background is the agent launched with run_in_background.
		background string
	}{
		{
			name:  "new layout typed by meta, linked by toolUseResult (agent file first)",
			metas: map[string]subagentMeta{subagentPath(sessA, newAgent): {agentType: "general-purpose", description: "Build all Laravel Blade views for CMMCUnlock app"}},
			files: []file{
				{subagentPath(sessA, newAgent), agentLines(newAgent, "Build all Laravel Blade views.")},
				parent(taskUse("general-purpose"), taskRes(taskResult(newAgent, "general-purpose"))),
			},
			agents:    map[string]wantAgent{newAgent: {"general-purpose", taskID, false}},
			taskAgent: newAgent,
		},
		{
			name:  "new layout typed by meta, linked by toolUseResult (parent first)",
			metas: map[string]subagentMeta{subagentPath(sessA, newAgent): {agentType: "general-purpose"}},
			files: []file{
				parent(taskUse("general-purpose"), taskRes(taskResult(newAgent, "general-purpose"))),
				{subagentPath(sessA, newAgent), agentLines(newAgent, "Build all Laravel Blade views.")},
			},
			agents:    map[string]wantAgent{newAgent: {"general-purpose", taskID, false}},
			taskAgent: newAgent,
		},
		{
			name:  "new layout linked by the meta's toolUseId",
			metas: map[string]subagentMeta{subagentPath(sessA, newAgent): {agentType: "Explore", description: "Scan Claude transcripts for open loops", toolUseID: taskID}},
			files: []file{
				{subagentPath(sessA, newAgent), agentLines(newAgent, "Scan the transcripts.")},
				parent(taskUse("Explore"), taskRes(`"Error: agent failed"`)),
			},
			agents:    map[string]wantAgent{newAgent: {"Explore", taskID, false}},
			taskAgent: newAgent,
		},
		{
			name:  "new layout without a launching call keeps the meta type",
			metas: map[string]subagentMeta{subagentPath(sessA, newAgent): {agentType: "general-purpose"}},
			files: []file{
				parent(),
				{subagentPath(sessA, newAgent), agentLines(newAgent, "Build all Laravel Blade views.")},
			},
			agents: map[string]wantAgent{newAgent: {"general-purpose", "", false}},
		},
		{
			name:  "workflows directory",
			metas: map[string]subagentMeta{wfPath: {agentType: "workflow-subagent"}},
			files: []file{
				parent(),
				{wfPath, agentLines(wfAgent, "## Adversarial Claim Verifier (voter 2/3)")},
			},
			agents: map[string]wantAgent{wfAgent: {"workflow-subagent", "", false}},
		},
		{
			name: "legacy agent typed from the Task input via toolUseResult.agentId (agent file first)",
			files: []file{
				{legacyAgentPath(legacyAgent), agentLines(legacyAgent, "Explore the VIBE skills directory.")},
				parent(taskUse("Explore"), taskRes(taskResult(legacyAgent, ""))),
			},
			agents:    map[string]wantAgent{legacyAgent: {"Explore", taskID, false}},
			taskAgent: legacyAgent,
		},
		{
			name: "legacy agent typed from the Task input via toolUseResult.agentId (parent first)",
			files: []file{
				parent(taskUse("Explore"), taskRes(taskResult(legacyAgent, ""))),
				{legacyAgentPath(legacyAgent), agentLines(legacyAgent, "Explore the VIBE skills directory.")},
			},
			agents:    map[string]wantAgent{legacyAgent: {"Explore", taskID, false}},
			taskAgent: legacyAgent,
		},
		{
			name: "legacy agent launched by an Agent call (the Task tool's newer name)",
			files: []file{
				parent(
					A{UUID: "a1", Parent: "u1", Sec: 1, Msg: "msg_task", In: 3, Out: 150, Stop: "tool_use", Blocks: blocks(toolUseB(taskID, "Agent", `{"description":"Review the diff","prompt":"Review it.","subagent_type":"code-reviewer"}`))}.String(),
					taskRes(taskResult(legacyAgent, "")),
				),
				{legacyAgentPath(legacyAgent), agentLines(legacyAgent, "Review it.")},
			},
			agents:    map[string]wantAgent{legacyAgent: {"code-reviewer", taskID, false}},
			taskAgent: legacyAgent,
		},
		{
			name: "an Agent call without subagent_type runs a general-purpose agent",
			files: []file{
				parent(
					A{UUID: "a1", Parent: "u1", Sec: 1, Msg: "msg_task", In: 3, Out: 150, Stop: "tool_use", Blocks: blocks(toolUseB(taskID, "Agent", `{"description":"Review the diff","prompt":"Review it."}`))}.String(),
					taskRes(taskResult(legacyAgent, "")),
				),
				{legacyAgentPath(legacyAgent), agentLines(legacyAgent, "Review it.")},
			},
			agents:    map[string]wantAgent{legacyAgent: {"general-purpose", taskID, false}},
			taskAgent: legacyAgent,
		},
		{
			name: "an Agent call with run_in_background runs a background agent",
			files: []file{
				parent(
					A{UUID: "a1", Parent: "u1", Sec: 1, Msg: "msg_task", In: 3, Out: 150, Stop: "tool_use", Blocks: blocks(toolUseB(taskID, "Agent", `{"description":"Watch the build","prompt":"Review it.","subagent_type":"Explore","run_in_background":true}`))}.String(),
					taskRes(taskResult(legacyAgent, "")),
				),
				{legacyAgentPath(legacyAgent), agentLines(legacyAgent, "Review it.")},
			},
			agents:     map[string]wantAgent{legacyAgent: {"Explore", taskID, false}},
			taskAgent:  legacyAgent,
			background: legacyAgent,
		},
		{
			name: "legacy agent never resolved is unknown",
			files: []file{
				parent(),
				{legacyAgentPath(legacyAgent), agentLines(legacyAgent, "Explore the VIBE skills directory.")},
			},
			agents: map[string]wantAgent{legacyAgent: {"unknown", "", false}},
		},
		{
			name: "legacy Warmup agent",
			files: []file{
				parent(),
				{legacyAgentPath(legacyAgent), agentLines(legacyAgent, "Warmup")},
			},
			agents: map[string]wantAgent{legacyAgent: {"unknown", "", true}},
		},
		{
			name:  "new layout Warmup agent",
			metas: map[string]subagentMeta{subagentPath(sessA, newAgent): {agentType: "Explore"}},
			files: []file{
				parent(),
				{subagentPath(sessA, newAgent), agentLines(newAgent, "Warmup")},
			},
			agents: map[string]wantAgent{newAgent: {"Explore", "", true}},
		},
		{
			name: "Warmup must be the exact content",
			files: []file{
				parent(),
				{legacyAgentPath(legacyAgent), agentLines(legacyAgent, "Warmup the cache, then explore.")},
			},
			agents: map[string]wantAgent{legacyAgent: {"unknown", "", false}},
		},
		{
			name: "progress record links by data.agentId and parentToolUseID",
			files: []file{
				parent(
					taskUse("Explore"),
					progress("p1", "a1", sessA, 2, progAgent, taskID, U{UUID: "pu", Sec: 2, Agent: progAgent, Text: "Search for the Common_Building table."}.String()),
					progress("p2", "p1", sessA, 3, progAgent, taskID, A{UUID: "pa", Parent: "pu", Sec: 3, Msg: "msg_" + progAgent, Model: modelHaiku, Agent: progAgent, In: 3, Out: 700, Stop: "end_turn"}.String()),
				),
			},
			agents:    map[string]wantAgent{progAgent: {"Explore", taskID, false}},
			taskAgent: progAgent,
		},
		{
			name: "progress record link, then the Task result",
			files: []file{
				parent(
					taskUse("Explore"),
					progress("p1", "a1", sessA, 2, progAgent, taskID, U{UUID: "pu", Sec: 2, Agent: progAgent, Text: "Search for the Common_Building table."}.String()),
					progress("p2", "p1", sessA, 3, progAgent, taskID, A{UUID: "pa", Parent: "pu", Sec: 3, Msg: "msg_" + progAgent, Model: modelHaiku, Agent: progAgent, In: 3, Out: 700, Stop: "end_turn"}.String()),
					taskRes(`{"status":"completed","content":[{"type":"text","text":"Done."}],"totalDurationMs":5000}`),
				),
			},
			agents:    map[string]wantAgent{progAgent: {"Explore", taskID, false}},
			taskAgent: progAgent,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			log, _ := runWithMeta(t, tc.metas, tc.files...)
			if len(log.agents) != len(tc.agents) {
				t.Errorf("subagent units %+v, want one each of %v", log.agents, tc.agents)
			}
			for id, w := range tc.agents {
				s := one(t, "subagent "+id, log.agentsOf(id))
				if s.AgentType != w.typ || s.ToolUseID != w.toolUseID || s.Warmup != w.warmup || s.Background != (id == tc.background) || !s.Ended {
					t.Errorf("subagent %s: type=%q tool=%q warmup=%v background=%v ended=%v, want type=%q tool=%q warmup=%v background=%v ended",
						id, s.AgentType, s.ToolUseID, s.Warmup, s.Background, s.Ended, w.typ, w.toolUseID, w.warmup, id == tc.background)
				}
				if s.SessionID != sessA || s.TurnID != "" {
					t.Errorf("subagent %s where %+v, want session %s and no turn", id, s.Where, sessA)
				}
				// Its tokens count, Warmup or not, as requests of the agent.
				r := one(t, "request of "+id, log.requestsOf("msg_"+id))
				if r.AgentID != id || r.SessionID != sessA || r.TurnID != "" || r.Tokens.Output != 700 {
					t.Errorf("request of %s: where %+v output %d, want agent %s, session %s, output 700", id, r.Where, r.Tokens.Output, id, sessA)
				}
			}
			if calls := log.toolsOf(taskID); len(calls) > 0 || tc.taskAgent != "" {
				c := one(t, "Task call", calls)
				if c.AgentID != tc.taskAgent {
					t.Errorf("Task ToolCall.AgentID = %q, want %q", c.AgentID, tc.taskAgent)
				}
				if c.AgentID != "" && c.SubagentType == "" {
					t.Errorf("Task ToolCall.SubagentType empty")
				}
			}
			starts, _ := log.sessionsOf(sessA)
			one(t, "session start", starts)
		})
	}
}

// TestSubagentTimes pins the subagent's span: it starts at its first
// record and ends at its last one (or its Task result, whichever is
// later).
func TestSubagentTimes(t *testing.T) {
	const agent = "a2244978809bf394d"
	const taskID = "toolu_T"
	log, _ := runWithMeta(t, map[string]subagentMeta{subagentPath(sessA, agent): {agentType: "general-purpose"}},
		file{subagentPath(sessA, agent), []string{
			U{UUID: "s0", Sec: 5, Agent: agent, Text: "Build the views."}.String(),
			A{UUID: "s1", Parent: "s0", Sec: 40, Msg: "msg_sub", Agent: agent, Out: 100, Stop: "end_turn"}.String(),
		}},
		file{sessionPath(sessA), []string{
			U{UUID: "u1", Sec: 0, Text: "Build."}.String(),
			A{UUID: "a1", Parent: "u1", Sec: 4, Msg: "msg_1", Out: 50, Stop: "tool_use", Blocks: blocks(taskUseB(taskID, "general-purpose", "Build the views"))}.String(),
			U{UUID: "r1", Parent: "a1", Sec: 41, Blocks: blocks(toolResultB(taskID, false)), ToolUseResult: taskResult(agent, "general-purpose")}.String(),
		}},
	)
	s := one(t, "subagent", log.agentsOf(agent))
	if !s.Start.Equal(at(5)) || !s.End.Equal(at(41)) {
		t.Errorf("subagent %v–%v, want %v–%v", s.Start, s.End, at(5), at(41))
	}
	if s.Description != "Build the views" {
		t.Errorf("Description %q, want the Task's description", s.Description)
	}
}

// The Explore subagent of the tests below, launched by its Task call in
// session sess.
const (
	exploreAgent  = "a2244978809bf394d"
	exploreTaskID = "toolu_01Dz2Z5Ldkq7148yyi1kACKL"
)

func exploreTaskCall(sess string) string {
	return A{UUID: "a1", Parent: "u1", Session: sess, Sec: 1, Msg: "msg_task", Req: "req_task", In: 3, Out: 150, Stop: "tool_use",
		Blocks: blocks(taskUseB(exploreTaskID, "Explore", "Scan the views"))}.String()
}

// exploreSubagentReadFirst feeds the Explore subagent's file before its
// session's (linked to its Task call by its .meta.json, typed by nothing),
// and lets the session go idle: the subagent is out.
func exploreSubagentReadFirst(t *testing.T) *feeder {
	t.Helper()
	f := newFeeder(t, Config{IdleTimeout: 30 * time.Minute})
	f.metas = map[string]subagentMeta{subagentPath(sessA, exploreAgent): {toolUseID: exploreTaskID}}
	f.files(at(0), file{subagentPath(sessA, exploreAgent), []string{
		U{UUID: "su", Sec: 2, Agent: exploreAgent, Text: "Scan the views."}.String(),
		A{UUID: "sa", Parent: "su", Sec: 3, Msg: "msg_sub1", Req: "req_sub1", Model: modelHaiku, Agent: exploreAgent, In: 3, Out: 10, Stop: "end_turn"}.String(),
	}})
	f.asm.FlushRead(at(0).Add(24 * time.Hour))
	return f
}

// TestTaskCallIsKeptOnlyAsDoneOnceItsSubagentIsKnown: a Task call was kept
// whole for the daemon's life so that a subagent read later could take its
// type and description from it: every Task call of a history stayed (16 MB
// at 50,000). Once its result has named its subagent and the subagent is
// out, it is kept as a restored state keeps it, by its id: the subagent's
// own lines, read after, and a resumed session's copy of the call and its
// result count as before.
func TestTaskCallIsKeptOnlyAsDoneOnceItsSubagentIsKnown(t *testing.T) {
	const agent, taskID = exploreAgent, exploreTaskID
	call := exploreTaskCall
	result := func(sess string) string {
		return U{UUID: "r1", Parent: "a1", Session: sess, Sec: 60, Blocks: blocks(toolResultB(taskID, false)), ToolUseResult: taskResult(agent, "Explore")}.String()
	}
	f := newFeeder(t, Config{})
	f.files(at(0),
		file{sessionPath(sessA), []string{U{UUID: "u1", Sec: 0, Text: "Scan the views."}.String(), call(sessA), result(sessA)}},
		file{subagentPath(sessA, agent), []string{
			U{UUID: "su", Sec: 2, Agent: agent, Text: "Scan the views."}.String(),
			A{UUID: "sa", Parent: "su", Sec: 3, Msg: "msg_sub", Req: "req_sub", Model: modelHaiku, Agent: agent, In: 3, Out: 700, Stop: "end_turn"}.String(),
		}},
	)
	if n := len(f.asm.tools); n != 0 {
		t.Errorf("%d tool states kept after the subagent was read, want 0 (the Task call as done)", n)
	}
	if !f.asm.toolDone(taskID) {
		t.Errorf("the Task call is not known as done")
	}
	// A resumed session copies the call and its result: nothing new.
	f.files(at(0), file{sessionPath(sessB), []string{U{UUID: "u1", Session: sessB, Sec: 0, Text: "Scan the views."}.String(), call(sessB), result(sessB)}})
	f.flush(at(0), true)
	c := one(t, "Task call", f.log.toolsOf(taskID))
	if c.AgentID != agent || c.SubagentType != "Explore" {
		t.Errorf("Task call: agent %q type %q, want %q Explore", c.AgentID, c.SubagentType, agent)
	}
	s := one(t, "subagent", f.log.agentsOf(agent))
	if s.AgentType != "Explore" || s.ToolUseID != taskID || s.Description != "Scan the views" {
		t.Errorf("subagent: type %q tool %q description %q, want Explore %s %q", s.AgentType, s.ToolUseID, s.Description, taskID, "Scan the views")
	}
	r := one(t, "subagent request", f.log.requestsOf("msg_sub"))
	if r.AgentID != agent || r.Spender != "subagent:Explore" {
		t.Errorf("subagent request: agent %q spender %q, want %q subagent:Explore", r.AgentID, r.Spender, agent)
	}
}

// TestSubagentOutBeforeItsCallTakesTheCallsType: a subagent read first,
// linked to its Task call by its .meta.json's toolUseId but typed by
// nothing, goes out as unknown when its session goes idle; the call read
// after it types the requests the subagent makes later, although the call
// is then kept only as done (found by review of the change that drops it).
func TestSubagentOutBeforeItsCallTakesTheCallsType(t *testing.T) {
	const agent, taskID = exploreAgent, exploreTaskID
	f := exploreSubagentReadFirst(t)
	if s := one(t, "subagent out before its call", f.log.agentsOf(agent)); s.AgentType != "unknown" {
		t.Fatalf("subagent out before its call typed %q, want unknown (the case this test is for)", s.AgentType)
	}
	f.files(at(0).Add(24*time.Hour), file{sessionPath(sessA), []string{
		U{UUID: "u1", Sec: 0, Text: "Scan the views."}.String(),
		A{UUID: "a1", Parent: "u1", Sec: 1, Msg: "msg_task", Req: "req_task", In: 3, Out: 150, Stop: "tool_use", Blocks: blocks(taskUseB(taskID, "Explore", "Scan the views"))}.String(),
		U{UUID: "r1", Parent: "a1", Sec: 60, Blocks: blocks(toolResultB(taskID, false)), ToolUseResult: taskResult(agent, "")}.String(),
	}})
	f.files(at(0).Add(24*time.Hour), file{subagentPath(sessA, agent), []string{
		A{UUID: "sb", Parent: "sa", Sec: 70, Msg: "msg_sub2", Req: "req_sub2", Model: modelHaiku, Agent: agent, In: 3, Out: 20, Stop: "end_turn"}.String(),
	}})
	f.flush(at(0).Add(48*time.Hour), true)
	r := one(t, "later request", f.log.requestsOf("msg_sub2"))
	if r.AgentID != agent || r.Spender != "subagent:Explore" {
		t.Errorf("later request of the subagent: agent %q spender %q, want %q subagent:Explore", r.AgentID, r.Spender, agent)
	}
}

// TestSubagentsOfClosedSessionsArePackedAndWakeForALateLine: a subagent
// that is out, of a session that closed, was kept as a struct in two maps
// for the daemon's life (about 450 bytes: 22 MB at 50,000). It is packed
// with the closed sessions; what may still name it finds it as before: a
// resumed session's copy of its Task call (no sidechain waits for it),
// lines appended to its file (the same subagent, its type, no second
// span), and a state file, which keeps it and restores it packed.
func TestSubagentsOfClosedSessionsArePackedAndWakeForALateLine(t *testing.T) {
	const agent, taskID = exploreAgent, exploreTaskID
	call := exploreTaskCall
	f := newFeeder(t, Config{IdleTimeout: 30 * time.Minute})
	f.files(at(0),
		file{sessionPath(sessA), []string{U{UUID: "u1", Sec: 0, Text: "Scan the views."}.String(), call(sessA),
			U{UUID: "r1", Parent: "a1", Sec: 60, Blocks: blocks(toolResultB(taskID, false)), ToolUseResult: taskResult(agent, "Explore")}.String()}},
		file{subagentPath(sessA, agent), []string{
			U{UUID: "su", Sec: 2, Agent: agent, Text: "Scan the views."}.String(),
			A{UUID: "sa", Parent: "su", Sec: 3, Msg: "msg_sub1", Req: "req_sub1", Model: modelHaiku, Agent: agent, In: 3, Out: 10, Stop: "end_turn"}.String(),
		}},
	)
	packed := func(when string) {
		t.Helper()
		if len(f.asm.agents) != 0 || len(f.asm.byTool) != 0 || f.asm.closed.agentsLen() != 1 {
			t.Errorf("%s: %d subagents and %d Task links unpacked, %d packed; want 0, 0, 1", when, len(f.asm.agents), len(f.asm.byTool), f.asm.closed.agentsLen())
		}
	}
	f.asm.FlushRead(at(0).Add(24 * time.Hour))
	packed("session closed")

	// A resumed session's copy of the call finds its subagent packed.
	f.files(at(0).Add(24*time.Hour), file{sessionPath(sessB), []string{U{UUID: "u1", Session: sessB, Sec: 0, Text: "Scan the views."}.String(), call(sessB)}})
	if s := f.asm.sessions[sessB]; s == nil || len(s.pendingTasks) != 0 {
		t.Errorf("resumed session's copy of the Task call waits for a sidechain: %+v", s)
	}
	// Lines appended to the subagent's file.
	f.files(at(0).Add(24*time.Hour), file{subagentPath(sessA, agent), []string{
		A{UUID: "sb", Parent: "sa", Sec: 70, Msg: "msg_sub2", Req: "req_sub2", Model: modelHaiku, Agent: agent, In: 3, Out: 20, Stop: "end_turn"}.String(),
	}})
	f.asm.FlushRead(at(0).Add(48 * time.Hour))
	packed("closed again")
	r := one(t, "late request", f.log.requestsOf("msg_sub2"))
	if r.AgentID != agent || r.SessionID != sessA || r.Spender != "subagent:Explore" {
		t.Errorf("late request: session %q agent %q spender %q, want %s %s subagent:Explore", r.SessionID, r.AgentID, r.Spender, sessA, agent)
	}
	s := one(t, "subagent", f.log.agentsOf(agent))
	if s.AgentType != "Explore" || s.ToolUseID != taskID || s.Description != "Scan the views" {
		t.Errorf("subagent: type %q tool %q description %q", s.AgentType, s.ToolUseID, s.Description)
	}

	// The state keeps it whole, and a restored one has it packed.
	st := f.asm.State()
	if len(st.Agents) != 1 {
		t.Fatalf("state holds %d subagents, want 1", len(st.Agents))
	}
	want := st.Agents[0]
	if want.ID != agent || want.SessionID != sessA || want.AgentType != "Explore" || want.ToolUseID != taskID || !want.Emitted || want.Start.IsZero() {
		t.Errorf("saved subagent %+v", want)
	}
	g := newFeeder(t, Config{IdleTimeout: 30 * time.Minute})
	if err := g.asm.Restore(st, at(0).Add(48*time.Hour)); err != nil {
		t.Fatal(err)
	}
	f = g
	packed("restored")
	if got := g.asm.State().Agents; len(got) != 1 || got[0] != want {
		t.Errorf("restored state's subagents %+v, want %+v", got, want)
	}
	g.files(at(0).Add(48*time.Hour), file{subagentPath(sessA, agent), []string{
		A{UUID: "sc", Parent: "sb", Sec: 80, Msg: "msg_sub3", Req: "req_sub3", Model: modelHaiku, Agent: agent, In: 3, Out: 20, Stop: "end_turn"}.String(),
	}})
	g.flush(at(0).Add(72*time.Hour), true)
	if r := one(t, "request after the restore", g.log.requestsOf("msg_sub3")); r.Spender != "subagent:Explore" {
		t.Errorf("request after the restore: spender %q, want subagent:Explore", r.Spender)
	}
	if n := len(g.log.agentsOf(agent)); n != 0 {
		t.Errorf("the restored subagent went out again (%d spans)", n)
	}
}

// TestSubagentTypedByAnUnansweredCallIsPackedAgain: a subagent read
// first (linked to its Task call by its .meta.json) is out and packed
// when its session closes; the session's own file then brings the call,
// without a result, and the session closes again with the call open. The
// call, marked unanswered, unpacks the subagent to type it, and it is
// packed again (found by review: it stayed unpacked for the daemon's life).
func TestSubagentTypedByAnUnansweredCallIsPackedAgain(t *testing.T) {
	f := exploreSubagentReadFirst(t)
	if len(f.asm.agents) != 0 || f.asm.closed.agentsLen() != 1 {
		t.Fatalf("after the first close: %d unpacked, %d packed; want 0, 1", len(f.asm.agents), f.asm.closed.agentsLen())
	}
	f.files(at(0).Add(24*time.Hour), file{sessionPath(sessA), []string{
		U{UUID: "u1", Sec: 0, Text: "Scan the views."}.String(), exploreTaskCall(sessA),
	}})
	f.asm.FlushRead(at(0).Add(48 * time.Hour))
	c := one(t, "Task call", f.log.toolsOf(exploreTaskID))
	if c.AgentID != exploreAgent || c.Outcome != OutcomeUnanswered {
		t.Errorf("Task call: agent %q outcome %q, want %s unanswered", c.AgentID, c.Outcome, exploreAgent)
	}
	if len(f.asm.agents) != 0 || len(f.asm.byTool) != 0 || f.asm.closed.agentsLen() != 1 {
		t.Errorf("after the second close: %d unpacked, %d Task links, %d packed; want 0, 0, 1", len(f.asm.agents), len(f.asm.byTool), f.asm.closed.agentsLen())
	}
	if ag, _ := f.asm.closed.peekAgent(exploreAgent); ag == nil || ag.agentType != "Explore" || ag.toolUseID != exploreTaskID {
		t.Errorf("packed subagent %+v, want typed Explore by its call", ag)
	}
}
