package daemon

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/exporter/prom"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/checkpoint"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/discover"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/session"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/transcript"
)

func TestSyncKeepsFoundFilesAddsNewOnesAndDropsVanishedOnes(t *testing.T) {
	root := filepath.Join(t.TempDir(), "claude")
	abs := func(rel string) string { return filepath.Join(root, "projects", filepath.FromSlash(rel)) }
	tests := []struct {
		name     string
		before   []string // files in the table, each at offset 10
		restored []string // saved watermarks (offset 20) not yet scanned
		scans    [][]string
		want     []string // table after the last scan
		offsets  map[string]int64
	}{
		{name: "same files twice: nothing changes",
			before:  []string{"-p/a.jsonl", "-p/b.jsonl"},
			scans:   [][]string{{"-p/a.jsonl", "-p/b.jsonl"}, {"-p/a.jsonl", "-p/b.jsonl"}},
			want:    []string{"-p/a.jsonl", "-p/b.jsonl"},
			offsets: map[string]int64{"-p/a.jsonl": 10, "-p/b.jsonl": 10}},
		{name: "a vanished file is dropped, a new one added",
			before:  []string{"-p/a.jsonl", "-p/b.jsonl"},
			scans:   [][]string{{"-p/b.jsonl", "-p/c.jsonl"}},
			want:    []string{"-p/b.jsonl", "-p/c.jsonl"},
			offsets: map[string]int64{"-p/b.jsonl": 10, "-p/c.jsonl": 0}},
		{name: "as many files as before, but other ones",
			before:  []string{"-p/a.jsonl"},
			scans:   [][]string{{"-p/z.jsonl"}},
			want:    []string{"-p/z.jsonl"},
			offsets: map[string]int64{"-p/z.jsonl": 0}},
		{name: "a file gone for one scan comes back from the start",
			before:  []string{"-p/a.jsonl"},
			scans:   [][]string{{}, {"-p/a.jsonl"}},
			want:    []string{"-p/a.jsonl"},
			offsets: map[string]int64{"-p/a.jsonl": 0}},
		{name: "an empty scan empties the table",
			before: []string{"-p/a.jsonl", "-q/s/subagents/agent-1.jsonl"},
			scans:  [][]string{nil},
			want:   nil},
		{name: "a new file between two known ones",
			before:  []string{"-p/a.jsonl", "-p/c.jsonl", "-q/s/subagents/agent-1.jsonl"},
			scans:   [][]string{{"-p/a.jsonl", "-p/b.jsonl", "-p/c.jsonl", "-p/c/subagents/agent-2.jsonl", "-q/s/subagents/agent-1.jsonl"}},
			want:    []string{"-p/a.jsonl", "-p/b.jsonl", "-p/c.jsonl", "-p/c/subagents/agent-2.jsonl", "-q/s/subagents/agent-1.jsonl"},
			offsets: map[string]int64{"-p/a.jsonl": 10, "-p/b.jsonl": 0, "-p/c.jsonl": 10, "-p/c/subagents/agent-2.jsonl": 0, "-q/s/subagents/agent-1.jsonl": 10}},
		{name: "a scan out of path order finds each file all the same",
			before:  []string{"-p/a.jsonl", "-p/b.jsonl"},
			scans:   [][]string{{"-p/c.jsonl", "-p/b.jsonl", "-p/a.jsonl"}},
			want:    []string{"-p/a.jsonl", "-p/b.jsonl", "-p/c.jsonl"},
			offsets: map[string]int64{"-p/a.jsonl": 10, "-p/b.jsonl": 10, "-p/c.jsonl": 0}},
		{name: "a new file takes its saved watermark",
			restored: []string{"-p/a.jsonl"},
			scans:    [][]string{{"-p/a.jsonl", "-p/b.jsonl"}},
			want:     []string{"-p/a.jsonl", "-p/b.jsonl"},
			offsets:  map[string]int64{"-p/a.jsonl": 20, "-p/b.jsonl": 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := &Config{ClaudeDirs: []string{root}}
			rd := newReader(cfg, slog.New(slog.DiscardHandler), prom.NewSelf(prometheus.NewRegistry()), nil, transcript.Options{}, time.Now)
			for _, rel := range tt.before {
				rd.add(abs(rel), "").offset = 10
			}
			for _, rel := range tt.restored {
				rd.restored[abs(rel)] = checkpoint.Entry{Path: abs(rel), Counted: 20, Fingerprint: strings.Repeat("ab", 32), FPLen: 1}
			}
			for _, scan := range tt.scans {
				var found []discover.File
				for _, rel := range scan {
					found = append(found, discover.File{Path: abs(rel), Size: 30})
				}
				var visited []string
				rd.sync(scanOf(found...), func(f *fileState, fi discover.File) {
					if f.path() != fi.Path {
						t.Errorf("visit: file %s for found %s", f.path(), fi.Path)
					}
					visited = append(visited, fi.Path)
				})
				if want := paths(found); !slices.Equal(visited, want) {
					t.Errorf("visited %q, want %q", visited, want)
				}
			}
			var want []string
			for _, rel := range tt.want {
				want = append(want, abs(rel))
			}
			// The table is in path order as it is (lookups search it).
			var got []string
			for _, f := range rd.files {
				got = append(got, f.path())
			}
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("table = %q, want %q", got, want)
			}
			for rel, off := range tt.offsets {
				if f := rd.find(abs(rel)); f == nil || f.offset != off {
					t.Errorf("%s: %+v, want offset %d", rel, f, off)
				}
			}
		})
	}
}

