package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"maps"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/testonly/testbackend"
)

// outageIdle is the idle timeout of these tests: sessions close soon
// after their last line, so that their turn and root spans go out.
const outageIdle = "--sessions.idle-timeout=3s"

// spanKey names a span by its ids.
func spanKey(s testbackend.Span) string { return s.TraceID + "/" + s.SpanID }

// expectedSpans runs a one-shot with stdout export on the final trees and
// returns the ids of the spans it builds (a one-shot closes every session
// at the end, as the idle timeout does in the daemon).
func expectedSpans(t *testing.T, dirs []string) map[string]testbackend.Span {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := []string{"--oneshot", "--traces.exporter=stdout", "--traces.since=0", "--oneshot.metrics-file=/dev/null", "--log.level=warn", outageIdle}
	for _, d := range dirs {
		args = append(args, "--claude.dir="+d)
	}
	cmd := exec.CommandContext(ctx, binary(t), args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("one-shot: %v\n%s", err, stderr.String())
	}
	got, err := testbackend.ParseSpans(stdout.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]testbackend.Span{}
	for _, s := range got {
		want[spanKey(s)] = s
	}
	return want
}

// structureDiffers lists the expected spans of which no received copy
// has the same name, parent, kind and attribute keys: the shape does not
// depend on timing, unlike times, counts and statuses. Two exceptions:
// gen_ai.response.finish_reasons is missing when a live request settled
// before its last line (internal/tail/design.md, "Settling"), and an
// early copy of a span may differ when a session closed by the idle
// timeout is reopened by later lines and sent again.
func structureDiffers(t *testing.T, c *testbackend.Collector, want map[string]testbackend.Span) []string {
	t.Helper()
	got, err := c.Spans()
	if err != nil {
		t.Fatal(err)
	}
	shape := func(s testbackend.Span) string {
		keys := slices.Sorted(maps.Keys(s.Attrs))
		keys = slices.DeleteFunc(keys, func(k string) bool { return k == "gen_ai.response.finish_reasons" })
		return fmt.Sprintf("%s parent %s kind %d attrs %v", s.Name, s.ParentSpanID, s.Kind, keys)
	}
	copies := map[string][]string{}
	for _, g := range got {
		copies[spanKey(g)] = append(copies[spanKey(g)], shape(g))
	}
	var out []string
	for k, w := range want {
		if cs := copies[k]; len(cs) > 0 && !slices.Contains(cs, shape(w)) {
			out = append(out, fmt.Sprintf("%s: got %v, want %s", k, cs, shape(w)))
		}
	}
	sort.Strings(out)
	return out
}

// receivedIDs returns how often the collector received each span.
func receivedIDs(t *testing.T, c *testbackend.Collector) map[string]int {
	t.Helper()
	got, err := c.Spans()
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]int{}
	for _, s := range got {
		ids[spanKey(s)]++
	}
	return ids
}

// missing returns the expected spans not received.
func missing(want map[string]testbackend.Span, got map[string]int) []string {
	var out []string
	for k, s := range want {
		if got[k] == 0 {
			out = append(out, k+" "+s.Name)
		}
	}
	sort.Strings(out)
	return out
}

