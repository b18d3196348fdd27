package e2e

import (
	"context"
	"maps"
	"path/filepath"
	"testing"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/testonly/indepcount"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/testonly/testbackend"
)

// teamCounts is what the independent count says each machine of a team
// pushes (by service.instance.id; machines with none are left out), and
// the team's token total.
type teamCounts struct {
	tokens, prompts, todos map[string]float64
	tokenSum               float64
}

// countTeam counts each machine's corpus tree (instance → tree name).
func countTeam(t *testing.T, trees map[string]string) teamCounts {
	t.Helper()
	c := teamCounts{tokens: map[string]float64{}, prompts: map[string]float64{}, todos: map[string]float64{}}
	for inst, tree := range trees {
		dir := filepath.Join(testbackend.CorpusDir(t), tree)
		ic, err := indepcount.Count(dir)
		if err != nil {
			t.Fatal(err)
		}
		files, err := indepcount.CountFiles(dir, alive)
		if err != nil {
			t.Fatal(err)
		}
		for _, types := range ic.Tokens {
			for _, n := range types {
				c.tokens[inst] += float64(n)
				c.tokenSum += float64(n)
			}
		}
		for _, n := range files.Prompts {
			c.prompts[inst] += float64(n)
		}
		for _, n := range files.Todos {
			c.todos[inst] += float64(n)
		}
	}
	for _, m := range []map[string]float64{c.tokens, c.prompts, c.todos} {
		maps.DeleteFunc(m, func(_ string, v float64) bool { return v == 0 })
	}
	return c
}

// pushArgs are the flags of a team machine's exporter: its tree, its
// state file, pushing every second to the collector at endpoint as inst.
func pushArgs(dir, state, endpoint, inst string) []string {
	return []string{"--claude.dir=" + dir, "--state.file=" + state, "--traces.exporter=none",
		"--metrics.push=otlp", "--metrics.push.endpoint=" + endpoint, "--metrics.push.insecure",
		"--metrics.push.interval=1s", "--identity.attribute=service.instance.id=" + inst, "--identity.attribute=team=core"}
}

// sumByInstance is the query's non-zero sums by instance.
func sumByInstance(ctx context.Context, t *testing.T, api *testbackend.QueryAPI, expr string) map[string]float64 {
	t.Helper()
	res, err := api.Query(ctx, `sum by (instance) (`+expr+`)`)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, s := range res.Samples {
		if s.Value != 0 {
			got[s.Labels["instance"]] = s.Value
		}
	}
	return got
}
