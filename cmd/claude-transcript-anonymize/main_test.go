package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSessionFlagNamesAnUnknownSessionAndWritesNothing(t *testing.T) {
	src := t.TempDir()
	proj := filepath.Join(src, "projects", "-home-u-p")
	if err := os.MkdirAll(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	line := `{"type":"user","sessionId":"s1","uuid":"u1","message":{"role":"user","content":"hi"}}` + "\n"
	if err := os.WriteFile(filepath.Join(proj, "s1.jsonl"), []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		sessions []string
		code     int
		stderr   string
	}{
		{"a known session", []string{"s1"}, 0, ""},
		{"an unknown session", []string{"nope"}, 2, "--session: no session nope in "},
		{"one of two unknown", []string{"s1", "nope"}, 2, "no session nope"},
		{"a path is no session id", []string{"../s1"}, 2, "no session ../s1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dst := filepath.Join(t.TempDir(), "copy")
			args := []string{"--from=" + src, "--to=" + dst, "--key=k"}
			for _, s := range tc.sessions {
				args = append(args, "--session="+s)
			}
			var stdout, stderr bytes.Buffer
			code := run(args, &stdout, &stderr)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr: %s", code, tc.code, stderr.String())
			}
			if tc.code == 0 {
				if _, err := os.Stat(filepath.Join(dst, "projects")); err != nil {
					t.Errorf("nothing copied: %v", err)
				}
				return
			}
			if !strings.Contains(stderr.String(), tc.stderr) {
				t.Errorf("stderr %q does not say %q", stderr.String(), tc.stderr)
			}
			if _, err := os.Stat(dst); err == nil {
				t.Errorf("%s was written for a refused run", dst)
			}
		})
	}
}