func TestSyncIgnoresFilesOutsideTheRoots(t *testing.T) {
	root := filepath.Join(t.TempDir(), "claude")
	cfg := &Config{ClaudeDirs: []string{root}}
	rd := newReader(cfg, slog.New(slog.DiscardHandler), prom.NewSelf(prometheus.NewRegistry()), nil, transcript.Options{}, time.Now)
	inside := filepath.Join(root, "projects", "-p", "a.jsonl")
	outside := filepath.Join(root, "history.jsonl")
	var visited []string
	rd.sync(scanOf(discover.File{Path: outside}, discover.File{Path: inside}), func(f *fileState, _ discover.File) { visited = append(visited, f.path()) })
	if !slices.Equal(visited, []string{inside}) || len(rd.files) != 1 {
		t.Errorf("visited %q, table %d files; want only %s", visited, len(rd.files), inside)
	}
}

func paths(files []discover.File) []string {
	var ps []string
	for _, f := range files {
		ps = append(ps, f.Path)
	}
	return ps
}

// TestSyncReadsAFileWithADamagedSavedFingerprintFromTheStart: a saved
// entry whose fingerprint is not a hex SHA-256 of 1 to 1,024 bytes does
// not say which file its offset was taken in: the file is read from the
// start (dedup keeps what was counted), and the damage is counted as a
// file read again.
func TestSyncReadsAFileWithADamagedSavedFingerprintFromTheStart(t *testing.T) {
	root := t.TempDir()
	p := filepath.Join(root, "projects", "-p", "a.jsonl")
	for _, e := range []checkpoint.Entry{
		{Fingerprint: "not hex", FPLen: 10},
		{Fingerprint: strings.Repeat("ab", 31), FPLen: 10},
		{Fingerprint: strings.Repeat("ab", 32), FPLen: -1},
		{Fingerprint: strings.Repeat("ab", 32), FPLen: checkpoint.FingerprintBytes + 1},
	} {
		self := prom.NewSelf(prometheus.NewRegistry())
		rd := newReader(&Config{ClaudeDirs: []string{root}}, slog.New(slog.DiscardHandler), self, nil, transcript.Options{}, time.Now)
		e.Path, e.Counted = p, 20
		rd.restored[p] = e
		rd.sync(scanOf(discover.File{Path: p, Size: 30}), nil)
		if f := rd.find(p); f == nil || f.offset != 0 || f.has(flagVerify) || f.fpLen != 0 {
			t.Errorf("%+v: entry %+v, want offset 0 and no fingerprint", e, f)
		}
		if got := testutil.ToFloat64(self.FilesReread); got != 1 {
			t.Errorf("%+v: files read again %v, want 1", e, got)
		}
	}
}

