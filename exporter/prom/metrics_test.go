package prom

import (
	"bytes"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/testonly/testbackend"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/blocks"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/metrics"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/planusage"
)

// feedEveryKind makes a series of every usage family and of the
// exporter's own kinds (counter, histogram) the tests read.
func feedEveryKind(m *Metrics, self *Self, now time.Time) {
	m.AddTokens("claude-opus-4-6", "output", "repo", "main", 12)
	m.AddTokens("claude-opus-4-6", "cache_write_1h", "repo", "subagent:Explore", 3)
	m.AddRequest("claude-opus-4-6", "end_turn", "repo")
	m.AddCost("claude-opus-4-6", "repo", "main", 0.25)
	m.AddAttributedTokens(metrics.Attributes{Skill: "deep-research", Plugin: "none", MCPServer: "none", Effort: "high", Speed: "standard"}, "output", "repo", 12)
	m.AddAttributedCost(metrics.Attributes{Skill: "deep-research", Plugin: "none", MCPServer: "none", Effort: "high", Speed: "standard"}, "repo", 0.25)
	m.AddCacheMiss("messages_changed", "claude-opus-4-6", "repo", 74704)
	m.AddUnpricedTokens("glm-4.7", 9)
	m.AddToolCall("Bash", "error", "repo")
	m.ObserveToolDuration("Bash", 1.5)
	m.AddCompaction("auto", "repo")
	m.ObserveCompactionPreTokens("auto", 170000)
	m.AddSubagent("Explore", "repo")
	m.AddWarmupAgent("repo")
	m.AddSession("repo")
	m.AddTurn("repo")
	m.AddAPIError("rate_limit", "repo")
	m.AddBlockUsage(now.Add(-2*time.Hour), true, blocks.Tokens{Input: 5, Output: 7, CacheRead: 100}, 0.1)
	m.AddBlockUsage(now.Add(-time.Hour), true, blocks.Tokens{Output: 3}, 0.05)
	m.AddLimitHit("session", now.Add(-time.Hour), now.Add(time.Hour))
	m.Activity("s1", "repo", now.Add(-30*time.Second))
	m.Activity("s2", "repo", now.Add(-time.Hour))
	self.LinesRead.Add(10)
	self.TailLag.Observe(0.01)
}

func populated(t *testing.T, now time.Time) *prometheus.Registry {
	t.Helper()
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg, time.Minute, func() time.Time { return now })
	self := NewSelf(reg)
	feedEveryKind(m, self, now)
	plan := NewPlanUsage(reg, func() time.Time { return now }, planusage.MaxAge(time.Minute))
	used, limit := 500.0, 10000.0
	plan.Set(planusage.Snapshot{At: now, Estimate: 3e7, HasEstimate: true, Plan: planusage.Plan{SubscriptionType: "max", RateLimitTier: "default_claude_max_20x"},
		Usage: planusage.Usage{Windows: []planusage.Window{{Name: "five_hour", Utilization: 40, HasUtilization: true, ResetsAt: now.Add(time.Hour)}},
			Extra: planusage.ExtraUsage{Present: true, Enabled: true, UsedCredits: &used, MonthlyLimit: &limit}}})
	plan.Errors.WithLabelValues("rate_limited").Inc()
	plan.LastSuccess.Set(float64(now.Unix()))
	return reg
}

func TestMetricsPassCollectAndLint(t *testing.T) {
	reg := populated(t, time.Unix(1_800_000_000, 0))
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

func TestExpositionPassesPromtoolCheckMetrics(t *testing.T) {
	promtool := testbackend.PromtoolBinary(t)
	reg := populated(t, time.Unix(1_800_000_000, 0))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = &buf
	out, err := cmd.CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Fatalf("promtool check metrics: %v\n%s", err, out)
	}
}

