package transcript

import (
	"fmt"
	"strings"
	"testing"
)

// newlineEscapesModel is newlineEscapes a byte at a time, as its doc
// comment says it.
func newlineEscapesModel(p []byte) (n, o int) {
	for o = 1; o+17 <= len(p); o += 16 {
		c := 0
		for j := o; j < o+16; j++ {
			if p[j] != '\\' {
				continue
			}
			if p[j+1] == 'u' || p[j+1] == 'n' && p[j-1] == '\\' {
				return n, o
			}
			if p[j+1] == 'n' {
				c++
			}
		}
		n += c
	}
	return n, o
}

// checkKernel compares newlineEscapes on raw with its model.
func checkKernel(t *testing.T, raw []byte) {
	t.Helper()
	n, o := newlineEscapes(raw)
	if wn, wo := newlineEscapesModel(raw); n != wn || o != wo {
		t.Fatalf("newlineEscapes(%q) = %d, %d; the byte-at-a-time model says %d, %d", raw, n, o, wn, wo)
	}
}

// TestNewlineEscapesStopsAtHardBlocks: the kernel counts plain \n escapes
// and stops at the block of a \u or of a \n after a backslash, wherever
// the block falls.
func TestNewlineEscapesStopsAtHardBlocks(t *testing.T) {
	cases := []struct {
		name      string
		text      string
		wantN     int
		wantStops bool
	}{
		{"plain newlines are counted", `a\nb\nc`, 2, false},
		{"an escaped backslash before n stops", `a\\nb`, 0, true},
		{"a u escape stops", `a\u000ab`, 0, true},
		{"an escaped backslash before another escape does not", `a\\\tb\n`, 1, false},
		{"a quote escape does not", `a\"b\n`, 1, false},
	}
	for _, tc := range cases {
		for off := 0; off < 140; off++ {
			t.Run(fmt.Sprintf("%s/at %d", tc.name, off), func(t *testing.T) {
				p := []byte(strings.Repeat("x", off) + tc.text + strings.Repeat("y", 40))
				n, o := newlineEscapes(p)
				if wn, wo := newlineEscapesModel(p); n != wn || o != wo {
					t.Fatalf("newlineEscapes = %d, %d; the byte-at-a-time model says %d, %d", n, o, wn, wo)
				}
				if stops := o+17 <= len(p); stops != tc.wantStops {
					t.Fatalf("stopped at %d of %d: %v; want %v", o, len(p), stops, tc.wantStops)
				}
				if !tc.wantStops && n != tc.wantN {
					t.Fatalf("counted %d; want %d", n, tc.wantN)
				}
			})
		}
	}
}
