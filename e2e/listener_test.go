//go:build unix

package e2e

import (
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

// The HTTP listener: the listen address, systemd socket activation and the
// landing page.

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
