package discover

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

// TestChangesAreHintedOrRescanned drives real fsnotify: each case lays out
// a tree, Scans (which adds the watches), changes the tree, and waits for
// the hint — or, where the design allows either, for a hint or a rescan
// request after which Scan lists the file.
func TestChangesAreHintedOrRescanned(t *testing.T) {
	tests := []struct {
		name   string
		before []string // files below projects/ before the first Scan
		dirs   []string // dirs below the root before the first Scan
		act    func(t *testing.T, projects string)
		path   string // below projects/
		op     Op
		// exact: a hint for path with op is required; otherwise a
		// Changed hint or a requested rescan listing path will do.
		exact bool
	}{
		{
			name:   "file created in existing project dir is hinted changed",
			before: []string{"-p/old.jsonl"},
			act:    func(t *testing.T, p string) { writeFile(t, filepath.Join(p, "-p", "new.jsonl"), "{}\n") },
			path:   "-p/new.jsonl", op: Changed, exact: true,
		},
		{
			name:   "append to a known file is hinted changed",
			before: []string{"-p/s.jsonl"},
			act:    func(t *testing.T, p string) { appendFile(t, filepath.Join(p, "-p", "s.jsonl"), "{}\n") },
			path:   "-p/s.jsonl", op: Changed, exact: true,
		},
		{
			name:   "subagent file in existing subagents dir is hinted changed",
			before: []string{"-p/s/subagents/agent-a.jsonl"},
			act: func(t *testing.T, p string) {
				writeFile(t, filepath.Join(p, "-p", "s", "subagents", "agent-b.jsonl"), "{}\n")
			},
			path: "-p/s/subagents/agent-b.jsonl", op: Changed, exact: true,
		},
		{
			name:   "removal is hinted removed",
			before: []string{"-p/s.jsonl"},
			act:    func(t *testing.T, p string) { remove(t, filepath.Join(p, "-p", "s.jsonl")) },
			path:   "-p/s.jsonl", op: Removed, exact: true,
		},
		{
			name:   "rename away is hinted removed",
			before: []string{"-p/s.jsonl"},
			act: func(t *testing.T, p string) {
				rename(t, filepath.Join(p, "-p", "s.jsonl"), filepath.Join(p, "-p", "s.jsonl.bak"))
			},
			path: "-p/s.jsonl", op: Removed, exact: true,
		},
		{
			name:   "rename into place is hinted changed",
			before: []string{"-p/s.jsonl"},
			act: func(t *testing.T, p string) {
				writeFile(t, filepath.Join(p, "-p", "tmp"), "{}\n")
				rename(t, filepath.Join(p, "-p", "tmp"), filepath.Join(p, "-p", "t.jsonl"))
			},
			path: "-p/t.jsonl", op: Changed,
		},
		{
			name:   "new project dir and file after start are found",
			before: []string{"-p/s.jsonl"},
			act:    func(t *testing.T, p string) { writeFile(t, filepath.Join(p, "-q", "s.jsonl"), "{}\n") },
			path:   "-q/s.jsonl", op: Changed,
		},
		{
			name:   "new session subagents dir is found",
			before: []string{"-p/s.jsonl"},
			act: func(t *testing.T, p string) {
				writeFile(t, filepath.Join(p, "-p", "s", "subagents", "agent-a.jsonl"), "{}\n")
			},
			path: "-p/s/subagents/agent-a.jsonl", op: Changed,
		},
		{
			name:   "new subagents dir in an existing session dir is found",
			before: []string{"-p/s.jsonl", "-p/s/tool-results/x.txt"},
			act: func(t *testing.T, p string) {
				writeFile(t, filepath.Join(p, "-p", "s", "subagents", "agent-a.jsonl"), "{}\n")
			},
			path: "-p/s/subagents/agent-a.jsonl", op: Changed,
		},
		{
			name:   "new workflow dir is found",
			before: []string{"-p/s/subagents/agent-a.jsonl"},
			act: func(t *testing.T, p string) {
				writeFile(t, filepath.Join(p, "-p", "s", "subagents", "workflows", "wf", "agent-w.jsonl"), "{}\n")
			},
			path: "-p/s/subagents/workflows/wf/agent-w.jsonl", op: Changed,
		},
		{
			name: "projects dir created after start under an existing root is found",
			act:  func(t *testing.T, p string) { writeFile(t, filepath.Join(p, "-p", "s.jsonl"), "{}\n") },
			path: "-p/s.jsonl", op: Changed,
		},
		{
			name: "empty projects dir filled after start is found",
			dirs: []string{"projects"},
			act:  func(t *testing.T, p string) { writeFile(t, filepath.Join(p, "-p", "s.jsonl"), "{}\n") },
			path: "-p/s.jsonl", op: Changed,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			projects := filepath.Join(root, "projects")
			for _, rel := range tt.before {
				writeFile(t, filepath.Join(projects, filepath.FromSlash(rel)), "{}\n")
			}
			for _, rel := range tt.dirs {
				mkdir(t, filepath.Join(root, filepath.FromSlash(rel)))
			}
			w := newTestWatcher(t, Config{Roots: []string{root}})
			mustScan(t, w)

			tt.act(t, projects)
			path := filepath.Join(projects, filepath.FromSlash(tt.path))
			if tt.exact {
				waitEvent(t, w, path, tt.op)
			} else {
				waitFound(t, w, path)
			}
		})
	}
}

