package session

import (
	"encoding/json"
	"maps"
	"testing"
	"time"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/transcript"
)

// withUsage returns an assistant line with extra usage fields and message
// fields set (iterations, speed, diagnostics...).
func withUsage(t *testing.T, line string, usage, msg, rec map[string]any) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		t.Fatal(err)
	}
	mm := m["message"].(map[string]any)
	u := mm["usage"].(map[string]any)
	for k, v := range usage {
		u[k] = v
	}
	for k, v := range msg {
		mm[k] = v
	}
	for k, v := range rec {
		m[k] = v
	}
	return mustJSON(m)
}

func advisorIt(model string, in, out int64) map[string]any {
	return map[string]any{"type": "advisor_message", "model": model, "input_tokens": in, "output_tokens": out}
}

// TestAdvisorTokensFollowTheWinningCopy: advisor iterations count under
// the advisor's model from the request's winning line; a better copy read
// after the request was emitted adds only the difference, under the
// labels the request was first counted with; iterations of type message
// are never added.
func TestAdvisorTokensFollowTheWinningCopy(t *testing.T) {
	line := func(uuid, session string, out, advOut int64, extra ...map[string]any) string {
		its := []any{map[string]any{"type": "message", "input_tokens": 3, "output_tokens": out}, advisorIt("claude-opus-5", 900, advOut)}
		for _, e := range extra {
			its = append(its, e)
		}
		return withUsage(t, A{UUID: uuid, Parent: "u1", Session: session, Sec: 1, Msg: "msg_1", Req: "req_1", In: 3, Out: out, Stop: "end_turn"}.String(),
			map[string]any{"iterations": its, "speed": "fast", "inference_geo": "us"},
			map[string]any{"diagnostics": map[string]any{"cache_miss_reason": map[string]any{"type": "tools_changed", "cache_missed_input_tokens": 500}}},
			map[string]any{"attributionSkill": "deep-research", "effort": "high"})
	}
	f := newFeeder(t, Config{})
	f.files(at(0), file{sessionPath(sessA), []string{
		U{UUID: "u1", Sec: 0, Text: "Plan the refactor."}.String(),
		line("a1", sessA, 40, 10),
	}})
	f.flush(at(4), false) // the request is complete (stop_reason): emitted
	// A resumed copy with more output, a bigger advisor reply and a second
	// advisor model.
	f.files(at(5), file{sessionPath(sessB), []string{
		U{UUID: "u1", Session: sessB, Sec: 0, Text: "Plan the refactor."}.String(),
		line("a1", sessB, 60, 50, advisorIt("claude-opus-4-8", 100, 7)),
	}})
	f.flush(at(5), true)

	r := one(t, "request", f.log.requestsOf("msg_1"))
	if r.Tokens.Output != 40 || r.Tokens.Input != 3 {
		t.Errorf("request tokens = %+v, want the top-level usage only", r.Tokens)
	}
	if len(r.Advisor) != 1 || r.Advisor[0] != (ModelTokens{Model: "claude-opus-5", Tokens: Tokens{Input: 900, Output: 10}}) {
		t.Errorf("advisor = %+v", r.Advisor)
	}
	wantAttr := Attribution{Spender: SpenderMain, Skill: "deep-research", Effort: "high", Speed: "fast", Geo: "us"}
	if r.Attribution != wantAttr {
		t.Errorf("attribution = %+v, want %+v", r.Attribution, wantAttr)
	}
	if r.CacheMiss != "tools_changed" || r.CacheMissTokens != 500 {
		t.Errorf("cache miss = %q %d", r.CacheMiss, r.CacheMissTokens)
	}
	got := map[string]RequestUpdate{}
	for _, u := range f.log.updates {
		got[u.Model] = u
	}
	if len(got) != 3 {
		t.Fatalf("updates = %+v, want one per model", f.log.updates)
	}
	checks := []struct {
		model   string
		delta   Tokens
		before  Tokens
		advisor bool
	}{
		{modelSonnet, Tokens{Output: 20}, Tokens{Input: 3, Output: 40}, false},
		{"claude-opus-5", Tokens{Output: 40}, Tokens{Input: 900, Output: 10}, true},
		{"claude-opus-4-8", Tokens{Input: 100, Output: 7}, Tokens{}, true},
	}
	for _, c := range checks {
		u := got[c.model]
		if u.Delta != c.delta || u.Before != c.before || u.Advisor != c.advisor || u.Attribution != wantAttr ||
			u.Day != DayOf(at(1)) || u.Project != r.Project {
			t.Errorf("%s update = %+v, want delta %+v before %+v advisor %v", c.model, u, c.delta, c.before, c.advisor)
		}
	}
}

