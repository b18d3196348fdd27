package session

import (
	"testing"
	"time"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/transcript"
)

// TestToolUseResultPairing pins design §2.7: a tool_use and the
// tool_result naming its id make one ToolCall, whatever file or order
// they come in; is_error gives the outcome; a call never answered is
// "unanswered" at the final Flush; the duration is result time − use
// time, clamped to zero (and counted) when the result is stamped earlier;
// copies never count twice; results without a use are counted as orphans
// at the final Flush.
func TestToolUseResultPairing(t *testing.T) {
	prompt := U{UUID: "u1", Sec: 0, Text: "List the files."}.String()
	use := func(sec int, session string) string {
		return A{UUID: "a1", Parent: "u1", Session: session, Sec: sec, Msg: "msg_1", Req: "req_1", In: 3, Out: 80, Stop: "tool_use",
			Blocks: blocks(textB("Let me check the current state."), toolUseB("toolu_01BbF142QTfQXKEudiVmQnXf", "Bash", ""))}.String()
	}
	result := func(sec int, session string, isError bool) string {
		return U{UUID: "r1", Parent: "a1", Session: session, Sec: sec, Blocks: blocks(toolResultB("toolu_01BbF142QTfQXKEudiVmQnXf", isError)),
			ToolUseResult: `{"stdout":"total 4","stderr":"","interrupted":false,"isImage":false}`}.String()
	}
	const id = "toolu_01BbF142QTfQXKEudiVmQnXf"
	tests := []struct {
		name    string
		files   []file
		outcome Outcome
		start   time.Time
		end     time.Time
		hasDur  bool
		dur     time.Duration
		orphans int64
		clamped int64
		noCall  bool // no ToolCall at all
	}{
		{
			name:    "result pairs with its use: ok",
			files:   []file{{sessionPath(sessA), []string{prompt, use(1, ""), result(4, "", false)}}},
			outcome: OutcomeOK, start: at(1), end: at(4), hasDur: true, dur: 3 * time.Second,
		},
		{
			name:    "is_error true: error",
			files:   []file{{sessionPath(sessA), []string{prompt, use(1, ""), result(4, "", true)}}},
			outcome: OutcomeError, start: at(1), end: at(4), hasDur: true, dur: 3 * time.Second,
		},
		{
			name:    "no result: unanswered on final flush",
			files:   []file{{sessionPath(sessA), []string{prompt, use(1, "")}}},
			outcome: OutcomeUnanswered, start: at(1),
		},
		{
			name: "result read before its use (other file) still pairs",
			files: []file{
				{sessionPath(sessB), []string{result(4, sessB, false)}},
				{sessionPath(sessA), []string{prompt, use(1, "")}},
			},
			outcome: OutcomeOK, start: at(1), end: at(4), hasDur: true, dur: 3 * time.Second,
		},
		{
			name: "error result read before its use keeps the error",
			files: []file{
				{sessionPath(sessB), []string{result(4, sessB, true)}},
				{sessionPath(sessA), []string{prompt, use(1, "")}},
			},
			outcome: OutcomeError, start: at(1), end: at(4), hasDur: true, dur: 3 * time.Second,
		},
		{
			name:    "result stamped before its use is clamped",
			files:   []file{{sessionPath(sessA), []string{prompt, use(10, ""), result(4, "", false)}}},
			outcome: OutcomeOK, start: at(10), end: at(10), hasDur: true, dur: 0, clamped: 1,
		},
		{
			name: "early result stamped before its use is clamped",
			files: []file{
				{sessionPath(sessB), []string{result(4, sessB, false)}},
				{sessionPath(sessA), []string{prompt, use(10, "")}},
			},
			outcome: OutcomeOK, start: at(10), end: at(10), hasDur: true, dur: 0, clamped: 1,
		},
		{
			name: "copies of use and result count once",
			files: []file{
				{sessionPath(sessA), []string{prompt, use(1, ""), result(4, "", false)}},
				{sessionPath(sessB), []string{prompt, use(1, sessB), result(4, sessB, false)}},
			},
			outcome: OutcomeOK, start: at(1), end: at(4), hasDur: true, dur: 3 * time.Second,
		},
		{
			name: "two early copies of the result count once",
			files: []file{
				{sessionPath(sessB), []string{result(4, sessB, false), result(4, sessB, false)}},
				{sessionPath(sessA), []string{prompt, use(1, ""), result(4, "", false)}},
			},
			outcome: OutcomeOK, start: at(1), end: at(4), hasDur: true, dur: 3 * time.Second,
		},
		{
			name: "a later error copy of an answered call changes nothing",
			files: []file{
				{sessionPath(sessA), []string{prompt, use(1, ""), result(4, "", false), result(9, "", true)}},
			},
			outcome: OutcomeOK, start: at(1), end: at(4), hasDur: true, dur: 3 * time.Second,
		},
		{
			name: "result without any use is an orphan",
			files: []file{
				{sessionPath(sessA), []string{prompt, result(4, "", false)}},
			},
			noCall: true, orphans: 1,
		},
		{
			name: "orphans are counted per tool_use id",
			files: []file{
				{sessionPath(sessA), []string{prompt, result(4, "", false), result(4, "", false),
					U{UUID: "r2", Sec: 5, Blocks: blocks(toolResultB("toolu_gone", true))}.String()}},
			},
			noCall: true, orphans: 2,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			log, st := run(t, tc.files...)
			if st.OrphanToolResults != tc.orphans || st.ClampedTimes != tc.clamped {
				t.Errorf("stats orphans=%d clamped=%d, want %d %d", st.OrphanToolResults, st.ClampedTimes, tc.orphans, tc.clamped)
			}
			if tc.noCall {
				if len(log.tools) != 0 {
					t.Errorf("tool calls %+v, want none", log.tools)
				}
				return
			}
			c := one(t, id, log.toolsOf(id))
			if len(log.tools) != 1 {
				t.Errorf("tool calls %+v, want only %s", log.tools, id)
			}
			if c.Outcome != tc.outcome || !c.Start.Equal(tc.start) || !c.End.Equal(tc.end) || c.HasDuration != tc.hasDur || c.Duration() != tc.dur {
				t.Errorf("call outcome=%s start=%v end=%v hasDur=%v dur=%v\nwant outcome=%s start=%v end=%v hasDur=%v dur=%v",
					c.Outcome, c.Start, c.End, c.HasDuration, c.Duration(), tc.outcome, tc.start, tc.end, tc.hasDur, tc.dur)
			}
			if c.Name != "Bash" || c.MessageID != "msg_1" || c.SessionID != sessA || c.TurnID != "u1" || c.AgentID != "" {
				t.Errorf("call labels %+v, want Bash from msg_1 in session %s turn u1", c, sessA)
			}
		})
	}
}

