// Package docs holds the repository's documentation (design.md,
// architecture.md, metrics.md, development.md, pricing.md) and the tests
// that keep it true: every "design §N.N" the code cites exists in
// design.md, and the import rules architecture.md states hold. The metrics
// page is checked against the registry in internal/daemon.
package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/claude-transcript-exporter/claude-transcript-exporter"

// goFiles lists the repository's Go files (relative paths), testdata and
// hidden directories excluded.
func goFiles(t *testing.T, withTests bool) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir("..", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); p != ".." && (n == "testdata" || strings.HasPrefix(n, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(p, ".go") && (withTests || !strings.HasSuffix(p, "_test.go")) {
			rel, _ := filepath.Rel("..", p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatal("no Go file found under the repository root")
	}
	return out
}

var (
	citation = regexp.MustCompile(`design ((?:§\d+(?:\.\d+)?(?:, | and |,? ?)?)+)`)
	section  = regexp.MustCompile(`§(\d+(?:\.\d+)?)`)
	heading  = regexp.MustCompile(`(?m)^#{2,3} (\d+(?:\.\d+)?)\.? `)
)

// designSections reads the numbered headings of design.md ("## 2." and
// "### 2.1").
func designSections(t *testing.T) map[string]bool {
	t.Helper()
	b, err := os.ReadFile("design.md")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, m := range heading.FindAllStringSubmatch(string(b), -1) {
		out[m[1]] = true
	}
	return out
}

func TestEveryCitedDesignSectionExists(t *testing.T) {
	have := designSections(t)
	cited := 0
	for _, f := range goFiles(t, true) {
		if f == "docs/docs_test.go" {
			continue // its own examples
		}
		b, err := os.ReadFile(filepath.Join("..", f))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range citation.FindAllStringSubmatch(string(b), -1) {
			for _, s := range section.FindAllStringSubmatch(m[1], -1) {
				cited++
				if !have[s[1]] {
					t.Errorf("%s cites design §%s, which docs/design.md has no heading for (\"## %s.\" or \"### %s \")", f, s[1], s[1], s[1])
				}
			}
		}
	}
	if cited == 0 {
		t.Fatal("no \"design §N\" citation found in the Go files: the pattern no longer matches how the code cites")
	}
}

func TestDesignSectionsAreFoundInCitations(t *testing.T) {
	for _, tc := range []struct {
		text string
		want []string
	}{
		{"pins design §2.1: the lines", []string{"2.1"}},
		{"every layout (design §1, §2.7, §2.8): new", []string{"1", "2.7", "2.8"}},
		{"the tree of design §5: one span", []string{"5"}},
		{"no citation here: §3", nil},
	} {
		var got []string
		for _, m := range citation.FindAllStringSubmatch(tc.text, -1) {
			for _, s := range section.FindAllStringSubmatch(m[1], -1) {
				got = append(got, s[1])
			}
		}
		if strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Errorf("%q: got %v, want %v", tc.text, got, tc.want)
		}
	}
}

// forbiddenInMapping are the standard packages that would let mapping/
// touch files, the network or the process.
var forbiddenInMapping = []string{"os", "net", "io/fs", "io/ioutil", "path/filepath", "syscall", "log", "log/slog"}

// clockCalls are the time functions that read the clock or wait on it.
var clockCalls = map[string]bool{"Now": true, "Since": true, "Until": true, "Sleep": true, "After": true,
	"Tick": true, "NewTimer": true, "NewTicker": true, "AfterFunc": true}

// importViolations applies the import rules of architecture.md to one
// import of a package (both module-relative paths, e.g. "mapping/session"
// and "internal/daemon"; a standard or third-party import is given whole).
func importViolations(pkg, imp string) string {
	local, isLocal := strings.CutPrefix(imp, module+"/")
	under := func(p, dir string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }
	switch {
	case under(pkg, "mapping"):
		if isLocal && !under(local, "mapping") {
			return "mapping/ is pure: it imports only the standard library and mapping/*"
		}
		if !isLocal && strings.Contains(strings.SplitN(imp, "/", 2)[0], ".") {
			return "mapping/ is pure: no third-party package"
		}
		for _, f := range forbiddenInMapping {
			if under(imp, f) {
				return "mapping/ is pure: no files, network or process (" + f + ")"
			}
		}
	case pkg == "internal/discover" || pkg == "internal/tail" || pkg == "internal/checkpoint" || pkg == "internal/safefile":
		if isLocal && (under(local, "mapping") || under(local, "exporter")) {
			return pkg + " imports nothing from mapping/ or exporter/"
		}
	case under(pkg, "exporter"):
		if isLocal && (under(local, "internal/daemon") || under(local, "cmd")) {
			return "exporter/ imports no internal/daemon or cmd/"
		}
		if isLocal && under(local, "exporter") && local != pkg {
			return "exporter/prom and exporter/otlp do not import each other"
		}
	}
	if isLocal && local == "internal/daemon" && !under(pkg, "cmd") {
		return "only cmd/ imports internal/daemon"
	}
	if isLocal && under(local, "internal/testonly") && !under(pkg, "bench") && !under(pkg, "internal/testonly") {
		return local + " is test only: imported only by tests, bench/ and internal/testonly/*"
	}
	return ""
}

func TestImportRulesCatchViolations(t *testing.T) {
	for _, tc := range []struct {
		pkg, imp string
		bad      bool
	}{
		{"mapping/session", module + "/mapping/transcript", false},
		{"mapping/session", "strings", false},
		{"mapping/session", "os", true},
		{"mapping/metrics", "net/http", true},
		{"mapping/spans", "path/filepath", true},
		{"mapping/spans", module + "/internal/daemon", true},
		{"mapping/spans", module + "/exporter/prom", true},
		{"mapping/spans", "github.com/prometheus/client_golang/prometheus", true},
		{"internal/tail", module + "/mapping/transcript", true},
		{"internal/tail", "os", false},
		{"exporter/prom", module + "/mapping/metrics", false},
		{"exporter/prom", module + "/exporter/otlp", true},
		{"exporter/otlp", module + "/internal/daemon", true},
		{"internal/claudefiles", module + "/internal/daemon", true},
		{"cmd/claude-transcript-exporter", module + "/internal/daemon", false},
		{"internal/daemon", module + "/internal/testonly/testbackend", true},
		{"internal/claudefiles", module + "/internal/testonly/indepcount", true},
		{"cmd/claude-transcript-exporter", module + "/internal/testonly/testbackend", true},
		{"mapping/transcript", module + "/internal/testonly/indepcount", true},
		{"bench/exactcheck", module + "/internal/testonly/indepcount", false},
		{"internal/testonly/indepcount", module + "/internal/testonly/testbackend", false},
	} {
		if got := importViolations(tc.pkg, tc.imp) != ""; got != tc.bad {
			t.Errorf("%s importing %s: violation %v, want %v", tc.pkg, tc.imp, got, tc.bad)
		}
	}
}

func TestImportRules(t *testing.T) {
	fset := token.NewFileSet()
	pkgs := map[string]bool{}
	for _, f := range goFiles(t, false) {
		pkg := filepath.ToSlash(filepath.Dir(f))
		pkgs[pkg] = true
		file, err := parser.ParseFile(fset, filepath.Join("..", f), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		timeName := ""
		for _, is := range file.Imports {
			imp, _ := strconv.Unquote(is.Path.Value)
			if v := importViolations(pkg, imp); v != "" {
				t.Errorf("%s imports %s: %s", f, imp, v)
			}
			if imp == "time" {
				timeName = "time"
				if is.Name != nil {
					timeName = is.Name.Name
				}
			}
			if is.Name != nil && is.Name.Name == "." {
				t.Errorf("%s dot-imports %s", f, imp)
			}
		}
		for _, d := range file.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && fn.Name.Name == "init" {
				t.Errorf("%s has an init function (no init side effects)", f)
			}
		}
		ast.Inspect(file, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			x, ok := sel.X.(*ast.Ident)
			if !ok {
				return true
			}
			if strings.HasPrefix(pkg, "mapping/") && timeName != "" && x.Name == timeName && clockCalls[sel.Sel.Name] {
				t.Errorf("%s: %s calls time.%s: mapping/ takes the time as a value", fset.Position(sel.Pos()), pkg, sel.Sel.Name)
			}
			if x.Name == "prometheus" && (sel.Sel.Name == "MustRegister" || sel.Sel.Name == "Register" || sel.Sel.Name == "DefaultRegisterer" || sel.Sel.Name == "DefaultGatherer") {
				t.Errorf("%s: the default Prometheus registry (prometheus.%s): inject a registry", fset.Position(sel.Pos()), sel.Sel.Name)
			}
			return true
		})
	}
	for _, want := range []string{"mapping/transcript", "mapping/session", "exporter/prom", "internal/daemon"} {
		if !pkgs[want] {
			t.Errorf("package %s not found: the walk missed the tree", want)
		}
	}
	names := make([]string, 0, len(pkgs))
	for p := range pkgs {
		names = append(names, p)
	}
	sort.Strings(names)
	t.Logf("checked %d packages: %s", len(names), strings.Join(names, " "))
}
