package daemon

import (
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/exporter/prom"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/session"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/transcript"
)

func newTestReader(t *testing.T) (*reader, func(rel string) string) {
	t.Helper()
	root := t.TempDir()
	cfg := &Config{ClaudeDirs: []string{root}}
	rd := newReader(cfg, slog.New(slog.DiscardHandler), prom.NewSelf(prometheus.NewRegistry()), nil, transcript.Options{}, time.Now)
	return rd, func(rel string) string { return filepath.Join(root, "projects", filepath.FromSlash(rel)) }
}

// TestTablePathsReadBackAsGiven: whatever its name, an entry's path, its
// part under projects/ and its session read back exactly as they were
// added; names of the forms Claude Code writes are packed, others kept
// whole.
func TestTablePathsReadBackAsGiven(t *testing.T) {
	const id = "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
	tests := []struct {
		rel  string
		kind uint8
	}{
		{"-home-u-p/" + id + ".jsonl", nameUUID},
		{"-home-u-p/ffffffff-ffff-ffff-ffff-ffffffffffff.jsonl", nameUUID},
		{"-home-u-p/00000000-0000-0000-0000-000000000000.jsonl", nameUUID},
		{"-home-u-p/" + strings.ToUpper(id) + ".jsonl", nameWhole},
		{"-home-u-p/0a1b2c3d-4e5f-4a6b-8c7d9-e0f1a2b3c4d.jsonl", nameWhole},
		{"-home-u-p/" + id + ".json", nameWhole},
		{"-home-u-p/" + id + "x.jsonl", nameWhole},
		{"-home-u-p/" + id + "/subagents/agent-a1b2c3d.jsonl", nameSubagent},
		{"-home-u-p/" + id + "/subagents/agent-a8f3c2e1b9d0f4a6c.jsonl", nameSubagent},
		{"-home-u-p/" + id + "/subagents/agent-0.jsonl", nameSubagent},
		{"-home-u-p/" + id + "/subagents/agent-" + strings.Repeat("f", 30) + ".jsonl", nameSubagent},
		{"-home-u-p/deeper/" + id + "/subagents/agent-a1.jsonl", nameSubagent},
		{"-home-u-p/" + strings.ToUpper(id) + "/subagents/agent-a1.jsonl", nameAgent},
		{"-home-u-p/" + id + "x/subagents/agent-a1.jsonl", nameAgent},
		{"-home-u-p/" + id + "/subagents/workflows/agent-a1.jsonl", nameAgent},
		{"-home-u-p/" + id + "/other/agent-a1.jsonl", nameAgent},
		{id + "/subagents/agent-a1.jsonl", nameAgent},
		{"-home-u-p/" + id + "/subagents/agent-" + strings.Repeat("f", 31) + ".jsonl", nameWhole},
		{"-home-u-p/" + id + "/subagents/agent-.jsonl", nameWhole},
		{"-home-u-p/" + id + "/subagents/agent-acompact-fffbd0.jsonl", nameWhole},
		{"-home-u-p/" + id + "/subagents/agent-ABC.jsonl", nameWhole},
		{"-home-u-p/agent-1234abcd.jsonl", nameAgent},
		{"top.jsonl", nameWhole},
		{id + ".jsonl", nameUUID},
		{"-home-u-p/odd name é.jsonl", nameWhole},
		{"-p/-p/" + id + ".jsonl", nameUUID},
	}
	rd, abs := newTestReader(t)
	// A path left unclean after projects/ keeps its rel as relOf gave it.
	unclean := filepath.Join(rd.cfg.ClaudeDirs[0], "projects") + "//" + id + ".jsonl"
	if f := rd.add(unclean, ""); f == nil || f.path() != unclean || f.rel() != "/"+id+".jsonl" || rd.sessionID(f) != session.ClassifySource("/"+id+".jsonl").SessionID {
		t.Errorf("%s: not read back", unclean)
	} else {
		rd.drop(unclean)
	}
	// A subagent's path left unclean (a doubled separator, a "." or ".."
	// part) reads back as it was given, its rel as relOf cleans it,
	// whether or not it is packed.
	projects := filepath.Join(rd.cfg.ClaudeDirs[0], "projects")
	for _, rel := range []string{
		"-home-u-p//" + id + "/subagents/agent-a1.jsonl",
		"-home-u-p/" + id + "//subagents/agent-a1.jsonl",
		"-home-u-p/./" + id + "/subagents/agent-a1.jsonl",
		"-home-u-p/" + id + "/./subagents/agent-a1.jsonl",
		"-home-u-p/x/../" + id + "/subagents/agent-a1.jsonl",
	} {
		p := projects + string(filepath.Separator) + filepath.FromSlash(rel)
		if f := rd.add(p, ""); f == nil || f.path() != p || f.rel() != filepath.Clean(filepath.FromSlash(rel)) {
			if f != nil {
				t.Errorf("%s: not read back: %q %q", rel, f.path(), f.rel())
			} else {
				t.Errorf("%s: not added", rel)
			}
		} else {
			rd.drop(p)
		}
	}
	for _, tt := range tests {
		p := abs(tt.rel)
		f := rd.add(p, "")
		if f == nil {
			t.Fatalf("%s: not added", tt.rel)
		}
		rel := filepath.FromSlash(tt.rel)
		if f.path() != p || f.rel() != rel || f.nameKind() != tt.kind {
			t.Errorf("%s: path %q rel %q kind %d, want %q %q %d", tt.rel, f.path(), f.rel(), f.nameKind(), p, rel, tt.kind)
		}
		if got, want := rd.sessionID(f), session.ClassifySource(rel).SessionID; got != want {
			t.Errorf("%s: session %q, want %q", tt.rel, got, want)
		}
		if rd.find(p) != f {
			t.Errorf("%s: find does not return the entry", tt.rel)
		}
	}
	var want []string
	for _, tt := range tests {
		want = append(want, abs(tt.rel))
	}
	slices.Sort(want)
	var got []string
	for _, f := range rd.files {
		got = append(got, f.path())
	}
	if !slices.Equal(got, want) {
		t.Errorf("table order:\n got %q\nwant %q", got, want)
	}
}