func TestActiveSessionsCountsOnlyTheWindowAndForgetsOld(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	reg := populated(t, now)
	want := `
# HELP claude_transcript_sessions_active Sessions with a record within the active window (--sessions.active-window).
# TYPE claude_transcript_sessions_active gauge
claude_transcript_sessions_active{project="repo"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "claude_transcript_sessions_active"); err != nil {
		t.Fatal(err)
	}
}

// TestActivityOutsideTheWindowIsNotKept: a backfill reports every session
// of the history; those whose last record is already out of the window
// are not held until the next collection (only their project, for the
// one 0 it reports), and the gauge still counts the ones in it, also
// when a session's older record comes after its newer.
func TestActivityOutsideTheWindowIsNotKept(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg, 5*time.Minute, func() time.Time { return now })
	for i := range 1000 {
		m.Activity(fmt.Sprint("old", i), "history", now.Add(-time.Duration(i+66)*time.Minute))
	}
	m.Activity("s1", "repo", now.Add(-time.Minute))
	m.Activity("s1", "repo", now.Add(-time.Hour))
	m.Activity("s2", "repo", now.Add(-5*time.Minute))
	m.Activity("s2", "elsewhere", now.Add(-2*time.Hour)) // older: no 0 for its project
	if len(m.activity) != 2 {
		t.Errorf("%d sessions held, want the 2 in the window", len(m.activity))
	}
	want := `
# HELP claude_transcript_sessions_active Sessions with a record within the active window (--sessions.active-window).
# TYPE claude_transcript_sessions_active gauge
claude_transcript_sessions_active{project="history"} 0
claude_transcript_sessions_active{project="repo"} 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "claude_transcript_sessions_active"); err != nil {
		t.Fatal(err)
	}
	// As for sessions that left the window, their project is reported at
	// 0 once, not again.
	want = strings.ReplaceAll(want, "claude_transcript_sessions_active{project=\"history\"} 0\n", "")
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "claude_transcript_sessions_active"); err != nil {
		t.Fatal(err)
	}
}

func TestDecodeErrorReasonsArePreRegistered(t *testing.T) {
	reg := prometheus.NewRegistry()
	NewSelf(reg)
	n, err := testutil.GatherAndCount(reg, "claude_transcript_exporter_decode_errors_total")
	if err != nil {
		t.Fatal(err)
	}
	if n != 5 {
		t.Fatalf("decode error series = %d, want 5 (one per reason, at zero)", n)
	}
}

// TestStateSavedBeforeSpenderRestoresAsUnknown: a state file written
// before tokens_total and cost_usd_total had a spender label restores
// those counts under spender="unknown", neither failing nor lowering them;
// a family saved with a wrong label count still fails.
func TestStateSavedBeforeSpenderRestoresAsUnknown(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg, time.Minute, time.Now)
	old := State{
		name("tokens_total"):   {{Labels: []string{"claude-opus-4-6", "output", "repo"}, Value: 40}},
		name("cost_usd_total"): {{Labels: []string{"claude-opus-4-6", "repo"}, Value: 1.5}},
	}
	if err := m.Restore(old); err != nil {
		t.Fatal(err)
	}
	m.AddTokens("claude-opus-4-6", "output", "repo", "main", 2)
	want := `
# HELP claude_transcript_cost_usd_total Estimated cost in USD at list prices (embedded dated price table or --pricing.file), by model and spender (as tokens_total).
# TYPE claude_transcript_cost_usd_total counter
claude_transcript_cost_usd_total{model="claude-opus-4-6",project="repo",spender="unknown"} 1.5
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), name("cost_usd_total")); err != nil {
		t.Error(err)
	}
	got := map[string]float64{}
	for _, s := range m.State()[name("tokens_total")] {
		got[strings.Join(s.Labels, "|")] = s.Value
	}
	if got["claude-opus-4-6|output|repo|unknown"] != 40 || got["claude-opus-4-6|output|repo|main"] != 2 || len(got) != 2 {
		t.Errorf("tokens after restore = %v", got)
	}
	bad := State{name("requests_total"): {{Labels: []string{"claude-opus-4-6", "repo"}, Value: 1}}}
	if err := NewMetrics(prometheus.NewRegistry(), time.Minute, time.Now).Restore(bad); err == nil {
		t.Error("a family without an added label restored with a missing label value")
	}
}
