package testbackend

import (
	"net"
	"os"
	"path/filepath"
	"sort"
	"testing"
)

// SharedDirEnv overrides the location of the shared folder (SharedCorpus).
const SharedDirEnv = "CTE_SHARED_DIR"

// RepoRoot returns the absolute path of the directory holding go.mod, found
// by walking up from the working directory (a package directory under go
// test).
func RepoRoot(t testing.TB) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatalf("repo root: %v", err)
	}
	for dir := wd; ; {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatalf("repo root: no go.mod in %s or any parent", wd)
		}
		dir = parent
	}
}

// CorpusDir returns RepoRoot/testdata/corpus, the anonymized corpus of real
// Claude config dirs that the repository carries. It fails the test if the
// folder does not exist (a broken checkout).
func CorpusDir(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(RepoRoot(t), "testdata", "corpus")
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		t.Fatalf("corpus dir %s not found: it is part of the repository (git checkout testdata/corpus): %v", dir, err)
	}
	return dir
}

// CorpusTrees returns the absolute paths of the subfolders of CorpusDir,
// sorted; each is a Claude configuration directory. It fails the test if
// there are none.
func CorpusTrees(t testing.TB) []string {
	t.Helper()
	return subdirs(t, CorpusDir(t))
}

// SyntheticTrees returns the trees of testdata/synthetic: hand-built,
// documented shapes of cases the real corpus does not hold
// (testdata/synthetic/README.md).
func SyntheticTrees(t testing.TB) []string {
	t.Helper()
	trees := subdirs(t, filepath.Join(RepoRoot(t), "testdata", "synthetic"))
	if len(trees) == 0 {
		t.Fatal("no synthetic trees under testdata/synthetic")
	}
	return trees
}

// SharedCorpus returns the real, not anonymized, corpus the anonymized one
// was made from: $CTE_SHARED_DIR/corpus/real, else ../shared/corpus/real
// beside the repository. It is an optional extra: ok is false when it is
// not there (a fresh clone), and no test needs it.
func SharedCorpus(t testing.TB) (dir string, ok bool) {
	t.Helper()
	shared := os.Getenv(SharedDirEnv)
	if shared == "" {
		shared = filepath.Join(RepoRoot(t), "..", "shared")
	}
	dir, err := filepath.Abs(filepath.Join(shared, "corpus", "real"))
	if err != nil {
		t.Fatalf("shared corpus: %v", err)
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return dir, false
	}
	return dir, true
}

// AllCorpusTrees returns CorpusTrees followed by the trees of SharedCorpus
// when it is there, so that exactness checks also run on the originals.
// It logs which corpora it found.
func AllCorpusTrees(t testing.TB) []string {
	t.Helper()
	trees := CorpusTrees(t)
	if dir, ok := SharedCorpus(t); ok {
		t.Logf("extra corpus %s found: its trees run too", dir)
		return append(trees, subdirs(t, dir)...)
	}
	t.Logf("no extra corpus (set %s to a folder with corpus/real to add one); the in-repo corpus runs", SharedDirEnv)
	return trees
}

func subdirs(t testing.TB, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("corpus trees: %v", err)
	}
	var trees []string
	for _, e := range entries {
		if e.IsDir() {
			trees = append(trees, filepath.Join(dir, e.Name()))
		}
	}
	if len(trees) == 0 {
		t.Fatalf("corpus trees: no subfolders in %s", dir)
	}
	sort.Strings(trees)
	return trees
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago: the
// kernel picks it for a listener that is closed at once.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