// waitForSpans waits until the collector has every expected span.
func waitForSpans(t *testing.T, c *testbackend.Collector, want map[string]testbackend.Span, timeout time.Duration) map[string]int {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		got := receivedIDs(t, c)
		if len(missing(want, got)) == 0 || time.Now().After(deadline) {
			return got
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// compareSpanSets checks that every expected span was received and that
// every received span was expected.
func compareSpanSets(t *testing.T, want map[string]testbackend.Span, got map[string]int) {
	t.Helper()
	if m := missing(want, got); len(m) > 0 {
		t.Errorf("%d of %d expected spans never reached the collector, e.g. %v", len(m), len(want), m[:min(len(m), 10)])
	}
	var extra, dupNames []string
	dups := 0
	for k, n := range got {
		if _, ok := want[k]; !ok {
			extra = append(extra, k)
		}
		if n > 1 {
			dups += n - 1
			dupNames = append(dupNames, fmt.Sprintf("%s×%d", want[k].Name, n))
		}
	}
	sort.Strings(dupNames)
	sort.Strings(extra)
	if len(extra) > 0 {
		t.Errorf("%d received spans are not built by a one-shot run of the final tree, e.g. %v", len(extra), extra[:min(len(extra), 10)])
	}
	t.Logf("%d spans expected, %d distinct received, %d duplicates %v", len(want), len(got), dups, dupNames[:min(len(dupNames), 10)])
}

// metric returns an unlabelled sample of the daemon's exposition.
func metric(t *testing.T, addr, name string) float64 {
	t.Helper()
	return sumBy(parseExposition(t, scrape(t, addr)), name)[""]
}

func dirSize(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, de fs.DirEntry, err error) error {
		if err == nil && !de.IsDir() {
			if fi, err := de.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// replayTrees plans the replay of the transcripts (projects/) of several
// real trees, each into its own Claude dir under root.
func replayTrees(t *testing.T, root string, trees ...string) (plan []replayLine, dirs []string) {
	t.Helper()
	for _, tree := range trees {
		dst := filepath.Join(root, tree)
		for _, l := range replayPlan(t, filepath.Join(testbackend.CorpusDir(t), tree), dst) {
			if !strings.HasPrefix(l.rel, "projects"+string(filepath.Separator)) {
				continue // history.jsonl and such: not transcripts
			}
			l.rel = filepath.Join(tree, l.rel)
			plan = append(plan, l)
		}
		dirs = append(dirs, dst)
	}
	return plan, dirs
}

// feed appends plan[from:to] in bursts, calling tick about every 250ms.
func feed(t *testing.T, root string, plan []replayLine, from, to int, rng *rand.Rand, tick func()) {
	t.Helper()
	last := time.Now()
	for i := from; i < to; {
		n := min(1+rng.Intn(60), to-i)
		appendLines(t, root, plan[i:i+n], false)
		i += n
		time.Sleep(time.Duration(3+rng.Intn(10)) * time.Millisecond)
		if tick != nil && time.Since(last) > 250*time.Millisecond {
			tick()
			last = time.Now()
		}
	}
}

// TestReceiverOutageDelaysSpansNeverDropsThem replays three real trees
// into a running daemon and stops the collector for most of the replay,
// long enough for more spans than the in-memory queue holds. While the
// collector is down the daemon keeps reading and counting (its spans wait
// in the spool); once it is back the backlog drains, and in the end the
// collector has received exactly the spans a one-shot run builds from the
// final trees (duplicates allowed, nothing missing, nothing else).
func TestReceiverOutageDelaysSpansNeverDropsThem(t *testing.T) {
	c := testbackend.StartCollector(t)
	root := t.TempDir()
	plan, dirs := replayTrees(t, root, "aistrad", "eduardodmb", "mlevison")
	stateDir := t.TempDir()
	spoolDir := filepath.Join(stateDir, "spool")
	addr := fmt.Sprintf("127.0.0.1:%d", testbackend.FreePort(t))
	args := []string{"--state.file=" + filepath.Join(stateDir, "state"), "--state.flush-interval=200ms",
		"--tail.poll-interval=20ms", "--tail.rescan-interval=200ms", outageIdle,
		"--traces.exporter=otlp", "--traces.since=0", "--otlp.endpoint=" + c.Endpoint(), "--otlp.insecure"}
	for _, d := range dirs {
		args = append(args, "--claude.dir="+d)
	}
	p := startDaemon(t, addr, args...)
	defer func() {
		if t.Failed() {
			t.Logf("daemon log:\n%s", lastLines(p.log.String(), 40))
		}
	}()
	waitReady(t, addr, p)
	rng := rand.New(rand.NewSource(3))
	down, up := len(plan)/20, len(plan)*9/10

	// Collector up.
	feed(t, root, plan, 0, down, rng, nil)
	// Collector down for most of the replay.
	c.Stop()
	stopped := time.Now()
	var maxSpooled, maxSpoolBytes float64
	var readDuring []float64
	watch := func() {
		readDuring = append(readDuring, metric(t, addr, "claude_transcript_exporter_lines_read_total"))
		maxSpooled = max(maxSpooled, metric(t, addr, "claude_transcript_exporter_spool_spans"))
		maxSpoolBytes = max(maxSpoolBytes, float64(dirSize(spoolDir)))
	}
	feed(t, root, plan, down, up, rng, watch)
	// Every line written so far is read and counted while the collector
	// is still down.
	deadline := time.Now().Add(20 * time.Second)
	for metric(t, addr, "claude_transcript_exporter_lines_read_total") < float64(up) && time.Now().Before(deadline) {
		watch()
		time.Sleep(100 * time.Millisecond)
	}
	watch()
	if got := metric(t, addr, "claude_transcript_exporter_lines_read_total"); got != float64(up) {
		t.Fatalf("collector down: the daemon read %v lines of the %d written (reads during the outage: %v)", got, up, readDuring)
	}
	deadline = time.Now().Add(10 * time.Second)
	// Requests settle and sessions go idle: more spans, past what the
	// in-memory queue holds (4096), which used to stall the pipeline.
	for metric(t, addr, "claude_transcript_exporter_spans_pending") <= 4096 && time.Now().Before(deadline) {
		watch()
		time.Sleep(100 * time.Millisecond)
	}
	if pending := metric(t, addr, "claude_transcript_exporter_spans_pending"); pending <= 4096 {
		t.Errorf("only %v spans pending during the outage: not past the in-memory bound, the test proves little", pending)
	}
	t.Logf("outage %v: up to %v spans (%.0f KiB) in the spool; lines read during it: %v",
		time.Since(stopped).Round(time.Millisecond), maxSpooled, maxSpoolBytes/1024, readDuring)
	if maxSpooled == 0 {
		t.Error("nothing was spooled while the collector was down")
	}

	// Collector back: the backlog drains.
	exported := metric(t, addr, "claude_transcript_exporter_spans_exported_total")
	c.Restart()
	back := time.Now()
	var resumed time.Duration // the backoff's share of the wait
	for time.Since(back) < 45*time.Second && metric(t, addr, "claude_transcript_exporter_spool_spans") > 0 {
		if resumed == 0 && metric(t, addr, "claude_transcript_exporter_spans_exported_total") > exported {
			resumed = time.Since(back)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if n := metric(t, addr, "claude_transcript_exporter_spool_spans"); n > 0 {
		t.Fatalf("%v spans still in the spool %v after the collector came back", n, time.Since(back))
	}
	t.Logf("spool drained %v after the collector came back (first export after %v: retry backoff); %d spans received",
		time.Since(back).Round(time.Millisecond), resumed.Round(time.Millisecond), len(receivedIDs(t, c)))

	feed(t, root, plan, up, len(plan), rng, nil)
	want := expectedSpans(t, dirs)
	waitForSpans(t, c, want, 30*time.Second)
	if st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid)); err == nil {
		for _, l := range strings.Split(string(st), "\n") {
			if strings.HasPrefix(l, "VmHWM:") {
				t.Logf("daemon peak RSS %s", strings.TrimSpace(strings.TrimPrefix(l, "VmHWM:")))
			}
		}
	}
	p.stop(t)
	compareSpanSets(t, want, receivedIDs(t, c))
	if d := structureDiffers(t, c, want); len(d) > 0 {
		t.Errorf("%d spans were received only in shapes other than the one-shot's, e.g.\n%s", len(d), strings.Join(d[:min(len(d), 10)], "\n"))
	}
	if n := dirSize(spoolDir); n > 1<<20 {
		t.Errorf("spool holds %d bytes after everything was delivered", n)
	}
}

// TestRestartResumeAfterKill9KeepsEverySpan kills the daemon with SIGKILL
// at 10 random points while a real tree is being appended, with the
// collector down for a stretch in the middle, restarting the daemon each
// time. At the end the collector has every span a one-shot run builds
// from the final tree, and no other (duplicates allowed): spans are in
// the spool or acknowledged before the state file moves past their lines.
func TestRestartResumeAfterKill9KeepsEverySpan(t *testing.T) {
	c := testbackend.StartCollector(t)
	root := t.TempDir()
	plan, dirs := replayTrees(t, root, "eduardodmb")
	state := filepath.Join(t.TempDir(), "state")
	addr := fmt.Sprintf("127.0.0.1:%d", testbackend.FreePort(t))
	args := []string{"--claude.dir=" + dirs[0], "--state.file=" + state, "--state.flush-interval=150ms",
		"--tail.poll-interval=20ms", "--tail.rescan-interval=200ms", outageIdle,
		"--traces.exporter=otlp", "--traces.since=0", "--otlp.endpoint=" + c.Endpoint(), "--otlp.insecure"}

	var written atomic.Int64
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		rng := rand.New(rand.NewSource(1))
		for i := 0; i < len(plan); {
			n := min(1+rng.Intn(40), len(plan)-i)
			appendLines(t, root, plan[i:i+n], rng.Intn(4) == 0)
			i += n
			written.Store(int64(i))
			time.Sleep(time.Duration(5+rng.Intn(20)) * time.Millisecond)
		}
	}()

	rng := rand.New(rand.NewSource(2))
	p := startDaemon(t, addr, args...)
	var logs []string
	for kill := 0; kill < 10; kill++ {
		switch kill {
		case 3:
			c.Stop()
		case 7:
			c.Restart()
		}
		time.Sleep(time.Duration(100+rng.Intn(500)) * time.Millisecond)
		p.kill9()
		logs = append(logs, p.log.String())
		p = startDaemon(t, addr, args...)
	}
	<-writerDone
	waitReady(t, addr, p)
	t.Logf("replayed %d lines with 10 SIGKILLs", written.Load())
	defer func() {
		if t.Failed() {
			t.Logf("daemon log:\n%s", lastLines(p.log.String(), 40))
		}
	}()

	want := expectedSpans(t, dirs)
	waitForSpans(t, c, want, 40*time.Second)
	p.stop(t)
	got := receivedIDs(t, c)
	compareSpanSets(t, want, got)
	// Not checked, only reported: spans rebuilt after a restart may have
	// another parent than in one run (the span builder's open turns are
	// not part of the state file: a request of a turn begun before the
	// saved offsets hangs under the session's root span).
	if d := structureDiffers(t, c, want); len(d) > 0 {
		t.Logf("%d spans were received only in shapes other than the one-shot's, e.g.\n%s", len(d), strings.Join(d[:min(len(d), 3)], "\n"))
	}
	failing, resumed := 0, 0
	for _, l := range append(logs, p.log.String()) {
		if strings.Contains(l, `msg="span export failed, retrying"`) {
			failing++
		}
		if strings.Contains(l, `msg="sending spans left in the spool"`) {
			resumed++
		}
	}
	t.Logf("%d of 11 runs saw the collector down, %d started with spans left in the spool by a killed run", failing, resumed)
	if resumed == 0 {
		t.Error("no run started with spans in the spool: the outage did not exercise the spool across a SIGKILL")
	}
	if t.Failed() {
		for i, l := range logs {
			if strings.Contains(l, "level=ERROR") {
				t.Logf("run %d log:\n%s", i, lastLines(l, 20))
			}
		}
	}
}
