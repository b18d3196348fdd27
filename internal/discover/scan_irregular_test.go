//go:build unix

package discover

import (
	"path/filepath"
	"slices"
	"syscall"
	"testing"
)

// TestScanListsAFIFOAtATranscriptPathAsIrregular: a FIFO named like a
// transcript is listed, marked Irregular and never opened (the reader
// counts it as a file it skips; dropping it from the walk made a
// transcript replaced by a FIFO look like a transcript gone), while a
// FIFO with another name is not listed at all.
func TestScanListsAFIFOAtATranscriptPathAsIrregular(t *testing.T) {
	root := t.TempDir()
	proj := filepath.Join(root, "projects", "-p")
	writeFile(t, filepath.Join(proj, "s1.jsonl"), "{}\n")
	fifo := filepath.Join(proj, "s2.jsonl")
	for _, p := range []string{fifo, filepath.Join(proj, "pipe.txt")} {
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	w := newTestWatcher(t, Config{Roots: []string{root}})
	files := mustScan(t, w) // would block forever if it opened the FIFO
	if got, want := paths(files), []string{filepath.Join(proj, "s1.jsonl"), fifo}; !slices.Equal(got, want) {
		t.Fatalf("Scan paths %q, want %q", got, want)
	}
	if files[0].Irregular || files[0].Size != 3 {
		t.Errorf("regular file listed as %+v", files[0])
	}
	if !files[1].Irregular || files[1].Size != 0 || files[1].Ino == 0 {
		t.Errorf("FIFO listed as %+v, want Irregular with its inode", files[1])
	}
}