// TestSpenderOfEachThread: who spent a request, by the thread it is
// read in.
func TestSpenderOfEachThread(t *testing.T) {
	sub := func(agent string, sec int, prompt, msg string) file {
		return file{subagentPath(sessA, agent), []string{
			U{UUID: agent + "-u", Sec: sec, Agent: agent, Text: prompt}.String(),
			A{UUID: agent + "-a", Parent: agent + "-u", Sec: sec + 1, Msg: msg, Agent: agent, Out: 5, Stop: "end_turn"}.String(),
		}}
	}
	log, _ := runWithMeta(t, map[string]subagentMeta{subagentPath(sessA, "ameta0000000000000"): {agentType: "code-reviewer"}},
		file{sessionPath(sessA), []string{
			U{UUID: "u1", Sec: 0, Text: "Go."}.String(),
			A{UUID: "a1", Parent: "u1", Sec: 1, Msg: "msg_main", Out: 5, Stop: "tool_use", Blocks: blocks(taskUseB("toolu_T", "Explore", "Look"))}.String(),
			U{UUID: "u2", Parent: "a1", Sec: 30, Blocks: blocks(toolResultB("toolu_T", false)), ToolUseResult: taskResult("atask0000000000000", "")}.String(),
		}},
		sub("atask0000000000000", 2, "Look around.", "msg_task"),
		sub("ameta0000000000000", 2, "Review.", "msg_meta"),
		sub("awarm0000000000000", 2, "Warmup", "msg_warm"),
		sub("acompact-0123456789abcdef", 40, "Summarize.", "msg_compact"),
		sub("aprompt_suggestion-0123456789abcdef", 50, "Suggest.", "msg_sugg"),
		sub("aorphan00000000000", 60, "Who am I?", "msg_orphan"),
	)
	want := map[string]string{
		"msg_main":    SpenderMain,
		"msg_task":    SpenderSubagentPrefix + "Explore",
		"msg_meta":    SpenderSubagentPrefix + "code-reviewer",
		"msg_warm":    SpenderWarmup,
		"msg_compact": SpenderCompaction,
		"msg_sugg":    SpenderInternal,
		"msg_orphan":  SpenderSubagentPrefix + "unknown",
	}
	for msg, spender := range want {
		if r := one(t, msg, log.requestsOf(msg)); r.Spender != spender {
			t.Errorf("%s: spender %q, want %q", msg, r.Spender, spender)
		}
	}
}

// TestTurnKnowsTheGapBeforeIt: SincePrevious is the time from the end of
// the previous turn (its last main-thread record) to the prompt.
func TestTurnKnowsTheGapBeforeIt(t *testing.T) {
	log, _ := run(t, file{sessionPath(sessA), []string{
		U{UUID: "u1", Sec: 0, Text: "First."}.String(),
		A{UUID: "a1", Parent: "u1", Sec: 20, Msg: "msg_1", Out: 5, Stop: "end_turn"}.String(),
		U{UUID: "u2", Parent: "a1", Sec: 80, Text: "Second."}.String(),
		A{UUID: "a2", Parent: "u2", Sec: 95, Msg: "msg_2", Out: 5, Stop: "end_turn"}.String(),
	}})
	if len(log.turns) != 2 {
		t.Fatalf("turns = %+v", log.turns)
	}
	if log.turns[0].SincePrevious != 0 || log.turns[1].SincePrevious != 60*time.Second {
		t.Errorf("SincePrevious = %v, %v; want 0, 60s", log.turns[0].SincePrevious, log.turns[1].SincePrevious)
	}
	if d := log.turns[1].End.Sub(log.turns[1].Start); d != 15*time.Second {
		t.Errorf("second turn lasts %v, want 15s", d)
	}
}

