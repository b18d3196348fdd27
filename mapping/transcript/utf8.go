package transcript

import (
	"encoding/binary"
	"math/bits"
)

// hiBits has the top bit of every byte of a word set: a word w holds only
// ASCII when w&hiBits == 0.
const hiBits = 0x8080808080808080

// A three-byte sequence 1110xxxx 10xxxxxx 10xxxxxx in the low bytes of a
// little-endian word w satisfies w&three == threeWant.
const (
	three     = 0xC0C0F0
	threeWant = 0x8080E0
)

// validUTF8 reports whether p is valid UTF-8, with exactly the semantics
// of utf8.Valid: surrogates (U+D800..U+DFFF), overlong forms, code points
// above U+10FFFF and truncated sequences are invalid.
//
// Transcripts are mostly ASCII with multi-byte runes (CJK, box drawing,
// em dashes) scattered through long lines. utf8.Valid steps byte by byte
// through the ASCII that follows a rune until a whole word is ASCII; here
// every step loads a word, jumps straight to its first non-ASCII byte and
// validates that rune, so short ASCII runs between runes cost one load;
// a longer run is skipped by asciiRun (SSE2 on amd64: 64 bytes compared in
// four loads, where the words took 32; validUTF8 was 2.5 % of the 1 GB
// one-shot's CPU in perf, and 1.6 % with it).
func validUTF8(p []byte) bool {
	for len(p) >= 8 {
		w := binary.LittleEndian.Uint64(p)
		if w&hiBits == 0 {
			p = p[8:]
			p = p[asciiRun(p):]
			continue
		}
		if w&0x80 == 0 {
			p = p[bits.TrailingZeros64(w&hiBits)>>3:]
			continue
		}
		// Nearly every rune in transcripts takes three bytes (box
		// drawing, arrows, CJK): check two of them at once when their
		// lead bytes need no narrower range for the second byte.
		if w&three == threeWant && byte(w) != 0xE0 && byte(w) != 0xED {
			if w&(three<<24) == threeWant<<24 && byte(w>>24) != 0xE0 && byte(w>>24) != 0xED {
				p = p[6:]
				continue
			}
			p = p[3:]
			continue
		}
		n := runeLen(p)
		if n == 0 {
			return false
		}
		p = p[n:]
	}
	for len(p) > 0 {
		if p[0] < 0x80 {
			p = p[1:]
			continue
		}
		n := runeLen(p)
		if n == 0 {
			return false
		}
		p = p[n:]
	}
	return true
}

// runeLen returns the length of the valid multi-byte UTF-8 sequence at
// the start of p (p[0] >= 0x80), or 0 when it is invalid or truncated.
// The accepted ranges are those of the Unicode standard's table 3-7, as
// in unicode/utf8.
func runeLen(p []byte) int {
	c := p[0]
	switch {
	case c < 0xC2: // continuation byte, or an overlong 2-byte lead
		return 0
	case c < 0xE0:
		if len(p) < 2 || p[1]&0xC0 != 0x80 {
			return 0
		}
		return 2
	case c < 0xF0:
		if len(p) < 3 || p[2]&0xC0 != 0x80 {
			return 0
		}
		lo, hi := byte(0x80), byte(0xBF)
		switch c {
		case 0xE0: // overlong below U+0800
			lo = 0xA0
		case 0xED: // surrogates U+D800..U+DFFF
			hi = 0x9F
		}
		if p[1] < lo || p[1] > hi {
			return 0
		}
		return 3
	case c < 0xF5:
		if len(p) < 4 || p[2]&0xC0 != 0x80 || p[3]&0xC0 != 0x80 {
			return 0
		}
		lo, hi := byte(0x80), byte(0xBF)
		switch c {
		case 0xF0: // overlong below U+10000
			lo = 0x90
		case 0xF4: // above U+10FFFF
			hi = 0x8F
		}
		if p[1] < lo || p[1] > hi {
			return 0
		}
		return 4
	}
	return 0 // 0xF5..0xFF never appear in UTF-8
}
