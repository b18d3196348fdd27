package indepcount

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/testonly/testbackend"
)

// tok builds the token map of one model: input, output, cache_read,
// cache_write_5m, cache_write_1h.
func tok(in, out, read, w5m, w1h int64) map[string]int64 {
	return map[string]int64{
		TokInput:        in,
		TokOutput:       out,
		TokCacheRead:    read,
		TokCacheWrite5m: w5m,
		TokCacheWrite1h: w1h,
	}
}

// empty returns Totals with every map allocated and nothing counted.
func empty() *Totals {
	return &Totals{
		Tokens:          map[string]map[string]int64{},
		Requests:        map[string]int64{},
		RequestsByStop:  map[string]int64{},
		ToolCalls:       map[string]map[string]int64{},
		Compactions:     map[string]int64{},
		WebSearches:     map[string]int64{},
		AdvisorTokens:   map[string]map[string]int64{},
		CacheMisses:     map[string]int64{},
		CacheMissTokens: map[string]int64{},
		LinesOfCode:     map[string]int64{},
		EditDecisions:   map[string]int64{},
	}
}

func TestCount(t *testing.T) {
	tests := []struct {
		name string
		dir  string
		want func() *Totals
		// conflicts: exact number of notes, and substrings that must each
		// appear in some note.
		conflicts     int
		conflictsHave []string
	}{
		{
			name: "streamed lines count once with the final line's usage, not the placeholder",
			dir:  "testdata/streamed",
			want: func() *Totals {
				w := empty()
				w.Files = 1
				w.Tokens["claude-opus-4-6"] = tok(10, 250, 100, 50, 0)
				w.Tokens["glm-4.7"] = tok(1200, 40, 0, 0, 0) // gateway: input 0 on the early line
				w.Requests["claude-opus-4-6"] = 1
				w.Requests["glm-4.7"] = 1
				w.RequestsByStop["end_turn"] = 1
				w.RequestsByStop["tool_use"] = 1
				return w
			},
		},
		{
			name: "copies across files and progress records dedup globally; only projects/**/*.jsonl are read",
			dir:  "testdata/crossfile",
			want: func() *Totals {
				w := empty()
				w.Files = 3 // not history.jsonl, .hidden.jsonl, s1.json, s1.jsonl.bak
				w.Tokens["claude-sonnet-4-6"] = tok(12, 90, 3000, 0, 0)
				w.Tokens["claude-haiku-4-5-20251001"] = tok(3, 30, 0, 0, 0)
				w.Requests["claude-sonnet-4-6"] = 2
				w.Requests["claude-haiku-4-5-20251001"] = 1
				w.RequestsByStop["end_turn"] = 3
				// agent-x.jsonl has no .meta.json and no Task call names it.
				w.TokensBySpender = map[string]map[string]int64{"main": tok(12, 90, 3000, 0, 0), "subagent:unknown": tok(3, 30, 0, 0, 0)}
				return w
			},
		},
		{
			name: "progress-embedded assistant and user messages are carriers; nothing else is",
			dir:  "testdata/progress",
			want: func() *Totals {
				w := empty()
				w.Files = 1
				w.Tokens["claude-opus-4-6"] = tok(100, 10, 0, 0, 0)
				w.Tokens["claude-haiku-4-5-20251001"] = tok(40, 4, 0, 9, 0)
				w.Requests["claude-opus-4-6"] = 1
				w.Requests["claude-haiku-4-5-20251001"] = 1
				w.RequestsByStop["tool_use"] = 2
				w.ToolCalls["Task"] = map[string]int64{OutcomeOK: 1}
				w.ToolCalls["Read"] = map[string]int64{OutcomeOK: 1}
				return w
			},
		},
		{
			name: "synthetic lines are not requests and count distinct ids, else uuids",
			dir:  "testdata/synthetic",
			want: func() *Totals {
				w := empty()
				w.Files = 1
				w.Tokens["claude-sonnet-4-6"] = tok(2, 3, 0, 0, 0) // the id-less line is not a request
				w.Requests["claude-sonnet-4-6"] = 1
				w.RequestsByStop["end_turn"] = 1
				w.SyntheticMessages = 4 // syn_1, syn_2, uuid s4, uuid s5 (empty id)
				return w
			},
		},
		{
			name: "cache writes split into 5m and 1h: missing breakdown, short, over, 1h only, nulls, no usage",
			dir:  "testdata/breakdown",
			want: func() *Totals {
				w := empty()
				w.Files = 1
				// 5m: 100 (no breakdown) + 50 (100 total, 30+50 breakdown) + 30 (10 total, 30+50) + 0 (1h only)
				// 1h: 0 + 50 + 50 + 400
				w.Tokens["m"] = tok(1, 9, 3, 180, 500)
				w.Tokens["zero-model"] = tok(0, 0, 0, 0, 0)
				w.Requests["m"] = 5
				w.Requests["zero-model"] = 1
				w.RequestsByStop["end_turn"] = 5
				w.RequestsByStop["none"] = 1
				return w
			},
		},
		{
			name: "winner is the whole line with most output, then largest total, then first; model ties are conflicts",
			dir:  "testdata/tiebreak",
			want: func() *Totals {
				w := empty()
				w.Files = 1
				// m_total: input 120 line; m_tied: first line (opus); m_fallback: sonnet line with 60 output.
				w.Tokens["claude-opus-4-6"] = tok(130, 10, 0, 0, 0)
				w.Tokens["claude-sonnet-4-6"] = tok(50, 60, 0, 0, 0)
				w.Requests["claude-opus-4-6"] = 2
				w.Requests["claude-sonnet-4-6"] = 1
				w.RequestsByStop["end_turn"] = 3
				return w
			},
			conflicts:     1,
			conflictsHave: []string{"request m_tied: tied lines disagree on model"},
		},
		{
			name: "tool calls dedup by id with first name; outcomes ok, error, unanswered; orphans ignored",
			dir:  "testdata/tools",
			want: func() *Totals {
				w := empty()
				w.Files = 2
				w.Tokens["m"] = tok(0, 19, 0, 0, 0)
				w.Requests["m"] = 3
				w.RequestsByStop["tool_use"] = 3
				w.ToolCalls["Read"] = map[string]int64{OutcomeOK: 2}
				w.ToolCalls["Bash"] = map[string]int64{OutcomeError: 1, OutcomeUnanswered: 1} // t_err; t_syn (synthetic carrier)
				w.ToolCalls["Grep"] = map[string]int64{OutcomeError: 1}                       // its result in an assistant carrier (a gateway's way) answers it
				w.ToolCalls["Edit"] = map[string]int64{OutcomeError: 1}                       // copies disagree: error wins
				w.ToolErrors = 3
				w.SyntheticMessages = 1
				// The failed Edit was refused before the user was asked: no decision.
				return w
			},
			conflicts: 2,
			conflictsHave: []string{
				"tool_use t_flip: 2 tool_result copies disagree on is_error",
				"2 tool_result ids (3 blocks) have no tool_use anywhere",
			},
		},
		{
			name: "compactions dedup by uuid, count each uuid-less one, key by trigger, skip microcompact",
			dir:  "testdata/compaction",
			want: func() *Totals {
				w := empty()
				w.Files = 2
				w.Compactions["auto"] = 3
				w.Compactions["manual"] = 1
				w.Compactions["unknown"] = 2
				w.CompactionPreTokens = 155000 + 42000 + 1000 + 1000 + 0 + 7
				return w
			},
		},
		{
			name: "malformed lines are counted and skipped; blank lines, CRLF and a missing final newline are fine",
			dir:  "testdata/malformed",
			want: func() *Totals {
				w := empty()
				w.Files = 1
				w.Tokens["m"] = tok(7, 7, 0, 0, 0)
				w.Requests["m"] = 3
				w.RequestsByStop["end_turn"] = 2
				w.RequestsByStop["none"] = 1
				w.MalformedLines = 7
				return w
			},
		},
		{
			name: "a usage with a count that is not a whole number from 0 to 100,000,000 counts no tokens; its request still counts",
			dir:  "testdata/hostile-usage",
			want: func() *Totals {
				w := empty()
				w.Files = 1
				// ok: 10/3/100; exp (1e3 is whole): 1000/3/100; null
				// input: 0/3/100; the seven others count nothing.
				w.Tokens["m"] = tok(10+1000+0, 3*3, 3*100, 0, 0)
				w.Requests["m"] = 10
				w.RequestsByStop["end_turn"] = 10
				return w
			},
		},
		{
			name: "a config dir without projects has no files and no error",
			dir:  "testdata/noprojects",
			want: empty,
		},
		{
			name: "a config dir that does not exist has no files and no error",
			dir:  "testdata/does-not-exist",
			want: empty,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Count(tc.dir)
			if err != nil {
				t.Fatalf("Count(%s): %v", tc.dir, err)
			}
			checkTotals(t, got, tc.want(), tc.conflicts, tc.conflictsHave)
		})
	}
}