// TestToolCallsCarryEditFactsAndPullRequestsCountOnce: a call's result
// brings what its toolUseResult says it changed, or that the user
// refused it, also when the result is read before the call; a pull
// request linked again (resume, compaction, another file) is one.
func TestToolCallsCarryEditFactsAndPullRequestsCountOnce(t *testing.T) {
	edit := func(id, path string) string {
		return toolUseB(id, "Edit", `{"file_path":"`+path+`","old_string":"a","new_string":"b"}`)
	}
	patch := `{"filePath":"/r/a.go","structuredPatch":[{"lines":["-a","+b","+c"]}]}`
	prLink := func(uuid, session string, sec int, url string) string {
		return mustJSON(map[string]any{"type": "pr-link", "sessionId": session, "prNumber": 7, "prUrl": url, "timestamp": ts(sec), "uuid": uuid})
	}
	log, _ := run(t,
		file{sessionPath(sessA), []string{
			U{UUID: "u1", Sec: 0, Text: "Edit."}.String(),
			// The result of toolu_late comes before its call.
			U{UUID: "u0", Sec: 1, Blocks: blocks(toolResultB("toolu_late", false)), ToolUseResult: patch}.String(),
			A{UUID: "a1", Parent: "u1", Sec: 2, Msg: "msg_1", Out: 5, Stop: "tool_use", Blocks: blocks(edit("toolu_1", "/r/a.go"), edit("toolu_late", "/r/b.TS"))}.String(),
			U{UUID: "u2", Parent: "a1", Sec: 3, Blocks: blocks(toolResultB("toolu_1", false)), ToolUseResult: patch}.String(),
			A{UUID: "a2", Parent: "u2", Sec: 4, Msg: "msg_2", Out: 5, Stop: "tool_use", Blocks: blocks(edit("toolu_2", "/r/Makefile"))}.String(),
			U{UUID: "u3", Parent: "a2", Sec: 5, Blocks: `[{"type":"tool_result","tool_use_id":"toolu_2","is_error":true,"content":"The user doesn't want to proceed with this tool use. The tool use was rejected."}]`,
				ToolUseResult: `"User rejected tool use"`}.String(),
			prLink("pr1", sessA, 6, "https://github.com/o/r/pull/7"),
			prLink("pr2", sessA, 7, "https://github.com/o/r/pull/7"),
		}},
		file{sessionPath(sessB), []string{
			prLink("pr3", sessB, 8, "https://github.com/o/r/pull/7"),
			prLink("pr4", sessB, 9, "https://github.com/o/r/pull/8"),
		}},
	)
	c1 := one(t, "toolu_1", log.toolsOf("toolu_1"))
	if c1.Ext != "go" || c1.Edit != (transcript.EditResult{Has: true, Added: 2, Removed: 1}) || c1.Rejected ||
		c1.InputLines != (transcript.InputLines{Has: true, Added: 1, Removed: 1}) {
		t.Errorf("toolu_1: %+v", c1)
	}
	late := one(t, "toolu_late", log.toolsOf("toolu_late"))
	if late.Ext != "ts" || late.Edit.Added != 2 || late.InputLines != (transcript.InputLines{Has: true, Added: 1, Removed: 1}) {
		t.Errorf("toolu_late: ext %q edit %+v input %+v", late.Ext, late.Edit, late.InputLines)
	}
	c2 := one(t, "toolu_2", log.toolsOf("toolu_2"))
	if !c2.Rejected || c2.Ext != "makefile" || c2.Edit.Has {
		t.Errorf("toolu_2: %+v", c2)
	}
	if len(log.prs) != 2 {
		t.Errorf("%d pull requests, want 2 (one linked three times)", len(log.prs))
	}
}

// TestRestoredRequestKeepsItsDayAndAttribution: a request emitted before
// a restart, grown by a copy after it, is priced on its own day and
// counted under its own spender and modifiers.
func TestRestoredRequestKeepsItsDayAndAttribution(t *testing.T) {
	line := func(session string, out int64) string {
		return withUsage(t, A{UUID: "a1", Parent: "u1", Session: session, Sec: 1, Msg: "msg_1", Req: "req_1", In: 3, Out: out, Stop: "end_turn"}.String(),
			map[string]any{"speed": "fast"}, nil, map[string]any{"effort": "high"})
	}
	first := newFeeder(t, Config{})
	first.files(at(0), file{sessionPath(sessA), []string{U{UUID: "u1", Sec: 0, Text: "Go."}.String(), line(sessA, 10)}})
	first.flush(at(4), false)
	st := first.asm.State()

	second := newFeeder(t, Config{})
	if err := second.asm.Restore(st, at(5)); err != nil {
		t.Fatal(err)
	}
	second.files(at(6), file{sessionPath(sessB), []string{U{UUID: "u1", Session: sessB, Sec: 0, Text: "Go."}.String(), line(sessB, 25)}})
	u := one(t, "update", second.log.updates)
	want := Attribution{Spender: SpenderMain, Effort: "high", Speed: "fast"}
	if u.Day != DayOf(at(1)) || u.Attribution != want || u.Delta.Output != 15 || u.Before.Output != 10 {
		t.Errorf("update after restore = %+v, want day %d, %+v, delta 15 over 10", u, DayOf(at(1)), want)
	}
}

