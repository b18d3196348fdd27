package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestFileRewrittenInPlaceIsReadFromTheStart truncates a followed file and
// rewrites it through the same inode while the daemon is stopped
// (SIGSTOP), so the daemon next sees the new content with its old offset
// in hand, whatever the timing: a longer file, one that keeps its first
// kilobyte, one of exactly the old size. Every request of the new content
// must be counted once, what was counted before must stay counted once, and
// no line may be read from the middle.
func TestFileRewrittenInPlaceIsReadFromTheStart(t *testing.T) {
	type req struct{ s, n int }
	seq := func(s, from, to int) []req {
		var out []req
		for n := from; n < to; n++ {
			out = append(out, req{s, n})
		}
		return out
	}
	cat := func(parts ...[]req) []req {
		var out []req
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	cases := []struct {
		name   string
		before []req
		after  []req
	}{
		// Another session, longer lines: the old offset falls mid-line.
		{"other content, longer", seq(1, 0, 5), seq(12, 0, 8)},
		// The first four lines (over a kilobyte) are kept; the rest
		// changes length from the fifth line on.
		{"same first kilobyte, rest rewritten", seq(1, 0, 5), cat(seq(1, 0, 4), seq(1, 100, 106))},
		// Lines of the same length: the file has exactly its old size.
		{"same size", seq(1, 0, 5), seq(3, 0, 5)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newTailEnv(t)
			path := filepath.Join(e.proj, "s1.jsonl")
			write := func(reqs []req) string {
				var b strings.Builder
				for _, r := range reqs {
					b.WriteString(seqLine(r.s, r.n))
				}
				return b.String()
			}
			appendTo(t, path, write(tc.before))
			e.start()
			wantOut, wantReq := 0.0, 0.0
			seen := map[req]bool{}
			for _, r := range append(append([]req{}, tc.before...), tc.after...) {
				if !seen[r] {
					seen[r] = true
					wantOut += float64(r.n + 1)
					wantReq++
				}
			}
			e.waitCounters(float64(tri(len(tc.before))), float64(len(tc.before)))
			if tc.name == "same size" && len(write(tc.before)) != len(write(tc.after)) {
				t.Fatalf("test input: sizes differ")
			}

			pid := e.proc.cmd.Process.Pid
			if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
			if err == nil {
				_, err = f.WriteString(write(tc.after))
				f.Close()
			}
			if cerr := syscall.Kill(pid, syscall.SIGCONT); cerr != nil {
				t.Fatal(cerr)
			}
			if err != nil {
				t.Fatal(err)
			}

			e.waitCounters(wantOut, wantReq)
			mfs := parseExposition(t, scrape(t, e.addr))
			if n := sumBy(mfs, "claude_transcript_exporter_decode_errors_total")[""]; n != 0 {
				t.Errorf("decode errors %v: a line was read from the middle", n)
			}
			if n := sumBy(mfs, "claude_transcript_exporter_files_reread_total")[""]; n != 1 {
				t.Errorf("files_reread_total %v, want 1", n)
			}
			if !strings.Contains(e.proc.log.String(), "reading from the start") {
				t.Errorf("no log line says the file is read again:\n%s", lastLines(e.proc.log.String(), 20))
			}
		})
	}
}