// TestSeveralToolsInOneResponse pins pairing when one response issues
// several tool_use blocks (on separate streamed lines) and one user record
// answers them all.
func TestSeveralToolsInOneResponse(t *testing.T) {
	log, st := run(t, file{sessionPath(sessA), []string{
		U{UUID: "u1", Sec: 0, Text: "Look around."}.String(),
		A{UUID: "a1", Parent: "u1", Sec: 1, Msg: "msg_1", In: 3, Out: 1, Blocks: blocks(toolUseB("toolu_A", "Read", `{"file_path":"/a"}`))}.String(),
		A{UUID: "a2", Parent: "a1", Sec: 2, Msg: "msg_1", In: 3, Out: 1, Blocks: blocks(toolUseB("toolu_B", "Grep", `{"pattern":"x"}`))}.String(),
		A{UUID: "a3", Parent: "a2", Sec: 3, Msg: "msg_1", In: 3, Out: 150, Stop: "tool_use", Blocks: blocks(toolUseB("toolu_C", "Glob", `{"pattern":"*.go"}`))}.String(),
		U{UUID: "r1", Parent: "a3", Sec: 7, Blocks: blocks(toolResultB("toolu_A", false), toolResultB("toolu_B", true))}.String(),
	}})
	want := map[string]struct {
		name    string
		outcome Outcome
		dur     time.Duration
	}{
		"toolu_A": {"Read", OutcomeOK, 6 * time.Second},
		"toolu_B": {"Grep", OutcomeError, 5 * time.Second},
		"toolu_C": {"Glob", OutcomeUnanswered, 0},
	}
	if len(log.tools) != len(want) {
		t.Errorf("tool calls %d, want %d", len(log.tools), len(want))
	}
	for id, w := range want {
		c := one(t, id, log.toolsOf(id))
		if c.Name != w.name || c.Outcome != w.outcome || c.Duration() != w.dur || c.MessageID != "msg_1" {
			t.Errorf("%s: %s %s %v (msg %s), want %s %s %v", id, c.Name, c.Outcome, c.Duration(), c.MessageID, w.name, w.outcome, w.dur)
		}
	}
	if st.OrphanToolResults != 0 {
		t.Errorf("orphans %d, want 0", st.OrphanToolResults)
	}
}