// TestFileEntryTellsItsPlaceInTheTree: an entry keeps only where its path
// under projects/ starts; the path under projects/, the session and the
// source are made from it, and from the roots when the path given is not
// clean (the relative path is then not a substring of it).
func TestFileEntryTellsItsPlaceInTheTree(t *testing.T) {
	root := filepath.Join(t.TempDir(), "claude")
	cfg := &Config{ClaudeDirs: []string{filepath.Join(t.TempDir(), "other"), root}}
	rd := newReader(cfg, slog.New(slog.DiscardHandler), prom.NewSelf(prometheus.NewRegistry()), nil, transcript.Options{}, time.Now)
	projects := filepath.Join(root, "projects")
	tests := []struct {
		path, rel, session string
		kind               session.SourceKind
	}{
		{filepath.Join(projects, "-p", "s1.jsonl"), "-p/s1.jsonl", "s1", session.SourceSession},
		{filepath.Join(projects, "-p", "s1", "subagents", "agent-a.jsonl"), "-p/s1/subagents/agent-a.jsonl", "s1", session.SourceSubagent},
		{filepath.Join(projects, "-p", "agent-b.jsonl"), "-p/agent-b.jsonl", "", session.SourceLegacyAgent},
		{filepath.Join(projects, "-p", "s2", "notes.jsonl"), "-p/s2/notes.jsonl", "", session.SourceOther},
		{projects + "/-q//./s3.jsonl", "-q/s3.jsonl", "s3", session.SourceSession},
	}
	for _, tt := range tests {
		f := rd.add(tt.path, "")
		if f == nil {
			t.Fatalf("%s: not added", tt.path)
		}
		rel := filepath.ToSlash(f.rel())
		if rel != tt.rel || rd.sessionID(f) != tt.session || f.kind() != tt.kind || rd.source(f).Kind != tt.kind {
			t.Errorf("%s: rel %q session %q kind %v, want %q %q %v", tt.path, rel, rd.sessionID(f), f.kind(), tt.rel, tt.session, tt.kind)
		}
	}
}

// TestFileEntryFitsA96ByteSizeClass pins the size of a table entry: a
// daemon holds one per transcript (100,000 files: 9.6 MB at 96 bytes, 11
// MB at 112, 21 MB at the 208 it was), and with it, since its path is
// packed (paths.go), no string of its own (80 bytes more in the bench's
// trees).
func TestFileEntryFitsA96ByteSizeClass(t *testing.T) {
	if runtime.GOOS != "linux" || unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skipf("pinned for 64-bit Linux, the size benchmarked; this is %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	if n := unsafe.Sizeof(fileState{}); n > 96 {
		t.Errorf("fileState is %d bytes, want at most 96", n)
	}
}

