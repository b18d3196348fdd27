package discover

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestScanWatchesLayoutDirectoriesOnly(t *testing.T) {
	root := t.TempDir()
	p := filepath.Join(root, "projects")
	for _, rel := range []string{
		"-p/s1.jsonl",
		"-p/s1/subagents/agent-a.jsonl",
		"-p/s1/subagents/workflows/wf/agent-w.jsonl",
		"-p/s1/tool-results/x.txt",
		"-p/s1/subagents/workflows/wf/deeper/z.jsonl",
		"-p/s1/other/y.jsonl",
	} {
		writeFile(t, filepath.Join(p, filepath.FromSlash(rel)), "{}\n")
	}
	w := newTestWatcher(t, Config{Roots: []string{root}})
	mustScan(t, w)

	want := []string{
		p,
		filepath.Join(p, "-p"),
		filepath.Join(p, "-p", "s1", "subagents"),
		filepath.Join(p, "-p", "s1", "subagents", "workflows"),
		filepath.Join(p, "-p", "s1", "subagents", "workflows", "wf"),
	}
	// Not watched: tool-results/, <session>/other/, workflows/wf/deeper/,
	// and the session's dir, which has its subagents/ already.
	slices.Sort(want)
	if got := watchedDirs(w); !slices.Equal(got, want) {
		t.Errorf("watched:\n got %q\nwant %q", got, want)
	}
	if st := w.Stats(); st.DirsWatched != len(want) || st.Fallback || st.WatchErrors != 0 {
		t.Errorf("Stats = %+v, want %d dirs, no fallback, no errors", st, len(want))
	}

	// A directory that went is unwatched by the next Scan, and the
	// session's dir is watched again to see a subagents/ come back.
	if err := os.RemoveAll(filepath.Join(p, "-p", "s1", "subagents")); err != nil {
		t.Fatal(err)
	}
	mustScan(t, w)
	want = []string{p, filepath.Join(p, "-p"), filepath.Join(p, "-p", "s1")}
	if got := watchedDirs(w); !slices.Equal(got, want) {
		t.Errorf("after removal, watched:\n got %q\nwant %q", got, want)
	}
}

func TestScanWatchesRootUntilProjectsAppears(t *testing.T) {
	root := t.TempDir()
	w := newTestWatcher(t, Config{Roots: []string{root}})
	mustScan(t, w)
	if got := watchedDirs(w); !slices.Equal(got, []string{root}) {
		t.Fatalf("without projects/, watched %q, want the root", got)
	}
	mkdir(t, filepath.Join(root, "projects"))
	mustScan(t, w)
	if got, want := watchedDirs(w), []string{filepath.Join(root, "projects")}; !slices.Equal(got, want) {
		t.Errorf("with projects/, watched %q, want %q", got, want)
	}
}

func TestWatchablePolicy(t *testing.T) {
	tests := []struct {
		parts []string
		want  bool
	}{
		{nil, true},
		{[]string{"-p"}, true},
		{[]string{"-p", "s"}, true},
		{[]string{"-p", "s", "subagents"}, true},
		{[]string{"-p", "s", "other"}, false},
		{[]string{"-p", "s", "subagents", "workflows"}, true},
		{[]string{"-p", "s", "subagents", "other"}, false},
		{[]string{"-p", "s", "subagents", "workflows", "wf"}, true},
		{[]string{"-p", "s", "subagents", "workflows", "wf", "x"}, false},
	}
	for _, tt := range tests {
		if got := watchable(tt.parts); got != tt.want {
			t.Errorf("watchable(%q) = %v, want %v", tt.parts, got, tt.want)
		}
	}
}