// TestPullRequestCountsOnceWhetherCreatedOrLinked: a pull request a
// successful gh pr create printed and a pr-link naming it are one pull
// request, whichever is read first and in whichever session, and so are
// two calls printing it; a failed call or one whose output names no pull
// request dedups nothing.
func TestPullRequestCountsOnceWhetherCreatedOrLinked(t *testing.T) {
	ghCall := func(uuid, parent string, sec int, id string) string {
		return A{UUID: uuid, Parent: parent, Sec: sec, Msg: "msg_" + uuid, Out: 5, Stop: "tool_use",
			Blocks: blocks(toolUseB(id, "Bash", `{"command":"git push -u origin HEAD && gh pr create --fill"}`))}.String()
	}
	ghResult := func(uuid, parent string, sec int, id string, isError bool, stdout string) string {
		return U{UUID: uuid, Parent: parent, Sec: sec, Blocks: blocks(toolResultB(id, isError)),
			ToolUseResult: mustJSON(map[string]any{"stdout": stdout, "stderr": "", "interrupted": false})}.String()
	}
	prLink := func(uuid, session string, sec int, number int, url, repo string) string {
		m := map[string]any{"type": "pr-link", "sessionId": session, "prNumber": number, "timestamp": ts(sec), "uuid": uuid}
		if url != "" {
			m["prUrl"] = url
		}
		if repo != "" {
			m["prRepository"] = repo
		}
		return mustJSON(m)
	}
	log, _ := run(t,
		file{sessionPath(sessA), []string{
			U{UUID: "u1", Sec: 0, Text: "Open the PRs."}.String(),
			// #7: created, then linked twice (once by number only).
			ghCall("a1", "u1", 1, "toolu_gh1"),
			ghResult("u2", "a1", 2, "toolu_gh1", false, "https://github.com/O/R/pull/7"),
			prLink("pr1", sessA, 3, 7, "https://github.com/o/r/pull/7", "o/r"),
			prLink("pr2", sessA, 4, 7, "", "o/r"),
			// #8: linked first, then the call's result is read.
			prLink("pr3", sessA, 5, 8, "https://github.com/o/r/pull/8", "o/r"),
			ghCall("a2", "u2", 6, "toolu_gh2"),
			ghResult("u3", "a2", 7, "toolu_gh2", false, "Creating pull request\nhttps://github.com/o/r/pull/8\n"),
			// A failed call and one that printed no URL.
			ghCall("a3", "u3", 8, "toolu_gh3"),
			ghResult("u4", "a3", 9, "toolu_gh3", true, "https://github.com/o/r/pull/9"),
			ghCall("a4", "u4", 10, "toolu_gh4"),
			ghResult("u5", "a4", 11, "toolu_gh4", false, "Warning: 1 uncommitted change"),
			// #7 printed again by another call.
			ghCall("a5", "u5", 11, "toolu_gh5"),
			ghResult("u6", "a5", 11, "toolu_gh5", false, "https://github.com/o/r/pull/7"),
		}},
		file{sessionPath(sessB), []string{
			// #9's call failed: its link is a pull request.
			prLink("pr4", sessB, 12, 9, "https://github.com/o/r/pull/9", ""),
			prLink("pr5", sessB, 13, 7, "https://github.com/o/r/pull/7/files", ""),
		}},
	)
	linkedBefore := map[string]bool{}
	for _, id := range []string{"toolu_gh1", "toolu_gh2", "toolu_gh3", "toolu_gh4", "toolu_gh5"} {
		c := one(t, id, log.toolsOf(id))
		if c.Shell != transcript.ShellPRCreate {
			t.Errorf("%s: shell %b", id, c.Shell)
		}
		linkedBefore[id] = c.PRSeenBefore
	}
	if want := map[string]bool{"toolu_gh1": false, "toolu_gh2": true, "toolu_gh3": false, "toolu_gh4": false, "toolu_gh5": true}; !maps.Equal(linkedBefore, want) {
		t.Errorf("linked before: %v, want %v", linkedBefore, want)
	}
	if len(log.prs) != 2 {
		t.Errorf("%d linked pull requests, want 2 (#8 and #9)", len(log.prs))
	}
}

func TestPullRequestKey(t *testing.T) {
	cases := []struct {
		url, repo string
		n         int64
		want      string
	}{
		{"https://github.com/Owner/Repo/pull/12", "", 0, "owner/repo#12"},
		{"https://github.com/o/r/pull/12/files?x=1", "", 0, "o/r#12"},
		{"https://github.com/o/r/pull/12#discussion", "", 0, "o/r#12"},
		{"https://ghe.corp/o/r/pull/3", "other/repo", 4, "o/r#3"},
		{"", "O/R", 5, "o/r#5"},
		{"https://github.com/o/r/pull/x", "o/r", 5, "o/r#5"},
		{"https://github.com/pull/5", "", 0, "https://github.com/pull/5"},
		{"https://example.com/review/5", "", 0, "https://example.com/review/5"},
		{"", "o/r", 0, ""},
		{"", "", 9, ""},
	}
	for _, tc := range cases {
		if got := PullRequestKey(tc.url, tc.repo, tc.n); got != tc.want {
			t.Errorf("PullRequestKey(%q, %q, %d) = %q, want %q", tc.url, tc.repo, tc.n, got, tc.want)
		}
	}
}
