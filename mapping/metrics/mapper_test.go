package metrics

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/blocks"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/session"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/transcript"
)

type rec struct {
	turns       int
	blockUsage  []blockUsage
	limitHits   []limitHit
	tokens      map[string]int64
	requests    map[string]int
	tools       map[string]int
	durs        int
	cost        float64
	unpriced    int64
	webSearches int64
	sessions    map[string]int
	warmups     int
	agents      map[string]int
	compact     int
	pre         []float64
	spenders    map[string]int64 // spender|type -> tokens
	spendCost   map[string]float64
	attrTokens  map[Attributes]int64
	attrCost    float64
	misses      map[string]int64 // reason|model -> misses
	missed      map[string]int64 // reason|model -> tokens
	active      map[string]float64
	loc         map[string]int64
	decisions   map[string]int64
	commits     int64
	prs         map[string]int64
}

func newRec() *rec {
	return &rec{tokens: map[string]int64{}, requests: map[string]int{}, tools: map[string]int{}, sessions: map[string]int{}, agents: map[string]int{},
		spenders: map[string]int64{}, spendCost: map[string]float64{}, attrTokens: map[Attributes]int64{},
		misses: map[string]int64{}, missed: map[string]int64{}, loc: map[string]int64{}, decisions: map[string]int64{}, prs: map[string]int64{}}
}

func (r *rec) AddRequestTokens(model, project, spender string, a Attributes, n TokenCounts) {
	for i, typ := range TokenTypes() {
		r.tokens[model+"|"+typ+"|"+project] += n[i]
		r.spenders[spender+"|"+typ] += n[i]
		r.attrTokens[a] += n[i]
	}
}
func (r *rec) AddAttributedCost(_ Attributes, _ string, usd float64) { r.attrCost += usd }
func (r *rec) AddCacheMiss(reason, model, _ string, n int64) {
	r.misses[reason+"|"+model]++
	r.missed[reason+"|"+model] += n
}
func (r *rec) AddRequest(model, stop, project string) { r.requests[model+"|"+stop+"|"+project]++ }
func (r *rec) AddCost(_, _, spender string, usd float64) {
	r.cost += usd
	r.spendCost[spender] += usd
}
func (r *rec) AddUnpricedTokens(_ string, n int64)            { r.unpriced += n }
func (r *rec) AddWebSearches(_, _ string, n int64)            { r.webSearches += n }
func (r *rec) AddToolCall(tool, outcome, project string)      { r.tools[tool+"|"+outcome+"|"+project]++ }
func (r *rec) ObserveToolDuration(string, float64)            { r.durs++ }
func (r *rec) AddCompaction(string, string)                   { r.compact++ }
func (r *rec) ObserveCompactionPreTokens(_ string, n float64) { r.pre = append(r.pre, n) }
func (r *rec) AddSubagent(t, p string)                        { r.agents[t+"|"+p]++ }
func (r *rec) AddWarmupAgent(string)                          { r.warmups++ }
func (r *rec) AddSession(p string)                            { r.sessions[p]++ }
func (r *rec) AddTurn(string)                                 { r.turns++ }
func (r *rec) AddLinesOfCode(typ, tool, lang, _ string, n int64) {
	r.loc[typ+"|"+tool+"|"+lang] += n
}
func (r *rec) AddEditDecision(tool, d, lang, _ string) { r.decisions[tool+"|"+d+"|"+lang]++ }
func (r *rec) AddCommit(string)                        { r.commits++ }
func (r *rec) AddPullRequest(src, _ string)            { r.prs[src]++ }
func (r *rec) AddActiveTime(typ, _ string, s float64) {
	if r.active == nil {
		r.active = map[string]float64{}
	}
	r.active[typ] += s
}
func (r *rec) AddAPIError(string, string)         {}
func (r *rec) Activity(string, string, time.Time) {}

