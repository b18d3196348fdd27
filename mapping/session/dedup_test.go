package session

import (
	"slices"
	"testing"
)

// TestDedupIsGlobalAcrossFiles pins design §2.2: the same message.id seen
// in several files (a resumed session's copy of the history, a progress
// record's data.message, the subagent's own file) is one request, counted
// from the best line among all copies, whatever order the files are read
// in. A progress-embedded message whose subagent file is gone still counts.
func TestDedupIsGlobalAcrossFiles(t *testing.T) {
	const agent = "a5f27cb"
	// The original session: prompt, a streamed response.
	orig := file{sessionPath(sessA), []string{
		U{UUID: "u1", Sec: 0, Text: "Fix the build."}.String(),
		A{UUID: "a1", Parent: "u1", Sec: 1, Msg: "msg_1", Req: "req_1", In: 3, Out: 1, Read: 13921, Write: 30882}.String(),
		A{UUID: "a2", Parent: "a1", Sec: 2, Msg: "msg_1", Req: "req_1", In: 3, Out: 409, Read: 13921, Write: 30882, Stop: "end_turn"}.String(),
	}}
	// The resumed session copies the history, then goes on.
	resumed := file{sessionPath(sessB), []string{
		U{UUID: "u1", Session: sessB, Sec: 0, Text: "Fix the build."}.String(),
		A{UUID: "a1", Parent: "u1", Session: sessB, Sec: 1, Msg: "msg_1", Req: "req_1", In: 3, Out: 1, Read: 13921, Write: 30882}.String(),
		A{UUID: "a2", Parent: "a1", Session: sessB, Sec: 2, Msg: "msg_1", Req: "req_1", In: 3, Out: 409, Read: 13921, Write: 30882, Stop: "end_turn"}.String(),
		U{UUID: "u2", Parent: "a2", Session: sessB, Sec: 100, Text: "Now run the tests."}.String(),
		A{UUID: "a3", Parent: "u2", Session: sessB, Sec: 101, Msg: "msg_2", Req: "req_2", In: 5, Out: 77, Read: 44000, Stop: "end_turn"}.String(),
	}}
	// A subagent's response, in its own file and as progress copies in
	// the parent transcript (placeholder and final lines).
	subLine := func(out int64, stop string) string {
		return A{UUID: "s1", Parent: "s0", Sec: 11, Msg: "msg_sub", Req: "req_sub", Model: modelHaiku, Agent: agent, In: 3, Out: out, Write: 21582, Stop: stop}.String()
	}
	subFile := file{subagentPath(sessA, agent), []string{
		U{UUID: "s0", Sec: 10, Agent: agent, Text: "Search for the table definition."}.String(),
		subLine(1, ""),
		subLine(350, "end_turn"),
	}}
	parentTask := A{UUID: "a4", Parent: "a2", Sec: 9, Msg: "msg_task", Req: "req_task", In: 3, Out: 120, Stop: "tool_use", Blocks: blocks(taskUseB("toolu_T", "Explore", "Find the table"))}.String()
	progressPlaceholder := progress("p1", "a4", sessA, 11, agent, "toolu_T", subLine(1, ""))
	progressFinal := progress("p2", "p1", sessA, 12, agent, "toolu_T", subLine(350, "end_turn"))
	parentWithProgress := file{sessionPath(sessA), append(slices.Clone(orig.lines), parentTask, progressPlaceholder, progressFinal)}
	parentWithPlaceholderOnly := file{sessionPath(sessA), append(slices.Clone(orig.lines), parentTask, progressPlaceholder)}

	type want struct {
		output int64
		agent  string
	}
	tests := []struct {
		name  string
		files []file
		want  map[string]want // by message id; no other request may appear
	}{
		{
			name:  "resumed session copy counts once",
			files: []file{orig, resumed},
			want:  map[string]want{"msg_1": {409, ""}, "msg_2": {77, ""}},
		},
		{
			name:  "resumed session copy read first counts once",
			files: []file{resumed, orig},
			want:  map[string]want{"msg_1": {409, ""}, "msg_2": {77, ""}},
		},
		{
			name:  "progress copy and subagent file count once (file first)",
			files: []file{subFile, parentWithProgress},
			want:  map[string]want{"msg_1": {409, ""}, "msg_task": {120, ""}, "msg_sub": {350, agent}},
		},
		{
			name:  "progress copy and subagent file count once (progress first)",
			files: []file{parentWithProgress, subFile},
			want:  map[string]want{"msg_1": {409, ""}, "msg_task": {120, ""}, "msg_sub": {350, agent}},
		},
		{
			name:  "placeholder progress copy, final line in the subagent file",
			files: []file{parentWithPlaceholderOnly, subFile},
			want:  map[string]want{"msg_1": {409, ""}, "msg_task": {120, ""}, "msg_sub": {350, agent}},
		},
		{
			name:  "progress copy whose subagent file is gone still counts",
			files: []file{parentWithProgress},
			want:  map[string]want{"msg_1": {409, ""}, "msg_task": {120, ""}, "msg_sub": {350, agent}},
		},
		{
			name:  "every copy at once counts once",
			files: []file{orig, subFile, parentWithProgress, resumed, subFile},
			want:  map[string]want{"msg_1": {409, ""}, "msg_2": {77, ""}, "msg_task": {120, ""}, "msg_sub": {350, agent}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			log, _ := run(t, tc.files...)
			if len(log.requests) != len(tc.want) {
				ids := make([]string, 0, len(log.requests))
				for _, r := range log.requests {
					ids = append(ids, r.MessageID)
				}
				t.Errorf("requests %v, want one each of %v", ids, tc.want)
			}
			for id, w := range tc.want {
				r := one(t, id, log.requestsOf(id))
				if r.Tokens.Output != w.output || r.AgentID != w.agent {
					t.Errorf("%s: output %d agent %q, want %d %q", id, r.Tokens.Output, r.AgentID, w.output, w.agent)
				}
			}
			if len(log.updates) != 0 {
				t.Errorf("updates %+v, want none", log.updates)
			}
		})
	}
}

