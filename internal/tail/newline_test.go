package tail

import (
	"bytes"
	"testing"
)

// newlineASCII finds the first '\n' as bytes.IndexByte does, and the
// ASCII start it reports is ASCII, whatever the length of p, wherever
// the '\n' and the non-ASCII bytes fall in its blocks of 64 and 16 and
// its tail, and whatever surrounds p in memory. Where no non-ASCII byte
// comes before the '\n' (or the end), it reports all of them: the count
// the decoder skips its UTF-8 check for.
func TestNewlineASCIIFindsTheLineEndAndItsASCIIStart(t *testing.T) {
	buf := bytes.Repeat([]byte{0xe2}, 400) // non-ASCII around p, never in it unless placed
	for n := 0; n <= 200; n++ {
		for _, nl := range []int{-1, 0, 1, 15, 16, 17, 31, 47, 63, 64, 65, 79, 127, 128, 150, n - 1} {
			for _, hi := range []int{-1, 0, 1, 15, 16, 17, 62, 63, 64, 65, 100, 128, n - 1} {
				for _, second := range []bool{false, true} {
					p := buf[100 : 100+n]
					for i := range p {
						p[i] = 'a'
					}
					if nl >= 0 && nl < n {
						p[nl] = '\n'
						if second && nl+3 < n {
							p[nl+3] = '\n'
						}
					}
					if hi >= 0 && hi < n {
						p[hi] = 0xc3
					}
					gotNL, gotASCII := newlineASCII(p)
					wantNL := bytes.IndexByte(p, '\n')
					end := wantNL
					if end < 0 {
						end = n
					}
					prefix := end
					if hi >= 0 && hi < end {
						prefix = hi
					}
					if gotNL != wantNL || gotASCII < 0 || gotASCII > prefix {
						t.Fatalf("n=%d '\\n' at %d, 0xc3 at %d: got (%d, %d), want the '\\n' at %d and an ASCII start of at most %d", n, nl, hi, gotNL, gotASCII, wantNL, prefix)
					}
					if prefix == end && gotASCII != end && newlineASCIIExact {
						t.Fatalf("n=%d '\\n' at %d, 0xc3 at %d: an ASCII start of %d, want all %d bytes", n, nl, hi, gotASCII, end)
					}
				}
			}
		}
		for i := 100; i < 100+n; i++ {
			buf[i] = 0xe2
		}
	}
}