func TestProjectLabelModes(t *testing.T) {
	cases := []struct {
		mode ProjectLabel
		cwd  string
		want string
	}{
		{ProjectBasename, "/home/u/work/repo", "repo"},
		{ProjectBasename, `X:\02_JZS\06_CMMCUnlock`, "06_CMMCUnlock"},
		{ProjectBasename, "/home/u/repo/", "repo"},
		{ProjectBasename, "/", "/"},
		{ProjectBasename, `C:\`, "C:"},
		{ProjectBasename, "", ""},
		{ProjectPath, "/home/u/work/repo", "/home/u/work/repo"},
		{ProjectNone, "/home/u/work/repo", ""},
	}
	for _, c := range cases {
		m := NewMapper(Config{Project: c.mode}, newRec())
		if got := m.Project(c.cwd); got != c.want {
			t.Errorf("%s %q = %q, want %q", c.mode, c.cwd, got, c.want)
		}
	}
	if _, err := ParseProjectLabel("hash"); err == nil {
		t.Error("ParseProjectLabel accepted an unknown mode")
	}
}

func TestRequestsBecomeTokensCostAndRequestWithStopReasonNone(t *testing.T) {
	r := newRec()
	m := NewMapper(Config{}, r)
	m.Request(&session.Request{Where: session.Where{Project: "/p/repo"}, Model: "claude-opus-4-6",
		Tokens: session.Tokens{Input: 1, Output: 2, CacheRead: 3, CacheWrite5m: 4, CacheWrite1h: 5}})
	m.RequestUpdate(&session.RequestUpdate{Where: session.Where{Project: "/p/repo"}, Model: "claude-opus-4-6", Delta: session.Tokens{Output: 10}})
	m.Request(&session.Request{Where: session.Where{Project: "/p/repo"}, Model: "kimi-k2", StopReason: "end_turn", Tokens: session.Tokens{Input: 7}})
	if r.requests["claude-opus-4-6|none|repo"] != 1 || r.requests["kimi-k2|end_turn|repo"] != 1 {
		t.Errorf("requests = %v", r.requests)
	}
	if r.tokens["claude-opus-4-6|output|repo"] != 12 || r.tokens["claude-opus-4-6|cache_write_1h|repo"] != 5 {
		t.Errorf("tokens = %v", r.tokens)
	}
	if r.unpriced != 7 {
		t.Errorf("unpriced = %d, want 7 (kimi-k2 is not in the table)", r.unpriced)
	}
	want := (1*5 + 12*25 + 3*0.5 + 4*6.25 + 5*10) / 1e6
	if diff := r.cost - want; diff > 1e-12 || diff < -1e-12 {
		t.Errorf("cost = %v, want %v", r.cost, want)
	}
}

func TestFreeTextLabelsAreBoundedToOther(t *testing.T) {
	r := newRec()
	m := NewMapper(Config{MaxValues: 3}, r)
	for i := 0; i < 5; i++ {
		m.ToolCall(&session.ToolCall{Name: fmt.Sprintf("mcp__srv__tool%d", i), Outcome: session.OutcomeOK, HasDuration: true})
	}
	if r.tools["other|ok|"] != 2 || len(r.tools) != 4 {
		t.Fatalf("tools = %v, want 3 named and 2 as other", r.tools)
	}
	if r.durs != 5 {
		t.Fatalf("durations = %d", r.durs)
	}
}

func TestUnansweredToolCallsHaveNoDuration(t *testing.T) {
	r := newRec()
	m := NewMapper(Config{}, r)
	m.ToolCall(&session.ToolCall{Name: "Bash", Outcome: session.OutcomeUnanswered, HasDuration: true})
	if r.durs != 0 || r.tools["Bash|unanswered|"] != 1 {
		t.Fatalf("durs=%d tools=%v", r.durs, r.tools)
	}
}

func TestWarmupAgentsAreNotSubagents(t *testing.T) {
	r := newRec()
	m := NewMapper(Config{}, r)
	m.Subagent(&session.Subagent{AgentType: "unknown", Warmup: true})
	m.Subagent(&session.Subagent{AgentType: "Explore", Where: session.Where{Project: "/x/y"}})
	if r.warmups != 1 || r.agents["Explore|y"] != 1 || len(r.agents) != 1 {
		t.Fatalf("warmups=%d agents=%v", r.warmups, r.agents)
	}
}

func TestSessionsCountOnceAtStart(t *testing.T) {
	r := newRec()
	m := NewMapper(Config{}, r)
	m.Session(&session.Session{Where: session.Where{Project: "/a/b"}})
	m.Session(&session.Session{Where: session.Where{Project: "/a/b"}, Ended: true, End: time.Unix(1, 0)})
	if r.sessions["b"] != 1 {
		t.Fatalf("sessions = %v", r.sessions)
	}
}

// TestCompactionPreTokensOutsideTheCapAreNotObserved: a compaction always
// counts; its context size is observed only when it is one (0 to
// MaxUsageTokens). FuzzPipeline found that preTokens -167828 made the
// compaction_pre_tokens histogram's sum negative.
func TestCompactionPreTokensOutsideTheCapAreNotObserved(t *testing.T) {
	for _, tc := range []struct {
		pre     int64
		observe bool
	}{
		{0, true}, {167828, true}, {transcript.MaxUsageTokens, true},
		{-1, false}, {-167828, false}, {math.MinInt64, false},
		{transcript.MaxUsageTokens + 1, false}, {math.MaxInt64, false},
	} {
		r := newRec()
		NewMapper(Config{}, r).Compaction(&session.Compaction{Trigger: "auto", PreTokens: tc.pre})
		if r.compact != 1 {
			t.Errorf("preTokens %d: %d compactions counted, want 1", tc.pre, r.compact)
		}
		if got := len(r.pre) == 1 && r.pre[0] == float64(tc.pre); got != tc.observe || len(r.pre) > 1 {
			t.Errorf("preTokens %d: observed %v, want observed=%v", tc.pre, r.pre, tc.observe)
		}
	}
}

// TestMapperSplitsBySpenderAndAttribution: a request's tokens and cost
// count once under its spender and once under its attributes; advisor
// tokens under the advisor's model with the request's spender; a cache
// miss once with its tokens; an unrecorded spender is unknown; skill
// names past the bound are other.
func TestMapperSplitsBySpenderAndAttribution(t *testing.T) {
	r := newRec()
	m := NewMapper(Config{MaxAttribution: 1}, r)
	m.Request(&session.Request{Model: "claude-opus-4-6", Tokens: session.Tokens{Input: 10, Output: 20},
		Attribution: session.Attribution{Spender: "subagent:Explore", Skill: "deep-research", Effort: "high", Speed: "fast"},
		Advisor:     []session.ModelTokens{{Model: "claude-opus-4-5", Tokens: session.Tokens{Output: 5}}},
		CacheMiss:   "tools_changed", CacheMissTokens: 700})
	m.Request(&session.Request{Model: "claude-opus-4-6", Tokens: session.Tokens{Output: 1},
		Attribution: session.Attribution{Spender: "main", Skill: "second-skill"}})
	m.RequestUpdate(&session.RequestUpdate{Model: "claude-opus-4-6", Delta: session.Tokens{Output: 2}})

	wantSpend := map[string]int64{"subagent:Explore|output": 25, "subagent:Explore|input": 10, "main|output": 1, "unknown|output": 2}
	for k, n := range wantSpend {
		if r.spenders[k] != n {
			t.Errorf("tokens[%s] = %d, want %d", k, r.spenders[k], n)
		}
	}
	if r.tokens["claude-opus-4-5|output|"+m.Project("")] != 5 {
		t.Errorf("advisor tokens not under the advisor's model: %v", r.tokens)
	}
	var attr int64
	for a, n := range r.attrTokens {
		attr += n
		if a.Skill == "second-skill" {
			t.Errorf("skill past the bound kept its name: %+v", a)
		}
	}
	if attr != 10+25+1+2 {
		t.Errorf("attributed tokens = %d, want every token once (38)", attr)
	}
	if r.attrTokens[Attributes{Skill: "deep-research", Plugin: NoneValue, MCPServer: NoneValue, Effort: "high", Speed: "fast"}] != 35 ||
		r.attrTokens[Attributes{Skill: OtherValue, Plugin: NoneValue, MCPServer: NoneValue, Effort: NoneValue, Speed: "standard"}] != 1 {
		t.Errorf("attributed = %v", r.attrTokens)
	}
	if math.Abs(r.attrCost-r.cost) > 1e-12 || r.cost == 0 {
		t.Errorf("attributed cost %v != cost %v", r.attrCost, r.cost)
	}
	if r.misses["tools_changed|claude-opus-4-6"] != 1 || r.missed["tools_changed|claude-opus-4-6"] != 700 || len(r.misses) != 1 {
		t.Errorf("cache misses = %v %v", r.misses, r.missed)
	}
}

// TestActiveTimeSplitsClaudeAndUser: Claude's time is what each emission
// of a turn adds (session.Turn.Active); the user's the gap before a
// prompt, capped, counted with the turn's first emission only, as is the
// turn itself.
func TestActiveTimeSplitsClaudeAndUser(t *testing.T) {
	t0 := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	cases := []struct {
		name        string
		turn        session.Turn
		cli, user   float64
		turnCounted bool
	}{
		{"first turn", session.Turn{Start: t0, End: t0.Add(90 * time.Second), Active: 90 * time.Second}, 90, 0, true},
		{"short gap counts whole", session.Turn{Start: t0, End: t0.Add(10 * time.Second), Active: 10 * time.Second, SincePrevious: 40 * time.Second}, 10, 40, true},
		{"long gap is capped", session.Turn{Start: t0, End: t0.Add(time.Second), Active: time.Second, SincePrevious: 3 * time.Hour}, 1, UserTimeCap.Seconds(), true},
		{"Claude Code's figure, not the span", session.Turn{Start: t0, End: t0.Add(time.Hour), Active: 20 * time.Second, HasReported: true, Reported: 20 * time.Second}, 20, 0, true},
		{"no active time", session.Turn{Start: t0, End: t0}, 0, 0, true},
		{"again adds only its time", session.Turn{Start: t0, End: t0.Add(time.Hour), Active: 7 * time.Second, Again: true, SincePrevious: time.Minute}, 7, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRec()
			NewMapper(Config{}, r).Turn(&tc.turn)
			if r.active[ActiveCLI] != tc.cli || r.active[ActiveUser] != tc.user {
				t.Errorf("active = %v, want cli %v user %v", r.active, tc.cli, tc.user)
			}
			if got := r.turns > 0; got != tc.turnCounted {
				t.Errorf("turn counted %v, want %v", got, tc.turnCounted)
			}
		})
	}
}

// TestEditToolCallsCountDecisionsAndLines: one case per rule of the edit,
// commit and pull-request series.
func TestEditToolCallsCountDecisionsAndLines(t *testing.T) {
	ok, failed, unanswered := session.OutcomeOK, session.OutcomeError, session.OutcomeUnanswered
	patch := transcript.EditResult{Has: true, Added: 3, Removed: 2}
	cases := []struct {
		name      string
		call      session.ToolCall
		decisions map[string]int64
		loc       map[string]int64
		commits   int64
		prs       map[string]int64
	}{
		{"accepted edit counts its patch", session.ToolCall{Name: "Edit", Ext: "go", Outcome: ok, Edit: patch},
			map[string]int64{"Edit|accept|go": 1}, map[string]int64{"added|Edit|go": 3, "removed|Edit|go": 2}, 0, nil},
		{"created file", session.ToolCall{Name: "Write", Ext: "py", Outcome: ok, Edit: transcript.EditResult{Has: true, Created: true, Added: 4}},
			map[string]int64{"Write|accept|python": 1}, map[string]int64{"added|Write|python": 4, "removed|Write|python": 0}, 0, nil},
		{"rejected edit counts no line", session.ToolCall{Name: "Edit", Ext: "go", Outcome: failed, Rejected: true, Edit: patch},
			map[string]int64{"Edit|reject|go": 1}, map[string]int64{}, 0, nil},
		{"failed edit is no decision, changes nothing", session.ToolCall{Name: "MultiEdit", Ext: "ts", Outcome: failed, Edit: patch},
			map[string]int64{}, map[string]int64{}, 0, nil},
		{"rejection without is_error is still a rejection", session.ToolCall{Name: "Write", Ext: "go", Outcome: ok, Rejected: true, Edit: patch},
			map[string]int64{"Write|reject|go": 1}, map[string]int64{}, 0, nil},
		{"write over a file counts its patch", session.ToolCall{Name: "Write", Ext: "md", Outcome: ok, Edit: transcript.EditResult{Has: true, Added: 2, Removed: 5}},
			map[string]int64{"Write|accept|markdown": 1}, map[string]int64{"added|Write|markdown": 2, "removed|Write|markdown": 5}, 0, nil},
		{"notebook edit with a patch counts the patch", session.ToolCall{Name: "NotebookEdit", Ext: "ipynb", Outcome: ok, NotebookLines: 9, Edit: transcript.EditResult{Has: true, Added: 1, Removed: 1}},
			map[string]int64{"NotebookEdit|accept|jupyter": 1}, map[string]int64{"added|NotebookEdit|jupyter": 1, "removed|NotebookEdit|jupyter": 1}, 0, nil},
		{"notebook delete", session.ToolCall{Name: "NotebookEdit", Ext: "ipynb", Outcome: ok},
			map[string]int64{"NotebookEdit|accept|jupyter": 1}, map[string]int64{}, 0, nil},
		{"pull request already linked", session.ToolCall{Name: "Bash", Outcome: ok, Shell: transcript.ShellPRCreate, PRSeenBefore: true},
			map[string]int64{}, map[string]int64{}, 0, nil},
		{"failed pull request", session.ToolCall{Name: "Bash", Outcome: failed, Shell: transcript.ShellPRCreate},
			map[string]int64{}, map[string]int64{}, 0, nil},
		{"commit by another tool is no commit", session.ToolCall{Name: "PowerShell", Outcome: ok, Shell: transcript.ShellCommit},
			map[string]int64{}, map[string]int64{}, 0, nil},
		{"unanswered edit is no decision", session.ToolCall{Name: "Write", Ext: "go", Outcome: unanswered}, map[string]int64{}, map[string]int64{}, 0, nil},
		{"notebook insert without a patch", session.ToolCall{Name: "NotebookEdit", Ext: "ipynb", Outcome: ok, NotebookLines: 5},
			map[string]int64{"NotebookEdit|accept|jupyter": 1}, map[string]int64{"added|NotebookEdit|jupyter": 5, "removed|NotebookEdit|jupyter": 0}, 0, nil},
		{"edit without a patch counts its input", session.ToolCall{Name: "Edit", Ext: "go", Outcome: ok, InputLines: transcript.InputLines{Has: true, Added: 4, Removed: 1}},
			map[string]int64{"Edit|accept|go": 1}, map[string]int64{"added|Edit|go": 4, "removed|Edit|go": 1}, 0, nil},
		{"multiedit without a patch counts its input", session.ToolCall{Name: "MultiEdit", Ext: "ts", Outcome: ok, InputLines: transcript.InputLines{Has: true, Added: 2, Removed: 7}},
			map[string]int64{"MultiEdit|accept|typescript": 1}, map[string]int64{"added|MultiEdit|typescript": 2, "removed|MultiEdit|typescript": 7}, 0, nil},
		{"write without a result counts its content", session.ToolCall{Name: "Write", Ext: "md", Outcome: ok, InputLines: transcript.InputLines{Has: true, Added: 12}},
			map[string]int64{"Write|accept|markdown": 1}, map[string]int64{"added|Write|markdown": 12, "removed|Write|markdown": 0}, 0, nil},
		{"a patch wins over the input", session.ToolCall{Name: "Edit", Ext: "go", Outcome: ok, Edit: patch, InputLines: transcript.InputLines{Has: true, Added: 40, Removed: 40}},
			map[string]int64{"Edit|accept|go": 1}, map[string]int64{"added|Edit|go": 3, "removed|Edit|go": 2}, 0, nil},
		{"a created file's result wins over the input", session.ToolCall{Name: "Write", Ext: "py", Outcome: ok, Edit: transcript.EditResult{Has: true, Created: true, Added: 4}, InputLines: transcript.InputLines{Has: true, Added: 9}},
			map[string]int64{"Write|accept|python": 1}, map[string]int64{"added|Write|python": 4, "removed|Write|python": 0}, 0, nil},
		{"rejected edit counts no input line", session.ToolCall{Name: "Edit", Ext: "go", Outcome: failed, Rejected: true, InputLines: transcript.InputLines{Has: true, Added: 4, Removed: 1}},
			map[string]int64{"Edit|reject|go": 1}, map[string]int64{}, 0, nil},
		{"failed edit counts no input line", session.ToolCall{Name: "Write", Ext: "go", Outcome: failed, InputLines: transcript.InputLines{Has: true, Added: 4}},
			map[string]int64{}, map[string]int64{}, 0, nil},
		{"unanswered edit counts no input line", session.ToolCall{Name: "Edit", Ext: "go", Outcome: unanswered, InputLines: transcript.InputLines{Has: true, Added: 4}},
			map[string]int64{}, map[string]int64{}, 0, nil},
		{"input without lines counts none", session.ToolCall{Name: "Edit", Ext: "go", Outcome: ok, InputLines: transcript.InputLines{Has: true}},
			map[string]int64{"Edit|accept|go": 1}, map[string]int64{}, 0, nil},
		{"unknown extension", session.ToolCall{Name: "Edit", Ext: "zzz", Outcome: ok}, map[string]int64{"Edit|accept|other": 1}, map[string]int64{}, 0, nil},
		{"no extension", session.ToolCall{Name: "Edit", Outcome: ok}, map[string]int64{"Edit|accept|none": 1}, map[string]int64{}, 0, nil},
		{"read is no edit", session.ToolCall{Name: "Read", Ext: "go", Outcome: ok, Edit: patch}, map[string]int64{}, map[string]int64{}, 0, nil},
		{"commit", session.ToolCall{Name: "Bash", Outcome: ok, Shell: transcript.ShellCommit}, map[string]int64{}, map[string]int64{}, 1, nil},
		{"failed commit", session.ToolCall{Name: "Bash", Outcome: failed, Shell: transcript.ShellCommit}, map[string]int64{}, map[string]int64{}, 0, nil},
		{"commit and pull request", session.ToolCall{Name: "Bash", Outcome: ok, Shell: transcript.ShellCommit | transcript.ShellPRCreate},
			map[string]int64{}, map[string]int64{}, 1, map[string]int64{PRCreated: 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRec()
			m := NewMapper(Config{}, r)
			m.ToolCall(&tc.call)
			if fmt.Sprint(r.decisions) != fmt.Sprint(tc.decisions) || fmt.Sprint(r.loc) != fmt.Sprint(tc.loc) ||
				r.commits != tc.commits || fmt.Sprint(r.prs) != fmt.Sprint(orEmpty(tc.prs)) {
				t.Errorf("decisions %v loc %v commits %d prs %v", r.decisions, r.loc, r.commits, r.prs)
			}
		})
	}
	r := newRec()
	NewMapper(Config{}, r).PullRequest(&session.PullRequest{})
	if r.prs[PRLinked] != 1 {
		t.Errorf("linked pull requests = %v", r.prs)
	}
}

func orEmpty(m map[string]int64) map[string]int64 {
	if m == nil {
		return map[string]int64{}
	}
	return m
}
func (r *rec) AddBlockUsage(at time.Time, entry bool, t blocks.Tokens, usd float64) {
	r.blockUsage = append(r.blockUsage, blockUsage{at, entry, t, usd})
}
func (r *rec) AddLimitHit(w string, at, reset time.Time) {
	r.limitHits = append(r.limitHits, limitHit{w, at, reset})
}

type blockUsage struct {
	at    time.Time
	entry bool
	t     blocks.Tokens
	usd   float64
}

type limitHit struct {
	window    string
	at, reset time.Time
}

// TestMapperPricesEveryModelNameAsTheTableDoes: the mapper looks a model
// name up once and keeps its prices; every request, an update and an
// unknown model are priced as Prices says, also after more names than
// the memo keeps have cleared it.
func TestMapperPricesEveryModelNameAsTheTableDoes(t *testing.T) {
	prices := DefaultPrices()
	names := []string{"claude-opus-4-6", "Claude-Opus-4.6", "anthropic/claude-sonnet-4-5@20250929", "claude-haiku-4-5-20251001", "kimi-k2", "", "claude-opus-4-6"}
	for i := range maxPriceMemo + 10 {
		names = append(names, fmt.Sprintf("no-such-model-%d", i), names[i%6])
	}
	r := newRec()
	m := NewMapper(Config{Prices: prices}, r)
	at := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	tok := session.Tokens{Input: 1000, Output: 200, CacheRead: 3000, CacheWrite5m: 40, CacheWrite1h: 50}
	var want float64
	var unpriced int64
	for _, name := range names {
		m.Request(&session.Request{Where: session.Where{Project: "/p/repo"}, Model: name, End: at, Tokens: tok})
		if usd, ok := prices.RequestCost(name, at, tok, Modifiers{}); ok {
			want += usd
		} else {
			unpriced += tok.InputTotal() + tok.Output
		}
		m.RequestUpdate(&session.RequestUpdate{Where: session.Where{Project: "/p/repo"}, Model: name, Day: session.DayOf(at), Before: tok, Delta: session.Tokens{Output: 7}})
		if usd, ok := prices.UpdateCost(name, DayTime(session.DayOf(at)), tok, session.Tokens{Output: 7}, Modifiers{}); ok {
			want += usd
		} else {
			unpriced += 7
		}
	}
	if len(m.prices.models) > maxPriceMemo {
		t.Errorf("the memo holds %d names, more than %d", len(m.prices.models), maxPriceMemo)
	}
	if math.Abs(r.cost-want) > 1e-9*want || r.unpriced != unpriced {
		t.Errorf("cost %v, unpriced %d; the table says %v, %d", r.cost, r.unpriced, want, unpriced)
	}
	if want == 0 || unpriced == 0 {
		t.Fatalf("the names priced nothing (%v) or everything (%d unpriced): the test proves nothing", want, unpriced)
	}
}
