package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/testonly/testbackend"
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
// a real Prometheus scraping the exporter over a corpus tree moved in time
// so that its last record is less than an hour old (whole hours, so the
// 5-hour blocks keep their edges): as for a user working now, every query
// must return series.
func TestReadmeQueriesAnswer(t *testing.T) {
	queries := readmeQueries(t)
	tree := filepath.Join(testbackend.CorpusDir(t), "eduardodmb")
	shift := time.Since(testbackend.LastTimestamp(t, tree)).Truncate(time.Hour)
	addr, _ := startServe(t, "--claude.dir="+testbackend.ShiftTree(t, tree, shift))
	prom, ctx := promAfterBackfill(t, addr)
	if err := prom.WaitForScrapes(ctx, 3); err != nil {
		t.Fatal(err)
	}
	for _, q := range queries {
		res, err := prom.Query(ctx, q)
		if err != nil {
			t.Errorf("%s: %v", q, err)
			continue
		}
		if len(res.Samples) == 0 {
			t.Errorf("%s: no series", q)
		}
	}
}