func TestFileInNewDirectoryIsHintedEvenIfCreatedBeforeTheWatch(t *testing.T) {
	// A tree moved in at once: every file already exists when the watch on
	// its directory lands, so only the listing of the new dir can hint it.
	root := t.TempDir()
	projects := filepath.Join(root, "projects")
	mkdir(t, projects)
	staging := t.TempDir()
	writeFile(t, filepath.Join(staging, "-q", "s.jsonl"), "{}\n")
	writeFile(t, filepath.Join(staging, "-q", "s", "subagents", "agent-a.jsonl"), "{}\n")

	w := newTestWatcher(t, Config{Roots: []string{root}})
	mustScan(t, w)
	rename(t, filepath.Join(staging, "-q"), filepath.Join(projects, "-q"))

	waitEvents(t, w,
		Event{Path: filepath.Join(projects, "-q", "s.jsonl"), Op: Changed},
		Event{Path: filepath.Join(projects, "-q", "s", "subagents", "agent-a.jsonl"), Op: Changed})
	select {
	case <-w.RescanNeeded():
	default:
		t.Errorf("new directory did not request a rescan")
	}
}

func TestRemovedDirectoryRequestsRescan(t *testing.T) {
	root := t.TempDir()
	projects := filepath.Join(root, "projects")
	writeFile(t, filepath.Join(projects, "-p", "s", "subagents", "agent-a.jsonl"), "{}\n")
	w := newTestWatcher(t, Config{Roots: []string{root}})
	mustScan(t, w)
	drainRescan(w)

	if err := os.RemoveAll(filepath.Join(projects, "-p", "s")); err != nil {
		t.Fatal(err)
	}
	waitRescan(t, w)
	if files := mustScan(t, w); len(files) != 0 {
		t.Errorf("after removal Scan = %q, want none", paths(files))
	}
}

func TestRootFilesOtherThanProjectsAreIgnored(t *testing.T) {
	// The root is watched while projects/ is missing; history.jsonl there
	// matches the name test but is not a transcript.
	root := t.TempDir()
	w := newTestWatcher(t, Config{Roots: []string{root}})
	mustScan(t, w)
	writeFile(t, filepath.Join(root, "history.jsonl"), "{}\n")
	writeFile(t, filepath.Join(root, "projects", "-p", "s.jsonl"), "{}\n")
	// Whatever arrives first, history.jsonl is never hinted.
	waitFound(t, w, filepath.Join(root, "projects", "-p", "s.jsonl"))
	for {
		select {
		case ev := <-w.Events():
			if ev.Path == filepath.Join(root, "history.jsonl") {
				t.Fatalf("hinted %v", ev)
			}
		default:
			return
		}
	}
}

