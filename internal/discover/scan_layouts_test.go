package discover

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"
)

func TestScanFindsEveryLayoutAndSkipsTheRest(t *testing.T) {
	root := t.TempDir()
	other := t.TempDir()
	tests := []struct {
		rel  string // below <root>/projects
		want bool
	}{
		{"-p/s1.jsonl", true},                                  // session
		{"-p/s1/subagents/agent-a1.jsonl", true},               // subagent (2.1.2+)
		{"-p/s1/subagents/agent-a1.meta.json", false},          // its meta, not a transcript
		{"-p/s1/subagents/workflows/wf1/agent-w1.jsonl", true}, // workflow agent
		{"-p/agent-legacy.jsonl", true},                        // legacy agent beside the sessions
		{"-q/s2.jsonl", true},                                  // second project
		{"-q/s2/deeper/other.jsonl", true},                     // any other *.jsonl is still a transcript
		{"-p/.history.jsonl", false},                           // dot-file
		{"-p/sessions-index.json", false},                      // not jsonl
		{"-p/notes.txt", false},                                // not jsonl
		{"-p/s1/tool-results/x.txt", false},                    // tool output
		{"-p/s1/tool-results/y.jsonl", false},                  // tool-results is never walked
	}
	for _, tt := range tests {
		writeFile(t, filepath.Join(root, "projects", filepath.FromSlash(tt.rel)), "{}\n")
	}
	writeFile(t, filepath.Join(root, "history.jsonl"), "{}\n") // outside projects/
	writeFile(t, filepath.Join(other, "projects", "-r", "s3.jsonl"), "{}\n")
	if runtime.GOOS != "windows" {
		// Symlinked files are not followed (like the daemon's own walk).
		if err := os.Symlink(filepath.Join(root, "projects", "-p", "s1.jsonl"),
			filepath.Join(root, "projects", "-p", "link.jsonl")); err != nil {
			t.Fatal(err)
		}
	}

	w := newTestWatcher(t, Config{
		Roots: []string{root, other, root, filepath.Join(t.TempDir(), "missing")},
	})
	files := mustScan(t, w)

	var want []string
	for _, tt := range tests {
		if tt.want {
			want = append(want, filepath.Join(root, "projects", filepath.FromSlash(tt.rel)))
		}
	}
	want = append(want, filepath.Join(other, "projects", "-r", "s3.jsonl"))
	slices.Sort(want)
	if got := paths(files); !slices.Equal(got, want) {
		t.Errorf("Scan paths:\n got %q\nwant %q", got, want)
	}
	if !slices.IsSortedFunc(files, func(a, b File) int {
		if a.Path < b.Path {
			return -1
		}
		return 1
	}) {
		t.Errorf("Scan result not sorted by path")
	}
	for _, f := range files {
		if f.Size != 3 || f.ModTime.IsZero() {
			t.Errorf("%s: size %d mtime %v, want 3 and a time", f.Path, f.Size, f.ModTime)
		}
		if runtime.GOOS != "windows" && f.Ino == 0 {
			t.Errorf("%s: no inode", f.Path)
		}
		if f.Dir != filepath.Dir(f.Path) {
			t.Errorf("%s: dir %q, want %q", f.Path, f.Dir, filepath.Dir(f.Path))
		}
	}
}

func TestScanReportsFilesWithTheirCurrentSize(t *testing.T) {
	root := t.TempDir()
	path := filepath.Join(root, "projects", "-p", "s.jsonl")
	writeFile(t, path, "{}\n")
	w := newTestWatcher(t, Config{Roots: []string{root}, PollOnly: true})
	first := mustScan(t, w)
	writeFile(t, path, "{}\n{}\n")
	second := mustScan(t, w)
	if len(first) != 1 || len(second) != 1 {
		t.Fatalf("got %d then %d files, want 1 and 1", len(first), len(second))
	}
	if first[0].Size != 3 || second[0].Size != 6 {
		t.Errorf("sizes %d then %d, want 3 then 6", first[0].Size, second[0].Size)
	}
	if runtime.GOOS != "windows" && (first[0].Ino != second[0].Ino || first[0].Dev != second[0].Dev) {
		t.Errorf("identity changed on rewrite in place: %+v then %+v", first[0], second[0])
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
	}{
		{"no match", Config{Roots: []string{"x"}}},
		{"no roots", Config{Match: isTranscript}},
		{"negative interval", Config{Roots: []string{"x"}, Match: isTranscript, RescanInterval: -1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if w, err := New(tt.cfg); err == nil {
				_ = w.Close()
				t.Errorf("New(%+v) = nil error", tt.cfg)
			}
		})
	}
}

func TestScanFollowsLinkedRootAndProjectsButNotLinksBelow(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("symlinks need privileges on Windows")
	}
	target := t.TempDir()
	writeFile(t, filepath.Join(target, "projects", "-p", "s.jsonl"), "{}\n")
	elsewhere := t.TempDir()
	writeFile(t, filepath.Join(elsewhere, "-x", "x.jsonl"), "{}\n")
	if err := os.Symlink(elsewhere, filepath.Join(target, "projects", "linked")); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "claude")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	w := newTestWatcher(t, Config{Roots: []string{link}})
	want := []string{filepath.Join(link, "projects", "-p", "s.jsonl")}
	if got := paths(mustScan(t, w)); !slices.Equal(got, want) {
		t.Errorf("Scan = %q, want %q", got, want)
	}
	later := filepath.Join(link, "projects", "-p", "t.jsonl")
	writeFile(t, later, "{}\n")
	waitEvent(t, w, later, Changed)
}

// TestScanSaysWhichFilesHaveNoMetaToLookFor: a file is NoMeta when its
// directory lists no .meta.json and it was last written over MetaSettled
// before the scan; one .meta.json in the directory, or a recent write,
// and the reader looks for it as before.
func TestScanSaysWhichFilesHaveNoMetaToLookFor(t *testing.T) {
	root := t.TempDir()
	proj := filepath.Join(root, "projects", "-p")
	old := time.Now().Add(-2 * MetaSettled)
	files := map[string]bool{ // path under proj: want NoMeta
		"11111111-1111-1111-1111-111111111111.jsonl":                   true,
		"agent-legacy.jsonl":                                           true,
		"agent-recent.jsonl":                                           false,
		"22222222-2222-2222-2222-222222222222/subagents/agent-a.jsonl": false,
		"22222222-2222-2222-2222-222222222222/subagents/agent-b.jsonl": false,
		"33333333-3333-3333-3333-333333333333/subagents/agent-c.jsonl": true,
	}
	for rel := range files {
		p := filepath.Join(proj, rel)
		writeFile(t, p, "{}\n")
		if rel != "agent-recent.jsonl" {
			if err := os.Chtimes(p, old, old); err != nil {
				t.Fatal(err)
			}
		}
	}
	// One meta for two agents: the directory has metas, so neither is
	// judged from the listing.
	writeFile(t, filepath.Join(proj, "22222222-2222-2222-2222-222222222222/subagents/agent-a.meta.json"), "{}")
	w := newTestWatcher(t, Config{Roots: []string{root}, PollOnly: true})
	got := mustScan(t, w)
	if len(got) != len(files) {
		t.Fatalf("scan found %d files, want %d: %+v", len(got), len(files), got)
	}
	for _, f := range got {
		rel, _ := filepath.Rel(proj, f.Path)
		if want, ok := files[filepath.ToSlash(rel)]; !ok || f.NoMeta != want {
			t.Errorf("%s: NoMeta %v, want %v", rel, f.NoMeta, want)
		}
	}
}
