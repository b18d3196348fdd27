package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/testonly/testbackend"
)

// seqLine is request n of session s: unique message id, output n+1
// tokens, so sums are known exactly.
func seqLine(s, n int) string {
	return fmt.Sprintf(`{"type":"assistant","uuid":"u-%d-%d","sessionId":"s%d","timestamp":"%s","cwd":"/w/proj","message":{"id":"msg_%d_%d","model":"claude-haiku-4-5","role":"assistant","stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":%d}}}`+"\n",
		s, n, s, time.Now().UTC().Format("2006-01-02T15:04:05.000Z"), s, n, n+1)
}

type tailEnv struct {
	t     *testing.T
	dir   string
	proj  string
	addr  string
	proc  *daemonProc
	args  []string
	last  map[string]float64
	state string
}

func newTailEnv(t *testing.T) *tailEnv {
	dir := t.TempDir()
	proj := filepath.Join(dir, "projects", "-w-proj")
	if err := os.MkdirAll(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	e := &tailEnv{t: t, dir: dir, proj: proj, addr: fmt.Sprintf("127.0.0.1:%d", testbackend.FreePort(t)),
		state: filepath.Join(t.TempDir(), "state"), last: map[string]float64{}}
	e.args = []string{"--claude.dir=" + dir, "--state.file=" + e.state, "--state.flush-interval=100ms",
		"--tail.poll-interval=20ms", "--tail.rescan-interval=100ms", "--traces.exporter=none"}
	return e
}

func (e *tailEnv) start() {
	e.proc = startDaemon(e.t, e.addr, e.args...)
	waitReady(e.t, e.addr, e.proc)
	e.t.Cleanup(func() {
		select {
		case <-e.proc.done:
		default:
			e.proc.stop(e.t)
		}
	})
}

// counters scrapes output tokens and requests, and checks that neither
// ever went down since the last scrape.
func (e *tailEnv) counters() (out, req float64) {
	mfs := parseExposition(e.t, scrape(e.t, e.addr))
	out = sumBy(mfs, "claude_transcript_tokens_total", "type")["output"]
	req = sumBy(mfs, "claude_transcript_requests_total")[""]
	if out < e.last["out"] || req < e.last["req"] {
		e.t.Fatalf("a counter went down: output %v -> %v, requests %v -> %v", e.last["out"], out, e.last["req"], req)
	}
	e.last["out"], e.last["req"] = out, req
	return out, req
}

func (e *tailEnv) waitCounters(wantOut, wantReq float64) {
	e.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		out, req := e.counters()
		if out == wantOut && req == wantReq {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("output tokens %v, requests %v; want %v, %v\n%s", out, req, wantOut, wantReq, lastLines(e.proc.log.String(), 20))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func appendTo(t *testing.T, path, s string) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

// expected output tokens of requests 0..n-1 of one session: 1+2+...+n.
func tri(n int) float64 { return float64(n * (n + 1) / 2) }

// TestAppendOneByOneInBurstsAndByteByByte follows lines appended one at a
// time, in bursts, and byte by byte across the newline: every request is
// counted once, half-written lines wait for their newline.
func TestAppendOneByOneInBurstsAndByteByByte(t *testing.T) {
	e := newTailEnv(t)
	path := filepath.Join(e.proj, "s1.jsonl")
	appendTo(t, path, "")
	e.start()
	n := 0
	for ; n < 10; n++ { // one by one
		appendTo(t, path, seqLine(1, n))
		time.Sleep(5 * time.Millisecond)
	}
	var burst strings.Builder
	for ; n < 60; n++ { // a burst
		burst.WriteString(seqLine(1, n))
	}
	appendTo(t, path, burst.String())
	for end := n + 3; n < end; n++ { // byte by byte
		line := seqLine(1, n)
		for i := 0; i < len(line); i++ {
			appendTo(t, path, line[i:i+1])
			if i%50 == 0 || i >= len(line)-2 {
				e.counters()
			}
		}
	}
	e.waitCounters(tri(n), float64(n))
	mfs := parseExposition(t, scrape(t, e.addr))
	if r := sumBy(mfs, "claude_transcript_exporter_decode_errors_total")[""]; r != 0 {
		t.Errorf("decode errors = %v: a half-written line was read before its newline", r)
	}
}

// TestRotationStressStaysExactAndMonotonic runs sequence-numbered sessions
// through append, truncate-and-rewrite, rename and delete: counters never
// go down, nothing is counted twice, nothing is lost.
func TestRotationStressStaysExactAndMonotonic(t *testing.T) {
	e := newTailEnv(t)
	e.start()
	const sessions = 6
	written := make([]int, sessions)
	path := func(s int) string { return filepath.Join(e.proj, fmt.Sprintf("s%d.jsonl", s)) }
	write := func(s, k int) {
		var b strings.Builder
		for i := 0; i < k; i++ {
			b.WriteString(seqLine(s, written[s]))
			written[s]++
		}
		appendTo(t, path(s), b.String())
	}
	total := func() (out, req float64) {
		for s := 0; s < sessions; s++ {
			out += tri(written[s])
			req += float64(written[s])
		}
		return
	}
	for round := 0; round < 5; round++ {
		for s := 0; s < sessions; s++ {
			write(s, 5+round)
		}
		e.waitCounters(total())
		// Truncate and rewrite session 0 in place with its full content
		// (as a resume or compaction rewrite does): no double count.
		b, err := os.ReadFile(path(0))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path(0), b[:len(b)/3], 0o644); err != nil {
			t.Fatal(err)
		}
		e.counters()
		if err := os.WriteFile(path(0), b, 0o644); err != nil {
			t.Fatal(err)
		}
		// Rename session 1's file (a new name, same content): no double
		// count; appends to the new name count.
		newName := filepath.Join(e.proj, fmt.Sprintf("renamed-%d.jsonl", round))
		if err := os.Rename(path(1), newName); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(newName, path(1)); err != nil {
			t.Fatal(err)
		}
		// Delete session 2 (cleanupPeriodDays): its counts stay; it
		// starts again with new requests.
		if err := os.Remove(path(2)); err != nil {
			t.Fatal(err)
		}
		e.counters()
		write(2, 2)
		write(3, 3)
		e.waitCounters(total())
	}
}

// TestDeletedTranscriptsKeepTheirCountsAcrossRestart removes files (as
// cleanupPeriodDays does) and restarts: counters are unchanged.
func TestDeletedTranscriptsKeepTheirCountsAcrossRestart(t *testing.T) {
	e := newTailEnv(t)
	for s := 0; s < 3; s++ {
		var b strings.Builder
		for n := 0; n < 20; n++ {
			b.WriteString(seqLine(s, n))
		}
		appendTo(t, filepath.Join(e.proj, fmt.Sprintf("s%d.jsonl", s)), b.String())
	}
	e.start()
	e.waitCounters(3*tri(20), 60)
	for s := 0; s < 2; s++ {
		if err := os.Remove(filepath.Join(e.proj, fmt.Sprintf("s%d.jsonl", s))); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(300 * time.Millisecond) // a rescan and a state write
	e.counters()
	e.proc.stop(t)
	e.start()
	e.waitCounters(3*tri(20), 60)
	mfs := parseExposition(t, scrape(t, e.addr))
	if n := sumBy(mfs, "claude_transcript_exporter_files_watched")[""]; n != 1 {
		t.Errorf("files watched = %v, want 1", n)
	}
}

// TestCorruptStateFileFailsAtStartNamingFileAndFlag checks that a broken
// state file is a clear error, and --state.reset recovers.
func TestCorruptStateFileFailsAtStartNamingFileAndFlag(t *testing.T) {
	e := newTailEnv(t)
	appendTo(t, filepath.Join(e.proj, "s1.jsonl"), seqLine(1, 0))
	if err := os.WriteFile(e.state, []byte(`{"version":1,"files":[`), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startDaemon(t, e.addr, e.args...)
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		p.kill9()
		t.Fatal("daemon started on a corrupt state file")
	}
	msg := p.log.String()
	if !strings.Contains(msg, e.state) || !strings.Contains(msg, "--state.reset") {
		t.Fatalf("error does not name the file and --state.reset:\n%s", msg)
	}
	e.args = append(e.args, "--state.reset")
	e.start()
	e.waitCounters(1, 1)
}

// TestDefaultClaudeDirThatDoesNotExistYetIsWaitedFor starts the exporter
// on its defaults in a home without ~/.claude (Claude Code creates it on
// first use): it starts, and counts the first transcript once it appears.
// An explicit --claude.dir that does not exist is an error instead
// (TestBadFlagsFailAtStartNamingTheFlag).
func TestDefaultClaudeDirThatDoesNotExistYetIsWaitedFor(t *testing.T) {
	home := t.TempDir()
	addr := fmt.Sprintf("127.0.0.1:%d", testbackend.FreePort(t))
	p := &daemonProc{done: make(chan struct{}), log: &syncBuffer{}}
	p.cmd = exec.Command(binary(t), "--web.listen-address="+addr, "--tail.rescan-interval=100ms", "--traces.exporter=none")
	p.cmd.Env = append(os.Environ(), "HOME="+home, "CLAUDE_CONFIG_DIR=", "XDG_STATE_HOME="+filepath.Join(home, "state"))
	p.cmd.Stderr = p.log
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() { p.stop(t) })
	waitReady(t, addr, p)
	proj := filepath.Join(home, ".claude", "projects", "-w-proj")
	if err := os.MkdirAll(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	appendTo(t, filepath.Join(proj, "s1.jsonl"), seqLine(1, 0)+seqLine(1, 1))
	e := &tailEnv{t: t, addr: addr, proc: p, last: map[string]float64{}}
	e.waitCounters(3, 2)
}
