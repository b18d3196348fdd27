package e2e

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/indepcount"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/testbackend"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/metrics"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/session"
)

// historyJob is the job deploy/prometheus/prometheus.yml scrapes the
// exporter under, and so the history's default job label.
const historyJob = "claude-transcript-exporter"

// backfill writes the history of tree with the binary, turns it into TSDB
// blocks with the promtool the tests build, and returns the data dir and
// the end of the history.
func backfill(t *testing.T, tree, instance string, extra ...string) (string, time.Time) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "history.om")
	before := time.Now()
	oneshot(t, append([]string{"--claude.dir=" + tree, "--oneshot.history-file=" + file,
		"--oneshot.history-instance=" + instance}, extra...)...)
	end := time.Now()
	fi, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(t.TempDir(), "data")
	start := time.Now()
	out, err := exec.Command(testbackend.PromtoolBinary(t), "tsdb", "create-blocks-from", "openmetrics",
		"--max-block-duration=744h", file, data).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool tsdb create-blocks-from openmetrics: %v\n%s", err, lastLines(string(out), 20))
	}
	t.Logf("history of %s: %d bytes, written in %s, blocks made by promtool in %s", filepath.Base(tree),
		fi.Size(), end.Sub(before).Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	return data, end
}

// TestHistoryGivesEveryDayItsSpend is "what did I spend per day last
// month?": the history of a real tree, loaded into a real Prometheus 3
// with promtool, answers increase() per UTC day with exactly the
// independent count of that day's requests: output and cache-read tokens
// and cost.
func TestHistoryGivesEveryDayItsSpend(t *testing.T) {
	tree := filepath.Join(testbackend.CorpusDir(t), "eduardodmb")
	want, err := indepcount.Count(tree)
	if err != nil {
		t.Fatal(err)
	}
	costByDay := map[string]float64{}
	prices := metrics.DefaultPrices()
	for _, r := range want.Done {
		usd, ok := prices.RequestCost(r.Model, r.At, session.Tokens{Input: r.Input, Output: r.Output, CacheRead: r.CacheRead,
			CacheWrite5m: r.CacheWrite5m, CacheWrite1h: r.CacheWrite1h, WebSearch: r.WebSearches},
			metrics.Modifiers{Speed: r.Speed, Geo: r.Geo})
		if ok {
			costByDay[r.At.UTC().Format("2006-01-02")] += usd
		}
	}
	if len(want.OutputByDay) < 10 {
		t.Fatalf("the tree spans %d days: not a history", len(want.OutputByDay))
	}
	data, _ := backfill(t, tree, "laptop:9812")
	prom := testbackend.StartPrometheus(t, testbackend.PromOptions{DataDir: data,
		ExtraArgs: []string{"--storage.tsdb.retention.time=10y"}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	days := make([]string, 0, len(want.OutputByDay))
	for d := range want.OutputByDay {
		days = append(days, d)
	}
	sort.Strings(days)
	query := func(expr string, at time.Time) float64 {
		t.Helper()
		res, err := prom.QueryAt(ctx, expr, at)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Samples) == 0 {
			return 0
		}
		if len(res.Samples) != 1 {
			t.Fatalf("%s at %s: %d samples", expr, at, len(res.Samples))
		}
		return res.Samples[0].Value
	}
	sel := `{job="` + historyJob + `",instance="laptop:9812"}`
	var total float64
	for _, d := range days {
		day, err := time.Parse("2006-01-02", d)
		if err != nil {
			t.Fatal(err)
		}
		end := day.Add(24 * time.Hour)
		out := query(`sum(increase(claude_transcript_tokens_total{type="output",`+sel[1:len(sel)-1]+`}[1d] anchored))`, end)
		cr := query(`sum(increase(claude_transcript_tokens_total{type="cache_read",`+sel[1:len(sel)-1]+`}[1d] anchored))`, end)
		usd := query(`sum(increase(claude_transcript_cost_usd_total`+sel+`[1d] anchored))`, end)
		if out != float64(want.OutputByDay[d]) || cr != float64(want.CacheReadByDay[d]) ||
			math.Abs(usd-costByDay[d]) > 1e-9*math.Max(1, costByDay[d]) {
			t.Errorf("%s: output %v, cache read %v, cost %.6f; independent count %d, %d, %.6f", d, out, cr, usd,
				want.OutputByDay[d], want.CacheReadByDay[d], costByDay[d])
		}
		total += out
	}
	// Days without requests have none: the day after the last one.
	last, _ := time.Parse("2006-01-02", days[len(days)-1])
	if v := query(`sum(increase(claude_transcript_tokens_total{type="output",`+sel[1:len(sel)-1]+`}[1d] anchored))`, last.Add(48*time.Hour)); v != 0 {
		t.Errorf("the day after the last request: %v output tokens, want 0", v)
	}
	t.Logf("%d days, %v output tokens", len(days), total)
	_ = fmt.Sprint
}
