package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/testonly/indepcount"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/testonly/testbackend"
)

// alive is the test's own liveness rule for a pid: signal 0 reaches it.
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || err == syscall.EPERM
}

// allTrees are the corpus trees and the synthetic ones.
func allTrees(t *testing.T) []string {
	return append(testbackend.CorpusTrees(t), testbackend.SyntheticTrees(t)...)
}

func TestClaudeDirFilesEqualIndependentCount(t *testing.T) {
	var prompts, commands, tasks, todos float64
	for _, tree := range allTrees(t) {
		t.Run(filepath.Base(tree), func(t *testing.T) {
			want, err := indepcount.CountFiles(tree, alive)
			if err != nil {
				t.Fatal(err)
			}
			mfs := parseExposition(t, oneshot(t, "--claude.dir="+tree))
			nonzero := func(m map[string]float64) map[string]float64 {
				for k, v := range m {
					if v == 0 {
						delete(m, k)
					}
				}
				return m
			}
			compareMaps(t, "tasks{status}", nonzero(sumBy(mfs, "claude_transcript_tasks", "status")), floats(want.Tasks))
			compareMaps(t, "todos{status}", nonzero(sumBy(mfs, "claude_transcript_todos", "status")), floats(want.Todos))
			// The independent count labels by basename; the exporter gives a
			// second working dir of a basename basename~<hash> (never the
			// same label as the first): their sum is the basename's.
			compareMaps(t, "prompts{project}", byBasename(sumBy(mfs, "claude_transcript_prompts_total", "project")), floats(want.Prompts))
			compareMaps(t, "slash_commands{command}", sumBy(mfs, "claude_transcript_slash_commands_total", "command"), floats(want.Commands))
			compareMaps(t, "sessions_running{entrypoint|kind|status}",
				sumBy(mfs, "claude_transcript_sessions_running", "entrypoint", "kind", "status"), floats(want.Running))
			if got := sumBy(mfs, "claude_transcript_session_files_stale")[""]; got != float64(want.Stale) {
				t.Errorf("stale session files = %v, independent count %d", got, want.Stale)
			}
			compareMaps(t, "jobs{state}", sumBy(mfs, "claude_transcript_jobs", "state"), floats(want.Jobs))
			compareMaps(t, "claude_dir_errors{file|reason}",
				sumBy(mfs, "claude_transcript_exporter_claude_dir_errors_total", "file", "reason"), floats(want.Errors))
			for _, n := range want.Prompts {
				prompts += float64(n)
			}
			for _, n := range want.Commands {
				commands += float64(n)
			}
			for _, n := range want.Tasks {
				tasks += float64(n)
			}
			for _, n := range want.Todos {
				todos += float64(n)
			}
		})
	}
	t.Logf("across every tree: %v prompts, %v slash commands, %v tasks, %v todos", prompts, commands, tasks, todos)
	if prompts == 0 || commands == 0 || tasks == 0 || todos == 0 {
		t.Errorf("the trees hold no prompts, commands, tasks or todos: the test proves nothing")
	}
}