// TestComparePathAgreesWithStringsCompare: an entry compares with any path
// as its path string would, whatever is shared or packed: paths that
// share a prefix, end early, go on, or differ in the separator's place.
func TestComparePathAgreesWithStringsCompare(t *testing.T) {
	rd, abs := newTestReader(t)
	rels := []string{
		"-p/0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d.jsonl",
		"-p/0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d/subagents/agent-a1.jsonl",
		"-p/0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d/subagents/agent-a10.jsonl",
		"-p/0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4e/subagents/agent-a1.jsonl",
		"-p/agent-ff.jsonl",
		"-p-q/agent-00.jsonl",
		"-p0/agent-00.jsonl",
		"-p/odd.jsonl",
	}
	var probes []string
	for _, rel := range rels {
		p := abs(rel)
		rd.add(p, "")
		dir := filepath.Dir(p)
		up := filepath.Dir(dir)
		probes = append(probes, p, p[:len(p)-1], p+"x", p+"/", dir, dir+"/", dir+"-", dir+"0", dir+"/0", dir+"/z", dir[:len(dir)-1], "", "/",
			up, up+"/", up+"-", up[:len(up)-1], up+"/subagents", up+"/subagentz")
	}
	for _, f := range rd.files {
		for _, q := range probes {
			if got, want := f.comparePath(q), strings.Compare(f.path(), q); got != want {
				t.Errorf("comparePath(%s, %s) = %d, want %d", f.path(), q, got, want)
			}
		}
	}
}

// TestSiblingsShareTheirDirectoryUntilTheLastGoes: the entries of one
// directory share its entry, and it is forgotten with the last of them.
func TestSiblingsShareTheirDirectoryUntilTheLastGoes(t *testing.T) {
	rd, abs := newTestReader(t)
	a := rd.add(abs("-p/00000000-0000-4000-8000-000000000001.jsonl"), "")
	b := rd.add(abs("-p/00000000-0000-4000-8000-000000000002.jsonl"), "")
	c := rd.add(abs("-q/00000000-0000-4000-8000-000000000003.jsonl"), "")
	if a.dir != b.dir || a.dir == c.dir || len(rd.dirs) != 2 {
		t.Fatalf("dirs: a %p b %p c %p, %d interned; want a and b shared, 2", a.dir, b.dir, c.dir, len(rd.dirs))
	}
	rd.drop(a.path())
	if len(rd.dirs) != 2 || rd.dirs[filepath.Dir(b.path())] != b.dir {
		t.Fatalf("after dropping a: %d dirs, want b's kept", len(rd.dirs))
	}
	rd.drop(b.path())
	rd.sync(scanOf(), nil) // drops c as a scan that found nothing
	if len(rd.dirs) != 0 || len(rd.files) != 0 {
		t.Errorf("after dropping every file: %d dirs, %d files; want none", len(rd.dirs), len(rd.files))
	}
}

