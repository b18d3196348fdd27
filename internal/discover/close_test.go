package discover

import (
	"path/filepath"
	"testing"
)

func TestCloseIsIdempotentAndScanStillWorks(t *testing.T) {
	tests := []struct {
		name     string
		pollOnly bool
	}{
		{"watching", false},
		{"poll only", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			writeFile(t, filepath.Join(root, "projects", "-p", "s.jsonl"), "{}\n")
			w := newTestWatcher(t, Config{Roots: []string{root}, PollOnly: tt.pollOnly})
			mustScan(t, w)
			for i := range 3 {
				if err := w.Close(); err != nil {
					t.Fatalf("Close #%d: %v", i+1, err)
				}
			}
			if files := mustScan(t, w); len(files) != 1 {
				t.Errorf("Scan after Close found %d files, want 1", len(files))
			}
			if st := w.Stats(); st.WatchErrors != 0 || st.DirsWatched != 0 {
				t.Errorf("after Close: %d watch errors, %d dirs watched; want 0, 0", st.WatchErrors, st.DirsWatched)
			}
		})
	}
}
