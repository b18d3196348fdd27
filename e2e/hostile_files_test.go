//go:build unix

package e2e

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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
	mfs := parseExposition(t, scrape(t, e.addr))
	if got := sumBy(mfs, "claude_transcript_exporter_files_skipped_total", "kind")["fifo"]; got != 1 {
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

// TestBusyListenAddressFailsBeforeTheBackfill: the address is taken, so the
// daemon fails with exit 2 naming --web.listen-address before it reads any
// transcript or loads its state (on the old code it read the whole history
// first and exited 1).
func TestBusyListenAddressFailsBeforeTheBackfill(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	tree := filepath.Join(testbackend.CorpusDir(t), "aistrad")
	code, out := runToExit(t, time.Minute, "--claude.dir="+tree, "--web.listen-address="+l.Addr().String(),
		"--traces.exporter=none", "--state.file="+filepath.Join(t.TempDir(), "state"), "--log.level=debug")
	if code != 2 || !strings.Contains(out, "--web.listen-address") || !strings.Contains(out, "address already in use") {
		t.Fatalf("exit %d, want 2 naming --web.listen-address:\n%s", code, out)
	}
	for _, work := range []string{"backfill done", "read every file", "state restored"} {
		if strings.Contains(out, work) {
			t.Errorf("the log says %q: work was done before the failure:\n%s", work, out)
		}
	}
}

// TestSystemdSocketActivationServesMetrics passes a listening socket as
// systemd does (fd 3, LISTEN_FDS=1, LISTEN_PID = the daemon's pid) and
// scrapes /metrics through it; without sockets the flag fails at start.
func TestSystemdSocketActivationServesMetrics(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lf, err := l.(*net.TCPListener).File()
	if err != nil {
		t.Fatal(err)
	}
	l.Close() // the duplicate in lf stays open and listening
	defer lf.Close()
	addr := l.Addr().String()
	tree := filepath.Join(testbackend.CorpusDir(t), "danielhward")
	// LISTEN_PID must be the daemon's own pid: set it in a shell that execs it.
	cmd := exec.Command("/bin/sh", "-c", `LISTEN_PID=$$ LISTEN_FDS=1 exec "$0" "$@"`, binary(t),
		"--web.systemd-socket", "--claude.dir="+tree, "--traces.exporter=none", "--state.file="+filepath.Join(t.TempDir(), "state"))
	cmd.ExtraFiles = []*os.File{lf}
	var log syncBuffer
	cmd.Stderr = &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		body := get(t, "http://"+addr+"/metrics")
		if strings.Contains(body, "claude_transcript_tokens_total") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no metrics through the systemd socket %s: %s\n%s", addr, body, log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}

	code, out := runToExit(t, 10*time.Second, "--web.systemd-socket", "--claude.dir="+tree, "--traces.exporter=none",
		"--state.file="+filepath.Join(t.TempDir(), "state"))
	if code != 2 || !strings.Contains(out, "--web.systemd-socket") {
		t.Errorf("without sockets: exit %d, want 2 naming --web.systemd-socket:\n%s", code, out)
	}
}

// TestLandingPageHasNoDeadLinks follows every link of the landing page:
// each answers 200, by default and with --web.enable-pprof (which adds the
// profiles); without it /debug/pprof/ is not served.
func TestLandingPageHasNoDeadLinks(t *testing.T) {
	tree := filepath.Join(testbackend.CorpusDir(t), "danielhward")
	href := regexp.MustCompile(`href="([^"]+)"`)
	for _, pprof := range []bool{false, true} {
		t.Run(fmt.Sprintf("pprof=%v", pprof), func(t *testing.T) {
			args := []string{"--claude.dir=" + tree}
			if pprof {
				args = append(args, "--web.enable-pprof")
			}
			addr, _ := startServe(t, args...)
			page := get(t, "http://"+addr+"/")
			links := 0
			for _, m := range href.FindAllStringSubmatch(page, -1) {
				link := m[1]
				if strings.HasPrefix(link, "http") || strings.HasPrefix(link, "#") {
					continue
				}
				if strings.Contains(link, "seconds=") {
					link = strings.Replace(link, "seconds=60", "seconds=1", 1)
				}
				links++
				if code := status(t, "http://"+addr+"/"+strings.TrimPrefix(link, "/")); code != http.StatusOK {
					t.Errorf("landing page link %s: %d", m[1], code)
				}
			}
			if links < 3 {
				t.Errorf("only %d links on the landing page:\n%s", links, page)
			}
			if got := strings.Contains(page, "debug/pprof"); got != pprof {
				t.Errorf("pprof links on the page = %v, want %v", got, pprof)
			}
			if code := status(t, "http://"+addr+"/debug/pprof/"); (code == http.StatusOK) != pprof {
				t.Errorf("/debug/pprof/: %d with pprof %v", code, pprof)
			}
		})
	}
}

func status(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
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