// TestTableHoldsAFileInAbout120Bytes: what the table holds per file,
// measured on the heap: the entry, its slot in the table and its share of
// its directory; the path's bytes are not kept. A session's subagent in
// its subagents/ costs no more than a session: the session's directory is
// packed into its entry, not one more directory entry and path each.
func TestTableHoldsAFileInAbout120Bytes(t *testing.T) {
	if runtime.GOOS != "linux" || unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skipf("pinned for 64-bit Linux, the size benchmarked; this is %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	const n = 20000
	session := func(i int) string {
		return fmt.Sprintf("-home-user-project-%d/%08x-0000-4000-8000-%012x", i%50, i, i)
	}
	for _, tt := range []struct {
		name string
		rel  func(i int) string
	}{
		{"sessions", func(i int) string { return session(i) + ".jsonl" }},
		{"half of them subagents", func(i int) string {
			if i%2 == 0 {
				return session(i/2) + ".jsonl"
			}
			return fmt.Sprintf("%s/subagents/agent-a%016x.jsonl", session(i/2), i)
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rd, abs := newTestReader(t)
			paths := make([]string, n)
			for i := range paths {
				paths[i] = abs(tt.rel(i))
			}
			slices.Sort(paths)
			rd.files = make([]*fileState, 0, n)
			var before, added, dropped runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			for _, p := range paths {
				if rd.add(p, "") == nil {
					t.Fatalf("%s: not added", p)
				}
			}
			runtime.GC()
			runtime.ReadMemStats(&added)
			pathBytes := 0
			for _, p := range paths {
				pathBytes += len(p)
			}
			paths = nil
			runtime.GC()
			runtime.ReadMemStats(&dropped)
			per := float64(int64(added.HeapAlloc)-int64(before.HeapAlloc))/n + 8 // and the table's slot, allocated before
			freed := int64(added.HeapAlloc) - int64(dropped.HeapAlloc)
			t.Logf("%.1f bytes a file; dropping the callers' paths (%d bytes) freed %d", per, pathBytes, freed)
			if per > 125 {
				t.Errorf("the table holds %.1f bytes a file, want at most 125", per)
			}
			if freed < int64(pathBytes) {
				t.Errorf("dropping the callers' paths freed %d bytes of their %d: the table keeps some", freed, pathBytes)
			}
			runtime.KeepAlive(rd)
		})
	}
}

// TestSubagentMetaIsKeptBesideTheTableAndGoesWithItsFile: a subagent's
// .meta.json, read after the file's first records were assembled, gives
// its type to the next record's source; a file without one keeps nothing;
// the meta goes once the file's read is done and comes back with the next
// read; and a file dropped from the table (a rescan without it, or a
// removal) takes its meta along.
func TestSubagentMetaIsKeptBesideTheTableAndGoesWithItsFile(t *testing.T) {
	root := t.TempDir()
	cfg := &Config{ClaudeDirs: []string{root}}
	rd := newReader(cfg, slog.New(slog.DiscardHandler), prom.NewSelf(prometheus.NewRegistry()), nil, transcript.Options{}, time.Now)
	dir := filepath.Join(root, "projects", "-p", "s", "subagents")
	with, without := filepath.Join(dir, "agent-1.jsonl"), filepath.Join(dir, "agent-2.jsonl")
	writeFileT(t, with, "")
	writeFileT(t, without, "")
	f, g := rd.add(with, ""), rd.add(without, "")
	if src := rd.source(f); src.AgentType != "" {
		t.Fatalf("source before the meta was read: type %q", src.AgentType)
	}
	gen := rd.metaGen.Load()
	writeFileT(t, filepath.Join(dir, "agent-1.meta.json"), `{"agentType":"Explore","description":"find it","toolUseId":"toolu_1"}`)
	rd.readMeta(f)
	rd.readMeta(g)
	if src := rd.source(f); src.AgentType != "Explore" || src.Description != "find it" || src.ToolUseID != "toolu_1" {
		t.Errorf("source after the meta: %+v", src)
	}
	if rd.metaGen.Load() == gen {
		t.Error("reading a meta did not tell record to make the source again")
	}
	if len(rd.metas) != 1 || rd.meta(g) != nil || !g.has(flagMetaRead) {
		t.Errorf("metas %v: want only %s's", rd.metas, with)
	}
	// Once the file's read is done the meta goes, and the next read
	// (lines appended) reads it again.
	rd.readDone(f)
	if len(rd.metas) != 0 || f.has(flagMetaRead) {
		t.Errorf("after the read: metas %v, read flag %v; want none", rd.metas, f.has(flagMetaRead))
	}
	gen = rd.metaGen.Load()
	rd.readMeta(f)
	if src := rd.source(f); src.AgentType != "Explore" || rd.metaGen.Load() == gen {
		t.Errorf("source at the next read: %+v (meta generation moved: %v)", src, rd.metaGen.Load() != gen)
	}
	rd.sync(scanOf(discover.File{Path: without}), nil)
	if len(rd.metas) != 0 || rd.find(with) != nil {
		t.Errorf("after a scan without %s: metas %v", with, rd.metas)
	}
	f = rd.add(with, "")
	rd.readMeta(f)
	rd.drop(with)
	if len(rd.metas) != 0 {
		t.Errorf("after dropping %s: metas %v", with, rd.metas)
	}
}

func writeFileT(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// scanOf is a scan (reader.sync's) that finds files, in the order given.
func scanOf(files ...discover.File) func(func(discover.File)) error {
	return func(fn func(discover.File)) error {
		for _, f := range files {
			fn(f)
		}
		return nil
	}
}
