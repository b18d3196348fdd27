package deploy

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/testonly/testbackend"
	"go.yaml.in/yaml/v3"
)

// repoPath returns the absolute path of rel (slash-separated) under the
// repository root.
func repoPath(t testing.TB, rel string) string {
	t.Helper()
	return filepath.Join(testbackend.RepoRoot(t), filepath.FromSlash(rel))
}

// needTool returns the path of a command-line tool or fails the test with an
// install hint.
func needTool(t testing.TB, name, hint string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s is not on PATH (%s): %v", name, hint, err)
	}
	return p
}

// runTool runs a command with a timeout and returns its combined output; a
// non-zero exit fails the test with that output.
func runTool(t testing.TB, env []string, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = testbackend.RepoRoot(t)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out.String())
	}
	return out.String()
}

// readYAML decodes the YAML file at the repository-relative path rel.
func readYAML(t testing.TB, rel string, v any) {
	t.Helper()
	data, err := os.ReadFile(repoPath(t, rel))
	if err != nil {
		t.Fatalf("read %s: %v", rel, err)
	}
	if err := yaml.Unmarshal(data, v); err != nil {
		t.Fatalf("parse %s: %v", rel, err)
	}
}

// globRepo returns the repository-relative paths matching pattern, failing
// the test when there are none.
func globRepo(t testing.TB, pattern string) []string {
	t.Helper()
	root := testbackend.RepoRoot(t)
	matches, err := filepath.Glob(filepath.Join(root, filepath.FromSlash(pattern)))
	if err != nil || len(matches) == 0 {
		t.Fatalf("no files match %s (%v)", pattern, err)
	}
	rel := make([]string, len(matches))
	for i, m := range matches {
		r, err := filepath.Rel(root, m)
		if err != nil {
			t.Fatal(err)
		}
		rel[i] = filepath.ToSlash(r)
	}
	return rel
}
