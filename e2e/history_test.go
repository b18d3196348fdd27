package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/testonly/indepcount"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/testonly/testbackend"
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
// month?": the history of every corpus tree, loaded into a real
// Prometheus 3 with promtool, answers increase(...[1d] anchored) per UTC
// day with exactly the independent count of that day's requests: output
// and cache-read tokens and cost. The history has samples only around the
// cells a series moved in (days, and hours in the recent window): run
// once as shipped (every day of the corpus is before the recent window)
// and once with hours throughout, where every hour a request was made in,
// and the one after it, answer increase(...[1h] anchored) exactly too.
func TestHistoryGivesEveryDayItsSpend(t *testing.T) {
	longest := 0
	for _, tree := range testbackend.CorpusTrees(t) {
		for _, hourly := range []bool{false, true} {
			name := filepath.Base(tree) + "/days"
			if hourly {
				name = filepath.Base(tree) + "/hours"
			}
			t.Run(name, func(t *testing.T) {
				if n := historyDays(t, tree, hourly); n > longest {
					longest = n
				}
			})
		}
	}
	if longest < 10 {
		t.Fatalf("the longest tree spans %d days: not a history", longest)
	}
}

// historyDays runs the per-day (and, hourly, per-hour) check on tree and
// returns its number of active days.
func historyDays(t *testing.T, tree string, hourly bool) int {
	want, err := indepcount.Count(tree)
	if err != nil {
		t.Fatal(err)
	}
	if len(want.OutputByDay) == 0 {
		t.Logf("%s has no request: nothing to check", filepath.Base(tree))
		return 0
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
	var flags []string
	if hourly {
		flags = []string{"--oneshot.history-recent=1000000h"}
	}
	data, _ := backfill(t, tree, "laptop:9812", flags...)
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
	// What Grafana graphs: the "Day by day" panels' own queries, as the
	// dashboard holds them ($project: All), at each midnight.
	panel := func(title string) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(testbackend.RepoRoot(t), "deploy", "grafana", "dashboards", "spend.json"))
		if err != nil {
			t.Fatal(err)
		}
		var d struct {
			Panels []struct {
				Title   string `json:"title"`
				Targets []struct {
					Expr string `json:"expr"`
				} `json:"targets"`
			} `json:"panels"`
		}
		if err := json.Unmarshal(b, &d); err != nil {
			t.Fatal(err)
		}
		for _, p := range d.Panels {
			if p.Title == title && len(p.Targets) == 1 {
				return strings.ReplaceAll(p.Targets[0].Expr, "$project", ".*")
			}
		}
		t.Fatalf("spend.json has no panel %q with one query", title)
		return ""
	}
	spendPerDay, tokensPerDay := panel("Spend per day by model"), panel("Output and cache-read tokens per day")
	for _, d := range days {
		day, _ := time.Parse("2006-01-02", d)
		end := day.Add(24 * time.Hour)
		sum := func(expr string) float64 {
			res, err := prom.QueryAt(ctx, expr, end)
			if err != nil {
				t.Fatal(err)
			}
			var v float64
			for _, s := range res.Samples {
				v += s.Value
			}
			return v
		}
		if usd := sum(spendPerDay); math.Abs(usd-costByDay[d]) > 1e-9*math.Max(1, costByDay[d]) {
			t.Errorf("%s: the panel Spend per day by model shows %.6f, independent count %.6f", d, usd, costByDay[d])
		}
		if n := sum(tokensPerDay); n != float64(want.OutputByDay[d]+want.CacheReadByDay[d]) {
			t.Errorf("%s: the panel Output and cache-read tokens per day shows %v, independent count %d", d, n, want.OutputByDay[d]+want.CacheReadByDay[d])
		}
	}

	// Days without requests have none: the day after the last one.
	last, _ := time.Parse("2006-01-02", days[len(days)-1])
	if v := query(`sum(increase(claude_transcript_tokens_total{type="output",`+sel[1:len(sel)-1]+`}[1d] anchored))`, last.Add(48*time.Hour)); v != 0 {
		t.Errorf("the day after the last request: %v output tokens, want 0", v)
	}
	if hourly {
		outByHour := map[time.Time]int64{}
		for _, r := range want.Done {
			outByHour[r.At.UTC().Truncate(time.Hour)] += r.Output
		}
		hours := 0
		for h := range outByHour {
			for _, end := range []time.Time{h.Add(time.Hour), h.Add(2 * time.Hour)} {
				out := query(`sum(increase(claude_transcript_tokens_total{type="output",`+sel[1:len(sel)-1]+`}[1h] anchored))`, end)
				if out != float64(outByHour[end.Add(-time.Hour)]) {
					t.Errorf("the hour before %s: output %v, independent count %d", end.Format(time.RFC3339), out, outByHour[end.Add(-time.Hour)])
				}
				hours++
			}
		}
		t.Logf("%d hours checked", hours)
	}
	t.Logf("%d days, %v output tokens", len(days), total)
	_ = fmt.Sprint
	return len(days)
}