// TestClaudeDirFilesFollowTheDisk runs the daemon over a Claude dir that
// changes: a session starts and ends, the user types, a session crashes
// leaving its file behind, and the daemon restarts. /metrics follows every
// change, and the prompt counters neither reset nor double.
func TestClaudeDirFilesFollowTheDisk(t *testing.T) {
	dir := t.TempDir()
	mustWrite := func(rel, text string) {
		t.Helper()
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	appendLine := func(rel, line string) {
		t.Helper()
		f, err := os.OpenFile(filepath.Join(dir, rel), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString(line + "\n"); err != nil {
			t.Fatal(err)
		}
	}
	mustWrite("projects/-work-app/.keep", "")
	mustWrite("history.jsonl", `{"display":"lorem","pastedContents":{},"timestamp":1763900000000,"project":"/work/app"}`+"\n"+
		`{"display":"ipsum","pastedContents":{},"timestamp":1763900001000,"project":"/work/app"}`+"\n")
	mustWrite("todos/s-agent-s.json", `[{"content":"x","status":"pending","activeForm":"x"}]`)

	addr := fmt.Sprintf("127.0.0.1:%d", testbackend.FreePort(t))
	args := []string{"--claude.dir=" + dir, "--traces.exporter=none", "--claude.files-interval=100ms",
		"--state.file=" + filepath.Join(t.TempDir(), "state")}
	p := startDaemon(t, addr, args...)
	t.Cleanup(func() { p.stop(t) })
	waitReady(t, addr, p)

	metric := func(name string, labels ...string) float64 {
		mfs := parseExposition(t, scrape(t, addr))
		by := sumBy(mfs, name, labels...)
		var v float64
		for _, n := range by {
			v += n
		}
		return v
	}
	until := func(what string, name string, want float64, labels ...string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			got := metric(name, labels...)
			if got == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %s = %v, want %v", what, name, got, want)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	until("at start", "claude_transcript_prompts_total", 2)
	until("at start", "claude_transcript_sessions_running", 0)

	// A session starts: this test's own process stands for it.
	live := fmt.Sprintf(`{"pid":%d,"sessionId":"7d1c6a2e-0000-4000-8000-00000000000a","cwd":"/work/app","startedAt":1763900000000,"version":"2.1.260","kind":"interactive","entrypoint":"cli","status":"busy","updatedAt":1763900000000}`, os.Getpid())
	mustWrite(fmt.Sprintf("sessions/%d.json", os.Getpid()), live)
	until("a session starts", "claude_transcript_sessions_running", 1)
	if v := parseExposition(t, scrape(t, addr)); sumBy(v, "claude_transcript_sessions_running", "entrypoint", "kind", "status")["cli|interactive|busy"] != 1 {
		t.Errorf("the running session is not labelled cli|interactive|busy: %v", sumBy(v, "claude_transcript_sessions_running", "entrypoint", "kind", "status"))
	}
	// The user types a prompt and a command; a todo is done.
	appendLine("history.jsonl", `{"display":"/compact keep the API","pastedContents":{},"timestamp":1763900002000,"project":"/work/app"}`)
	appendLine("history.jsonl", `{"display":"dolor","pastedContents":{},"timestamp":1763900003000,"project":"/work/app"}`)
	mustWrite("todos/s-agent-s.json", `[{"content":"x","status":"completed","activeForm":"x"}]`)
	until("a prompt typed", "claude_transcript_prompts_total", 3)
	until("a command typed", "claude_transcript_slash_commands_total", 1)
	waitFor(t, func() bool {
		v := sumBy(parseExposition(t, scrape(t, addr)), "claude_transcript_todos", "status")
		return v["pending"] == 0 && v["completed"] == 1
	})
	// The session ends; another one crashed long ago, leaving its file.
	if err := os.Remove(filepath.Join(dir, fmt.Sprintf("sessions/%d.json", os.Getpid()))); err != nil {
		t.Fatal(err)
	}
	mustWrite("sessions/2147483000.json", `{"pid":2147483000,"sessionId":"x","kind":"interactive","entrypoint":"cli","status":"busy"}`)
	until("the session ends", "claude_transcript_sessions_running", 0)
	until("a crashed session's file", "claude_transcript_session_files_stale", 1)

	// A restart reads the history again: the counters carry on, not double.
	p.stop(t)
	p = startDaemon(t, addr, args...)
	waitReady(t, addr, p)
	until("after a restart", "claude_transcript_prompts_total", 3)
	until("after a restart", "claude_transcript_slash_commands_total", 1)
}

// TestPIDCheckOffCountsEverySessionFileAsRunning is the compose stack's
// setting: a container cannot see Claude Code's processes.
func TestPIDCheckOffCountsEverySessionFileAsRunning(t *testing.T) {
	tree := filepath.Join(testbackend.RepoRoot(t), "testdata", "synthetic", "claudedir")
	on := parseExposition(t, oneshot(t, "--claude.dir="+tree))
	off := parseExposition(t, oneshot(t, "--claude.dir="+tree, "--no-claude.pid-check"))
	running := func(m map[string]*dto.MetricFamily) float64 {
		return sumBy(m, "claude_transcript_sessions_running")[""]
	}
	stale := func(m map[string]*dto.MetricFamily) float64 {
		return sumBy(m, "claude_transcript_session_files_stale")[""]
	}
	if running(on) != 1 || stale(on) != 1 || running(off) != 2 || stale(off) != 0 {
		t.Errorf("running/stale with the pid check %v/%v, without %v/%v; want 1/1 and 2/0", running(on), stale(on), running(off), stale(off))
	}
}

// hashedLabel is a project label the exporter gave a working dir whose
// basename another dir had first (dl~3f2a).
var hashedLabel = regexp.MustCompile(`^(.*)~[0-9a-f]{4,64}$`)

// byBasename sums project-labelled values by the basename their labels
// were made from.
func byBasename(m map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range m {
		if s := hashedLabel.FindStringSubmatch(k); s != nil {
			k = s[1]
		}
		out[k] += v
	}
	return out
}
