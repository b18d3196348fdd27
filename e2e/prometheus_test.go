package e2e

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/testonly/indepcount"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/testonly/testbackend"
)

// TestPrometheusScrapesTokenSum starts the daemon on real trees, has a real
// Prometheus (Debian package) scrape it, and checks through PromQL that
// the token sums equal the independent count.
func TestPrometheusScrapesTokenSum(t *testing.T) {
	var trees []string
	var wantTotal, wantOutput float64
	for _, tree := range testbackend.CorpusTrees(t) {
		name := filepath.Base(tree)
		if name != "spotter" && name != "eduardodmb" && name != "swordintel" {
			continue
		}
		trees = append(trees, tree)
		want, err := indepcount.Count(tree)
		if err != nil {
			t.Fatal(err)
		}
		for _, types := range want.Tokens {
			for typ, n := range types {
				wantTotal += float64(n)
				if typ == "output" {
					wantOutput += float64(n)
				}
			}
		}
	}
	if len(trees) != 3 {
		t.Fatalf("corpus trees missing: %v", trees)
	}
	var args []string
	for _, tr := range trees {
		args = append(args, "--claude.dir="+tr)
	}
	addr, _ := startServe(t, args...)
	prom, ctx := promAfterBackfill(t, addr)
	for _, q := range []struct {
		expr string
		want float64
	}{
		{`sum(claude_transcript_tokens_total)`, wantTotal},
		{`sum(claude_transcript_tokens_total{type="output"})`, wantOutput},
		{`max(claude_transcript_exporter_backfill_done)`, 1},
	} {
		res, err := prom.Query(ctx, q.expr)
		if err != nil {
			t.Fatalf("%s: %v", q.expr, err)
		}
		if len(res.Samples) != 1 {
			t.Fatalf("%s: %d samples", q.expr, len(res.Samples))
		}
		if got := res.Samples[0].Value; got != q.want {
			t.Errorf("%s = %v, want %v", q.expr, got, q.want)
		}
	}
}

// TestBadFlagsFailAtStartNamingTheFlag checks that invalid flags and
// config stop the binary at start with a message naming the flag.
func TestBadFlagsFailAtStartNamingTheFlag(t *testing.T) {
	tree := filepath.Join(testbackend.CorpusDir(t), "spotter")
	notClaude := t.TempDir()
	missing := filepath.Join(t.TempDir(), "missing")
	cases := []struct {
		name string
		args []string
		flag string
		env  []string // beside the test's environment
	}{
		{"claude dir without projects/", []string{"--claude.dir=" + notClaude}, "no projects/", nil},
		{"missing CLAUDE_CONFIG_DIR in one-shot", nil, "CLAUDE_CONFIG_DIR", []string{"CLAUDE_CONFIG_DIR=" + missing}},
		{"bad log level", []string{"--claude.dir=" + tree, "--log.level=verbose"}, "--log.level: \"verbose\" is not one of debug, info, warn, error", nil},
		{"otlp without endpoint", []string{"--claude.dir=" + tree, "--traces.exporter=otlp"}, "--otlp.insecure", []string{"OTEL_EXPORTER_OTLP_ENDPOINT=", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT="}},
		{"missing claude dir", []string{"--claude.dir=/nonexistent/claude"}, "--claude.dir", nil},
		{"claude dir is a file", []string{"--claude.dir=" + filepath.Join(testbackend.RepoRoot(t), "go.mod")}, "--claude.dir", nil},
		{"bad duration", []string{"--claude.dir=" + tree, "--tail.rescan-interval=soon"}, "tail.rescan-interval", nil},
		{"rescan too short", []string{"--claude.dir=" + tree, "--tail.rescan-interval=1ms"}, "--tail.rescan-interval", nil},
		{"bad project label", []string{"--claude.dir=" + tree, "--metrics.project-label=hash"}, "metrics.project-label", nil},
		{"bad exporter", []string{"--claude.dir=" + tree, "--traces.exporter=zipkin"}, "traces.exporter", nil},
		{"bad trace window", []string{"--claude.dir=" + tree, "--traces.since=lately"}, "traces.since", nil},
		{"negative trace window", []string{"--claude.dir=" + tree, "--traces.since=-1h"}, "--traces.since", nil},
		{"bad capture kind", []string{"--claude.dir=" + tree, "--traces.capture=prompts,secrets"}, "--traces.capture", nil},
		{"bad headers", []string{"--claude.dir=" + tree, "--otlp.headers=novalue"}, "--otlp.headers", nil},
		{"missing pricing file", []string{"--claude.dir=" + tree, "--pricing.file=/nonexistent.json"}, "--pricing.file", nil},
		{"line cap too small", []string{"--claude.dir=" + tree, "--tail.max-line-bytes=10"}, "--tail.max-line-bytes", nil},
		{"unknown flag", []string{"--claude.dir=" + tree, "--no.such.flag"}, "no.such.flag", nil},
		{"files interval too short", []string{"--claude.dir=" + tree, "--claude.files-interval=1ms"}, "--claude.files-interval", nil},
		{"history step that splits no day", []string{"--claude.dir=" + tree, "--oneshot.history-file=/tmp/x.om", "--oneshot.history-step=7m"}, "--oneshot.history-step", nil},
		{"history step too short", []string{"--claude.dir=" + tree, "--oneshot.history-file=/tmp/x.om", "--oneshot.history-step=30s"}, "--oneshot.history-step", nil},
		{"history recent window below zero", []string{"--claude.dir=" + tree, "--oneshot.history-file=/tmp/x.om", "--oneshot.history-recent=-1h"}, "--oneshot.history-recent", nil},
		{"history end not a time", []string{"--claude.dir=" + tree, "--oneshot.history-end=yesterday"}, "--oneshot.history-end", nil},
		{"history end between steps", []string{"--claude.dir=" + tree, "--oneshot.history-end=2026-11-01T10:30:00Z"}, "--oneshot.history-end", nil},
		{"history into a directory", []string{"--claude.dir=" + tree, "--oneshot.history-file=" + t.TempDir()}, "--oneshot.history-file", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command(binary(t), append([]string{"--oneshot"}, c.args...)...)
			cmd.Env = append(os.Environ(), c.env...)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("exit 0, want failure; output:\n%s", out)
			}
			if code := cmd.ProcessState.ExitCode(); code != 2 {
				t.Errorf("exit %d, want 2 (a mistake at start); output:\n%s", code, out)
			}
			if strings.Contains(string(out), "panic") || strings.Contains(string(out), "goroutine ") {
				t.Fatalf("panicked:\n%s", out)
			}
			if !strings.Contains(string(out), c.flag) {
				t.Errorf("message does not name %s:\n%s", c.flag, out)
			}
		})
	}
}

// TestEndpointsServeHealthReadinessAndLandingPage checks the HTTP surface.
func TestEndpointsServeHealthReadinessAndLandingPage(t *testing.T) {
	addr, _ := startServe(t, "--claude.dir="+filepath.Join(testbackend.CorpusDir(t), "danielhward"))
	for path, want := range map[string]string{
		"/-/healthy": "Healthy",
		"/-/ready":   "Ready",
		"/":          "/metrics",
		"/metrics":   "claude_transcript_exporter_build_info",
	} {
		body := get(t, "http://"+addr+path)
		if !strings.Contains(body, want) {
			t.Errorf("GET %s: %q not in body", path, want)
		}
	}
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return fmt.Sprintf("error: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Sprintf("status %d: %s", resp.StatusCode, b)
	}
	return string(b)
}
