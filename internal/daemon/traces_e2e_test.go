package daemon_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/testonly/testbackend"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/metrics"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/spans"
)

// tracesBuildBinary builds the real binary into a temp dir.
func tracesBuildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "claude-transcript-exporter")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/claude-transcript-exporter")
	cmd.Dir = testbackend.RepoRoot(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// tracesRunBinary runs the binary with args and an environment free of
// OTEL_* variables, and returns stdout, stderr and the exit code.
func tracesRunBinary(t *testing.T, bin string, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OTEL_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "HOME="+t.TempDir())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("run %s: %v\n%s", bin, err, stderr.String())
	}
	return stdout.String(), stderr.String(), code
}

// TestIdentifyingAttributesToCollector: with --traces.identifying-attributes
// and --metrics.project-label=path the spans that reach a real collector
// carry host.name, the git branch and the full working directory.
func TestIdentifyingAttributesToCollector(t *testing.T) {
	bin := tracesBuildBinary(t)
	c := testbackend.StartCollector(t)
	dir := filepath.Join(testbackend.CorpusDir(t), "mlevison")
	expected, _ := tracesOneshotStdout(t, dir, nil)
	_, stderr, code := tracesRunBinary(t, bin, "--oneshot", "--claude.dir="+dir, "--traces.identifying-attributes",
		"--metrics.project-label=path", "--traces.exporter=otlp", "--traces.since=0", "--otlp.endpoint="+c.Endpoint(), "--otlp.insecure")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got, err := c.WaitForSpans(ctx, len(expected))
	if err != nil {
		t.Fatal(err)
	}
	var branches, paths int
	for _, s := range got {
		if s.Resource["host.name"] == nil {
			t.Fatalf("no host.name with --traces.identifying-attributes: %v", s.Resource)
		}
		if s.Attrs[spans.AttrGitBranch] != nil {
			branches++
		}
		if p, ok := s.Attrs[spans.AttrProject].(string); ok && strings.Contains(p, "/") {
			paths++
		}
	}
	if branches == 0 || paths == 0 {
		t.Errorf("%d spans with a branch, %d with a project path; want some of each", branches, paths)
	}
}

// TestOneshotToCollector runs the real binary with --oneshot against
// every real tree and a real OpenTelemetry Collector, and reads back
// exactly the spans the in-process pipeline builds for the same tree:
// same count, ids, parents, names, kinds and times. It also reports the
// end-to-end rate.
func TestOneshotToCollector(t *testing.T) {
	bin := tracesBuildBinary(t)
	c := testbackend.StartCollector(t)
	var want []string
	var elapsed time.Duration
	for _, dir := range tracesTrees(t) {
		expected, _ := tracesOneshotStdout(t, dir, nil)
		start := time.Now()
		stdout, stderr, code := tracesRunBinary(t, bin, "--oneshot", "--claude.dir="+dir,
			"--traces.exporter=otlp", "--traces.since=0", "--otlp.endpoint="+c.Endpoint(), "--otlp.insecure")
		elapsed += time.Since(start)
		if code != 0 {
			t.Fatalf("%s: exit %d\n%s", dir, code, stderr)
		}
		if !strings.Contains(stdout, fmt.Sprintf("claude_transcript_exporter_spans_exported_total %d", len(expected))) {
			t.Errorf("%s: exposition does not report %d spans exported", dir, len(expected))
		}
		for _, s := range expected {
			want = append(want, tracesSpanLine(s))
		}
		// The binary exited after acknowledgement: the spans are there.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		got, err := c.WaitForSpans(ctx, len(want))
		cancel()
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: collector has %d spans, want exactly %d", dir, len(got), len(want))
		}
	}
	got, err := c.Spans()
	if err != nil {
		t.Fatal(err)
	}
	tracesCheckTree(t, got, false)
	var have []string
	for _, s := range got {
		have = append(have, tracesSpanLine(s))
	}
	if d := tracesDiff(want, have); d != "" {
		t.Errorf("received spans differ from the in-process ones:\n%s", d)
	}
	// Private by default: no host name, no branch, the project as the
	// metrics label (its basename).
	for _, s := range got {
		// openinference.project.name names the tool, never a path (Arize
		// Phoenix files spans under it).
		if s.Resource["service.name"] != "claude-code" || s.Resource["host.name"] != nil || s.Resource["service.version"] == nil ||
			s.Resource[spans.ResourceProjectName] != "claude-code" {
			t.Fatalf("resource %v", s.Resource)
		}
		if s.Attrs[spans.AttrGitBranch] != nil {
			t.Fatalf("%s: branch %v without --traces.identifying-attributes", s.Name, s.Attrs[spans.AttrGitBranch])
		}
		if p, ok := s.Attrs[spans.AttrProject].(string); ok && p != metrics.Basename(p) {
			t.Fatalf("%s: project %q, want its basename", s.Name, p)
		}
	}
	t.Logf("end to end, one run per tree: %d spans from %d trees in %v of one-shot runs (%.0f spans/s, reading and exporting)",
		len(got), len(tracesTrees(t)), elapsed.Round(time.Millisecond), float64(len(got))/elapsed.Seconds())

	// Every tree in one run, to a fresh collector: the end-to-end rate.
	c2 := testbackend.StartCollector(t)
	args := []string{"--oneshot", "--traces.exporter=otlp", "--traces.since=0", "--otlp.endpoint=" + c2.Endpoint(), "--otlp.insecure"}
	for _, dir := range tracesTrees(t) {
		args = append(args, "--claude.dir="+dir)
	}
	start := time.Now()
	if _, stderr, code := tracesRunBinary(t, bin, args...); code != 0 {
		t.Fatalf("all trees: exit %d\n%s", code, stderr)
	}
	took := time.Since(start)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	all, err := c2.WaitForSpans(ctx, len(want))
	if err != nil || len(all) != len(want) {
		t.Fatalf("all trees in one run: %d spans, want %d: %v", len(all), len(want), err)
	}
	t.Logf("end to end, all trees in one run: %d spans acknowledged in %v (%.0f spans/s including process start and reading %d trees)",
		len(all), took.Round(time.Millisecond), float64(len(all))/took.Seconds(), len(tracesTrees(t)))
}

