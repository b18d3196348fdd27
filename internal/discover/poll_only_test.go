package discover

import (
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func TestPollOnlyHintsNothingButScans(t *testing.T) {
	root := t.TempDir()
	first := filepath.Join(root, "projects", "-p", "s.jsonl")
	writeFile(t, first, "{}\n")
	w := newTestWatcher(t, Config{Roots: []string{root}, PollOnly: true})
	if got := paths(mustScan(t, w)); !slices.Equal(got, []string{first}) {
		t.Fatalf("Scan = %q, want %q", got, []string{first})
	}
	if w.fsw != nil {
		t.Fatalf("poll only created a directory watcher")
	}
	if st := w.Stats(); !st.PollOnly || st.DirsWatched != 0 || st.Fallback {
		t.Errorf("Stats = %+v, want PollOnly, 0 dirs, no fallback", st)
	}

	second := filepath.Join(root, "projects", "-q", "t.jsonl")
	writeFile(t, second, "{}\n")
	// No watcher exists, so nothing can arrive; a short look confirms the
	// channels stay quiet.
	select {
	case ev := <-w.Events():
		t.Errorf("poll only hinted %v", ev)
	case <-w.RescanNeeded():
		t.Errorf("poll only requested a rescan")
	case <-time.After(100 * time.Millisecond):
	}
	if got, want := paths(mustScan(t, w)), []string{first, second}; !slices.Equal(got, want) {
		t.Errorf("Scan = %q, want %q", got, want)
	}
}