// TestSortForReadPutsLegacyAgentsAfterTheirProject: reading order is path
// order, except that a project's legacy agent-*.jsonl files come after
// everything else in the project, in name order; it agrees with sorting
// by the key dir + "/\xff" + name, from any starting order.
func TestSortForReadPutsLegacyAgentsAfterTheirProject(t *testing.T) {
	rd, abs := newTestReader(t)
	const s1, s2 = "00000000-0000-4000-8000-000000000001", "00000000-0000-4000-8000-000000000002"
	rels := []string{
		"-p/" + s1 + ".jsonl",
		"-p/" + s1 + "/subagents/agent-a1.jsonl",
		"-p/" + s2 + ".jsonl",
		"-p/agent-0b.jsonl",
		"-p/agent-0a.jsonl",
		"-p/agent-acompact-e1.jsonl",
		"-p-q/" + s1 + ".jsonl",
		"-p-q/agent-ff.jsonl",
		"-p0/agent-01.jsonl",
		"-p0/" + s2 + ".jsonl",
		"-z/" + s2 + ".jsonl",
	}
	for _, rel := range rels {
		rd.add(abs(rel), "")
	}
	key := func(f *fileState) string {
		if f.kind() == session.SourceLegacyAgent {
			return filepath.Dir(f.path()) + string(filepath.Separator) + "\xff" + filepath.Base(f.path())
		}
		return f.path()
	}
	want := slices.Clone(rd.files)
	slices.SortFunc(want, func(a, b *fileState) int { return strings.Compare(key(a), key(b)) })
	if got := rd.sorted(); !slices.Equal(got, want) {
		t.Errorf("sorted() from the table's order differs from the keys' order")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 20 {
		got := slices.Clone(rd.files)
		if i > 0 {
			rng.Shuffle(len(got), func(i, j int) { got[i], got[j] = got[j], got[i] })
		}
		sortForRead(got)
		if !slices.Equal(got, want) {
			var g, w []string
			for k := range got {
				g, w = append(g, got[k].rel()), append(w, want[k].rel())
			}
			t.Fatalf("order %d:\n got %q\nwant %q", i, g, w)
		}
	}
}

// TestScannedDirectoryStringIsShared: a scan hands each file over with its
// directory as the walk holds it (and the watcher keeps it, a watch key):
// the table keeps that string rather than a copy of its own (7.5 MB at
// 50,000 subagents/ dirs); a string that is not the directory is not
// taken.
func TestScannedDirectoryStringIsShared(t *testing.T) {
	rd, abs := newTestReader(t)
	p := abs("-p/00000000-0000-4000-8000-000000000001.jsonl")
	dir := strings.Clone(filepath.Dir(p))
	f := rd.add(p, dir)
	if f == nil || unsafe.StringData(f.dir.path) != unsafe.StringData(dir) || f.rel() != "-p/00000000-0000-4000-8000-000000000001.jsonl" {
		t.Fatalf("the directory's string is not the scan's: %q (rel %q)", f.dir.path, f.rel())
	}
	q := abs("-q/agent-a2.jsonl")
	other := strings.Clone(filepath.Dir(p))
	g := rd.add(q, other)
	if g == nil || g.dir.path != filepath.Dir(q) || unsafe.StringData(g.dir.path) == unsafe.StringData(other) {
		t.Errorf("a string not the file's directory was taken: %q", g.dir.path)
	}
	if g.path() != q || f.path() != p {
		t.Errorf("paths %q %q, want %q %q", f.path(), g.path(), p, q)
	}
	// A subagent of the session shares its project's entry, not one of
	// its subagents/ dir (whose string, the scan's, is not kept).
	a := abs("-p/00000000-0000-4000-8000-000000000001/subagents/agent-a1.jsonl")
	h := rd.add(a, strings.Clone(filepath.Dir(a)))
	if h == nil || h.dir != f.dir || h.path() != a || len(rd.dirs) != 2 {
		t.Errorf("the subagent's entry: dir %q (shared %v), path %q, %d directories; want the project's, %q, 2", h.dir.path, h.dir == f.dir, h.path(), len(rd.dirs), a)
	}
	// The directory map's keys are the entries' own strings, not
	// substrings of the paths added (which they would keep alive).
	for k, d := range rd.dirs {
		if unsafe.StringData(k) != unsafe.StringData(d.path) {
			t.Errorf("directory %q is keyed by another string than its own", k)
		}
	}
}
