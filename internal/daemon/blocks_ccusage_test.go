package daemon_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/exporter/prom"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/daemon"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/testonly/testbackend"
)

// CcusageBinEnv names ccusage 20.0.24's binary. Set, the test runs it
// live; unset, it compares with the figures recorded in
// testdata/ccusage-blocks.json.
const CcusageBinEnv = testbackend.CcusageBinEnv

var updateCcusage = flag.Bool("update-ccusage", false, "record ccusage's blocks in testdata/ccusage-blocks.json (needs "+CcusageBinEnv+")")

// ccBlock is a block of `ccusage blocks --json`.
type ccBlock struct {
	StartTime   time.Time `json:"startTime"`
	EndTime     time.Time `json:"endTime"`
	ActualEnd   time.Time `json:"actualEndTime"`
	IsActive    bool      `json:"isActive"`
	IsGap       bool      `json:"isGap"`
	Entries     int64     `json:"entries"`
	TotalTokens int64     `json:"totalTokens"`
	TokenCounts struct {
		Input         int64 `json:"inputTokens"`
		Output        int64 `json:"outputTokens"`
		CacheCreation int64 `json:"cacheCreationInputTokens"`
		CacheRead     int64 `json:"cacheReadInputTokens"`
	} `json:"tokenCounts"`
	CostUSD  float64  `json:"costUSD"`
	Models   []string `json:"models"`
	BurnRate *struct {
		TokensPerMinute float64 `json:"tokensPerMinute"`
	} `json:"burnRate"`
	Projection *struct {
		TotalTokens float64 `json:"totalTokens"`
		TotalCost   float64 `json:"totalCost"`
	} `json:"projection"`
}

// ccRecord is what is recorded of one tree: the count of blocks, the
// last block, and whether every model is a Claude model (costs compare
// only then: ccusage prices other models from LiteLLM's table).
type ccRecord struct {
	Blocks      int     `json:"blocks"`
	Last        ccBlock `json:"last"`
	ClaudeOnly  bool    `json:"claude_only"`
	LastEntryMs int64   `json:"last_entry_ms"`
	// Totals are the total tokens of every block but the last, oldest
	// first: the finished blocks' histogram when the last is active.
	Totals []int64 `json:"totals"`
}

type ccFile struct {
	Command string               `json:"command"`
	Trees   map[string]*ccRecord `json:"trees"`
}

const ccCommand = "CLAUDE_CONFIG_DIR=testdata/corpus/<tree> ccusage blocks --json --offline (ccusage 20.0.24, npm), on the trees as they are (no block active)"

// ccusageDiffers names the trees whose token counts differ from
// ccusage's by a known rule difference; their blocks (count, start, end)
// still agree.
var ccusageDiffers = map[string]string{
	"invictusauto": "streamed lines of one message carry growing output_tokens: the exporter counts the line with the highest output, ccusage the first line it reads",
}

// historyDiffers names the trees whose earlier blocks' tokens differ from
// ccusage's (their last block and their count agree).
var historyDiffers = map[string]string{
	"invictusauto": ccusageDiffers["invictusauto"],
	"aistrad":      "25 requests are only inside progress records (older Claude Code's subagent stream: 1,417,927 tokens), which ccusage does not read and tokens_total counts",
}

// compareHistory: the finished blocks' histogram holds every block but
// the active one, with ccusage's totals.
func compareHistory(t *testing.T, tree string, got expBlocks, totals []int64) {
	t.Helper()
	if got.hist == nil {
		t.Fatal("no finished_block_tokens histogram")
	}
	want := make([]uint64, len(prom.BlockTokenBounds))
	var sum float64
	for _, n := range totals {
		sum += float64(n)
		for i, ub := range prom.BlockTokenBounds {
			if float64(n) <= ub {
				want[i]++
			}
		}
	}
	same := got.hist.GetSampleCount() == uint64(len(totals)) && got.hist.GetSampleSum() == sum
	for i, b := range got.hist.GetBucket() {
		if i < len(want) && b.GetCumulativeCount() != want[i] {
			same = false
		}
	}
	t.Logf("%s finished blocks: exporter %d blocks, %v tokens; ccusage %d blocks, %v tokens", tree, got.hist.GetSampleCount(), got.hist.GetSampleSum(), len(totals), sum)
	if reason, known := historyDiffers[tree]; known {
		if same {
			t.Errorf("finished blocks now equal ccusage's: remove %s from historyDiffers (%s)", tree, reason)
		}
		if got.hist.GetSampleCount() != uint64(len(totals)) {
			t.Errorf("finished blocks %d, ccusage %d", got.hist.GetSampleCount(), len(totals))
		}
		return
	}
	if !same {
		t.Errorf("finished_block_tokens (count %d, sum %v, buckets %v) differs from ccusage's blocks (count %d, sum %v, cumulative %v)",
			got.hist.GetSampleCount(), got.hist.GetSampleSum(), got.hist.GetBucket(), len(totals), sum, want)
	}
}

