package e2e

import (
	"flag"
	"maps"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/testonly/indepcount"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/testonly/testbackend"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/metrics"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// TestOneshotMatchesGoldens runs the real binary with --oneshot on every
// real tree and compares the exposition with testdata/oneshot/<tree>.prom.
func TestOneshotMatchesGoldens(t *testing.T) {
	goldDir := filepath.Join(testbackend.RepoRoot(t), "testdata", "oneshot")
	for _, tree := range testbackend.CorpusTrees(t) {
		name := filepath.Base(tree)
		t.Run(name, func(t *testing.T) {
			got := stableExposition(oneshot(t, "--claude.dir="+tree))
			path := filepath.Join(goldDir, name+".prom")
			if *update {
				if err := os.MkdirAll(goldDir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("read golden (run with -update to create it): %v", err)
			}
			if got != string(want) {
				t.Errorf("exposition differs from %s (run go test ./e2e -run Goldens -update and review the diff)", path)
			}
		})
	}
}

// TestOneshotCountersEqualIndependentCount is the exactness proof: on
// every real tree, what the binary prints equals what a deliberately plain
// reader (internal/testonly/indepcount) counts. A difference is a bug, never a
// golden to update.
func TestOneshotCountersEqualIndependentCount(t *testing.T) {
	// The real corpus, and the synthetic trees of cases it does not hold
	// (testdata/synthetic/README.md).
	for _, tree := range allTrees(t) {
		t.Run(filepath.Base(tree), func(t *testing.T) {
			want, err := indepcount.Count(tree)
			if err != nil {
				t.Fatal(err)
			}
			mfs := parseExposition(t, oneshot(t, "--claude.dir="+tree))

			tokens := sumBy(mfs, "claude_transcript_tokens_total", "model", "type")
			wantTokens := map[string]float64{}
			for model, types := range want.Tokens {
				for typ, n := range types {
					wantTokens[model+"|"+typ] = float64(n)
				}
			}
			compareMaps(t, "tokens{model|type}", tokens, wantTokens)

			compareMaps(t, "requests{model}", sumBy(mfs, "claude_transcript_requests_total", "model"), floats(want.Requests))
			compareMaps(t, "requests{stop_reason}", sumBy(mfs, "claude_transcript_requests_total", "stop_reason"), floats(want.RequestsByStop))

			wantTools := map[string]float64{}
			for tool, outs := range want.ToolCalls {
				for out, n := range outs {
					wantTools[tool+"|"+out] = float64(n)
				}
			}
			compareMaps(t, "tool_calls{tool|outcome}", sumBy(mfs, "claude_transcript_tool_calls_total", "tool", "outcome"), wantTools)
			errs := sumBy(mfs, "claude_transcript_tool_calls_total", "outcome")["error"]
			if errs != float64(want.ToolErrors) {
				t.Errorf("tool errors = %v, independent count %d", errs, want.ToolErrors)
			}
			compareMaps(t, "compactions{trigger}", sumBy(mfs, "claude_transcript_compactions_total", "trigger"), floats(want.Compactions))
			compareMaps(t, "web_search_requests{model}", sumBy(mfs, "claude_transcript_web_search_requests_total", "model"), floats(want.WebSearches))
			wantSpend := map[string]float64{}
			for spender, types := range want.TokensBySpender {
				for typ, n := range types {
					wantSpend[spender+"|"+typ] = float64(n)
				}
			}
			compareMaps(t, "tokens{spender|type}", sumBy(mfs, "claude_transcript_tokens_total", "spender", "type"), wantSpend)
			compareMaps(t, "cache_misses{reason|model}", sumBy(mfs, "claude_transcript_cache_misses_total", "reason", "model"), floats(want.CacheMisses))
			compareMaps(t, "cache_miss_input_tokens{reason|model}", sumBy(mfs, "claude_transcript_cache_miss_input_tokens_total", "reason", "model"), floats(want.CacheMissTokens))
			// Lines of code and edit decisions, by the language label each
			// side derives from the file extension by its own table.
			loc := sumBy(mfs, "claude_transcript_lines_of_code_total", "type", "tool", "language")
			decisions := sumBy(mfs, "claude_transcript_code_edit_decisions_total", "tool", "decision", "language")
			compareMaps(t, "lines_of_code{type|tool|language}", loc, floats(want.LinesOfCode))
			compareMaps(t, "code_edit_decisions{tool|decision|language}", decisions, floats(want.EditDecisions))
			byKind := func(m map[string]float64, i int) map[string]float64 {
				out := map[string]float64{}
				for k, v := range m {
					out[strings.Split(k, "|")[i]] += v
				}
				return out
			}
			t.Logf("lines %v, decisions %v, commits %d, pull requests created %d linked %d", byKind(loc, 0), byKind(decisions, 1),
				want.Commits, want.PullRequestsCreated, want.PullRequestsLinked)
			wantPRs := map[string]float64{}
			if want.PullRequestsCreated > 0 {
				wantPRs["gh_pr_create"] = float64(want.PullRequestsCreated)
			}
			if want.PullRequestsLinked > 0 {
				wantPRs["pr_link"] = float64(want.PullRequestsLinked)
			}
			compareMaps(t, "pull_requests{source}", sumBy(mfs, "claude_transcript_pull_requests_total", "source"), wantPRs)
			if got := sumBy(mfs, "claude_transcript_commits_total")[""]; got != float64(want.Commits) {
				t.Errorf("commits = %v, independent count %d", got, want.Commits)
			}
			// The attributed series hold every token once, split another way.
			compareMaps(t, "attributed_tokens{type}", sumBy(mfs, "claude_transcript_attributed_tokens_total", "type"), sumTypes(want.Tokens))
			pre := sumBy(mfs, "claude_transcript_compaction_pre_tokens", "trigger")
			var preSum float64
			if mf := mfs["claude_transcript_compaction_pre_tokens"]; mf != nil {
				for _, m := range mf.GetMetric() {
					preSum += m.GetHistogram().GetSampleSum()
				}
			}
			_ = pre
			if preSum != float64(want.CompactionPreTokens) {
				t.Errorf("compaction pre-tokens sum = %v, independent count %d", preSum, want.CompactionPreTokens)
			}
			t.Logf("tokens=%v requests=%v tool_calls=%d compactions=%v", tokenTotals(want), want.Requests, len(wantTools), want.Compactions)
		})
	}
}

// sumTypes sums tokens by type over every key.
func sumTypes(m map[string]map[string]int64) map[string]float64 {
	out := map[string]float64{}
	for _, types := range m {
		for typ, n := range types {
			out[typ] += float64(n)
		}
	}
	return out
}

func floats(m map[string]int64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range m {
		out[k] = float64(v)
	}
	return out
}

// TestLanguageTablesAgree: the exporter's extension-to-language table
// and the independent count's name the same extensions, each under the
// same language.
func TestLanguageTablesAgree(t *testing.T) {
	exporter, indep := metrics.Extensions(), indepcount.Extensions()
	if !slices.Equal(exporter, indep) {
		t.Errorf("extensions differ:\n exporter %v\n independent count %v", exporter, indep)
	}
	for _, ext := range append(exporter, "", "zzz", "GO") {
		if a, b := metrics.LanguageOf(ext), indepcount.Language(ext); a != b {
			t.Errorf("extension %q: exporter %q, independent count %q", ext, a, b)
		}
	}
}

func compareMaps(t *testing.T, what string, got, want map[string]float64) {
	t.Helper()
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if math.Abs(got[k]-want[k]) > 0 {
			t.Errorf("%s[%s] = %v, independent count %v", what, k, got[k], want[k])
		}
	}
	for _, k := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[k]; !ok && got[k] != 0 {
			t.Errorf("%s[%s] = %v, not in the independent count", what, k, got[k])
		}
	}
}

