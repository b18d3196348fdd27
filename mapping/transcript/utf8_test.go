package transcript

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestValidUTF8EdgeCases(t *testing.T) {
	ascii := strings.Repeat("a", 21) // longer than a 16-byte step, odd
	tests := []struct {
		name string
		in   string
		want bool
	}{
		{"empty", "", true},
		{"ascii only", ascii, true},
		{"ascii with nul and del", "a\x00b\x7fc" + ascii, true},
		{"two-byte rune", "é", true},
		{"three-byte rune", "—", true},
		{"four-byte rune", "😀", true},
		{"smallest two-byte rune", "\u0080", true},
		{"largest two-byte rune", "\u07ff", true},
		{"smallest three-byte rune", "\u0800", true},
		{"last rune before the surrogates", "\ud7ff", true},
		{"first rune after the surrogates", "\ue000", true},
		{"largest three-byte rune", "\uffff", true},
		{"smallest four-byte rune", "\U00010000", true},
		{"largest rune", "\U0010ffff", true},
		{"runes between long ascii runs", ascii + "é" + ascii + "—" + ascii + "😀" + ascii, true},
		{"cjk run", strings.Repeat("漢字", 40), true},
		{"box drawing after ascii", ascii + strings.Repeat("─", 30) + "│", true},
		{"rune straddling a word boundary", "1234567—" + ascii, true},

		{"lone continuation byte", "\x80", false},
		{"continuation byte after ascii", ascii + "\xbf", false},
		{"overlong two-byte nul", "\xc0\x80", false},
		{"overlong two-byte lead c1", "\xc1\xbf", false},
		{"overlong three-byte", "\xe0\x80\x80", false},
		{"overlong three-byte just below u+0800", "\xe0\x9f\xbf", false},
		{"overlong four-byte", "\xf0\x80\x80\x80", false},
		{"overlong four-byte just below u+10000", "\xf0\x8f\xbf\xbf", false},
		{"first surrogate", "\xed\xa0\x80", false},
		{"last surrogate", "\xed\xbf\xbf", false},
		{"surrogate after a long ascii run", ascii + "\xed\xa0\x80" + ascii, false},
		{"above u+10ffff", "\xf4\x90\x80\x80", false},
		{"lead byte f5", "\xf5\x80\x80\x80", false},
		{"byte ff", ascii + "\xff" + ascii, false},
		{"two-byte rune cut at the end", ascii + "\xc3", false},
		{"three-byte rune cut at the end", ascii + "\xe2\x80", false},
		{"four-byte rune cut at the end", ascii + "\xf0\x9f\x98", false},
		{"two-byte rune with ascii second byte", "\xc3a" + ascii, false},
		{"three-byte rune with ascii third byte", "\xe2\x80a" + ascii, false},
		{"four-byte rune with ascii last byte", "\xf0\x9f\x98a" + ascii, false},
		{"rune with a lead byte as continuation", "\xe2\xe2\x80\x94" + ascii, false},
		{"invalid byte after sixteen ascii bytes", strings.Repeat("b", 16) + "\x80", false},
		{"invalid byte in the last word", strings.Repeat("b", 30) + "\xfe" + "b", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if std := utf8.ValidString(tt.in); std != tt.want {
				t.Fatalf("bad test case: utf8.Valid says %v", std)
			}
			if got := validUTF8([]byte(tt.in)); got != tt.want {
				t.Errorf("validUTF8(%q) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}

// TestValidUTF8AgreesWithStdlibOnAllShortInputs checks every input of one,
// two and three bytes, and every four-byte input with any first byte and
// the others drawn from the bytes where the ranges change.
func TestValidUTF8AgreesWithStdlibOnAllShortInputs(t *testing.T) {
	check := func(p []byte) {
		t.Helper()
		if got, want := validUTF8(p), utf8.Valid(p); got != want {
			t.Fatalf("validUTF8(% x) = %v, utf8.Valid says %v", p, got, want)
		}
	}
	var buf [4]byte
	for a := range 256 {
		buf[0] = byte(a)
		check(buf[:1])
		for b := range 256 {
			buf[1] = byte(b)
			check(buf[:2])
			for c := range 256 {
				buf[2] = byte(c)
				check(buf[:3])
			}
		}
	}
	for a := range 256 {
		buf[0] = byte(a)
		for j := range len(boundaryBytes) {
			buf[1] = boundaryBytes[j]
			for k := range len(boundaryBytes) {
				buf[2] = boundaryBytes[k]
				for l := range len(boundaryBytes) {
					buf[3] = boundaryBytes[l]
					check(buf[:4])
				}
			}
		}
	}
}

// boundaryBytes are the byte values where UTF-8's accepted ranges begin
// or end, with a neighbour on each side.
const boundaryBytes = "\x00\x41\x7f\x80\x81\x8f\x90\x9f\xa0\xbf\xc0\xc1\xc2" +
	"\xdf\xe0\xe1\xec\xed\xee\xef\xf0\xf3\xf4\xf5\xff"

// TestValidUTF8AgreesWithStdlibAtEveryOffset places short sequences at
// every offset of a run of ASCII, so that they start, straddle and end
// word boundaries and fall in the byte-by-byte tail.
func TestValidUTF8AgreesWithStdlibAtEveryOffset(t *testing.T) {
	seqs := [][]byte{nil}
	for n := 1; n <= 3; n++ {
		var next [][]byte
		for _, s := range seqs {
			for j := range len(boundaryBytes) {
				next = append(next, append(bytes.Clone(s), boundaryBytes[j]))
			}
		}
		seqs = next
	}
	for _, s := range append(seqs, []byte("😀"), []byte("\xf4\x90\x80\x80"), []byte("\xf0\x9f\x98")) {
		for off := range 18 {
			for _, tail := range []string{"", "z", "0123456789abcdef"} {
				p := []byte(strings.Repeat("x", off) + string(s) + tail)
				if got, want := validUTF8(p), utf8.Valid(p); got != want {
					t.Fatalf("validUTF8(%q) = %v, utf8.Valid says %v", p, got, want)
				}
			}
		}
	}
}

// FuzzValidUTF8 is a differential test against utf8.Valid.
func FuzzValidUTF8(f *testing.F) {
	for _, s := range []string{
		"", "plain ascii", "é—😀", strings.Repeat("a", 17) + "\xed\xa0\x80",
		"\xf4\x90\x80\x80", "1234567—", strings.Repeat("─", 9) + "\xe2\x94",
	} {
		f.Add([]byte(s))
	}
	for _, line := range fuzzSeedLines(f) {
		f.Add(line)
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		if got, want := validUTF8(p), utf8.Valid(p); got != want {
			t.Fatalf("validUTF8(%q) = %v, utf8.Valid says %v", p, got, want)
		}
	})
}

// BenchmarkValidUTF8 validates every corpus line, with utf8.Valid for
// comparison.
func BenchmarkValidUTF8(b *testing.B) {
	lines, total := loadCorpus(b)
	for _, bm := range []struct {
		name  string
		valid func([]byte) bool
	}{{"stdlib", utf8.Valid}, {"transcript", validUTF8}} {
		b.Run(bm.name, func(b *testing.B) {
			b.SetBytes(total)
			for b.Loop() {
				for _, line := range lines {
					if !bm.valid(line) {
						b.Fatal("invalid corpus line")
					}
				}
			}
		})
	}
}

// TestASCIIRunStopsAtTheFirstHighByte puts one byte at or above 0x80 at
// every position of buffers of every length up to a few blocks, at every
// alignment: asciiRun (in assembly on amd64) and asciiRunWords never
// count past it, and count at least every whole block of 32 before it.
func TestASCIIRunStopsAtTheFirstHighByte(t *testing.T) {
	backing := make([]byte, 300)
	for align := range 8 {
		for n := 0; n <= 200; n++ {
			for hi := -1; hi < n; hi++ {
				p := backing[align : align+n]
				for i := range p {
					p[i] = 'a' + byte(i%26)
				}
				first := n // no high byte
				if hi >= 0 {
					p[hi] = 0x80 + byte(hi%0x80)
					first = hi
				}
				for name, run := range map[string]func([]byte) int{"asciiRun": asciiRun, "asciiRunWords": asciiRunWords} {
					if got := run(p); got > first || got < first/32*32 {
						t.Fatalf("align %d, len %d, high byte at %d: %s = %d, want %d..%d", align, n, hi, name, got, first/32*32, first)
					}
				}
			}
		}
	}
}
