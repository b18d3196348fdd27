package e2e

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/testonly/testbackend"
)

// TestStateThatCannotBeWrittenAgesAndCountsFailures runs the daemon with a
// state file it can write, then replaces the state directory by a file (so
// that even root cannot write there) while new lines keep arriving:
// state_file_age_seconds must grow past many flush intervals and
// state_write_failures_total must count the failures, so the stale-state
// alert can fire. Once the directory is back, the age drops again.
func TestStateThatCannotBeWrittenAgesAndCountsFailures(t *testing.T) {
	e := newTailEnv(t)
	stateDir := filepath.Join(t.TempDir(), "statedir")
	e.state = filepath.Join(stateDir, "state")
	e.args = withArg(e.args, "--state.file="+e.state)
	path := filepath.Join(e.proj, "s1.jsonl")
	appendTo(t, path, seqLine(1, 0))
	e.start()
	e.waitCounters(1, 1)
	age := func() float64 { return metric(t, e.addr, "claude_transcript_exporter_state_file_age_seconds") }
	failures := func() float64 { return metric(t, e.addr, "claude_transcript_exporter_state_write_failures_total") }
	waitFor(t, func() bool { _, err := os.Stat(e.state); return err == nil })

	if err := os.RemoveAll(stateDir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(stateDir, []byte("not a directory"), 0o644); err != nil {
		t.Fatal(err)
	}
	broken := time.Now()
	for n := 1; time.Since(broken) < 2*time.Second; n++ {
		appendTo(t, path, seqLine(1, n))
		time.Sleep(100 * time.Millisecond)
	}
	if a := age(); a < 1.5 {
		t.Errorf("state_file_age_seconds %v after 2s of failing writes (flush interval 100ms): the age does not count from the last good write", a)
	}
	if f := failures(); f < 5 {
		t.Errorf("state_write_failures_total %v after 2s of failing writes every 100ms", f)
	}

	if err := os.Remove(stateDir); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return age() < 1 })
}

// TestDamagedStateFileIsRefusedNamingTheResetFlag changes one byte of a
// saved state file inside a counter's label (output → outxut), the damage
// a disk can do: the daemon must refuse to start with an error naming
// --state.reset, not serve a counter under a bogus label.
func TestDamagedStateFileIsRefusedNamingTheResetFlag(t *testing.T) {
	e := newTailEnv(t)
	path := filepath.Join(e.proj, "s1.jsonl")
	appendTo(t, path, seqLine(1, 0)+seqLine(1, 1))
	e.start()
	e.waitCounters(3, 2)
	e.proc.stop(t)
	b, err := os.ReadFile(e.state)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(b, []byte("output"))
	if i < 0 {
		t.Fatal("the state file holds no \"output\" label to damage")
	}
	b[i+3] = 'x'
	if err := os.WriteFile(e.state, b, 0o600); err != nil {
		t.Fatal(err)
	}
	code, out := runToExit(t, 30*time.Second, append([]string{"--web.listen-address=" + e.addr}, e.args...)...)
	if code == 0 || !strings.Contains(out, "--state.reset") || !strings.Contains(out, "checksum") {
		t.Fatalf("damaged state: exit %d, want an error naming the checksum and --state.reset:\n%s", code, out)
	}
}