// TestUnansweredAndOrphansOnlyOnFinalFlush pins when the open ends are
// settled: a non-final Flush neither gives up on a tool call nor counts a
// result as an orphan (its use may be in a file not read yet).
func TestUnansweredAndOrphansOnlyOnFinalFlush(t *testing.T) {
	f := newFeeder(t, Config{Settle: time.Second})
	f.add(sessionPath(sessA), at(0),
		U{UUID: "u1", Sec: 0, Text: "Go."}.String(),
		A{UUID: "a1", Parent: "u1", Sec: 1, Msg: "msg_1", In: 3, Out: 80, Stop: "tool_use", Blocks: blocks(toolUseB("toolu_open", "Bash", ""))}.String(),
		U{UUID: "r1", Sec: 2, Blocks: blocks(toolResultB("toolu_elsewhere", false))}.String(),
	)
	f.flush(at(3600), false)
	if len(f.log.tools) != 0 {
		t.Errorf("non-final flush emitted tool calls %+v", f.log.tools)
	}
	if n := f.asm.Stats().OrphanToolResults; n != 0 {
		t.Errorf("non-final flush counted %d orphans, want 0", n)
	}
	f.flush(at(3601), true)
	c := one(t, "toolu_open", f.log.toolsOf("toolu_open"))
	if c.Outcome != OutcomeUnanswered || c.HasDuration {
		t.Errorf("open call %+v, want unanswered without duration", c)
	}
	if n := f.asm.Stats().OrphanToolResults; n != 1 {
		t.Errorf("final flush counted %d orphans, want 1", n)
	}
}

// Claude Code runs a Task/Agent call without subagent_type as a
// general-purpose agent: so do the units (and the spans and metrics).
func TestSubagentTypeDefault(t *testing.T) {
	tests := []struct {
		tu   transcript.ToolUse
		want string
	}{
		{transcript.ToolUse{Name: "Task"}, "general-purpose"},
		{transcript.ToolUse{Name: "Agent"}, "general-purpose"},
		{transcript.ToolUse{Name: "Agent", SubagentType: "Explore"}, "Explore"},
		{transcript.ToolUse{Name: "Bash"}, ""},
	}
	for _, tc := range tests {
		if got := SubagentType(&tc.tu); got != tc.want {
			t.Errorf("%s %q: %q, want %q", tc.tu.Name, tc.tu.SubagentType, got, tc.want)
		}
	}
}

// TestServerToolsAreAnsweredInTheStream: a server_tool_use is answered by
// its result inside the assistant stream (…_tool_result, or a gateway's
// tool_result in an assistant message): ok or error at once, never
// unanswered at the final flush.
func TestServerToolsAreAnsweredInTheStream(t *testing.T) {
	srv := func(id, name string) string {
		return `{"type":"server_tool_use","id":"` + id + `","name":"` + name + `","input":{}}`
	}
	f := newFeeder(t, Config{Settle: time.Second})
	f.add(sessionPath(sessA), at(0),
		U{UUID: "u1", Sec: 0, Text: "Search."}.String(),
		A{UUID: "a1", Parent: "u1", Sec: 1, Msg: "msg_1", In: 3, Out: 5, Blocks: blocks(srv("srvtoolu_ok", "web_search"))}.String(),
		A{UUID: "a2", Parent: "a1", Sec: 3, Msg: "msg_1", In: 3, Out: 5, Blocks: blocks(`{"type":"web_search_tool_result","tool_use_id":"srvtoolu_ok","content":[]}`)}.String(),
		A{UUID: "a3", Parent: "a2", Sec: 4, Msg: "msg_1", In: 3, Out: 5, Blocks: blocks(srv("srvtoolu_err", "web_fetch"))}.String(),
		A{UUID: "a4", Parent: "a3", Sec: 6, Msg: "msg_1", In: 3, Out: 5, Blocks: blocks(`{"type":"web_fetch_tool_result","tool_use_id":"srvtoolu_err","content":{"type":"web_fetch_tool_result_error","error_code":"url_not_accessible"}}`)}.String(),
		A{UUID: "a5", Parent: "a4", Sec: 7, Msg: "msg_2", Model: "glm-4.7", In: 3, Out: 5, Blocks: blocks(srv("call_gw", "webReader"), `{"type":"tool_result","tool_use_id":"call_gw","content":"page"}`)}.String(),
	)
	f.flush(at(8), true)
	for id, want := range map[string]Outcome{"srvtoolu_ok": OutcomeOK, "srvtoolu_err": OutcomeError, "call_gw": OutcomeOK} {
		c := one(t, id, f.log.toolsOf(id))
		if c.Outcome != want {
			t.Errorf("%s: outcome %s, want %s", id, c.Outcome, want)
		}
	}
	if c := one(t, "srvtoolu_ok", f.log.toolsOf("srvtoolu_ok")); !c.HasDuration || c.Duration() != 2*time.Second {
		t.Errorf("web search duration %v, want 2s (tool_use to its in-stream result)", c.Duration())
	}
	if n := f.asm.Stats().OrphanToolResults; n != 0 {
		t.Errorf("%d orphan results", n)
	}
}
