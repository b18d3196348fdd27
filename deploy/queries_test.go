package deploy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/testonly/testbackend"
)

// absRuleFiles returns the absolute paths of the rule files.
func absRuleFiles(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, f := range globRepo(t, ruleFilesGlob) {
		out = append(out, repoPath(t, f))
	}
	return out
}

// checkRulesHealthy fails the test unless Prometheus loaded every rule
// group of the rule files and every rule evaluated without error.
func checkRulesHealthy(ctx context.Context, t *testing.T, prom *testbackend.Prometheus) {
	t.Helper()
	body, err := prom.API(ctx, "/api/v1/rules", nil)
	if err != nil {
		t.Fatalf("rules: %v", err)
	}
	var resp struct {
		Data struct {
			Groups []struct {
				Name  string `json:"name"`
				Rules []struct {
					Name      string `json:"name"`
					Health    string `json:"health"`
					LastError string `json:"lastError"`
				} `json:"rules"`
			} `json:"groups"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &resp); err != nil {
		t.Fatalf("rules: %v", err)
	}
	n := 0
	for _, g := range resp.Data.Groups {
		for _, r := range g.Rules {
			n++
			if r.Health != "ok" {
				t.Errorf("rule %s/%s: health %q: %s", g.Name, r.Name, r.Health, r.LastError)
			}
		}
	}
	want := 0
	for _, rules := range loadRules(t) {
		want += len(rules)
	}
	if n != want {
		t.Errorf("Prometheus loaded %d rules, the rule files hold %d", n, want)
	}
}

// waitRulesEvaluated waits until every rule has been evaluated once.
func waitRulesEvaluated(ctx context.Context, t *testing.T, prom *testbackend.Prometheus) {
	t.Helper()
	for {
		body, err := prom.API(ctx, "/api/v1/rules", nil)
		if err == nil && !bytes.Contains(body, []byte(`"health":"unknown"`)) {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("rules not evaluated: %v", ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// TestQueriesParse evaluates every PromQL expression of the dashboards and
// rules on a real Prometheus with the rules loaded and no data: each must be
// accepted by the query API (a parse error is HTTP 400). It needs no
// exporter; TestQueriesOnRealCorpus adds the data.
func TestQueriesParse(t *testing.T) {
	prom := testbackend.StartPrometheus(t, testbackend.PromOptions{RuleFiles: absRuleFiles(t)})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	waitRulesEvaluated(ctx, t, prom)
	checkRulesHealthy(ctx, t, prom)
	queries := append(resolvedDashboardQueries(t), ruleExprs(t)...)
	for _, q := range queries {
		if _, err := prom.Query(ctx, q.Expr); err != nil {
			t.Errorf("%s does not parse: %v", q, err)
		}
	}
	t.Logf("%d expressions parsed", len(queries))
}

// corpusSplit is the real corpus copied into a scratch Claude dir per tree,
// with every transcript cut in two: the first half of its lines is written
// before the exporter starts, the rest is appended while it runs, the way
// live sessions grow. Counters therefore move while Prometheus scrapes, so
// rate(), increase() and histogram quantiles see real changes, and the
// appended lines go through the tailer (tail lag).
type corpusSplit struct {
	Dirs  []string          // one Claude dir per corpus tree
	tails map[string][]byte // path -> bytes to append
}

func splitCorpus(t *testing.T) *corpusSplit {
	t.Helper()
	dst := t.TempDir()
	cs := &corpusSplit{tails: map[string][]byte{}}
	// The synthetic trees hold what no real one does (fast mode, advisor
	// calls, web searches): panels of those show data from them.
	for _, tree := range append(testbackend.CorpusTrees(t), testbackend.SyntheticTrees(t)...) {
		out := filepath.Join(dst, filepath.Base(tree))
		cs.Dirs = append(cs.Dirs, out)
		err := filepath.WalkDir(tree, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(tree, path)
			target := filepath.Join(out, rel)
			if d.IsDir() {
				return os.MkdirAll(target, 0o755)
			}
			if !d.Type().IsRegular() {
				return nil
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			head := data
			if strings.HasSuffix(path, ".jsonl") && strings.HasPrefix(filepath.ToSlash(rel), "projects/") {
				lines := bytes.SplitAfter(data, []byte("\n"))
				cut := 0
				for _, l := range lines[:(len(lines)+1)/2] {
					cut += len(l)
				}
				head = data[:cut]
				if cut < len(data) {
					cs.tails[target] = data[cut:]
				}
			}
			return os.WriteFile(target, head, 0o644)
		})
		if err != nil {
			t.Fatalf("copy corpus %s: %v", tree, err)
		}
	}
	return cs
}

// appendRest appends the second halves.
func (cs *corpusSplit) appendRest(t *testing.T) {
	t.Helper()
	for path, tail := range cs.tails {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(tail); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// startExporter builds ./cmd/claude-transcript-exporter and runs it over
// dirs with traces off, on a free loopback port, until the test ends. It
// returns host:port once /-/ready answers 200 (backfill done).
func startExporter(t *testing.T, dirs []string) string {
	t.Helper()
	bin := buildExporter(t)
	addr := fmt.Sprintf("127.0.0.1:%d", testbackend.FreePort(t))
	scratch := t.TempDir()
	args := []string{
		"--web.listen-address=" + addr,
		"--traces.exporter=none",
		"--state.file=" + filepath.Join(scratch, "state"),
	}
	for _, d := range dirs {
		args = append(args, "--claude.dir="+d)
	}
	logPath := filepath.Join(scratch, "exporter.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	// Nothing of the caller's home: no default state file, no ~/.claude.
	cmd.Env = append(os.Environ(), "HOME="+scratch, "XDG_STATE_HOME="+scratch,
		"XDG_CONFIG_HOME="+scratch, "CLAUDE_CONFIG_DIR=", "OTEL_EXPORTER_OTLP_ENDPOINT=",
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatalf("start exporter: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait(); logFile.Close() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			data, _ := os.ReadFile(logPath)
			t.Logf("exporter log:\n%s", tail(string(data), 40))
		}
	})

	deadline := time.Now().Add(3 * time.Minute)
	for {
		select {
		case err := <-done:
			data, _ := os.ReadFile(logPath)
			t.Fatalf("exporter exited before ready: %v\n%s", err, tail(string(data), 40))
		default:
		}
		resp, err := http.Get("http://" + addr + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return addr
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("exporter not ready at %s after 3m (last: %v)", addr, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// buildExporter builds ./cmd/claude-transcript-exporter into a scratch dir.
func buildExporter(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "claude-transcript-exporter")
	build := exec.Command("go", "build", "-o", bin, "./cmd/claude-transcript-exporter")
	build.Dir = testbackend.RepoRoot(t)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/claude-transcript-exporter: %v\n%s", err, out)
	}
	return bin
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// waitSettled waits until expr (a single-sample query) is above floor and
// has kept the same value for `stable` consecutive polls one second apart,
// and returns that value.
func waitSettled(ctx context.Context, t *testing.T, prom *testbackend.Prometheus, expr string, floor float64, stable int) float64 {
	t.Helper()
	last, same := math.NaN(), 0
	for {
		v, err := prom.QueryValue(ctx, expr)
		if err == nil && v > floor {
			if v == last {
				same++
			} else {
				last, same = v, 0
			}
			if same >= stable {
				return v
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s did not settle above %v: last %v, err %v", expr, floor, last, err)
		case <-time.After(time.Second):
		}
	}
}

// scrapesSoFar returns the smallest number of scrapes of any job.
func scrapesSoFar(ctx context.Context, t *testing.T, prom *testbackend.Prometheus) int {
	t.Helper()
	v, err := prom.QueryValue(ctx, "min(count_over_time(up[1h]))")
	if err != nil {
		t.Fatal(err)
	}
	return int(v)
}

// TestQueriesOnRealCorpus runs the exporter over the real corpus (half of
// every transcript at start, the rest appended while it runs), lets a real
// Prometheus with the rules loaded scrape it, and evaluates every dashboard
// and rule expression through the HTTP API: every expression must parse,
// every dashboard query must return at least one sample that is a number
// (not NaN: a panel showing nothing fails), and every recording rule must
// produce a series.
func TestQueriesOnRealCorpus(t *testing.T) {
	if testing.Short() {
		t.Log("-short: still running; this test is the proof that the dashboards show data")
	}
	corpus := splitCorpus(t)
	addr := startExporter(t, corpus.Dirs)
	prom := testbackend.StartPrometheus(t, testbackend.PromOptions{
		Targets:            []string{addr},
		RuleFiles:          absRuleFiles(t),
		ScrapeInterval:     time.Second,
		EvaluationInterval: time.Second,
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := prom.WaitForTargetsUp(ctx); err != nil {
		t.Fatal(err)
	}
	// Phase 1: the first halves, read by backfill.
	lines1 := waitSettled(ctx, t, prom, "sum(claude_transcript_exporter_lines_read_total)", 0, 3)
	tokens1 := waitSettled(ctx, t, prom, "sum(claude_transcript_tokens_total)", 0, 3)
	// Phase 2: the sessions go on.
	corpus.appendRest(t)
	lines2 := waitSettled(ctx, t, prom, "sum(claude_transcript_exporter_lines_read_total)", lines1, 3)
	tokens2 := waitSettled(ctx, t, prom, "sum(claude_transcript_tokens_total)", tokens1, 3)
	if err := prom.WaitForScrapes(ctx, scrapesSoFar(ctx, t, prom)+3); err != nil {
		t.Fatal(err)
	}
	t.Logf("lines read %v -> %v, tokens %v -> %v", lines1, lines2, tokens1, tokens2)
	checkRulesHealthy(ctx, t, prom)

	for _, q := range resolvedDashboardQueries(t) {
		res, err := prom.Query(ctx, q.Expr)
		if err != nil {
			t.Errorf("%s: %v", q, err)
			continue
		}
		numbers := 0
		for _, s := range res.Samples {
			if !math.IsNaN(s.Value) {
				numbers++
			}
		}
		if numbers == 0 {
			t.Errorf("%s shows no data on the real corpus: %s returned %d samples %v", q, q.Expr, len(res.Samples), res.Samples)
		}
	}
	for _, q := range ruleExprs(t) {
		res, err := prom.Query(ctx, q.Expr)
		if err != nil {
			t.Errorf("%s: %v", q, err)
			continue
		}
		if strings.HasPrefix(q.Panel, "claude_transcript_threshold:") && len(res.Samples) != 1 {
			t.Errorf("threshold %s = %v, want one sample", q.Panel, res.Samples)
		}
	}
	// What the alerts make of a replay of real sessions (informational: the
	// timestamps are months old, so usage alerts see the append as a burst).
	body, err := prom.API(ctx, "/api/v1/alerts", nil)
	if err == nil {
		var alerts struct {
			Data struct {
				Alerts []struct {
					Labels map[string]string `json:"labels"`
					State  string            `json:"state"`
				} `json:"alerts"`
			} `json:"data"`
		}
		if json.Unmarshal(body, &alerts) == nil {
			var sb strings.Builder
			for _, a := range alerts.Data.Alerts {
				fmt.Fprintf(&sb, "\n  %s %s %v", a.State, a.Labels["alertname"], a.Labels)
			}
			t.Logf("alerts after the replay: %d%s", len(alerts.Data.Alerts), sb.String())
		}
	}
}
