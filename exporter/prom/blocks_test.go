package prom

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/blocks"
)

const blockSeries = `# HELP claude_transcript_block_end_timestamp_seconds End of the active 5-hour block (start + 5h); no sample when no block is active.
# TYPE claude_transcript_block_end_timestamp_seconds gauge
claude_transcript_block_end_timestamp_seconds 1.7640864e+09
# HELP claude_transcript_block_start_timestamp_seconds Start of the active 5-hour block, as ccusage blocks computes it (first request after the previous block, floored to the UTC hour); no sample when no block is active.
# TYPE claude_transcript_block_start_timestamp_seconds gauge
claude_transcript_block_start_timestamp_seconds 1.7640684e+09
`

func TestBlockSeriesFollowTheClock(t *testing.T) {
	now := time.Date(2025, 11, 25, 12, 30, 0, 0, time.UTC)
	clock := now
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg, time.Minute, func() time.Time { return clock })
	m.BlocksReady()
	m.AddBlockUsage(time.Date(2025, 11, 25, 11, 10, 0, 0, time.UTC), true, blocks.Tokens{Input: 100, Output: 20}, 1)
	m.AddBlockUsage(time.Date(2025, 11, 25, 12, 10, 0, 0, time.UTC), true, blocks.Tokens{CacheRead: 1080}, 2)
	m.AddLimitHit("session", time.Date(2025, 11, 25, 12, 10, 0, 0, time.UTC), time.Date(2025, 11, 25, 16, 0, 0, 0, time.UTC))
	if err := testutil.GatherAndCompare(reg, strings.NewReader(blockSeries),
		"claude_transcript_block_start_timestamp_seconds", "claude_transcript_block_end_timestamp_seconds"); err != nil {
		t.Fatal(err)
	}
	// 1200 tokens over the hour from the first request to the last: 20
	// per minute; 3h30 left at 12:30: 1200 + 20*210.
	for name, want := range map[string]float64{
		"claude_transcript_block_burn_rate_tokens_per_minute": 20,
		"claude_transcript_block_projected_tokens":            5400,
		"claude_transcript_block_projected_cost_usd":          3 + 3*3.5,
		"claude_transcript_block_cost_usd":                    3,
		"claude_transcript_blocks_total":                      1,
		"claude_transcript_limit_hit_block_tokens":            1200,
		"claude_transcript_limit_reset_timestamp_seconds":     float64(time.Date(2025, 11, 25, 16, 0, 0, 0, time.UTC).Unix()),
	} {
		if got := testutil.ToFloat64(single(t, reg, name)); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	if n, ok := m.ActiveBlockTokens(now); !ok || n != 1200 {
		t.Errorf("ActiveBlockTokens = %d %v, want 1200", n, ok)
	}
	// The block ends at 16:00 without a new line: no active series after,
	// and the block moves to the finished histogram.
	clock = time.Date(2025, 11, 25, 16, 0, 0, 0, time.UTC)
	if n, err := testutil.GatherAndCount(reg, "claude_transcript_block_start_timestamp_seconds", "claude_transcript_block_tokens",
		"claude_transcript_block_burn_rate_tokens_per_minute"); err != nil || n != 0 {
		t.Fatalf("%d active-block samples after the end (%v), want none", n, err)
	}
	const finished = `# HELP claude_transcript_finished_block_tokens Total tokens (all types) of each finished 5-hour block, history included, observed once when first seen finished: a user's usual block and its percentiles (histogram_quantile(0.9, sum by (le) (claude_transcript_finished_block_tokens_bucket))).
# TYPE claude_transcript_finished_block_tokens histogram
claude_transcript_finished_block_tokens_bucket{le="10000"} 1
claude_transcript_finished_block_tokens_bucket{le="50000"} 1
claude_transcript_finished_block_tokens_bucket{le="100000"} 1
claude_transcript_finished_block_tokens_bucket{le="250000"} 1
claude_transcript_finished_block_tokens_bucket{le="500000"} 1
claude_transcript_finished_block_tokens_bucket{le="1e+06"} 1
claude_transcript_finished_block_tokens_bucket{le="2.5e+06"} 1
claude_transcript_finished_block_tokens_bucket{le="5e+06"} 1
claude_transcript_finished_block_tokens_bucket{le="1e+07"} 1
claude_transcript_finished_block_tokens_bucket{le="2.5e+07"} 1
claude_transcript_finished_block_tokens_bucket{le="5e+07"} 1
claude_transcript_finished_block_tokens_bucket{le="1e+08"} 1
claude_transcript_finished_block_tokens_bucket{le="2.5e+08"} 1
claude_transcript_finished_block_tokens_bucket{le="5e+08"} 1
claude_transcript_finished_block_tokens_bucket{le="1e+09"} 1
claude_transcript_finished_block_tokens_bucket{le="+Inf"} 1
claude_transcript_finished_block_tokens_sum 1200
claude_transcript_finished_block_tokens_count 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(finished), "claude_transcript_finished_block_tokens"); err != nil {
		t.Fatal(err)
	}

	// The state carries the blocks and the last hits over a restart.
	st := m.BlocksState()
	reg2 := prometheus.NewRegistry()
	m2 := NewMetrics(reg2, time.Minute, func() time.Time { return now })
	if err := m2.RestoreBlocks(st); err != nil {
		t.Fatal(err)
	}
	if n, ok := m2.ActiveBlockTokens(now); !ok || n != 1200 {
		t.Errorf("restored ActiveBlockTokens = %d %v, want 1200", n, ok)
	}
	if got := testutil.ToFloat64(single(t, reg2, "claude_transcript_limit_hit_block_tokens")); got != 1200 {
		t.Errorf("restored limit_hit_block_tokens = %v", got)
	}
}

func TestLastLimitHitIsTheLatestInAnyOrder(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg, time.Minute, time.Now)
	early, late := time.Unix(1_700_000_000, 0), time.Unix(1_700_100_000, 0)
	m.AddLimitHit("weekly", late, late.Add(time.Hour))
	m.AddLimitHit("weekly", early, early.Add(time.Hour))
	if got := testutil.ToFloat64(single(t, reg, "claude_transcript_limit_reset_timestamp_seconds")); got != float64(late.Add(time.Hour).Unix()) {
		t.Errorf("reset %v, want the later hit's", got)
	}
	if got := testutil.ToFloat64(single(t, reg, "claude_transcript_limit_hits_total")); got != 2 {
		t.Errorf("hits %v, want 2", got)
	}
}

// single gathers one family of one sample as a collector.
func single(t *testing.T, reg *prometheus.Registry, name string) prometheus.Collector {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			v := mf.GetMetric()[0]
			g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "x"})
			switch {
			case v.Gauge != nil:
				g.Set(v.Gauge.GetValue())
			case v.Counter != nil:
				g.Set(v.Counter.GetValue())
			}
			return g
		}
	}
	t.Fatalf("no single sample of %s", name)
	return nil
}
