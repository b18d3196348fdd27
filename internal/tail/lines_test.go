package tail

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestReaderCapsTheUnterminatedLine: an unterminated last line read AtEOF
// obeys the cap like any other, whether it filled the read buffer or not
// (FuzzTail found a short buffer-fitting tail over the cap handed over
// whole).
func TestReaderCapsTheUnterminatedLine(t *testing.T) {
	for _, tc := range []struct {
		name    string
		content string
		bufSize int
		maxLine int
		want    []got
	}{
		{"tail over the cap, fits the buffer", "ab\n{\"type\":\"assis", 64, 3,
			[]got{{LineOK, "ab", 3}, {LineTooLong, "", 17}}},
		{"tail over the cap, fills the buffer", "ab\n" + strings.Repeat("x", 40), 16, 20,
			[]got{{LineOK, "ab", 3}, {LineTooLong, "", 43}}},
		{"tail over the cap after a buffer's worth", "ab\n" + strings.Repeat("x", 24), 16, 20,
			[]got{{LineOK, "ab", 3}, {LineTooLong, "", 27}}},
		{"tail at the cap", "ab\nxyz", 64, 3,
			[]got{{LineOK, "ab", 3}, {LineUnterminated, "xyz", 6}}},
		{"no cap", "ab\n{\"type\":\"assis", 64, 0,
			[]got{{LineOK, "ab", 3}, {LineUnterminated, "{\"type\":\"assis", 17}}},
		{"blank tail over the cap", "ab\n      ", 64, 3,
			[]got{{LineOK, "ab", 3}, {LineTooLong, "", 9}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "t.jsonl")
			if err := os.WriteFile(p, []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			fh, err := os.Open(p)
			if err != nil {
				t.Fatal(err)
			}
			defer fh.Close()
			var out []got
			end, err := NewReader(tc.bufSize, tc.maxLine).ReadFrom(fh, 0, ReadOptions{AtEOF: true},
				func(line []byte, end int64, st LineStatus) error {
					out = append(out, got{st, string(line), end})
					return nil
				})
			if err != nil || end != int64(len(tc.content)) {
				t.Fatalf("ended at %d of %d: %v", end, len(tc.content), err)
			}
			if !slices.Equal(out, tc.want) {
				t.Fatalf("got %v, want %v", out, tc.want)
			}
			// Lines over a planned range agrees.
			var viaLines []got
			Lines([]byte(tc.content), Range{End: int64(len(tc.content)), Unterminated: true}, tc.maxLine,
				func(line []byte, _ int, end int64, st LineStatus) {
					viaLines = append(viaLines, got{st, string(line), end})
				})
			if !slices.Equal(viaLines, tc.want) {
				t.Fatalf("Lines: %v, want %v", viaLines, tc.want)
			}
		})
	}
}

// TestReadersOfOneHandleReadTheirOwnRanges: two readers of one open file,
// one reading while the other is between two of its lines (as workers
// streaming two ranges of one file do), each get the lines of their own
// range. Seeking the shared handle moved the first reader's reads to the
// end of the second's range.
func TestReadersOfOneHandleReadTheirOwnRanges(t *testing.T) {
	var content strings.Builder
	var first, second []string
	for i := range 400 {
		line := strings.Repeat(string(rune('a'+i%26)), 40+i%7) + "-" + string(rune('0'+i%10))
		content.WriteString(line + "\n")
		if i < 200 {
			first = append(first, line)
		} else {
			second = append(second, line)
		}
	}
	mid := int64(len(strings.Join(first, "\n")) + 1)
	p := filepath.Join(t.TempDir(), "t.jsonl")
	if err := os.WriteFile(p, []byte(content.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	a, b := NewReader(16, 0), NewReader(16, 0)
	var gotA, gotB []string
	_, err = a.ReadFrom(f, 0, ReadOptions{Limit: mid}, func(line []byte, _ int64, _ LineStatus) error {
		gotA = append(gotA, string(line))
		if len(gotA) == 3 {
			_, err := b.ReadFrom(f, mid, ReadOptions{}, func(line []byte, _ int64, _ LineStatus) error {
				gotB = append(gotB, string(line))
				return nil
			})
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(gotA, first) || !slices.Equal(gotB, second) {
		t.Errorf("first reader read %d lines (want %d), second %d (want %d)", len(gotA), len(first), len(gotB), len(second))
	}
}
