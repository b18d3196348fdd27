package discover

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// benchTree builds a tree shaped like a real config dir of about 7,000
// transcripts: 40 projects of 15 sessions, each with 10 subagents (and
// their meta files), some tool results, and 10 legacy agents per project.
func benchTree(b *testing.B) string {
	b.Helper()
	root := b.TempDir()
	write := func(p string) {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("{}\n"), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	for p := range 40 {
		proj := filepath.Join(root, "projects", fmt.Sprintf("-home-user-src-project-%02d", p))
		for s := range 15 {
			sess := fmt.Sprintf("%08x-1b2c-4d5e-8f90-%012x", p*100+s, s)
			write(filepath.Join(proj, sess+".jsonl"))
			for a := range 10 {
				agent := filepath.Join(proj, sess, "subagents", fmt.Sprintf("agent-a%016x", a))
				write(agent + ".jsonl")
				write(agent + ".meta.json")
			}
			if s%2 == 0 {
				write(filepath.Join(proj, sess, "tool-results", "toolu_01.txt"))
			}
		}
		for a := range 10 {
			write(filepath.Join(proj, fmt.Sprintf("agent-%08x.jsonl", a)))
		}
	}
	return root
}

// BenchmarkScan measures one idle rescan (nothing changed since the
// previous one), with and without directory watches.
func BenchmarkScan(b *testing.B) {
	root := benchTree(b)
	for _, poll := range []bool{true, false} {
		b.Run(fmt.Sprintf("pollOnly=%v", poll), func(b *testing.B) {
			w, err := New(Config{Roots: []string{root}, Match: isTranscript, PollOnly: poll})
			if err != nil {
				b.Fatal(err)
			}
			defer w.Close()
			files, err := w.Scan()
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(len(files)), "files")
			b.ReportAllocs()
			for b.Loop() {
				if _, err := w.Scan(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
