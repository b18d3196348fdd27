package discover

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/fsnotify/fsnotify"
)

func TestHintsCoalescePerPathLastOpWins(t *testing.T) {
	q := hintQueue{pending: map[string]Op{}, max: 10, wake: make(chan struct{}, 1)}
	for _, h := range []Event{{"a", Changed}, {"b", Changed}, {"a", Changed}, {"a", Removed}, {"c", Removed}, {"c", Changed}} {
		if !q.put(h.Path, h.Op) {
			t.Fatalf("put %v dropped", h)
		}
	}
	want := []Event{{"a", Removed}, {"b", Changed}, {"c", Changed}}
	if got := q.take(); !slices.Equal(got, want) {
		t.Errorf("take = %v, want %v", got, want)
	}
	if got := q.take(); len(got) != 0 {
		t.Errorf("second take = %v, want empty", got)
	}
}

func TestTooManyPendingHintsRequestRescan(t *testing.T) {
	// PollOnly: no pump drains the queue, so the test controls it.
	w := newTestWatcher(t, Config{Roots: []string{t.TempDir()}, PollOnly: true})
	w.hints.max = 2
	w.hint("a", Changed)
	w.hint("b", Changed)
	w.hint("a", Removed) // coalesces: not a new path
	select {
	case <-w.RescanNeeded():
		t.Fatalf("rescan requested before anything was dropped")
	default:
	}
	w.hint("c", Changed)
	select {
	case <-w.RescanNeeded():
	default:
		t.Fatalf("dropped hint did not request a rescan")
	}
	if st := w.Stats(); st.DroppedHints != 1 {
		t.Errorf("DroppedHints = %d, want 1", st.DroppedHints)
	}
}

func TestWatcherErrorsRequestRescan(t *testing.T) {
	tests := []struct {
		name          string
		errs          []error
		wantOverflows uint64
		wantErrors    uint64
		wantWarnings  int
	}{
		{"overflow", []error{fsnotify.ErrEventOverflow}, 1, 0, 1},
		{"repeated overflows warn once", []error{fsnotify.ErrEventOverflow, fsnotify.ErrEventOverflow, fsnotify.ErrEventOverflow}, 3, 0, 1},
		{"other watcher error", []error{errors.New("short read")}, 0, 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logs := &syncBuffer{}
			w := newTestWatcher(t, Config{Roots: []string{t.TempDir()}, PollOnly: true, Logger: testLogger(logs)})
			for _, err := range tt.errs {
				w.handleError(err)
				select {
				case <-w.RescanNeeded():
				default:
					t.Fatalf("%v did not request a rescan", err)
				}
			}
			st := w.Stats()
			if st.Overflows != tt.wantOverflows || st.WatchErrors != tt.wantErrors {
				t.Errorf("Stats = %+v, want %d overflows, %d errors", st, tt.wantOverflows, tt.wantErrors)
			}
			if n := countLines(logs.String(), "level=WARN"); n != tt.wantWarnings {
				t.Errorf("%d warnings, want %d:\n%s", n, tt.wantWarnings, logs.String())
			}
		})
	}
}

func TestSlowConsumerDoesNotBlockTheWatcher(t *testing.T) {
	// More distinct files than the Events buffer while nobody reads: the
	// watcher keeps handling events (hints queue, then drop into a rescan
	// request) and the consumer later gets hints and a rescan.
	root := t.TempDir()
	w := newTestWatcher(t, Config{Roots: []string{root}})
	dir := filepath.Join(root, "projects", "-p")
	mkdir(t, dir)
	mustScan(t, w)
	w.hints.mu.Lock()
	w.hints.max = 8
	w.hints.mu.Unlock()
	for i := range eventBuffer + 64 {
		writeFile(t, filepath.Join(dir, fmt.Sprintf("f%03d.jsonl", i)), "{}\n")
	}
	waitRescan(t, w)
	select {
	case <-w.Events():
	case <-timeAfterLimit():
		t.Fatalf("no hint delivered")
	}
	if st := w.Stats(); st.DroppedHints == 0 {
		t.Errorf("no hint dropped with a full channel and a small queue: %+v", st)
	}
}
