package daemon

import (
	"bytes"
	"maps"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/checkpoint"
)

// TestPeriodicStateWriteSavesTheWatermarksOfItsSnapshot: a periodic state
// write lists the file table's own entries (fileMarks) while the pipeline
// goes on reading; the file it writes holds every watermark as it was at
// the snapshot, though lines were appended to some files and one was
// rewritten (offset and fingerprint reset) since. Run with -race, the
// concurrent case checks the keeping is synchronized.
func TestPeriodicStateWriteSavesTheWatermarksOfItsSnapshot(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	for _, concurrent := range []bool{false, true} {
		name := "changes before the write"
		if concurrent {
			name = "changes during the write"
		}
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			if err := os.CopyFS(root, os.DirFS(filepath.Join("..", "..", "testdata", "corpus", "spotter"))); err != nil {
				t.Fatal(err)
			}
			cfg := NewConfig()
			cfg.ClaudeDirs = []string{root}
			cfg.StateFile = filepath.Join(t.TempDir(), "state")
			usage, asm, _, rd := stateParts(&cfg, now)
			files, err := scanTable(&cfg, rd)
			if err != nil || len(files) < 3 {
				t.Fatalf("scan: %d files, %v", len(files), err)
			}
			rd.readFiles(files, false)
			want := map[string]checkpoint.Entry{}
			for _, f := range rd.files {
				if f.saved() {
					want[f.path()] = checkpoint.Entry{Path: f.path(), Fingerprint: f.fingerprint().Hex(), FPLen: int(f.fpLen), Counted: f.offset, Exported: f.offset}
				}
			}

			snap := takeSnapshot(&cfg, usage, asm, rd, now)
			change := func() {
				// Lines appended to two files, a third rewritten shorter
				// with other bytes: read again from the start.
				for i, f := range files[:3] {
					b, err := os.ReadFile(f.path())
					if err != nil {
						t.Error(err)
						return
					}
					if i == 2 {
						b = append([]byte("{\"type\":\"summary\",\"summary\":\"rewritten\"}\n"), b[:bytes.IndexByte(b, '\n')+1]...)
					} else {
						b = append(b, b[:bytes.IndexByte(b, '\n')+1]...)
					}
					if err := os.WriteFile(f.path(), b, 0o644); err != nil {
						t.Error(err)
						return
					}
				}
				rd.readFiles(rd.sorted(), false)
			}
			written := make(chan error, 1)
			if concurrent {
				go func() { written <- snap.write() }()
				change()
			} else {
				change()
				written <- snap.write()
			}
			if err := <-written; err != nil {
				t.Fatal(err)
			}
			snap.release()
			if rd.marks.Load() != nil {
				t.Error("the reader still keeps watermarks for a write that is done")
			}
			moved := 0
			for _, f := range files[:3] {
				if w := want[f.path()]; w.Counted != f.offset || w.Fingerprint != f.fingerprint().Hex() {
					moved++
				}
			}
			if moved != 3 {
				t.Fatalf("%d of the 3 changed files have a new watermark, want 3", moved)
			}

			saved, err := checkpoint.Load(cfg.StateFile)
			if err != nil {
				t.Fatal(err)
			}
			defer saved.Close()
			got := map[string]checkpoint.Entry{}
			for _, e := range saved.Files {
				got[e.Path] = e
			}
			if !maps.Equal(got, want) {
				for p, w := range want {
					if got[p] != w {
						t.Errorf("%s: saved %+v, want %+v (the snapshot's)", filepath.Base(p), got[p], w)
					}
				}
				t.Fatalf("saved %d watermarks, want %d", len(got), len(want))
			}
		})
	}
}