// familiesOf lists the metric names of a history file's samples.
func familiesOf(t *testing.T, file string) []string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "claude_transcript_") {
			seen[line[:strings.IndexByte(line, '{')]] = true
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

// TestHistoryJoinsTheLiveSeriesWithoutASeam is the recipe end to end:
// the history of a tree loaded into Prometheus, then the live exporter
// over the same tree scraped by that Prometheus under the same job and
// instance. Every history series continues in the live one with the same
// value (no jump, no reset), and the increase across the join is exactly
// what was appended after it.
func TestHistoryJoinsTheLiveSeriesWithoutASeam(t *testing.T) {
	tree := filepath.Join(t.TempDir(), "claude")
	if err := os.CopyFS(tree, os.DirFS(filepath.Join(testbackend.CorpusDir(t), "damon-salvet"))); err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", testbackend.FreePort(t))
	// A session at work while the history is made: its last turn is
	// open, and stays open on both sides of the join.
	transcripts, _ := filepath.Glob(filepath.Join(tree, "projects", "*", "*.jsonl"))
	sort.Strings(transcripts)
	// Under a model the file already counts: its series exist on both
	// sides of the join (a series new after it would start at its first
	// value, which increase() cannot see: Prometheus's rule, not ours).
	var target, model, sessionID, cwd string
	for _, path := range transcripts {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(b), "\n") {
			var rec struct {
				Type      string `json:"type"`
				SessionID string `json:"sessionId"`
				Cwd       string `json:"cwd"`
				Message   struct {
					Model      string `json:"model"`
					StopReason string `json:"stop_reason"`
				} `json:"message"`
			}
			if json.Unmarshal([]byte(l), &rec) == nil && rec.Type == "assistant" && rec.Cwd != "" &&
				strings.HasPrefix(rec.Message.Model, "claude-") && rec.Message.StopReason == "end_turn" {
				target, model, sessionID, cwd = path, rec.Message.Model, rec.SessionID, rec.Cwd
			}
		}
		if target != "" {
			break
		}
	}
	if target == "" {
		t.Fatal("no transcript of the tree has a Claude request that ended its turn")
	}
	appendLines := func(text string) {
		t.Helper()
		f, err := os.OpenFile(target, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString(text); err != nil {
			t.Fatal(err)
		}
	}
	recent := time.Now().UTC().Add(-2 * time.Minute)
	appendLines(fmt.Sprintf(`{"type":"user","uuid":"9d1c6a2e-0000-4000-8000-0000000000a1","sessionId":%q,"cwd":%q,"timestamp":%q,"message":{"role":"user","content":"one more thing"}}`+"\n"+
		`{"type":"assistant","uuid":"9d1c6a2e-0000-4000-8000-0000000000a2","parentUuid":"9d1c6a2e-0000-4000-8000-0000000000a1","sessionId":%q,"cwd":%q,"timestamp":%q,"message":{"id":"msg_open_turn","model":%q,"role":"assistant","stop_reason":"end_turn","content":[{"type":"text","text":"x"}],"usage":{"input_tokens":3,"output_tokens":7,"cache_read_input_tokens":0,"cache_creation_input_tokens":0}}}`+"\n",
		sessionID, cwd, recent.Format(time.RFC3339Nano), sessionID, cwd, recent.Add(time.Second).Format(time.RFC3339Nano), model))
	data, histEnd := backfill(t, tree, addr)
	p := startDaemon(t, addr, "--claude.dir="+tree, "--traces.exporter=none",
		"--state.file="+filepath.Join(t.TempDir(), "state"))
	t.Cleanup(func() { p.stop(t) })
	waitReady(t, addr, p)
	// A lookback of 2h lets anchored increase() reach an hourly sample
	// of the history wherever in the hour the test runs: a query that
	// started from one instead of the history's last sample would fail
	// at any time, not only in the minutes after an hour begins.
	prom := testbackend.StartPrometheus(t, testbackend.PromOptions{DataDir: data, TargetJob: historyJob,
		Targets: []string{addr}, ExtraArgs: []string{"--storage.tsdb.retention.time=10y", "--query.lookback-delta=2h"}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := prom.WaitForScrapes(ctx, 2); err != nil {
		t.Fatal(err)
	}

	// The families the history holds (every usage counter with a series).
	hist := filepath.Join(t.TempDir(), "again.om")
	oneshot(t, "--claude.dir="+tree, "--oneshot.history-file="+hist, "--oneshot.history-instance="+addr)
	families := familiesOf(t, hist)
	if len(families) < 10 {
		t.Fatalf("the history holds %d families: %v", len(families), families)
	}
	sel := `{job="` + historyJob + `",instance="` + addr + `"}`
	across := func() string {
		// From the history's end to now: anchored, increase() starts
		// from the sample at or before the range's start, which is the
		// history's last one (written before histEnd). A range reaching
		// further back would start from an earlier hourly sample and
		// count what the history's last hour added.
		return fmt.Sprintf("%dms", time.Since(histEnd).Milliseconds())
	}
	wide := func() string { return fmt.Sprintf("%ds", int(time.Since(histEnd).Seconds())+3600) }
	value := func(expr string) float64 {
		t.Helper()
		res, err := prom.Query(ctx, expr)
		if err != nil {
			t.Fatal(err)
		}
		var v float64
		for _, s := range res.Samples {
			v += s.Value
		}
		return v
	}
	increases := func() map[string]float64 {
		out := map[string]float64{}
		for _, name := range families {
			out[name] = value(`sum(increase(` + name + sel + `[` + across() + `] anchored))`)
		}
		for _, typ := range []string{"input", "output", "cache_read"} {
			out["tokens:"+typ] = value(`sum(increase(claude_transcript_tokens_total{type="` + typ + `",` + sel[1:] + `[` + across() + `] anchored))`)
		}
		return out
	}
	// No seam: nothing moved across the join, nothing reset, and the
	// series are one: history samples and live ones.
	for name, v := range increases() {
		if v != 0 {
			t.Errorf("increase of %s across the join = %v, want 0 (nothing was appended)", name, v)
		}
	}
	for _, name := range families {
		if v := value(`sum(resets(` + name + sel + `[` + wide() + `]))`); v != 0 {
			t.Errorf("resets of %s across the join = %v, want 0", name, v)
		}
	}
	if n := value(`count(count_over_time(claude_transcript_tokens_total` + sel + `[` + wide() + `]) > 2)`); n == 0 {
		t.Errorf("no token series has both history and live samples")
	}

	// Append a request after the join.
	now := time.Now().UTC()
	line := fmt.Sprintf(`{"type":"assistant","uuid":"9d1c6a2e-0000-4000-8000-000000000001","sessionId":%q,"cwd":%q,"timestamp":%q,"message":{"id":"msg_after_the_join","model":%q,"role":"assistant","stop_reason":"end_turn","content":[{"type":"text","text":"x"}],"usage":{"input_tokens":10,"output_tokens":1234,"cache_read_input_tokens":500,"cache_creation_input_tokens":0}}}`+"\n", sessionID, cwd, now.Format(time.RFC3339Nano), model)
	appendLines(line)
	price, _ := metrics.DefaultPrices().RequestCost(model, now,
		session.Tokens{Input: 10, Output: 1234, CacheRead: 500}, metrics.Modifiers{})
	want := map[string]float64{
		"tokens:output":                               1234,
		"tokens:input":                                10,
		"tokens:cache_read":                           500,
		"claude_transcript_tokens_total":              1744,
		"claude_transcript_requests_total":            1,
		"claude_transcript_cost_usd_total":            price,
		"claude_transcript_attributed_tokens_total":   1744,
		"claude_transcript_attributed_cost_usd_total": price,
	}
	matches := func(got map[string]float64) bool {
		for k, v := range got {
			if math.Abs(v-want[k]) > 1e-9 {
				return false
			}
		}
		return len(got) > 0
	}
	var got map[string]float64
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		// Families are queried one by one and a scrape may land in
		// between: wait until one round sees the append everywhere.
		if got = increases(); matches(got) {
			break
		}
		if time.Now().After(deadline) {
			live := sumBy(parseExposition(t, scrape(t, addr)), "claude_transcript_tokens_total", "type")
			t.Fatalf("the append never showed across the join: %v; the exporter serves %v", got, live)
		}
	}
	for k, v := range got {
		if w := want[k]; math.Abs(v-w) > 1e-9 {
			t.Errorf("increase of %s across the join = %v, want %v (only what was appended)", k, v, w)
		}
	}
	t.Logf("across the join after the append: %v", got)
	if t.Failed() {
		live := parseExposition(t, scrape(t, addr))
		t.Logf("live requests %v cost %v", sumBy(live, "claude_transcript_requests_total", "model", "stop_reason", "project"), sumBy(live, "claude_transcript_cost_usd_total", "model", "project", "spender"))
		for _, q := range []string{`claude_transcript_requests_total` + sel, `claude_transcript_cost_usd_total` + sel} {
			res, _ := prom.Query(ctx, q)
			t.Logf("%s now: %v", q, res.Samples)
			res, _ = prom.QueryAt(ctx, q, histEnd.Add(-time.Second))
			t.Logf("%s at the history's end: %v", q, res.Samples)
		}
	}
}
