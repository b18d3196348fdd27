package daemon_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/daemon"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/testonly/testbackend"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/spans"
)

// TestTracesSinceExportsOnlySessionsActiveInTheWindow backfills a copy of a
// real tree whose files all date from a month ago except one session (its
// file and its subagents' files, touched an hour ago). With the default
// --traces.since (7 days) exactly that session's spans go out, the same
// spans as with no window; the others are counted as before the window;
// the metrics are the same either way.
func TestTracesSinceExportsOnlySessionsActiveInTheWindow(t *testing.T) {
	src := filepath.Join(testbackend.CorpusDir(t), "damon-salvet")
	dir := t.TempDir()
	copyTree(t, src, dir)

	old, recent := time.Now().Add(-30*24*time.Hour), time.Now().Add(-time.Hour)
	var sessionFile string
	var best int64
	err := filepath.WalkDir(filepath.Join(dir, "projects"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := os.Chtimes(p, old, old); err != nil {
			return err
		}
		// The session with the most subagents' worth of bytes: a main file
		// with a <session>/subagents folder beside it.
		if !d.IsDir() && strings.HasSuffix(p, ".jsonl") && filepath.Base(filepath.Dir(filepath.Dir(p))) != "subagents" {
			if st, err := os.Stat(strings.TrimSuffix(p, ".jsonl") + "/subagents"); err == nil && st.IsDir() {
				if info, _ := d.Info(); info != nil && info.Size() > best {
					sessionFile, best = p, info.Size()
				}
			}
		}
		return nil
	})
	if err != nil || sessionFile == "" {
		t.Fatalf("no session with subagents in %s: %v", src, err)
	}
	sessionID := strings.TrimSuffix(filepath.Base(sessionFile), ".jsonl")
	touched := []string{sessionFile}
	subs, _ := filepath.Glob(filepath.Join(strings.TrimSuffix(sessionFile, ".jsonl"), "subagents", "*.jsonl"))
	touched = append(touched, subs...)
	for _, p := range touched {
		if err := os.Chtimes(p, recent, recent); err != nil {
			t.Fatal(err)
		}
	}

	all, allMetrics := tracesOneshotStdout(t, dir, nil)
	windowed, winMetrics := tracesOneshotStdout(t, dir, func(c *daemon.Config) { c.Traces.Since = daemon.DefaultTracesSince })

	var want []string
	for _, s := range all {
		if s.Attrs[spans.AttrConversationID] == sessionID {
			want = append(want, tracesSpanLine(s))
		}
	}
	var got []string
	for _, s := range windowed {
		got = append(got, tracesSpanLine(s))
	}
	if len(want) == 0 || len(want) == len(all) {
		t.Fatalf("session %s has %d of %d spans: the test needs one session among several", sessionID, len(want), len(all))
	}
	if d := tracesDiff(want, got); d != "" || len(got) != len(want) {
		t.Errorf("with --traces.since=7d: %d spans, want the %d of session %s:\n%s", len(got), len(want), sessionID, d)
	}
	if n := tracesMetricSum(winMetrics, "claude_transcript_exporter_spans_before_window_total", nil); int(n) != len(all)-len(want) {
		t.Errorf("spans_before_window_total = %v, want %d", n, len(all)-len(want))
	}
	if n := tracesMetricSum(allMetrics, "claude_transcript_exporter_spans_before_window_total", nil); n != 0 {
		t.Errorf("with no window, spans_before_window_total = %v, want 0", n)
	}
	for _, name := range []string{"claude_transcript_tokens_total", "claude_transcript_requests_total", "claude_transcript_tool_calls_total"} {
		if a, w := tracesMetricSum(allMetrics, name, nil), tracesMetricSum(winMetrics, name, nil); a != w || a == 0 {
			t.Errorf("%s = %v with the window, %v without: metrics must count all history", name, w, a)
		}
	}
	t.Logf("session %s (%d files touched): %d of %d spans exported", sessionID, len(touched), len(got), len(all))
}

// copyTree copies the regular files and folders under src to dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		out := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(out, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(out, b, 0o644)
	})
	if err != nil {
		t.Fatalf("copy %s: %v", src, err)
	}
}
