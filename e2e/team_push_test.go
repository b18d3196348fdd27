package e2e

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"testing"
	"time"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/testonly/testbackend"
)

// TestThreeMachinesPushToOneCollector is a team: three exporters, each
// over another corpus tree (another laptop), push OTLP metrics to one
// real OpenTelemetry Collector, which forwards them to a real Prometheus 3
// through its OTLP receiver; nothing scrapes a laptop. PromQL on that
// Prometheus gives, per instance, exactly each tree's independent count,
// and their sum. Then one exporter restarts on its state file: its series
// neither reset nor double.
func TestThreeMachinesPushToOneCollector(t *testing.T) {
	prom := testbackend.StartPrometheus(t, testbackend.PromOptions{OTLP: true})
	col := testbackend.StartMetricsCollector(t, prom.URL()+"/api/v1/otlp/v1/metrics")
	trees := map[string]string{"laptop-a": "spotter", "laptop-b": "eduardodmb", "laptop-c": "swordintel"}
	team := countTeam(t, trees)
	want, wantPrompts, wantTodos, wantSum := team.tokens, team.prompts, team.todos, team.tokenSum
	type machine struct {
		addr, state string
		args        []string
		proc        *daemonProc
	}
	machines := map[string]*machine{}
	for inst, tree := range trees {
		m := &machine{addr: fmt.Sprintf("127.0.0.1:%d", testbackend.FreePort(t)), state: filepath.Join(t.TempDir(), "state")}
		m.args = pushArgs(filepath.Join(testbackend.CorpusDir(t), tree), m.state, col.Endpoint(), inst)
		m.proc = startDaemon(t, m.addr, m.args...)
		t.Cleanup(func() { m.proc.stop(t) })
		waitReady(t, m.addr, m.proc)
		machines[inst] = m
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	byInstance := func(metric string) map[string]float64 {
		return sumByInstance(ctx, t, &prom.QueryAPI, metric+`{job="claude-transcript-exporter"}`)
	}
	perInstance := func() map[string]float64 { return byInstance("claude_transcript_tokens_total") }
	same := maps.Equal[map[string]float64, map[string]float64]
	equal := func(got map[string]float64) bool { return same(got, want) }
	var got map[string]float64
	for {
		got = perInstance()
		if equal(got) {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("tokens per instance = %v, independent count %v", got, want)
		case <-time.After(500 * time.Millisecond):
		}
	}
	// The Claude dir beside the transcripts is pushed too: prompts from
	// the history, todos of the moment.
	if got := byInstance("claude_transcript_prompts_total"); !same(got, wantPrompts) || len(wantPrompts) == 0 {
		t.Errorf("prompts per instance = %v, independent count %v", got, wantPrompts)
	}
	if got := byInstance("claude_transcript_todos"); !same(got, wantTodos) || len(wantTodos) == 0 {
		t.Errorf("todos per instance = %v, independent count %v", got, wantTodos)
	}
	sum, err := prom.QueryValue(ctx, `sum(claude_transcript_tokens_total)`)
	if err != nil || sum != wantSum {
		t.Errorf("sum over the team = %v (%v), want %v", sum, err, wantSum)
	}
	// Identity went on the resource, not on the series: target_info
	// carries the team; the token series have no team label.
	if v, err := prom.QueryValue(ctx, `count(target_info{job="claude-transcript-exporter",team="core"})`); err != nil || v != 3 {
		t.Errorf("target_info with team=core: %v (%v), want 3", v, err)
	}
	if v, err := prom.QueryValue(ctx, `count(claude_transcript_tokens_total{team!=""}) or vector(0)`); err != nil || v != 0 {
		t.Errorf("series with a team label: %v (%v), want 0", v, err)
	}

	// Restart laptop-b on its state file: nothing is appended, so its
	// total stays, and no push in between or after shows a reset.
	b := machines["laptop-b"]
	b.proc.stop(t)
	b.proc = startDaemon(t, b.addr, b.args...)
	waitReady(t, b.addr, b.proc)
	time.Sleep(3 * time.Second) // three pushes of the restarted exporter
	if got := perInstance(); !equal(got) {
		t.Errorf("after a restart: tokens per instance = %v, want %v", got, want)
	}
	if v, err := prom.QueryValue(ctx, `sum(resets(claude_transcript_tokens_total{instance="laptop-b"}[5m]))`); err != nil || v != 0 {
		t.Errorf("resets of laptop-b's counters over the restart: %v (%v), want 0", v, err)
	}
	if v, err := prom.QueryValue(ctx, `sum(resets(claude_transcript_prompts_total{instance="laptop-b"}[5m]))`); err != nil || v != 0 {
		t.Errorf("resets of laptop-b's prompt counters over the restart: %v (%v), want 0", v, err)
	}
	if got := byInstance("claude_transcript_prompts_total"); !same(got, wantPrompts) {
		t.Errorf("after a restart: prompts per instance = %v, want %v", got, wantPrompts)
	}
	if v, err := prom.QueryValue(ctx, `sum(increase(claude_transcript_tokens_total{instance="laptop-b"}[5m]))`); err != nil || v != 0 {
		t.Errorf("increase of laptop-b's tokens over the restart: %v (%v), want 0 (nothing was appended)", v, err)
	}
}