// TestProgressEmbeddedMessageBelongsToItsSubagent pins where a message
// carried by a progress record is placed: in the subagent named by
// data.agentId, in the parent's session, outside any turn.
func TestProgressEmbeddedMessageBelongsToItsSubagent(t *testing.T) {
	const agent = "a28c6c6"
	log, _ := run(t, file{sessionPath(sessA), []string{
		U{UUID: "u1", Sec: 0, Text: "Read the view."}.String(),
		A{UUID: "a1", Parent: "u1", Sec: 1, Msg: "msg_task", In: 3, Out: 50, Stop: "tool_use", Blocks: blocks(taskUseB("toolu_T", "general-purpose", "Read Edit.cshtml"))}.String(),
		progress("p1", "a1", sessA, 2, agent, "toolu_T", U{UUID: "s0", Sec: 2, Agent: agent, Text: "Read the file and return its full contents."}.String()),
		progress("p2", "p1", sessA, 3, agent, "toolu_T", A{UUID: "s1", Parent: "s0", Sec: 3, Msg: "msg_sub", Model: modelHaiku, Agent: agent, In: 3, Out: 30, Stop: "tool_use", Blocks: blocks(toolUseB("toolu_sub", "Read", `{"file_path":"Edit.cshtml"}`))}.String()),
		progress("p3", "p2", sessA, 4, agent, "toolu_T", U{UUID: "s2", Parent: "s1", Sec: 4, Agent: agent, Blocks: blocks(toolResultB("toolu_sub", false))}.String()),
	}})
	r := one(t, "msg_sub", log.requestsOf("msg_sub"))
	if r.SessionID != sessA || r.AgentID != agent || r.TurnID != "" || r.Model != modelHaiku {
		t.Errorf("embedded request where %+v model %s, want session %s agent %s no turn", r.Where, r.Model, sessA, agent)
	}
	if !r.Start.Equal(at(2)) || !r.End.Equal(at(3)) {
		t.Errorf("embedded request times %v–%v, want %v–%v (embedded timestamps)", r.Start, r.End, at(2), at(3))
	}
	c := one(t, "toolu_sub", log.toolsOf("toolu_sub"))
	if c.Outcome != OutcomeOK || c.Where.AgentID != agent || c.AgentID != "" || c.Duration().Seconds() != 1 {
		t.Errorf("embedded tool call %+v, want ok, inside agent %s (launching none), lasting 1s", c, agent)
	}
	if len(log.turns) != 1 {
		t.Errorf("turns %d, want 1: an embedded subagent prompt is not a human turn", len(log.turns))
	}
	if tu := log.turns[0]; tu.Requests != 1 {
		t.Errorf("turn requests %d, want 1 (the subagent's request is not the turn's)", tu.Requests)
	}
}
