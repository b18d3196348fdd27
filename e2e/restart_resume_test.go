package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"math/rand"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/testonly/indepcount"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/testonly/testbackend"
)

// replayLine is one line of a real tree to append to its file in a copy.
type replayLine struct {
	rel  string
	line []byte
}

var tsRe = regexp.MustCompile(`"timestamp":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z"`)

// replayPlan reads every transcript of a real tree, file by file in path
// order (a session before its subagents), and copies the other files
// (subagent .meta.json) into dst at once.
func replayPlan(t *testing.T, src, dst string) []replayLine {
	t.Helper()
	var out []replayLine
	var paths []string
	err := filepath.WalkDir(src, func(p string, de fs.DirEntry, err error) error {
		if err != nil || de.IsDir() {
			return err
		}
		paths = append(paths, p)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(paths)
	for _, p := range paths {
		rel, _ := filepath.Rel(src, p)
		if err := os.MkdirAll(filepath.Join(dst, filepath.Dir(rel)), 0o755); err != nil {
			t.Fatal(err)
		}
		if filepath.Ext(p) != ".jsonl" {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dst, rel), b, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReaderSize(f, 1<<20)
		for {
			line, err := br.ReadBytes('\n')
			if len(line) > 0 {
				if line[len(line)-1] != '\n' {
					line = append(line, '\n')
				}
				out = append(out, replayLine{rel: rel, line: line})
			}
			if err != nil {
				break
			}
		}
		f.Close()
	}
	return out
}

// appendLines writes lines to their files in dst, with timestamps moved to
// now (live data is recent). Each line goes out in one write, or, when
// split is set, in two writes with a pause between (a half-written line).
func appendLines(t *testing.T, dst string, lines []replayLine, split bool) {
	files := map[string]*os.File{}
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	for _, l := range lines {
		f := files[l.rel]
		if f == nil {
			var err error
			f, err = os.OpenFile(filepath.Join(dst, l.rel), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
			if err != nil {
				t.Error(err)
				return
			}
			files[l.rel] = f
		}
		now := []byte(`"timestamp":"` + time.Now().UTC().Format("2006-01-02T15:04:05.000Z") + `"`)
		b := tsRe.ReplaceAll(l.line, now)
		if split && len(b) > 10 {
			if _, err := f.Write(b[:len(b)/2]); err != nil {
				t.Error(err)
				return
			}
			time.Sleep(time.Millisecond)
			b = b[len(b)/2:]
		}
		if _, err := f.Write(b); err != nil {
			t.Error(err)
			return
		}
	}
}

// daemonProc is one run of the binary.
type daemonProc struct {
	cmd  *exec.Cmd
	done chan struct{}
	log  *syncBuffer
}

func startDaemon(t *testing.T, addr string, args ...string) *daemonProc {
	t.Helper()
	p := &daemonProc{done: make(chan struct{}), log: &syncBuffer{}}
	p.cmd = exec.Command(binary(t), append([]string{"--web.listen-address=" + addr}, args...)...)
	p.cmd.Stderr = p.log
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	return p
}

func (p *daemonProc) kill9() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

func (p *daemonProc) stop(t *testing.T) {
	_ = p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		t.Errorf("daemon did not stop on SIGINT")
		p.kill9()
	}
}

func waitReady(t *testing.T, addr string, p *daemonProc) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		select {
		case <-p.done:
			t.Fatalf("daemon exited:\n%s", p.log.String())
		default:
		}
		if resp, err := http.Get("http://" + addr + "/-/ready"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("daemon not ready:\n%s", p.log.String())
}

// TestRestartResumeAfterKill9IsExact kills the daemon with SIGKILL at 20
// random points while a real tree is being appended, restarting it each
// time. At the end, every counter equals the independent count of the
// final tree: nothing counted twice, nothing lost.
func TestRestartResumeAfterKill9IsExact(t *testing.T) {
	src := filepath.Join(testbackend.CorpusDir(t), "eduardodmb")
	dst := t.TempDir()
	state := filepath.Join(t.TempDir(), "state")
	plan := replayPlan(t, src, dst)
	addr := fmt.Sprintf("127.0.0.1:%d", testbackend.FreePort(t))
	args := []string{"--claude.dir=" + dst, "--state.file=" + state, "--state.flush-interval=150ms",
		"--tail.poll-interval=20ms", "--tail.rescan-interval=200ms", "--sessions.idle-timeout=4s", "--traces.exporter=none"}

	// Append the tree over a few seconds in bursts, while killing.
	var written atomic.Int64
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		rng := rand.New(rand.NewSource(1))
		for i := 0; i < len(plan); {
			n := 1 + rng.Intn(40)
			if i+n > len(plan) {
				n = len(plan) - i
			}
			appendLines(t, dst, plan[i:i+n], rng.Intn(4) == 0)
			i += n
			written.Store(int64(i))
			time.Sleep(time.Duration(5+rng.Intn(20)) * time.Millisecond)
		}
	}()

	rng := rand.New(rand.NewSource(2))
	p := startDaemon(t, addr, args...)
	for kill := 0; kill < 20; kill++ {
		time.Sleep(time.Duration(50+rng.Intn(400)) * time.Millisecond)
		p.kill9()
		p = startDaemon(t, addr, args...)
	}
	<-writerDone
	waitReady(t, addr, p)
	t.Logf("replayed %d lines with 20 SIGKILLs", written.Load())

	want, err := indepcount.Count(dst)
	if err != nil {
		t.Fatal(err)
	}
	check := func() (ok bool, report func()) {
		mfs := parseExposition(t, scrape(t, addr))
		wantTokens := map[string]float64{}
		for model, types := range want.Tokens {
			for typ, n := range types {
				wantTokens[model+"|"+typ] = float64(n)
			}
		}
		wantTools := map[string]float64{}
		for tool, outs := range want.ToolCalls {
			for out, n := range outs {
				wantTools[tool+"|"+out] = float64(n)
			}
		}
		pairs := []struct {
			what      string
			got, want map[string]float64
		}{
			{"tokens", sumBy(mfs, "claude_transcript_tokens_total", "model", "type"), wantTokens},
			{"requests", sumBy(mfs, "claude_transcript_requests_total", "model"), floats(want.Requests)},
			{"tool calls", sumBy(mfs, "claude_transcript_tool_calls_total", "tool", "outcome"), wantTools},
			{"compactions", sumBy(mfs, "claude_transcript_compactions_total", "trigger"), floats(want.Compactions)},
		}
		ok = true
		for _, pr := range pairs {
			for k, v := range pr.want {
				if pr.got[k] != v {
					ok = false
				}
			}
			for k, v := range pr.got {
				if _, in := pr.want[k]; !in && v != 0 {
					ok = false
				}
			}
		}
		return ok, func() {
			for _, pr := range pairs {
				compareMaps(t, pr.what, pr.got, pr.want)
			}
		}
	}
	// Requests settle and idle sessions close (unanswered tools) within
	// the settle window plus the idle timeout.
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	for {
		ok, report := check()
		if ok {
			break
		}
		if ctx.Err() != nil {
			report()
			t.Logf("daemon log:\n%s", lastLines(p.log.String(), 30))
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	p.stop(t)

	// A clean restart with nothing changed reads nothing and changes
	// nothing.
	p = startDaemon(t, addr, args...)
	waitReady(t, addr, p)
	mfs := parseExposition(t, scrape(t, addr))
	if n := sumBy(mfs, "claude_transcript_exporter_lines_read_total")[""]; n != 0 {
		t.Errorf("restart with nothing changed read %v lines, want 0", n)
	}
	if ok, report := check(); !ok {
		t.Error("counters changed across a clean restart")
		report()
	}
	p.stop(t)
}

func lastLines(s string, n int) string {
	lines := bytes.Split([]byte(s), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}