// TestBlocksEqualCcusage: on each corpus tree shifted by whole hours so
// that its last block is active, the block series equal ccusage's
// `blocks --json --offline` for the active block, and blocks_total its
// count of blocks.
func TestBlocksEqualCcusage(t *testing.T) {
	recPath := filepath.Join("testdata", "ccusage-blocks.json")
	var rec ccFile
	if b, err := os.ReadFile(recPath); err == nil {
		if err := json.Unmarshal(b, &rec); err != nil {
			t.Fatalf("%s: %v", recPath, err)
		}
	} else if !*updateCcusage {
		t.Fatalf("%s: %v (record it with -update-ccusage and %s)", recPath, err, CcusageBinEnv)
	}
	bin := os.Getenv(CcusageBinEnv)
	if *updateCcusage && bin == "" {
		t.Fatalf("-update-ccusage needs %s", CcusageBinEnv)
	}
	if bin == "" {
		t.Logf("%s not set: comparing with the figures recorded in %s", CcusageBinEnv, recPath)
	}
	if *updateCcusage {
		rec = ccFile{Command: ccCommand, Trees: map[string]*ccRecord{}}
	}
	for _, tree := range testbackend.CorpusTrees(t) {
		name := filepath.Base(tree)
		if _, err := os.Stat(filepath.Join(tree, "projects")); err != nil {
			continue // no transcripts: neither tool has blocks (ccusage refuses the dir)
		}
		t.Run(name, func(t *testing.T) {
			if bin != "" {
				// The record must be ccusage's own figures.
				live := recordOf(t, runCcusage(t, bin, tree))
				if *updateCcusage {
					rec.Trees[name] = live
				} else if want := rec.Trees[name]; want == nil || !sameRecord(*want, *live) {
					t.Errorf("recorded figures differ from ccusage's (re-record with -update-ccusage): recorded %+v, ccusage %+v", want, live)
				}
			}
			r := rec.Trees[name]
			if r == nil {
				t.Fatalf("no recorded figures for %s", name)
			}
			// Recorded: a fixed shift, the clock a minute after the last
			// entry; the recorded last block is then the active one.
			shift := wholeHours(time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC).Sub(time.UnixMilli(r.LastEntryMs)))
			dir := testbackend.ShiftTree(t, tree, shift)
			now := time.UnixMilli(r.LastEntryMs).Add(shift + time.Minute)
			want := r.Last
			want.StartTime, want.EndTime = want.StartTime.Add(shift), want.EndTime.Add(shift)
			got := exporterBlocks(t, dir, now)
			compareBlocks(t, name, "recorded", got, r.Blocks, want, r.ClaudeOnly, false, now)
			compareHistory(t, name, got, r.Totals)

			if bin == "" {
				return
			}
			// Live: shifted so that the last entry is within the hour
			// before now; ccusage and the exporter see the same tree at
			// (nearly) the same instant.
			shift = wholeHours(time.Now().Sub(time.UnixMilli(r.LastEntryMs)))
			dir = testbackend.ShiftTree(t, tree, shift)
			now = time.Now()
			blocks := runCcusage(t, bin, dir)
			got = exporterBlocks(t, dir, now)
			compareBlocks(t, name, "live", got, len(blocks), blocks[len(blocks)-1], r.ClaudeOnly, true, now)
		})
	}
	if *updateCcusage {
		b, err := json.MarshalIndent(rec, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(recPath, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func wholeHours(d time.Duration) time.Duration { return d.Truncate(time.Hour) }

func sameRecord(a, b ccRecord) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}

func runCcusage(t *testing.T, bin, dir string) []ccBlock {
	t.Helper()
	out, errOut, err := testbackend.RunCcusage(t, bin, dir, "blocks", "--json", "--offline")
	if err != nil {
		t.Fatalf("ccusage blocks: %v\n%s", err, errOut)
	}
	var v struct {
		Blocks []ccBlock `json:"blocks"`
	}
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("ccusage output: %v", err)
	}
	var bs []ccBlock
	for _, b := range v.Blocks {
		if !b.IsGap {
			bs = append(bs, b)
		}
	}
	return bs
}

// recordOf keeps the count, the last block (its actualEndTime is its
// last entry's time) and whether every model is Claude's.
func recordOf(t *testing.T, bs []ccBlock) *ccRecord {
	t.Helper()
	if len(bs) == 0 {
		t.Fatal("ccusage found no blocks")
	}
	r := &ccRecord{Blocks: len(bs), Last: bs[len(bs)-1], ClaudeOnly: true}
	for _, b := range bs {
		for _, m := range b.Models {
			if !anthropicID.MatchString(m) {
				r.ClaudeOnly = false
			}
		}
	}
	r.LastEntryMs = r.Last.ActualEnd.UnixMilli()
	for _, b := range bs[:len(bs)-1] {
		r.Totals = append(r.Totals, b.TotalTokens)
	}
	// What is recorded does not depend on the clock.
	r.Last.IsActive, r.Last.BurnRate, r.Last.Projection = false, nil, nil
	return r
}

type expBlocks struct {
	total                                 float64
	hist                                  *dto.Histogram
	active                                bool
	start, end, cost, burn, projT, projC  float64
	input, output, read, write5m, write1h float64
}

func exporterBlocks(t *testing.T, dir string, now time.Time) expBlocks {
	t.Helper()
	cfg := daemon.NewConfig()
	cfg.ClaudeDirs = []string{dir}
	cfg.Oneshot = true
	cfg.StateFile = ""
	cfg.Traces.Exporter = "none"
	cfg.Now = func() time.Time { return now }
	var out bytes.Buffer
	if err := daemon.Run(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), &out); err != nil {
		t.Fatalf("one-shot: %v", err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(&out)
	if err != nil {
		t.Fatal(err)
	}
	val := func(name, typ string) (float64, bool) {
		mf := mfs[name]
		if mf == nil {
			return 0, false
		}
		for _, m := range mf.GetMetric() {
			if typ != "" && label(m, "type") != typ {
				continue
			}
			if m.Gauge != nil {
				return m.Gauge.GetValue(), true
			}
			return m.Counter.GetValue(), true
		}
		return 0, false
	}
	var e expBlocks
	e.total, _ = val("claude_transcript_blocks_total", "")
	if mf := mfs["claude_transcript_finished_block_tokens"]; mf != nil && len(mf.GetMetric()) == 1 {
		e.hist = mf.GetMetric()[0].GetHistogram()
	}
	e.start, e.active = val("claude_transcript_block_start_timestamp_seconds", "")
	e.end, _ = val("claude_transcript_block_end_timestamp_seconds", "")
	e.cost, _ = val("claude_transcript_block_cost_usd", "")
	e.burn, _ = val("claude_transcript_block_burn_rate_tokens_per_minute", "")
	e.projT, _ = val("claude_transcript_block_projected_tokens", "")
	e.projC, _ = val("claude_transcript_block_projected_cost_usd", "")
	e.input, _ = val("claude_transcript_block_tokens", "input")
	e.output, _ = val("claude_transcript_block_tokens", "output")
	e.read, _ = val("claude_transcript_block_tokens", "cache_read")
	e.write5m, _ = val("claude_transcript_block_tokens", "cache_write_5m")
	e.write1h, _ = val("claude_transcript_block_tokens", "cache_write_1h")
	return e
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

func compareBlocks(t *testing.T, tree, how string, got expBlocks, blocks int, want ccBlock, claudeOnly, live bool, now time.Time) {
	t.Helper()
	t.Logf("%s %s: blocks exporter %v ccusage %d; active block tokens exporter in=%v out=%v read=%v write=%v, ccusage in=%d out=%d read=%d write=%d",
		tree, how, got.total, blocks, got.input, got.output, got.read, got.write5m+got.write1h,
		want.TokenCounts.Input, want.TokenCounts.Output, want.TokenCounts.CacheRead, want.TokenCounts.CacheCreation)
	if got.total != float64(blocks) {
		t.Errorf("%s: blocks_total %v, ccusage %d", how, got.total, blocks)
	}
	if live && !want.IsActive {
		if got.active {
			t.Errorf("%s: the exporter has an active block, ccusage none", how)
		}
		return
	}
	if !got.active {
		t.Fatalf("%s: no active block (ccusage: %v–%v)", how, want.StartTime, want.EndTime)
	}
	if got.start != float64(want.StartTime.Unix()) || got.end != float64(want.EndTime.Unix()) {
		t.Errorf("%s: block %v–%v, ccusage %v–%v", how, time.Unix(int64(got.start), 0).UTC(), time.Unix(int64(got.end), 0).UTC(), want.StartTime, want.EndTime)
	}
	tokensEqual := got.input == float64(want.TokenCounts.Input) && got.output == float64(want.TokenCounts.Output) &&
		got.read == float64(want.TokenCounts.CacheRead) && got.write5m+got.write1h == float64(want.TokenCounts.CacheCreation)
	if reason, known := ccusageDiffers[tree]; known {
		if tokensEqual {
			t.Errorf("%s: tokens now equal ccusage's: remove %s from ccusageDiffers (%s)", how, tree, reason)
		}
		return
	}
	if !tokensEqual {
		t.Errorf("%s: active block tokens differ from ccusage's", how)
	}
	if claudeOnly && math.Abs(got.cost-want.CostUSD) > 1e-6*math.Max(1, want.CostUSD) {
		t.Errorf("%s: block cost %v, ccusage %v", how, got.cost, want.CostUSD)
	}
	if !live {
		return
	}
	if want.BurnRate == nil {
		if got.burn != 0 {
			t.Errorf("%s: burn rate %v, ccusage none", how, got.burn)
		}
		return
	}
	if math.Abs(got.burn-want.BurnRate.TokensPerMinute) > 1e-9*want.BurnRate.TokensPerMinute {
		t.Errorf("%s: burn rate %v, ccusage %v", how, got.burn, want.BurnRate.TokensPerMinute)
	}
	if want.Projection == nil {
		t.Fatalf("%s: ccusage has a burn rate and no projection", how)
	}
	// ccusage projects at its own instant, a moment after now, with the
	// minutes left rounded: the two agree unless those instants round
	// to different minutes, then by one minute's burn at most.
	left := want.EndTime.Sub(now).Minutes()
	slack := 0.0
	if frac := left - math.Floor(left); math.Abs(frac-0.5) < time.Since(now).Minutes()+1e-9 {
		slack = want.BurnRate.TokensPerMinute + 1
		t.Logf("%s: %.4f minutes left, at a rounding boundary: projection compared within one minute's burn", how, left)
	}
	if math.Abs(got.projT-want.Projection.TotalTokens) > slack {
		t.Errorf("%s: projected tokens %v, ccusage %v", how, got.projT, want.Projection.TotalTokens)
	}
	if claudeOnly && slack == 0 && math.Abs(got.projC-want.Projection.TotalCost) > 1e-9 {
		t.Errorf("%s: projected cost %v, ccusage %v", how, got.projC, want.Projection.TotalCost)
	}
}

// anthropicID is the form of Anthropic's model ids (claude-opus-4-5,
// claude-sonnet-4-5-20250929): gateways' names (claude-opus-4.6-1m) are
// priced by each tool its own way.
var anthropicID = regexp.MustCompile(`^claude-(opus|sonnet|haiku)-\d+(-\d+)?(-\d{8})?$|^claude-\d+(-\d+)?-(opus|sonnet|haiku)(-\d{8})?$`)
