package e2e

import (
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/testonly/testbackend"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/metrics"
)

// TestPricingFileMistakesFailAtStart: a --pricing.file with a misspelt or
// missing field stops the exporter before any work (exit 2), naming the
// flag, the model and the field; a good one is used and its date shown
// in claude_transcript_exporter_pricing_info.
func TestPricingFileMistakesFailAtStart(t *testing.T) {
	tree := filepath.Join(testbackend.CorpusDir(t), "danielhward")
	const rates = `"input":3,"output":15,"cache_read":0.3,"cache_write_5m":3.75,"cache_write_1h":6`
	cases := []struct {
		name, table string
		want        []string
	}{
		{"misspelt rate", `{"version":2,"as_of":"2026-11-24","source":"mine","models":{"claude-sonnet-4-5":{"rows":[{"from":"2025-01-01",` +
			strings.Replace(rates, `"output"`, `"ouptut"`, 1) + `}]}}}`, []string{"--pricing.file", `unknown field "ouptut"`}},
		{"missing rate", `{"version":2,"as_of":"2026-11-24","source":"mine","models":{"claude-sonnet-4-5":{"rows":[{"from":"2025-01-01",` +
			strings.Replace(rates, `,"cache_write_1h":6`, ``, 1) + `}]}}}`, []string{"--pricing.file", `"claude-sonnet-4-5"`, "cache_write_1h: missing"}},
		{"unknown version", `{"version":7,"models":{}}`, []string{"--pricing.file", "version 7"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := filepath.Join(t.TempDir(), "prices.json")
			if err := os.WriteFile(f, []byte(tc.table), 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(binary(t), "--oneshot", "--claude.dir="+tree, "--pricing.file="+f).CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 2 {
				t.Fatalf("exit %v, want 2; output:\n%s", err, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("message does not name %s:\n%s", w, out)
				}
			}
			if strings.Contains(string(out), "claude_transcript_tokens_total") {
				t.Error("work was done before the bad flag was reported")
			}
		})
	}
	t.Run("a good file is used and dated", func(t *testing.T) {
		f := filepath.Join(t.TempDir(), "prices.json")
		table := `{"version":2,"as_of":"2030-01-02","source":"mine","models":{"claude-sonnet-4-5":{"rows":[{"from":"2025-01-01",` +
			strings.Replace(rates, `"output":15`, `"output":1500`, 1) + `}]}}}`
		if err := os.WriteFile(f, []byte(table), 0o644); err != nil {
			t.Fatal(err)
		}
		mfs := parseExposition(t, oneshot(t, "--claude.dir="+tree, "--pricing.file="+f))
		info := sumBy(mfs, "claude_transcript_exporter_pricing_info", "as_of", "source", "version")
		if info["2030-01-02|file|2"] != 1 || len(info) != 1 {
			t.Errorf("pricing_info = %v", info)
		}
		out := sumBy(mfs, "claude_transcript_tokens_total", "model", "type")
		cost := sumBy(mfs, "claude_transcript_cost_usd_total", "model")
		for k, n := range out {
			model, typ, _ := strings.Cut(k, "|")
			if typ == "output" && n > 0 && cost[model] < n*1500/1e6 {
				t.Errorf("%s: cost %v, want at least %v from the file's output price", model, cost[model], n*1500/1e6)
			}
		}
	})
}

// TestSyntheticRequestsCostTheirListPrice prices the synthetic spenders
// tree by hand from docs/pricing.md and the field notes' table: a fast
// request served in the US on 2026-11-20 (claude-opus-4-8, fast 2x until
// 2026-11-30, us 1.1x), standard ones, the compaction fork, and the
// advisor's inferences (claude-opus-5 with the request's modifiers).
func TestSyntheticRequestsCostTheirListPrice(t *testing.T) {
	tree := filepath.Join(testbackend.RepoRoot(t), "testdata", "synthetic", "spenders")
	cost := sumBy(parseExposition(t, oneshot(t, "--claude.dir="+tree)), "claude_transcript_cost_usd_total", "model", "spender")
	perM := func(in, out, read, w5m, w1h float64, r [5]float64) float64 {
		return (in*r[0] + out*r[1] + read*r[2] + w5m*r[3] + w1h*r[4]) / 1e6
	}
	opus48 := [5]float64{5, 25, 0.5, 6.25, 10}
	opus5 := [5]float64{5, 25, 0.5, 6.25, 10}
	want := map[string]float64{
		"claude-opus-4-8|main": perM(6, 410, 12000, 0, 3000, opus48)*2*1.1 + // fast, us
			perM(3, 200, 15000, 0, 800, opus48) + perM(2, 90, 16000, 0, 300, opus48),
		"claude-opus-4-8|compaction": perM(2, 1500, 30000, 0, 0, opus48),
		"claude-opus-5|main":         perM(900, 120, 4000, 500, 0, opus5) * 2 * 1.1,
	}
	for k, w := range want {
		if math.Abs(cost[k]-w) > 1e-12 {
			t.Errorf("cost[%s] = %.9f, list price %.9f", k, cost[k], w)
		}
	}
}

// TestPricingFileTakesLiteLLMsTableUnderTheEmbeddedOne: given LiteLLM's
// model_prices_and_context_window.json as it is, the exporter keeps the
// embedded rows (dates, modifiers), prices the models only LiteLLM has,
// leaves a model in neither unpriced and counted, and says so in
// pricing_info. The excerpt is verbatim LiteLLM; the whole snapshot is
// loaded too when the shared folder is there.
func TestPricingFileTakesLiteLLMsTableUnderTheEmbeddedOne(t *testing.T) {
	root := testbackend.RepoRoot(t)
	files := []string{filepath.Join(root, "mapping", "metrics", "testdata", "litellm-excerpt-2026-07-24.json")}
	if dir, ok := testbackend.SharedCorpus(t); ok {
		files = append(files, filepath.Join(dir, "..", "..", "prices", "litellm-model_prices_and_context_window-2026-07-24.json"))
	}
	tree := t.TempDir()
	// One request of 1,000,000 output tokens each: a model LiteLLM has and
	// the embedded table lacks, one in both, one in neither.
	proj := filepath.Join(tree, "projects", "-p")
	if err := os.MkdirAll(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	var lines []string
	for i, model := range []string{"MiniMax-M3", "claude-opus-4-8", "my-own-local-model"} {
		lines = append(lines, fmt.Sprintf(`{"type":"assistant","sessionId":"s1","cwd":"/p","timestamp":"2026-11-20T12:0%d:00Z","requestId":"r%d","uuid":"u%d","message":{"id":"m%d","role":"assistant","model":%q,"stop_reason":"end_turn","content":[],"usage":{"input_tokens":0,"output_tokens":1000000,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"speed":"fast"}}}`, i, i, i, i, model))
	}
	if err := os.WriteFile(filepath.Join(proj, "s1.jsonl"), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			mfs := parseExposition(t, oneshot(t, "--claude.dir="+tree, "--pricing.file="+f))
			info := sumBy(mfs, "claude_transcript_exporter_pricing_info", "as_of", "source", "version")
			want := metrics.DefaultPrices().AsOf + "|builtin+litellm|2"
			if info[want] != 1 || len(info) != 1 {
				t.Errorf("pricing_info = %v, want %s", info, want)
			}
			cost := sumBy(mfs, "claude_transcript_cost_usd_total", "model")
			// MiniMax-M3: LiteLLM's 1.2 per million output, no fast multiplier.
			// claude-opus-4-8: the embedded 25 per million, fast 2x on 2026-11-20.
			for model, usd := range map[string]float64{"MiniMax-M3": 1.2, "claude-opus-4-8": 50} {
				if math.Abs(cost[model]-usd) > 1e-9 {
					t.Errorf("cost[%s] = %v, want %v", model, cost[model], usd)
				}
			}
			if c := cost["my-own-local-model"]; c != 0 {
				t.Errorf("a model in neither table costs %v", c)
			}
			if u := sumBy(mfs, "claude_transcript_exporter_unpriced_tokens_total", "model")["my-own-local-model"]; u != 1e6 {
				t.Errorf("unpriced tokens of a model in neither = %v, want 1e6", u)
			}
		})
	}
}
