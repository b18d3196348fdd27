//go:build unix

package e2e

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/testonly/testbackend"
)

// TestFIFOAtATranscriptPathNeverHangsTheDaemon replaces a transcript by a
// FIFO nobody writes to, with --tail.poll-only (the poller opens every known
// path each interval). The daemon must skip it (counted once, by kind),
// keep counting the other file, serve fresh /metrics and stop on SIGTERM
// at once. On the old code os.Open blocked forever in the reader.
func TestFIFOAtATranscriptPathNeverHangsTheDaemon(t *testing.T) {
	e := newTailEnv(t)
	e.args = append(e.args, "--tail.poll-only")
	good := filepath.Join(e.proj, "good.jsonl")
	bad := filepath.Join(e.proj, "bad.jsonl")
	appendTo(t, good, seqLine(1, 0))
	appendTo(t, bad, seqLine(2, 0))
	e.start()
	e.waitCounters(2, 2)

	if err := os.Remove(bad); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(bad, 0o644); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // several polls and rescans meet the FIFO
	for n := 1; n <= 5; n++ {
		appendTo(t, good, seqLine(1, n))
	}
	e.waitCounters(2+tri(6)-1, 7)
	// On a loaded machine the walk that meets the FIFO may come after the
	// lines: wait for the skip, then check it is counted once.
	skipped := func() float64 {
		return sumBy(parseExposition(t, scrape(t, e.addr)), "claude_transcript_exporter_files_skipped_total", "kind")["fifo"]
	}
	waitFor(t, func() bool { return skipped() >= 1 })
	time.Sleep(300 * time.Millisecond) // more polls and walks meet the FIFO
	if got := skipped(); got != 1 {
		t.Errorf("files_skipped_total{kind=fifo} = %v, want 1 (once per path)", got)
	}
	if n := strings.Count(e.proc.log.String(), "not a regular file"); n != 1 {
		t.Errorf("logged %d times, want once:\n%s", n, lastLines(e.proc.log.String(), 10))
	}
	start := time.Now()
	_ = e.proc.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-e.proc.done:
	case <-time.After(10 * time.Second):
		t.Fatal("SIGTERM did not stop the daemon within 10 s")
	}
	t.Logf("stopped %v after SIGTERM", time.Since(start).Round(time.Millisecond))
}

// TestFlagFilesThatAreNotRegularFailAtStart: a FIFO, a device or an
// oversized file named by --state.file, --pricing.file or
// --web.config.file fails at once with exit 2 naming the flag (on the old
// code a FIFO hung the start and /dev/zero grew memory without bound).
func TestFlagFilesThatAreNotRegularFailAtStart(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.json")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(64 << 20); err != nil { // sparse: 64 MiB of zeros
		t.Fatal(err)
	}
	f.Close()
	garbage := filepath.Join(dir, "web.yml")
	if err := os.WriteFile(garbage, []byte("tls_server_config: [unclosed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	badHash := filepath.Join(dir, "auth.yml")
	if err := os.WriteFile(badHash, []byte("basic_auth_users:\n  alice: not-a-bcrypt-hash\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tree := filepath.Join(testbackend.CorpusDir(t), "spotter")
	cases := []struct {
		name string
		args []string
		flag string
	}{
		{"state file is a FIFO", []string{"--state.file=" + fifo}, "--state.file"},
		{"state file is a device", []string{"--state.file=/dev/zero"}, "--state.file"},
		{"pricing file is a FIFO", []string{"--pricing.file=" + fifo}, "--pricing.file"},
		{"pricing file is /dev/zero", []string{"--pricing.file=/dev/zero"}, "--pricing.file"},
		{"pricing file is 64 MiB", []string{"--pricing.file=" + big}, "--pricing.file"},
		{"web config is a FIFO", []string{"--web.config.file=" + fifo}, "--web.config.file"},
		{"web config is /dev/zero", []string{"--web.config.file=/dev/zero"}, "--web.config.file"},
		{"web config is garbage", []string{"--web.config.file=" + garbage}, "--web.config.file"},
		{"web config has a bad bcrypt hash", []string{"--web.config.file=" + badHash}, "--web.config.file"},
		{"web config is missing", []string{"--web.config.file=" + filepath.Join(dir, "nope.yml")}, "--web.config.file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"--claude.dir=" + tree, "--web.listen-address=127.0.0.1:0", "--traces.exporter=none"}, c.args...)
			code, out := runToExit(t, 10*time.Second, args...)
			if code != 2 || !strings.Contains(out, c.flag) {
				t.Errorf("exit %d, want 2 with a message naming %s:\n%s", code, c.flag, out)
			}
		})
	}
}

// runToExit runs the binary and returns its exit code and output; it fails
// the test if the binary is still running after limit.
func runToExit(t *testing.T, limit time.Duration, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(binary(t), args...)
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return exit.ExitCode(), out.String()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0, out.String()
	case <-time.After(limit):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("still running after %v (hung):\n%s", limit, out.String())
		return 0, ""
	}
}
