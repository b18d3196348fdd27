//go:build unix

package daemon

import (
	"os"
	"path/filepath"
	"testing"
)

// TestFileIDTellsFilesApartAndKnowsOneAgain: the 8-byte identity is the
// same for two stats of one file (and a link to it), and differs for a
// file replaced at the path (a new inode on the same device), which is
// what prepare asks of it.
func TestFileIDTellsFilesApartAndKnowsOneAgain(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a.jsonl")
	stat := func(p string) fileID {
		t.Helper()
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		return idOf(st)
	}
	if err := os.WriteFile(p, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	first := stat(p)
	if err := os.Link(p, filepath.Join(dir, "link.jsonl")); err != nil {
		t.Fatal(err)
	}
	if !first.same(stat(p)) || !first.same(stat(filepath.Join(dir, "link.jsonl"))) {
		t.Error("two stats of one file have different identities")
	}
	// Replaced: a new file renamed over the path, while the old one
	// lives on under the link (so its inode cannot be reused).
	tmp := filepath.Join(dir, "new.tmp")
	if err := os.WriteFile(tmp, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, p); err != nil {
		t.Fatal(err)
	}
	if first.same(stat(p)) {
		t.Error("a file replaced at the path has the old identity")
	}
	if first == (fileID{}) {
		t.Error("a stat gave the zero identity")
	}
}