func tokenTotals(t *indepcount.Totals) map[string]int64 {
	out := map[string]int64{}
	for _, types := range t.Tokens {
		for typ, n := range types {
			out[typ] += n
		}
	}
	return out
}

// TestOneshotInGroupsMatchesGoldens reads every tree with the smallest
// backfill group, so that the pipeline settles and closes sessions after
// every file: the exposition is the golden one (float sums such as costs,
// active time and durations to rounding, as they are added in another order). Closing a session early must
// neither lose nor recount anything, nor change a label, but one: which
// of two working dirs of one basename the exporter met first, and so
// keeps the plain basename (the other is basename~<hash>), follows the
// order sessions close in. Series are compared with such labels summed
// under their basename.
func TestOneshotInGroupsMatchesGoldens(t *testing.T) {
	goldDir := filepath.Join(testbackend.RepoRoot(t), "testdata", "oneshot")
	for _, tree := range testbackend.CorpusTrees(t) {
		name := filepath.Base(tree)
		t.Run(name, func(t *testing.T) {
			want, err := os.ReadFile(filepath.Join(goldDir, name+".prom"))
			if err != nil {
				t.Fatal(err)
			}
			got := stableExposition(oneshot(t, "--claude.dir="+tree, "--tail.backfill-group-bytes=1"))
			gs, ws := seriesByBasename(got), seriesByBasename(string(want))
			for _, k := range slices.Sorted(maps.Keys(ws)) {
				g, ok := gs[k]
				w := ws[k]
				floatSum := strings.Contains(k, "_usd_total{") || strings.HasPrefix(k, "claude_transcript_active_time_seconds_total{") ||
					strings.Contains(k, "_sum{")
				switch {
				case !ok:
					t.Errorf("missing %s (golden %v)", k, w)
				case g == w:
				case !floatSum || math.Abs(g-w) > 1e-9*math.Max(1, math.Abs(w)):
					t.Errorf("%s = %v, golden %v", k, g, w)
				}
			}
			for _, k := range slices.Sorted(maps.Keys(gs)) {
				if _, ok := ws[k]; !ok {
					t.Errorf("%s = %v, not in the golden", k, gs[k])
				}
			}
		})
	}
}

// hashedProject matches a project label given to a second working dir of
// a basename (project="dl~3f2a").
var hashedProject = regexp.MustCompile(`(project="[^"]*)~[0-9a-f]{4,64}"`)

// seriesByBasename reads an exposition's samples, series name to value,
// with hashed project labels summed under their basename.
func seriesByBasename(text string) map[string]float64 {
	out := map[string]float64{}
	for _, line := range strings.Split(text, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if i < 0 || err != nil {
			out["unparsed: "+line]++
			continue
		}
		out[hashedProject.ReplaceAllString(line[:i], `$1"`)] += v
	}
	return out
}
