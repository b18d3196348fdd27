package discover

import (
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
)

// TestPeriodicRescanStretchesOnlyWhileWatchesCoverEverything checks that
// the periodic walk waits the watched interval while notifications see
// every transcript, and keeps the rescan interval whenever the walk is the
// only way to see something change.
func TestPeriodicRescanStretchesOnlyWhileWatchesCoverEverything(t *testing.T) {
	const (
		short = 30 * time.Second
		long  = 10 * time.Minute
	)
	tests := []struct {
		name  string
		files []string // under <root>/projects/
		// root, when set, replaces the root (relative to the temp dir;
		// "missing" is never created).
		root     string
		pollOnly bool
		// failAdd makes watch adds of dirs whose path contains it fail with
		// err.
		failAdd string
		err     error
		want    time.Duration
	}{
		{name: "every transcript in a watched dir: the walk waits the watched interval",
			files: []string{"-a/s1.jsonl", "-a/s1/subagents/agent-x.jsonl", "-b/s2.jsonl"}, want: long},
		{name: "polling only: the walk is the only way to see new files",
			files: []string{"-a/s1.jsonl"}, pollOnly: true, want: short},
		{name: "watch limit reached: directories without a watch are seen by the walk only",
			files: []string{"-a/s1.jsonl", "-b/s2.jsonl"}, failAdd: "-b", err: syscall.ENOSPC, want: short},
		{name: "a directory that cannot be watched (permission): retried on the short interval",
			files: []string{"-a/s1.jsonl", "-b/s2.jsonl"}, failAdd: "-b", err: syscall.EACCES, want: short},
		{name: "a transcript deeper than the watched layout: its appends are seen by the walk only",
			files: []string{"-a/s1.jsonl", "-a/s1/extra/deep/x.jsonl"}, want: short},
		{name: "a root that does not exist yet: it is found by the walk only",
			root: "missing", want: short},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
			clock := &fakeClock{t: t0}
			root := t.TempDir()
			if tt.root != "" {
				root = filepath.Join(root, tt.root)
			}
			for _, f := range tt.files {
				writeFile(t, filepath.Join(root, "projects", filepath.FromSlash(f)), "{}\n")
			}
			cfg := Config{Roots: []string{root}, PollOnly: tt.pollOnly, Now: clock.Now,
				RescanInterval: short, WatchedRescanInterval: long}
			if tt.failAdd != "" {
				cfg.addWatchHook = func(dir string) error {
					if strings.Contains(dir, tt.failAdd) {
						return tt.err
					}
					return nil
				}
			}
			w := newTestWatcher(t, cfg)
			if got := w.RescanPeriod(); got != short {
				t.Errorf("before the first scan: period %v, want %v", got, short)
			}
			if !w.Step(t0) {
				t.Fatal("Step before the first scan: not due")
			}
			if _, err := w.Scan(); err != nil && tt.root == "" {
				t.Fatalf("Scan: %v", err)
			}
			if got := w.RescanPeriod(); got != tt.want {
				t.Fatalf("period after the scan = %v, want %v", got, tt.want)
			}
			for _, s := range []struct {
				at   time.Duration
				want bool
			}{
				{tt.want - time.Second, false},
				{tt.want, true},
				{tt.want + time.Second, false},
				{2 * tt.want, true},
			} {
				if got := w.Step(t0.Add(s.at)); got != s.want {
					t.Errorf("Step(t0+%v) = %v, want %v", s.at, got, s.want)
				}
			}
		})
	}
}

// TestPeriodicRescanShortensWhenCoverageIsLost checks that the schedule
// follows the watcher's state: a watched tree that gains a transcript
// outside the watches goes back to the short period at the next scan, and
// one that reaches the watch limit at once.
func TestPeriodicRescanShortensWhenCoverageIsLost(t *testing.T) {
	const short, long = 30 * time.Second, 10 * time.Minute
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	clock := &fakeClock{t: t0}
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "projects", "-a", "s1.jsonl"), "{}\n")
	var fail atomic.Bool
	cfg := Config{Roots: []string{root}, Now: clock.Now, RescanInterval: short, WatchedRescanInterval: long}
	cfg.addWatchHook = func(string) error {
		if fail.Load() {
			return syscall.ENOSPC
		}
		return nil
	}
	w := newTestWatcher(t, cfg)
	mustScan(t, w)
	if got := w.RescanPeriod(); got != long {
		t.Fatalf("watched tree: period %v, want %v", got, long)
	}

	writeFile(t, filepath.Join(root, "projects", "-a", "s1", "odd", "x.jsonl"), "{}\n")
	mustScan(t, w)
	if got := w.RescanPeriod(); got != short {
		t.Fatalf("a transcript outside the watches: period %v, want %v", got, short)
	}
	if err := os.RemoveAll(filepath.Join(root, "projects", "-a", "s1", "odd")); err != nil {
		t.Fatal(err)
	}
	mustScan(t, w)
	if got := w.RescanPeriod(); got != long {
		t.Fatalf("that transcript gone: period %v, want %v", got, long)
	}

	fail.Store(true)
	mkdir(t, filepath.Join(root, "projects", "-new"))
	mustScan(t, w)
	if !w.Stats().Fallback {
		t.Fatal("watch limit not reached")
	}
	if got := w.RescanPeriod(); got != short {
		t.Fatalf("watch limit reached: period %v, want %v", got, short)
	}
}

// TestLostNotificationsRequestARescanAtOnce checks that an overflow or a
// watcher error does not wait for the (stretched) periodic walk: it asks
// for a Scan right away.
func TestLostNotificationsRequestARescanAtOnce(t *testing.T) {
	for _, err := range []error{fsnotify.ErrEventOverflow, syscall.EIO} {
		t.Run(err.Error(), func(t *testing.T) {
			w := newTestWatcher(t, Config{Roots: []string{t.TempDir()}})
			mustScan(t, w)
			select {
			case <-w.RescanNeeded():
				t.Fatal("rescan requested before any notification was lost")
			default:
			}
			w.handleError(err)
			select {
			case <-w.RescanNeeded():
			default:
				t.Fatal("no rescan requested after a lost notification")
			}
		})
	}
}

func TestWatchedRescanIntervalIsNeverShorterThanTheRescanInterval(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "projects", "-a", "s1.jsonl"), "{}\n")
	w := newTestWatcher(t, Config{Roots: []string{root}, RescanInterval: time.Hour, WatchedRescanInterval: time.Minute})
	mustScan(t, w)
	if got := w.RescanPeriod(); got != time.Hour {
		t.Errorf("period %v, want the rescan interval, 1h", got)
	}
	w2 := newTestWatcher(t, Config{Roots: []string{root}})
	mustScan(t, w2)
	if got := w2.RescanPeriod(); got != DefaultWatchedRescanInterval {
		t.Errorf("default period %v, want %v", got, DefaultWatchedRescanInterval)
	}
}
