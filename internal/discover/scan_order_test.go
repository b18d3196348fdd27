package discover

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// walkReference lists what Scan must return for one root, the simple way:
// filepath.WalkDir, lstat by full path, sort the paths.
func walkReference(t *testing.T, root string) []string {
	t.Helper()
	var want []string
	err := filepath.WalkDir(filepath.Join(root, "projects"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == skippedDir {
			return filepath.SkipDir
		}
		if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() && isTranscript(d.Name()) {
			want = append(want, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(want)
	return want
}

func TestScanListsPathsInOrderWhateverTheNames(t *testing.T) {
	tests := []struct {
		name  string
		files []string // below <root>/projects
	}{
		{"a directory sorts by its name and the separator", []string{
			"-p/x.jsonl", "-p/x-y.jsonl", "-p/x/a.jsonl", "-p/x-y/a.jsonl", "-p/x/subagents/agent-1.jsonl",
		}},
		{"session files beside session dirs", []string{
			"-p/s1.jsonl", "-p/s1/subagents/agent-a.jsonl", "-p/s10.jsonl", "-p/s1-b.jsonl",
			"-p/s1/subagents/workflows/wf/agent-w.jsonl", "-p/agent-legacy.jsonl",
		}},
		{"names with bytes below and above the separator", []string{
			"-p/a!.jsonl", "-p/a/b.jsonl", "-p/a0.jsonl", "-p/a .jsonl", "-p/a~/c.jsonl", "-p/é.jsonl", "-p/a.jsonl",
		}},
		{"a prefix name is a directory", []string{
			"-p/ab/x.jsonl", "-p/a/x.jsonl", "-p/a.b/x.jsonl", "-p/a-b.jsonl",
		}},
		{"projects whose names share prefixes", []string{
			"-home-u-src/s.jsonl", "-home-u-src-x/s.jsonl", "-home-u/s.jsonl", "-home-u-src/t/subagents/agent-1.jsonl",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			for _, rel := range tt.files {
				writeFile(t, filepath.Join(root, "projects", filepath.FromSlash(rel)), "{}\n")
			}
			want := walkReference(t, root)
			if len(want) != len(tt.files) {
				t.Fatalf("reference walk found %d files, want %d", len(want), len(tt.files))
			}
			w := newTestWatcher(t, Config{Roots: []string{root}, PollOnly: true})
			for i := range 2 {
				if got := paths(mustScan(t, w)); !slices.Equal(got, want) {
					t.Errorf("scan %d:\n got %q\nwant %q", i, got, want)
				}
			}
			// The walk itself visits them in order: Scan need not sort.
			var walked []string
			wk := walker{w: w, file: func(f File) { walked = append(walked, f.Path) }}
			wk.walk(filepath.Join(root, "projects"), nil)
			if !slices.Equal(walked, want) {
				t.Errorf("walk order:\n got %q\nwant %q", walked, want)
			}
		})
	}
}

func TestScanAfterFilesCameAndWentMatchesAFreshWalk(t *testing.T) {
	tests := []struct {
		name          string
		before, after []string // files present at the first and the second scan
	}{
		{"files added before, between and after known ones",
			[]string{"-p/b.jsonl", "-p/d.jsonl"},
			[]string{"-p/a.jsonl", "-p/b.jsonl", "-p/c.jsonl", "-p/d.jsonl", "-p/e.jsonl"}},
		{"files removed", []string{"-p/a.jsonl", "-p/b.jsonl", "-p/c/subagents/agent-1.jsonl"}, []string{"-p/b.jsonl"}},
		{"everything replaced", []string{"-p/a.jsonl", "-q/b.jsonl"}, []string{"-r/c.jsonl"}},
		{"a file becomes a directory", []string{"-p/x.jsonl"}, []string{"-p/x.jsonl/y.jsonl"}},
		{"from nothing", nil, []string{"-p/a.jsonl"}},
		{"to nothing", []string{"-p/a.jsonl"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			projects := filepath.Join(root, "projects")
			mkdir(t, projects)
			sync := func(rels []string) {
				entries, err := os.ReadDir(projects)
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range entries {
					if err := os.RemoveAll(filepath.Join(projects, e.Name())); err != nil {
						t.Fatal(err)
					}
				}
				for _, rel := range rels {
					writeFile(t, filepath.Join(projects, filepath.FromSlash(rel)), "{}\n")
				}
			}
			w := newTestWatcher(t, Config{Roots: []string{root}, PollOnly: true})
			sync(tt.before)
			if got, want := paths(mustScan(t, w)), walkReference(t, root); !slices.Equal(got, want) {
				t.Errorf("first scan:\n got %q\nwant %q", got, want)
			}
			sync(tt.after)
			if got, want := paths(mustScan(t, w)), walkReference(t, root); !slices.Equal(got, want) {
				t.Errorf("second scan:\n got %q\nwant %q", got, want)
			}
		})
	}
}

func TestScanOfOverlappingRootsIsSortedWithoutDuplicates(t *testing.T) {
	outer := t.TempDir()
	// The inner root lies below the outer one's projects/, so its files
	// are found from both roots; and it sorts before it.
	inner := filepath.Join(outer, "projects", "-p", "inner")
	writeFile(t, filepath.Join(outer, "projects", "-p", "s.jsonl"), "{}\n")
	writeFile(t, filepath.Join(inner, "projects", "-q", "t.jsonl"), "{}\n")
	w := newTestWatcher(t, Config{Roots: []string{outer, inner}, PollOnly: true})
	want := walkReference(t, outer)
	if len(want) != 2 {
		t.Fatalf("reference walk found %q, want 2 files", want)
	}
	for i := range 2 {
		if got := paths(mustScan(t, w)); !slices.Equal(got, want) {
			t.Errorf("scan %d:\n got %q\nwant %q", i, got, want)
		}
	}
}

// TestParallelWalkHandsFilesOverAsTheSequentialWalk: walking a projects/
// dir with its projects spread over goroutines hands over the same files,
// with the same stats, in the same order, and records the same watchable
// directories, as one walker going through it alone, whatever the number
// of goroutines (more projects than goroutines, fewer, and files lying in
// projects/ itself between the project dirs).
func TestParallelWalkHandsFilesOverAsTheSequentialWalk(t *testing.T) {
	root := t.TempDir()
	projects := filepath.Join(root, "projects")
	writeFile(t, filepath.Join(projects, "-a.jsonl"), "{}\n")
	writeFile(t, filepath.Join(projects, "-a-b.jsonl"), "{}\n")
	for p := range 23 {
		proj := filepath.Join(projects, fmt.Sprintf("-home-u-p%d", p%7)+strings.Repeat("-x", p/7))
		for s := range p % 5 {
			sess := fmt.Sprintf("s%d", s)
			writeFile(t, filepath.Join(proj, sess+".jsonl"), strings.Repeat("{}\n", s+1))
			if s%2 == 1 {
				writeFile(t, filepath.Join(proj, sess, "subagents", "agent-a"+sess+".jsonl"), "{}\n")
				writeFile(t, filepath.Join(proj, sess, "subagents", "workflows", "wf", "agent-w.jsonl"), "{}\n")
				writeFile(t, filepath.Join(proj, sess, "deeper", "still", "more", "x.jsonl"), "{}\n")
			}
		}
		if p%3 == 0 {
			writeFile(t, filepath.Join(proj, "agent-legacy.jsonl"), "{}\n")
		}
	}
	writeFile(t, filepath.Join(projects, "-home-u-p3.jsonl"), "{}\n")
	walk := func(n int) ([]File, []string) {
		// A watcher of its own: the directories watched are those the
		// walk found watchable.
		w := newTestWatcher(t, Config{Roots: []string{root}})
		var files []File
		wk := walker{w: w, file: func(f File) { files = append(files, f) }}
		wk.walkProjects(projects, n)
		if len(wk.errs) > 0 || len(wk.found) != 0 {
			t.Fatalf("%d goroutines: errors %v, %d stats left", n, wk.errs, len(wk.found))
		}
		return files, watchedDirs(w)
	}
	want, wantDirs := walk(1)
	if ref := walkReference(t, root); !slices.Equal(paths(want), ref) {
		t.Fatalf("sequential walk:\n got %q\nwant %q", paths(want), ref)
	}
	for _, n := range []int{2, 3, 8, 64} {
		got, dirs := walk(n)
		if !slices.Equal(got, want) {
			t.Errorf("%d goroutines:\n got %q\nwant %q", n, paths(got), paths(want))
		}
		if len(wantDirs) == 0 || !slices.Equal(dirs, wantDirs) {
			t.Errorf("%d goroutines: watchable dirs %d, want %d", n, len(dirs), len(wantDirs))
		}
	}
}