// tracesSpanLine is what must match between runs and receivers.
func tracesSpanLine(s testbackend.Span) string {
	return fmt.Sprintf("%s %s %s %d %s %d %d %s", s.TraceID, s.SpanID, s.ParentSpanID, s.Kind,
		s.Start.UTC().Format(time.RFC3339Nano), s.End.Sub(s.Start), s.StatusCode, s.Name)
}

func tracesDiff(want, got []string) string {
	count := map[string]int{}
	for _, w := range want {
		count[w]++
	}
	for _, g := range got {
		count[g]--
	}
	var out []string
	for k, n := range count {
		switch {
		case n > 0:
			out = append(out, "missing:    "+k)
		case n < 0:
			out = append(out, "unexpected: "+k)
		}
		if len(out) >= 20 {
			break
		}
	}
	return strings.Join(out, "\n")
}

// TestOneshotTwiceSameSpans exports the same tree twice: the receiver
// gets every span twice with the same ids (a replay is idempotent for
// backends that deduplicate).
func TestOneshotTwiceSameSpans(t *testing.T) {
	bin := tracesBuildBinary(t)
	c := testbackend.StartCollector(t)
	dir := filepath.Join(testbackend.CorpusDir(t), "spotter")
	for range 2 {
		if _, stderr, code := tracesRunBinary(t, bin, "--oneshot", "--claude.dir="+dir, "--traces.exporter=otlp", "--traces.since=0",
			"--otlp.endpoint=http://"+c.Endpoint()); code != 0 {
			t.Fatalf("exit %d\n%s", code, stderr)
		}
	}
	expected, _ := tracesOneshotStdout(t, dir, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got, err := c.WaitForSpans(ctx, 2*len(expected))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, s := range got {
		seen[tracesSpanLine(s)]++
	}
	for _, s := range expected {
		if n := seen[tracesSpanLine(s)]; n != 2 {
			t.Errorf("span %s seen %d times, want 2 identical copies", s.SpanID, n)
		}
	}
	if len(got) != 2*len(expected) {
		t.Errorf("%d spans, want %d", len(got), 2*len(expected))
	}
}

// TestOneshotReceiverUnreachable: nothing listens on the endpoint; the
// run still prints the metrics, then fails with a message naming the
// receiver, within the shutdown timeout.
func TestOneshotReceiverUnreachable(t *testing.T) {
	bin := tracesBuildBinary(t)
	endpoint := fmt.Sprintf("127.0.0.1:%d", testbackend.FreePort(t))
	dir := filepath.Join(testbackend.CorpusDir(t), "spotter")
	start := time.Now()
	stdout, stderr, code := tracesRunBinary(t, bin, "--oneshot", "--claude.dir="+dir, "--traces.exporter=otlp", "--traces.since=0",
		"--otlp.endpoint="+endpoint, "--otlp.insecure", "--shutdown.timeout=1s")
	took := time.Since(start)
	if code == 0 {
		t.Fatalf("exit 0 with an unreachable receiver\n%s", stderr)
	}
	want := "error: export spans: receiver at " + endpoint + " unreachable after "
	if !strings.Contains(stderr, want) || !strings.Contains(stderr, "connection refused") || !strings.Contains(stderr, "spans not acknowledged") {
		t.Errorf("stderr lacks %q:\n%s", want, stderr)
	}
	if !strings.Contains(stdout, "claude_transcript_tokens_total") || !strings.Contains(stdout, "claude_transcript_exporter_spans_failed_total") {
		t.Error("no exposition on stdout")
	}
	if took > 10*time.Second {
		t.Errorf("took %v with --shutdown.timeout=1s", took)
	}
}
