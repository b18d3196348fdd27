package discover

import (
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
)

// TestScanEachHandsOverWhatScanReturnsInItsOrder: one root or several
// (interleaving and overlapping), ScanEach gives fn exactly Scan's files,
// in Scan's order.
func TestScanEachHandsOverWhatScanReturnsInItsOrder(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	for _, rel := range []string{"-p/s1.jsonl", "-p/s1/subagents/agent-a.jsonl", "-p/agent-x.jsonl", "-p-q/s.jsonl", "-p0/s.jsonl", "top.jsonl"} {
		writeFile(t, filepath.Join(a, "projects", filepath.FromSlash(rel)), "{}\n")
		writeFile(t, filepath.Join(b, "projects", filepath.FromSlash("x"+rel)), "{}\n")
	}
	for _, roots := range [][]string{{a}, {a, b}, {b, a}, {a, a}} {
		t.Run(fmt.Sprint(len(roots), " roots"), func(t *testing.T) {
			w := newTestWatcher(t, Config{Roots: roots, PollOnly: true})
			want := mustScan(t, w)
			var got []File
			if err := w.ScanEach(func(f File) { got = append(got, f) }); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Errorf("ScanEach:\n got %q\nwant %q", paths(got), paths(want))
			}
		})
	}
}

// TestScanEachHandsOverBeforeTheWalkEnds: with one root, the first
// project's files reach fn while later projects are still to be listed,
// so a file created in a later project at that moment is found. (Scan
// has listed every directory before it returns: the same file created
// after a Scan is not in it.) The walk runs at most 2·GOMAXPROCS projects
// ahead of the one handed over, so the last of 2·GOMAXPROCS+2 is never
// listed yet.
func TestScanEachHandsOverBeforeTheWalkEnds(t *testing.T) {
	root := t.TempDir()
	n := 2*runtime.GOMAXPROCS(0) + 2
	for i := range n {
		writeFile(t, filepath.Join(root, "projects", fmt.Sprintf("-p%03d", i), "s.jsonl"), "{}\n")
	}
	late := filepath.Join(root, "projects", fmt.Sprintf("-p%03d", n-1), "late.jsonl")
	w := newTestWatcher(t, Config{Roots: []string{root}, PollOnly: true})
	var got []string
	if err := w.ScanEach(func(f File) {
		if len(got) == 0 {
			writeFile(t, late, "{}\n")
		}
		got = append(got, f.Path)
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != n+1 || !slices.Contains(got, late) {
		t.Errorf("ScanEach found %d files, the one created at the first hand-over %v; want %d, true", len(got), slices.Contains(got, late), n+1)
	}
}