// TestCountLineOf20MB checks that a line far beyond bufio.Scanner's default
// limit is read like any other, and that the line after it still counts.
func TestCountLineOf20MB(t *testing.T) {
	dir := t.TempDir()
	proj := filepath.Join(dir, "projects", "-p")
	if err := os.MkdirAll(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", 20<<20)
	content := `{"type":"assistant","message":{"id":"m_big","model":"m","stop_reason":"tool_use","content":[{"type":"text","text":"` + big +
		`"},{"type":"tool_use","id":"t_big","name":"Write","input":{}}],"usage":{"input_tokens":5,"output_tokens":500000}}}` + "\n" +
		`{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t_big","content":"` + big + `"}]}}` + "\n" +
		`{"type":"assistant","message":{"id":"m_after","model":"m","stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":2}}}`
	if err := os.WriteFile(filepath.Join(proj, "big.jsonl"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := Count(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := empty()
	want.Files = 1
	want.Tokens["m"] = tok(6, 500002, 0, 0, 0)
	want.Requests["m"] = 2
	want.RequestsByStop["tool_use"] = 1
	want.RequestsByStop["end_turn"] = 1
	want.ToolCalls["Write"] = map[string]int64{OutcomeOK: 1}
	want.EditDecisions["Write|accept|none"] = 1
	checkTotals(t, got, want, 0, nil)
}

func checkTotals(t *testing.T, got, want *Totals, conflicts int, conflictsHave []string) {
	t.Helper()
	gotConflicts := got.Conflicts
	g := *got
	g.Conflicts = nil
	// The by-day totals are checked end to end (TestHistoryGivesEveryDayItsSpend).
	g.OutputByDay, g.CacheReadByDay, g.Done = nil, nil, nil
	want.OutputByDay, want.CacheReadByDay, want.Done = nil, nil, nil
	if want.TokensBySpender == nil {
		// A case that names no spender has every token in the main thread.
		want.TokensBySpender = map[string]map[string]int64{}
		for _, types := range want.Tokens {
			for typ, n := range types {
				if want.TokensBySpender["main"] == nil {
					want.TokensBySpender["main"] = map[string]int64{}
				}
				want.TokensBySpender["main"][typ] += n
			}
		}
	}
	if !reflect.DeepEqual(&g, want) {
		t.Errorf("totals differ\n got: %+v\nwant: %+v", &g, want)
	}
	if len(gotConflicts) != conflicts {
		t.Errorf("got %d conflict notes, want %d: %q", len(gotConflicts), conflicts, gotConflicts)
	}
	for _, sub := range conflictsHave {
		found := false
		for _, c := range gotConflicts {
			if strings.Contains(c, sub) {
				found = true
			}
		}
		if !found {
			t.Errorf("no conflict note contains %q: %q", sub, gotConflicts)
		}
	}
}

// TestCountAnonymizedCorpusEqualsOriginal runs Count over every tree of
// the in-repo corpus; where the original tree it was anonymized from is
// present (the optional extra corpus), every total of the anonymized copy
// must equal the original's: the anonymizer removed no usage, request, tool
// call, compaction or malformed line.
func TestCountAnonymizedCorpusEqualsOriginal(t *testing.T) {
	real, haveReal := testbackend.SharedCorpus(t)
	if !haveReal {
		t.Logf("no original corpus at %s: only counting the anonymized one (set %s to compare)", real, testbackend.SharedDirEnv)
	}
	for _, tree := range testbackend.CorpusTrees(t) {
		name := filepath.Base(tree)
		t.Run(name, func(t *testing.T) {
			got, err := Count(tree)
			if err != nil {
				t.Fatalf("Count(%s): %v", tree, err)
			}
			t.Log(summary(got))
			if !haveReal {
				return
			}
			orig := filepath.Join(real, name)
			if _, err := os.Stat(orig); err != nil {
				t.Fatalf("the original of %s is missing from %s: %v", name, real, err)
			}
			want, err := Count(orig)
			if err != nil {
				t.Fatalf("Count(%s): %v", orig, err)
			}
			// Conflict notes name files, whose project folders are
			// anonymized: compare how many there are.
			if len(got.Conflicts) != len(want.Conflicts) {
				t.Errorf("%d conflict notes, original %d", len(got.Conflicts), len(want.Conflicts))
			}
			got.Conflicts, want.Conflicts = nil, nil
			// The anonymizer rewrites text: patch lines and shell
			// commands become filler, so lines of code and commits are
			// counts of the text each tree holds, not of the original's.
			// Some file names are rewritten too: edit decisions compare
			// by tool and decision.
			for _, x := range []*Totals{got, want} {
				x.LinesOfCode, x.Commits, x.PullRequestsCreated = nil, 0, 0
				byTool := map[string]int64{}
				for k, n := range x.EditDecisions {
					byTool[k[:strings.LastIndex(k, "|")]] += n
				}
				x.EditDecisions = byTool
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("anonymized totals differ from the original's:\n got  %s\n want %s", summary(got), summary(want))
			}
		})
	}
}

// summary renders totals on a few lines, maps in sorted key order.
func summary(t *Totals) string {
	var b strings.Builder
	var sumTok = map[string]int64{}
	var requests int64
	for _, m := range slices.Sorted(maps.Keys(t.Tokens)) {
		for k, v := range t.Tokens[m] {
			sumTok[k] += v
		}
	}
	for _, m := range slices.Sorted(maps.Keys(t.Requests)) {
		requests += t.Requests[m]
	}
	outcomes := map[string]int64{}
	for _, name := range slices.Sorted(maps.Keys(t.ToolCalls)) {
		for o, n := range t.ToolCalls[name] {
			outcomes[o] += n
		}
	}
	fmt.Fprintf(&b, "files=%d malformed=%d requests=%d synthetic=%d tool_errors=%d conflicts=%d compaction_pre_tokens=%d\n",
		t.Files, t.MalformedLines, requests, t.SyntheticMessages, t.ToolErrors, len(t.Conflicts), t.CompactionPreTokens)
	fmt.Fprintf(&b, "  tokens (all models): %s\n", kv(sumTok))
	fmt.Fprintf(&b, "  tool calls (all tools): %s\n", kv(outcomes))
	fmt.Fprintf(&b, "  compactions: %s\n", kv(t.Compactions))
	fmt.Fprintf(&b, "  requests by stop: %s\n", kv(t.RequestsByStop))
	for _, m := range slices.Sorted(maps.Keys(t.Requests)) {
		fmt.Fprintf(&b, "  model %q: requests=%d %s\n", m, t.Requests[m], kv(t.Tokens[m]))
	}
	for _, name := range slices.Sorted(maps.Keys(t.ToolCalls)) {
		fmt.Fprintf(&b, "  tool %q: %s\n", name, kv(t.ToolCalls[name]))
	}
	for _, c := range t.Conflicts {
		fmt.Fprintf(&b, "  conflict: %s\n", c)
	}
	return b.String()
}

func kv(m map[string]int64) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
	}
	return strings.Join(parts, " ")
}