func appendFile(t *testing.T, path, content string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(content); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func remove(t *testing.T, path string) {
	t.Helper()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
}

func rename(t *testing.T, from, to string) {
	t.Helper()
	if err := os.Rename(from, to); err != nil {
		t.Fatal(err)
	}
}

func drainRescan(w *Watcher) {
	select {
	case <-w.RescanNeeded():
	default:
	}
}

func waitRescan(t *testing.T, w *Watcher) {
	t.Helper()
	select {
	case <-w.RescanNeeded():
	case <-timeAfterLimit():
		t.Fatalf("no rescan requested within %v", waitLimit)
	}
}

// TestSessionDirIsWatchedOnlyUntilItsSubagentsDirIs: a session's dir is
// watched to see its subagents/ appear; once subagents/ has a watch of its
// own the session's is left out (half of all watches on a tree of
// subagents). A subagents/ removed asks for a rescan, which watches the
// session again, so a subagents/ made anew, and its files, are hinted.
func TestSessionDirIsWatchedOnlyUntilItsSubagentsDirIs(t *testing.T) {
	root := t.TempDir()
	projects := filepath.Join(root, "projects")
	sess := filepath.Join(projects, "-p", "s")
	writeFile(t, filepath.Join(sess, "subagents", "agent-a.jsonl"), "{}\n")
	writeFile(t, filepath.Join(projects, "-p", "t.jsonl"), "{}\n")
	mkdir(t, filepath.Join(projects, "-p", "t"))
	// A session's dir with a transcript of its own keeps its watch.
	own := filepath.Join(projects, "-p", "u")
	writeFile(t, filepath.Join(own, "subagents", "agent-d.jsonl"), "{}\n")
	writeFile(t, filepath.Join(own, "own.jsonl"), "{}\n")
	w := newTestWatcher(t, Config{Roots: []string{root}})
	mustScan(t, w)
	drainRescan(w)
	if st := w.Stats(); st.Fallback || w.RescanPeriod() != w.watchedInterval {
		t.Errorf("after the scan: stats %+v, rescan period %v; want every transcript watched (%v)", st, w.RescanPeriod(), w.watchedInterval)
	}
	want := []string{projects, filepath.Join(projects, "-p"), filepath.Join(sess, "subagents"), filepath.Join(projects, "-p", "t"),
		own, filepath.Join(own, "subagents")}
	slices.Sort(want)
	if got := watchedDirs(w); !slices.Equal(got, want) {
		t.Fatalf("watched:\n got %q\nwant %q", got, want)
	}

	// A session without subagents/ yet sees it appear.
	writeFile(t, filepath.Join(projects, "-p", "t", "subagents", "agent-b.jsonl"), "{}\n")
	waitEvents(t, w, Event{Path: filepath.Join(projects, "-p", "t", "subagents", "agent-b.jsonl"), Op: Changed})
	// The next scan leaves its session's dir out too, and keeps the rest.
	waitRescan(t, w)
	mustScan(t, w)
	want = []string{projects, filepath.Join(projects, "-p"), filepath.Join(sess, "subagents"), filepath.Join(projects, "-p", "t", "subagents"),
		own, filepath.Join(own, "subagents")}
	slices.Sort(want)
	if got := watchedDirs(w); !slices.Equal(got, want) {
		t.Fatalf("once the second session's subagents/ is there, watched:\n got %q\nwant %q", got, want)
	}

	// subagents/ removed, then made anew.
	if err := os.RemoveAll(filepath.Join(sess, "subagents")); err != nil {
		t.Fatal(err)
	}
	waitRescan(t, w)
	mustScan(t, w)
	if got := watchedDirs(w); !slices.Contains(got, sess) {
		t.Fatalf("after subagents/ went, the session's dir is not watched: %q", got)
	}
	writeFile(t, filepath.Join(sess, "subagents", "agent-c.jsonl"), "{}\n")
	waitEvents(t, w, Event{Path: filepath.Join(sess, "subagents", "agent-c.jsonl"), Op: Changed})
}

func TestDormantSessionIsListedNotWatchedUntilItsTranscriptIsWritten(t *testing.T) {
	root := t.TempDir()
	projects := filepath.Join(root, "projects")
	enc := filepath.Join(projects, "-p")
	old := time.Now().Add(-dormantAfter - time.Hour)
	// s: written over a day ago, with a subagent; r: written just now.
	sess := filepath.Join(enc, "s")
	agent := filepath.Join(sess, "subagents", "agent-a.jsonl")
	writeFile(t, agent, "{}\n")
	writeFile(t, sess+".jsonl", "{}\n")
	for _, p := range []string{agent, sess + ".jsonl"} {
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	recent := filepath.Join(enc, "r")
	writeFile(t, filepath.Join(recent, "subagents", "agent-b.jsonl"), "{}\n")
	writeFile(t, recent+".jsonl", "{}\n")
	w := newTestWatcher(t, Config{Roots: []string{root}})
	found := mustScan(t, w)
	drainRescan(w)
	if !slices.Contains(paths(found), agent) {
		t.Fatalf("the dormant session's subagent is not found: %q", paths(found))
	}
	want := []string{projects, enc, filepath.Join(recent, "subagents")}
	if got := watchedDirs(w); !slices.Equal(got, want) {
		t.Fatalf("watched:\n got %q\nwant %q", got, want)
	}
	// Listed on purpose: every transcript counts as watched.
	if w.RescanPeriod() != w.watchedInterval {
		t.Errorf("rescan period %v, want the watched one (%v)", w.RescanPeriod(), w.watchedInterval)
	}

	// The session runs again: its transcript is written, its subagents/
	// is watched and its files are hinted, then their writes are.
	appendFile(t, sess+".jsonl", "{}\n")
	waitEvents(t, w, Event{Path: sess + ".jsonl", Op: Changed}, Event{Path: agent, Op: Changed})
	if got := watchedDirs(w); !slices.Contains(got, filepath.Join(sess, "subagents")) {
		t.Fatalf("after its transcript was written, the session's subagents/ is not watched: %q", got)
	}
	appendFile(t, agent, "{}\n")
	waitEvents(t, w, Event{Path: agent, Op: Changed})
	// A scan now finds it awake and keeps the watch; once dormant again,
	// a scan drops it.
	mustScan(t, w)
	if got := watchedDirs(w); !slices.Contains(got, filepath.Join(sess, "subagents")) {
		t.Fatalf("a scan dropped the watch of a session just written: %q", got)
	}
	if err := os.Chtimes(sess+".jsonl", old, old); err != nil {
		t.Fatal(err)
	}
	mustScan(t, w)
	if got := watchedDirs(w); !slices.Equal(got, want) {
		t.Fatalf("once dormant again, watched:\n got %q\nwant %q", got, want)
	}
}

// TestWakeDuringAScanThatFoundTheSessionDormantKeepsItsWatch: a session's
// transcript is written while a Scan that found it dormant (its stat
// before the write) runs: the wake finds the watch of its subagents/ and
// marks it found, so the Scan keeps it and the session's new subagent is
// hinted.
func TestWakeDuringAScanThatFoundTheSessionDormantKeepsItsWatch(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	root := t.TempDir()
	projects := filepath.Join(root, "projects")
	sess := filepath.Join(projects, "-p", "s")
	sub := filepath.Join(sess, "subagents")
	writeFile(t, filepath.Join(sub, "agent-a.jsonl"), "{}\n")
	writeFile(t, sess+".jsonl", "{}\n")
	z := filepath.Join(projects, "-z")
	writeFile(t, filepath.Join(z, "zz.jsonl"), "{}\n")
	var phase atomic.Int32
	match := func(name string) bool {
		if name == "zz.jsonl" && phase.CompareAndSwap(1, 2) {
			// The session runs again, mid-scan, after its dir was listed.
			appendFile(t, sess+".jsonl", "{}\n")
			time.Sleep(300 * time.Millisecond) // the event goroutine handles it (wake)
		}
		return isTranscript(name)
	}
	w := newTestWatcher(t, Config{Roots: []string{root}, Match: match})
	mustScan(t, w)
	if !slices.Contains(watchedDirs(w), sub) {
		t.Fatalf("awake session's subagents/ not watched: %q", watchedDirs(w))
	}
	// A day has passed since the transcript's last write.
	old := time.Now().Add(-dormantAfter - time.Minute)
	if err := os.Chtimes(sess+".jsonl", old, old); err != nil {
		t.Fatal(err)
	}
	phase.Store(1)
	mustScan(t, w)
	time.Sleep(100 * time.Millisecond)
	drainRescan(w)
	for len(w.Events()) > 0 {
		<-w.Events()
	}
	writeFile(t, filepath.Join(sub, "agent-b.jsonl"), "{}\n")
	timeout := time.After(2 * time.Second)
	for {
		select {
		case ev := <-w.Events():
			if ev.Path == filepath.Join(sub, "agent-b.jsonl") {
				return
			}
		case <-timeout:
			t.Fatalf("a running session's new subagent file is not hinted (watched %q; period %v)", watchedDirs(w), w.RescanPeriod())
		}
	}
}

// TestWakeWatchesADormantSessionDirWithoutSubagents: a dormant session's
// dir holding no subagents/ yet (only tool-results/) is watched once its
// transcript is written, so the subagents/ its next Task makes is seen.
func TestWakeWatchesADormantSessionDirWithoutSubagents(t *testing.T) {
	root := t.TempDir()
	projects := filepath.Join(root, "projects")
	sess := filepath.Join(projects, "-p", "s")
	mkdir(t, filepath.Join(sess, "tool-results"))
	writeFile(t, sess+".jsonl", "{}\n")
	old := time.Now().Add(-dormantAfter - time.Hour)
	if err := os.Chtimes(sess+".jsonl", old, old); err != nil {
		t.Fatal(err)
	}
	w := newTestWatcher(t, Config{Roots: []string{root}})
	mustScan(t, w)
	if slices.Contains(watchedDirs(w), sess) {
		t.Fatalf("dormant session watched")
	}
	appendFile(t, sess+".jsonl", "{}\n")
	waitEvents(t, w, Event{Path: sess + ".jsonl", Op: Changed})
	// The wake follows the transcript's hint.
	for deadline := time.Now().Add(waitLimit); !slices.Contains(watchedDirs(w), sess); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("woken session dir not watched: %q", watchedDirs(w))
		}
	}
	writeFile(t, filepath.Join(sess, "subagents", "agent-a.jsonl"), "{}\n")
	waitFound(t, w, filepath.Join(sess, "subagents", "agent-a.jsonl"))
}
