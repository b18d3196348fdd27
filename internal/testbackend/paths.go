package testbackend

import (
	"net"
	"os"
	"path/filepath"
	"sort"
	"testing"
)

// SharedDirEnv overrides the location of the shared folder (SharedDir).
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

// SharedDir returns the shared folder that sits next to the repository
// (RepoRoot/../shared), or $CTE_SHARED_DIR when set. It fails the test if the
// folder does not exist.
func SharedDir(t testing.TB) string {
	t.Helper()
	dir := os.Getenv(SharedDirEnv)
	if dir == "" {
		dir = filepath.Join(RepoRoot(t), "..", "shared")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatalf("shared dir: %v", err)
	}
	if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
		t.Fatalf("shared dir %s not found (it is expected next to the repository; set %s to override): %v",
			abs, SharedDirEnv, err)
	}
	return abs
}

// CorpusDir returns SharedDir/corpus/real, the corpus of real Claude Code
// configuration trees. It fails the test if the folder does not exist.
func CorpusDir(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(SharedDir(t), "corpus", "real")
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		t.Fatalf("corpus dir %s not found: %v", dir, err)
	}
	return dir
}

// CorpusTrees returns the absolute paths of the subfolders of CorpusDir,
// sorted; each is a Claude configuration directory. It fails the test if
// there are none.
func CorpusTrees(t testing.TB) []string {
	t.Helper()
	dir := CorpusDir(t)
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