// TestSecondDaemonOnOneStateOrSpoolFailsAtStart starts a second daemon on
// the state file of a running one, then one with its own state but the
// first one's spool: each must exit 2 at once, naming the flag.
func TestSecondDaemonOnOneStateOrSpoolFailsAtStart(t *testing.T) {
	e := newTailEnv(t)
	dead := fmt.Sprintf("127.0.0.1:%d", testbackend.FreePort(t)) // no receiver: spans wait in the spool
	e.args = append(withArg(e.args, "--traces.exporter=otlp"), "--otlp.endpoint="+dead, "--otlp.insecure")
	e.start()
	spool := filepath.Join(filepath.Dir(e.state), "spool")
	if _, err := os.Stat(spool); err != nil {
		t.Fatalf("the first daemon has no spool: %v", err)
	}
	other := fmt.Sprintf("--web.listen-address=127.0.0.1:%d", testbackend.FreePort(t))
	cases := []struct{ name, flag string }{
		{"--state.file=" + e.state, "--state.file"},
		{"--state.file=" + filepath.Join(t.TempDir(), "state"), "--otlp.spool-dir"},
	}
	for _, tc := range cases {
		args := append([]string{other}, withArg(e.args, tc.name)...)
		if tc.flag == "--otlp.spool-dir" {
			args = append(args, "--otlp.spool-dir="+spool)
		}
		code, out := runToExit(t, 30*time.Second, args...)
		if code != 2 || !strings.Contains(out, tc.flag) || !strings.Contains(out, "in use") {
			t.Errorf("%s: exit %d, want 2 with an error naming %s:\n%s", tc.name, code, tc.flag, out)
		}
	}
	if _, err := os.Stat(e.state + ".lock"); err != nil {
		t.Errorf("no lock beside the state file: %v", err)
	}
}

// TestSpoolCapDropsTheOldestSpansAndSaysSoOnce backfills two corpus trees
// with the receiver down and a 1 MiB spool cap: the spool stays near its
// cap, the spans kept plus the spans dropped are every span built, the
// drop is counted and logged once.
func TestSpoolCapDropsTheOldestSpansAndSaysSoOnce(t *testing.T) {
	dirs := []string{filepath.Join(testbackend.CorpusDir(t), "aistrad"), filepath.Join(testbackend.CorpusDir(t), "eduardodmb")}
	want := len(expectedSpans(t, dirs))
	stateDir := t.TempDir()
	spool := filepath.Join(stateDir, "spool")
	addr := fmt.Sprintf("127.0.0.1:%d", testbackend.FreePort(t))
	dead := fmt.Sprintf("127.0.0.1:%d", testbackend.FreePort(t))
	args := []string{"--state.file=" + filepath.Join(stateDir, "state"), "--state.flush-interval=200ms", outageIdle,
		"--traces.exporter=otlp", "--traces.since=0", "--otlp.endpoint=" + dead, "--otlp.insecure", "--otlp.spool-max-bytes=1MiB"}
	for _, d := range dirs {
		args = append(args, "--claude.dir="+d)
	}
	p := startDaemon(t, addr, args...)
	defer p.stop(t)
	waitReady(t, addr, p)
	var pending, dropped float64
	deadline := time.Now().Add(time.Minute)
	for {
		pending = metric(t, addr, "claude_transcript_exporter_spans_pending")
		dropped = metric(t, addr, "claude_transcript_exporter_spool_dropped_spans_total")
		if pending+dropped == float64(want) || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if pending+dropped != float64(want) {
		t.Fatalf("spans pending %v + dropped %v != %d built\n%s", pending, dropped, want, lastLines(p.log.String(), 20))
	}
	if dropped == 0 {
		t.Fatalf("nothing dropped: %d spans fit in 1 MiB? (spool %d bytes)", want, dirSize(spool))
	}
	if size := dirSize(spool); size > 1<<20+(1<<18)+4096 {
		t.Errorf("spool holds %d bytes, cap 1 MiB (+ one 256 KiB segment)", size)
	}
	if n := strings.Count(p.log.String(), "spool full"); n != 1 {
		t.Errorf("the drop was logged %d times, want once", n)
	}
}

// withArg returns args with the flag of arg (--name=value) set to its
// value: replaced where it is, else appended.
func withArg(args []string, arg string) []string {
	name, _, _ := strings.Cut(arg, "=")
	out := append([]string{}, args...)
	for i, a := range out {
		if strings.HasPrefix(a, name+"=") {
			out[i] = arg
			return out
		}
	}
	return append(out, arg)
}
