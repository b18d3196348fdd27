package e2e

import (
	"bufio"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// rssKiB is a process's resident set size from /proc.
func rssKiB(t *testing.T, pid int) int {
	t.Helper()
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no VmRSS in /proc status")
	return 0
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
