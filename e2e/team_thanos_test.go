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

// TestThreeMachinesPushToThanosHashring is the team of
// TestThreeMachinesPushToOneCollector on a distributed engine, as
// deploy/team/thanos runs it: three exporters over three corpus trees push
// OTLP to one real collector, which forwards every push both to a real
// Prometheus 3 (the single-server path) and to a hashring of three real
// Thanos receivers (replication factor 2) with thanos query in front. One
// receiver is killed (SIGKILL) while the pushes arrive and comes back on
// its TSDB. Through query, tokens per instance equal the independent
// count, no counter shows a reset, and every answer equals Prometheus'.
func TestThreeMachinesPushToThanosHashring(t *testing.T) {
	prom := testbackend.StartPrometheus(t, testbackend.PromOptions{OTLP: true})
	ring := testbackend.StartThanosHashring(t, testbackend.ThanosOptions{Receivers: 3, ReplicationFactor: 2})
	entry, victim := ring.Receivers()[0], ring.Receivers()[2]
	col := testbackend.StartMetricsCollector(t, prom.URL()+"/api/v1/otlp/v1/metrics", entry.OTLPURL())

	trees := map[string]string{"laptop-a": "spotter", "laptop-b": "eduardodmb", "laptop-c": "swordintel"}
	team := countTeam(t, trees)
	want, wantPrompts, wantSum := team.tokens, team.prompts, team.tokenSum
	for inst, tree := range trees {
		addr := fmt.Sprintf("127.0.0.1:%d", testbackend.FreePort(t))
		p := startDaemon(t, addr, pushArgs(filepath.Join(testbackend.CorpusDir(t), tree),
			filepath.Join(t.TempDir(), "state"), col.Endpoint(), inst)...)
		t.Cleanup(func() { p.stop(t) })
		waitReady(t, addr, p)
	}
	if len(want) == 0 || len(wantPrompts) == 0 {
		t.Fatalf("the trees have no tokens (%v) or prompts (%v): nothing to compare", want, wantPrompts)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	byInstance := func(api *testbackend.QueryAPI, expr string) map[string]float64 {
		return sumByInstance(ctx, t, api, expr)
	}
	same := maps.Equal[map[string]float64, map[string]float64]
	const tokens = `claude_transcript_tokens_total{job="claude-transcript-exporter"}`
	waitTokens := func(stage string) {
		t.Helper()
		for {
			got := byInstance(&ring.QueryAPI, tokens)
			if same(got, want) {
				return
			}
			select {
			case <-ctx.Done():
				t.Fatalf("%s: tokens per instance through thanos query = %v, independent count %v", stage, got, want)
			case <-time.After(500 * time.Millisecond):
			}
		}
	}

	// Mid-way: as soon as the first pushes are in the hashring, one
	// receiver dies; its peers keep taking writes (RF 2: every series
	// has a second copy) and query answers from them.
	for {
		if v, err := ring.QueryValue(ctx, `count(`+tokens+`) or vector(0)`); err == nil && v > 0 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("no token series reached the hashring")
		case <-time.After(200 * time.Millisecond):
		}
	}
	victim.Kill(t)
	time.Sleep(3 * time.Second) // three pushes with a receiver down
	waitTokens("with " + victim.Name() + " killed")
	victim.Restart(t)
	time.Sleep(3 * time.Second) // three pushes after it came back
	waitTokens("after " + victim.Name() + " came back")

	if got := byInstance(&ring.QueryAPI, `claude_transcript_prompts_total`); !same(got, wantPrompts) {
		t.Errorf("prompts per instance through thanos query = %v, independent count %v", got, wantPrompts)
	}
	if v, err := ring.QueryValue(ctx, `sum(`+tokens+`)`); err != nil || v != wantSum {
		t.Errorf("sum over the team through thanos query = %v (%v), want %v", v, err, wantSum)
	}
	for _, m := range []string{"claude_transcript_tokens_total", "claude_transcript_prompts_total"} {
		if v, err := ring.QueryValue(ctx, `sum(resets(`+m+`[10m])) or vector(0)`); err != nil || v != 0 {
			t.Errorf("resets of %s through thanos query over the kill: %v (%v), want 0", m, v, err)
		}
	}
	// The single-Prometheus path got the same pushes: every answer agrees.
	for _, expr := range []string{
		tokens,
		`claude_transcript_prompts_total`,
		`claude_transcript_todos`,
		`resets(claude_transcript_tokens_total[10m])`,
		// Every series but build_info: Thanos receive refuses a series
		// with an empty label value (Prometheus drops such a label), and
		// the test binary, built without version ldflags, says
		// version="" and branch="" there (a `make build` or release
		// binary does not).
		`count by (instance) ({job="claude-transcript-exporter",__name__!="claude_transcript_exporter_build_info"})`,
	} {
		fromRing, fromProm := byInstance(&ring.QueryAPI, expr), byInstance(&prom.QueryAPI, expr)
		if !same(fromRing, fromProm) {
			t.Errorf("sum by (instance) (%s): thanos query %v, prometheus %v", expr, fromRing, fromProm)
		}
	}
	if v, err := ring.QueryValue(ctx, `count(target_info{job="claude-transcript-exporter",team="core"})`); err != nil || v != 3 {
		t.Errorf("target_info with team=core through thanos query: %v (%v), want 3", v, err)
	}
}
