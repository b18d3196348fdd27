package metrics

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"
)

func hashed(base, path string, n int) string {
	s := sha256.Sum256([]byte(path))
	return base + "~" + hex.EncodeToString(s[:])[:n]
}

func TestBasenameLabelsOfTwoWorkingDirsNeverCollide(t *testing.T) {
	m := NewMapper(Config{Project: ProjectBasename}, newRec())
	dirs := []string{"/w/a/buildroot/dl", "/w/b/buildroot/dl", "/w/c/buildroot/dl", "/w/a/buildroot/dl/", "/w/other"}
	want := []string{"dl", hashed("dl", "/w/b/buildroot/dl", 4), hashed("dl", "/w/c/buildroot/dl", 4), "dl", "other"}
	seen := map[string]string{}
	for i, d := range dirs {
		got := m.Project(d)
		if got != want[i] {
			t.Errorf("Project(%q) = %q, want %q", d, got, want[i])
		}
		if again := m.Project(d); again != got {
			t.Errorf("Project(%q) changed from %q to %q", d, got, again)
		}
		key := d
		if key[len(key)-1] == '/' {
			key = key[:len(key)-1]
		}
		if owner, ok := seen[got]; ok && owner != key {
			t.Errorf("%q and %q share the label %q", owner, key, got)
		}
		seen[got] = key
	}
}

func TestAHashedLabelThatIsTakenGrowsUntilUnique(t *testing.T) {
	m := NewMapper(Config{Project: ProjectBasename}, newRec())
	m.Project("/x/dl")
	// Another dir already holds the 4-digit label the next one would get.
	m.RestoreProjectLabels(map[string]string{"/y/dl-impostor": hashed("dl", "/z/dl", 4)})
	if got, want := m.Project("/z/dl"), hashed("dl", "/z/dl", 6); got != want {
		t.Errorf("Project(/z/dl) = %q, want %q", got, want)
	}
}

func TestProjectLabelsSurviveARestartWhateverTheOrder(t *testing.T) {
	first := NewMapper(Config{Project: ProjectBasename}, newRec())
	a, b := first.Project("/w/a/dl"), first.Project("/w/b/dl")
	saved := first.ProjectLabels()

	// The next run meets the dirs in the other order.
	next := NewMapper(Config{Project: ProjectBasename}, newRec())
	next.RestoreProjectLabels(saved)
	if got := next.Project("/w/b/dl"); got != b {
		t.Errorf("after restart /w/b/dl = %q, want %q", got, b)
	}
	if got := next.Project("/w/a/dl"); got != a {
		t.Errorf("after restart /w/a/dl = %q, want %q", got, a)
	}
	if got := next.Project("/w/c/dl"); got == a || got == b {
		t.Errorf("a new dir got a label already given: %q", got)
	}
}

func TestPathAndNoneLabelsKeepNoTable(t *testing.T) {
	for _, mode := range []ProjectLabel{ProjectPath, ProjectNone} {
		m := NewMapper(Config{Project: mode}, newRec())
		m.Project("/w/a/dl")
		m.Project("/w/b/dl")
		if n := len(m.ProjectLabels()); n != 0 {
			t.Errorf("%s: %d labels kept, want none (the label is the path or empty)", mode, n)
		}
	}
}

func TestOneWindowsDirWrittenTwoWaysIsOneProject(t *testing.T) {
	m := NewMapper(Config{Project: ProjectBasename}, newRec())
	for _, d := range []string{`S:\01_Repos\BeFirst_Docs`, `s:\01_Repos\BeFirst_Docs`, `s:/01_repos/befirst_docs/`} {
		if got := m.Project(d); got != "BeFirst_Docs" {
			t.Errorf("Project(%q) = %q, want BeFirst_Docs", d, got)
		}
	}
	if got := m.Project(`T:\01_Repos\BeFirst_Docs`); got == "BeFirst_Docs" {
		t.Errorf("another drive's dir shares the label %q", got)
	}
	// POSIX paths are case-sensitive: two dirs.
	if a, b := m.Project("/W/repo"), m.Project("/w/repo"); a == b {
		t.Errorf("/W/repo and /w/repo share %q", a)
	}
}
