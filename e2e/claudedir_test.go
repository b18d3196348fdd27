package e2e

import (
	"path/filepath"
	"syscall"
	"testing"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/indepcount"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/testbackend"
)

// alive is the test's own liveness rule for a pid: signal 0 reaches it.
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || err == syscall.EPERM
}

// claudeDirTrees are the corpus trees and the synthetic ones.
func claudeDirTrees(t *testing.T) []string {
	synthetic, err := filepath.Glob(filepath.Join(testbackend.RepoRoot(t), "testdata", "synthetic", "*", "projects"))
	if err != nil || len(synthetic) == 0 {
		t.Fatalf("no synthetic trees: %v", err)
	}
	trees := testbackend.CorpusTrees(t)
	for _, p := range synthetic {
		trees = append(trees, filepath.Dir(p))
	}
	return trees
}

func TestClaudeDirFilesEqualIndependentCount(t *testing.T) {
	var prompts, commands, tasks, todos float64
	for _, tree := range claudeDirTrees(t) {
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
			compareMaps(t, "prompts{project}", sumBy(mfs, "claude_transcript_prompts_total", "project"), floats(want.Prompts))
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
