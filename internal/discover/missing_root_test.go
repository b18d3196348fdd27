package discover

import (
	"path/filepath"
	"slices"
	"testing"
)

func TestRootMissingAtStartIsPickedUpByRescan(t *testing.T) {
	tests := []struct {
		name     string
		pollOnly bool
	}{
		{"watching", false},
		{"poll only", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "claude")
			w := newTestWatcher(t, Config{Roots: []string{root}, PollOnly: tt.pollOnly})
			if files := mustScan(t, w); len(files) != 0 {
				t.Fatalf("Scan of a missing root = %q, want none", paths(files))
			}
			if st := w.Stats(); st.DirsWatched != 0 {
				t.Errorf("missing root: %d dirs watched, want 0", st.DirsWatched)
			}

			path := filepath.Join(root, "projects", "-p", "s.jsonl")
			writeFile(t, path, "{}\n")
			if got := paths(mustScan(t, w)); !slices.Equal(got, []string{path}) {
				t.Fatalf("Scan after the root appeared = %q, want %q", got, []string{path})
			}
			if tt.pollOnly {
				return
			}
			// From now on the tree is watched like any other.
			later := filepath.Join(root, "projects", "-p", "t.jsonl")
			writeFile(t, later, "{}\n")
			waitEvent(t, w, later, Changed)
		})
	}
}
