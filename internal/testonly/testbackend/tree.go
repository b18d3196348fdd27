package testbackend

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

var timestampRe = regexp.MustCompile(`"timestamp":"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z)"`)

// ShiftTree copies a Claude dir with every "timestamp" of its JSONL
// files moved by shift (whole hours keep the hour boundaries blocks are
// floored to).
func ShiftTree(t testing.TB, src string, shift time.Duration) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		out := filepath.Join(dst, rel)
		if fi.IsDir() {
			return os.MkdirAll(out, 0o755)
		}
		if !fi.Mode().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if strings.HasSuffix(p, ".jsonl") {
			b = timestampRe.ReplaceAllFunc(b, func(m []byte) []byte {
				s := string(timestampRe.FindSubmatch(m)[1])
				ts, err := time.Parse(time.RFC3339Nano, s)
				if err != nil {
					return m
				}
				frac := ""
				if i := strings.IndexByte(s, '.'); i >= 0 {
					frac = "." + strings.Repeat("0", len(s)-i-2)
				}
				return []byte(`"timestamp":"` + ts.Add(shift).UTC().Format("2006-01-02T15:04:05"+frac+"Z07:00") + `"`)
			})
		}
		return os.WriteFile(out, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// LastTimestamp is the latest "timestamp" in the JSONL files under dir.
func LastTimestamp(t testing.TB, dir string) time.Time {
	t.Helper()
	var last time.Time
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() || !strings.HasSuffix(p, ".jsonl") {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range timestampRe.FindAllSubmatch(b, -1) {
			if ts, err := time.Parse(time.RFC3339Nano, string(m[1])); err == nil && ts.After(last) {
				last = ts
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return last
}
