package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// rssKiB is a process's resident set size from /proc.
func rssKiB(t *testing.T, pid int) int {
	t.Helper()
	n := statusKiB(pid, "VmRSS:")
	if n == 0 {
		t.Fatalf("no VmRSS in /proc/%d/status", pid)
	}
	return n
}

// TestMemoryOfALongLineIsReturned appends a 70 MB line (over the 64 MiB
// cap: skipped as too_long) to a followed transcript, then a normal
// request: once both are read, the daemon's resident size must be back
// under 64 MiB. Before, the buffers grown for the line stayed resident
// (about 230 MB) for as long as the daemon was idle.
func TestMemoryOfALongLineIsReturned(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads the resident size from /proc (Linux only)")
	}
	e := newTailEnv(t)
	path := filepath.Join(e.proj, "s1.jsonl")
	appendTo(t, path, seqLine(1, 0))
	e.start()
	e.waitCounters(1, 1)
	long := `{"type":"user","uuid":"big","sessionId":"s1","message":{"role":"user","content":"` + strings.Repeat("y", 70<<20) + `"}}` + "\n"
	appendTo(t, path, long+seqLine(1, 1))
	e.waitCounters(3, 2)
	mfs := parseExposition(t, scrape(t, e.addr))
	if n := sumBy(mfs, "claude_transcript_exporter_decode_errors_total", "reason")["too_long"]; n != 1 {
		t.Fatalf("too_long lines %v, want 1", n)
	}
	if rss := rssKiB(t, e.proc.cmd.Process.Pid); rss > 64<<10 {
		t.Errorf("resident size %d KiB after the long line was read, want at most 64 MiB", rss)
	}
}

// TestFilesOfTinyLinesStayUnderTheMemoryBound reads 32 MB of "{}" lines
// (valid JSON objects, 11 million records of no known type) and a cut-off
// last line with --oneshot on 2 cores: every line and byte is counted, and
// the process's peak resident size stays under 64 MiB. Before decoded
// batches were split, each 128 KiB range of such lines became 43,690
// records held at once and allocated anew: 64 MB of them peaked at 294 MiB
// and took 47 s. (The bound is per worker, about 2 MB each: GOMAXPROCS is
// set so that the figure is this machine's whatever the runner's cores.)
func TestFilesOfTinyLinesStayUnderTheMemoryBound(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads the peak resident size from /proc (Linux only)")
	}
	const lines = 32 << 20 / 3
	const cut = `{"type":"user","uuid":"cut`
	dir := t.TempDir()
	proj := filepath.Join(dir, "projects", "-w-tiny")
	if err := os.MkdirAll(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	content := append(bytes.Repeat([]byte("{}\n"), lines), cut...)
	if err := os.WriteFile(filepath.Join(proj, "7b0c5e0e-2f57-4c3a-9d1e-0d6f4f1c2a3b.jsonl"), content, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary(t), "--oneshot", "--traces.exporter=none", "--log.level=warn", "--claude.dir="+dir)
	cmd.Env = append(os.Environ(), "GOMAXPROCS=2")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	size := len(content)
	content = nil
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The high-water mark of the process's own memory, read while it
	// runs: rusage's maxrss would count the test's memory, which the
	// child shared until exec.
	peak, done := 0, make(chan error)
	go func() { done <- cmd.Wait() }()
	for waiting := true; waiting; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("oneshot: %v\n%s", err, stderr.String())
			}
			waiting = false
		case <-time.After(5 * time.Millisecond):
			peak = max(peak, statusKiB(cmd.Process.Pid, "VmHWM:"))
		}
	}
	mfs := parseExposition(t, stdout.String())
	if n := sumBy(mfs, "claude_transcript_exporter_lines_read_total")[""]; n != lines+1 {
		t.Errorf("lines read %v, want %d", n, lines+1)
	}
	if n := sumBy(mfs, "claude_transcript_exporter_bytes_read_total")[""]; n != float64(size) {
		t.Errorf("bytes read %v, want %d", n, size)
	}
	if n := sumBy(mfs, "claude_transcript_exporter_unknown_records_total", "type")["(none)"]; n != lines {
		t.Errorf("records of no type %v, want %d", n, lines)
	}
	if n := sumBy(mfs, "claude_transcript_exporter_decode_errors_total", "reason")["truncated"]; n != 1 {
		t.Errorf("truncated lines %v, want 1", n)
	}
	if peak == 0 || peak > 64<<10 {
		t.Errorf("peak resident size %d KiB, want at most 64 MiB", peak)
	} else {
		t.Logf("peak resident size %d KiB", peak)
	}
}

// statusKiB reads a KiB figure of /proc/<pid>/status (0 once the process
// is gone).
func statusKiB(pid int, key string) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, key); ok {
			n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			return n
		}
	}
	return 0
}
