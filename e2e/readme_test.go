package e2e

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/testbackend"
)

// readmeQueries returns the PromQL queries of the README's ```promql
// blocks, one a line (# lines are comments).
func readmeQueries(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testbackend.RepoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range regexp.MustCompile("(?s)```promql\n(.*?)```").FindAllStringSubmatch(string(b), -1) {
		for _, line := range strings.Split(m[1], "\n") {
			if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
				out = append(out, line)
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("README.md has no ```promql block")
	}
	return out
}

// TestReadmeQueriesAnswer runs every PromQL query of the README against
// a real Prometheus scraping the exporter over a corpus tree: each must
// evaluate, and each whose metric families the exporter serves for that
// tree must return series.
func TestReadmeQueriesAnswer(t *testing.T) {
	queries := readmeQueries(t)
	addr, _ := startServe(t, "--claude.dir="+filepath.Join(testbackend.CorpusDir(t), "eduardodmb"))
	prom := testbackend.StartPrometheus(t, testbackend.PromOptions{Targets: []string{addr}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := prom.WaitForTargetsUp(ctx); err != nil {
		t.Fatal(err)
	}
	for {
		if v, err := prom.QueryValue(ctx, `max(claude_transcript_exporter_backfill_done)`); err == nil && v == 1 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("no scrape showed the backfill done")
		case <-time.After(200 * time.Millisecond):
		}
	}
	if err := prom.WaitForScrapes(ctx, 3); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	exposition, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	family := regexp.MustCompile(`claude_transcript_[a-z0-9_]+`)
	for _, q := range queries {
		res, err := prom.Query(ctx, q)
		if err != nil {
			t.Errorf("%s: %v", q, err)
			continue
		}
		served := true
		for _, f := range family.FindAllString(q, -1) {
			if !strings.Contains(string(exposition), "\n"+f) {
				served = false
				t.Logf("%s: %s has no sample in this tree's exposition; the query evaluates, with %d series", q, f, len(res.Samples))
			}
		}
		if served && len(res.Samples) == 0 {
			t.Errorf("%s: no series", q)
		}
	}
}
