package transcript

// Text kept from strings: capped, cut on UTF-8 boundaries, unescaped from
// JSON, and the head of a text that classification reads.

import (
	"bytes"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// readLong locates the string at b[i] (which must be a quote) without
// scanning all of it for escapes; only its head, where raw control
// characters make the line invalid, is checked. It returns the raw
// content and the index after the closing quote.
func readLong(b []byte, i int) ([]byte, int, error) {
	end, err := skipString(b, i+1)
	if err != nil {
		return nil, 0, err
	}
	raw := b[i+1 : end]
	if hasControl(raw[:min(len(raw), headScan(TextHeadMax))]) {
		return nil, 0, errSyntax
	}
	return raw, end + 1, nil
}

// headScan is how many raw bytes can unescape to max+4 bytes: an escape
// takes at most 6 raw bytes per output byte.
func headScan(max int) int { return 6 * (max + 4) }

// headOf is head for strings located by readLong: whether they hold
// escapes is learnt from the part that is read.
func headOf(raw []byte, max int) (string, bool) {
	prefix := raw[:min(len(raw), headScan(max))]
	if bytes.IndexByte(prefix, '\\') < 0 {
		return head(raw, false, max)
	}
	out := appendUnescaped(make([]byte, 0, max+4), prefix, max+4)
	if len(out) > max || len(prefix) < len(raw) {
		return string(cutUTF8(out, max)), true
	}
	return string(out), false
}

// head returns the unescaped string, cut to at most max bytes, and whether
// it was cut.
func head(raw []byte, esc bool, max int) (string, bool) {
	if !esc {
		if len(raw) <= max {
			return string(raw), false
		}
		return string(cutUTF8(raw, max)), true
	}
	// Unescape a little more than max (a rune is at most 4 bytes, and a
	// cut backs off to a rune start) to learn whether the text is longer.
	out := appendUnescaped(make([]byte, 0, min(len(raw), max+4)), raw, max+4)
	if len(out) > max {
		return string(cutUTF8(out, max)), true
	}
	return string(out), false
}

func appendCapped(cur string, raw []byte, max int) string {
	if len(cur) >= max {
		return cur
	}
	if cur != "" {
		cur += "\n"
	}
	s, _ := headOf(raw, max-len(cur))
	return cur + s
}

func capString(s string, max int) string {
	if len(s) <= max {
		return s
	}
	return string(cutUTF8([]byte(s), max))
}

// cutUTF8 cuts b to at most n bytes without splitting a rune.
func cutUTF8(b []byte, n int) []byte {
	if len(b) <= n {
		return b
	}
	for n > 0 && !utf8.RuneStart(b[n]) {
		n--
	}
	return b[:n]
}

// escapedBytes are the bytes after a backslash that stand for one byte
// in a JSON string, and unescapedBytes those bytes, in the same order.
const (
	escapedBytes   = "\"\\/bfnrt"
	unescapedBytes = "\"\\/\b\f\n\r\t"
)

// appendUnescaped appends the unescaped JSON string content raw to dst,
// stopping once dst has grown by max bytes (max < 0: no limit). Invalid
// escapes are copied as they are.
func appendUnescaped(dst, raw []byte, max int) []byte {
	start := len(dst)
	full := func() bool { return max >= 0 && len(dst)-start >= max }
	for i := 0; i < len(raw); {
		if full() {
			break
		}
		c := raw[i]
		if c != '\\' {
			j := len(raw)
			if k := bytes.IndexByte(raw[i+1:], '\\'); k >= 0 {
				j = i + 1 + k
			}
			chunk := raw[i:j]
			if max >= 0 && len(dst)-start+len(chunk) > max {
				chunk = cutUTF8(chunk, max-(len(dst)-start))
				dst = append(dst, chunk...)
				break
			}
			dst = append(dst, chunk...)
			i = j
			continue
		}
		if i+1 >= len(raw) {
			dst = append(dst, c)
			break
		}
		if k := strings.IndexByte(escapedBytes, raw[i+1]); k >= 0 {
			dst = append(dst, unescapedBytes[k])
			i += 2
			continue
		}
		switch raw[i+1] {
		case 'u':
			r, n := decodeU(raw[i:])
			if n == 0 {
				dst = append(dst, raw[i:i+2]...)
				i += 2
				continue
			}
			if max >= 0 && len(dst)-start+utf8.RuneLen(r) > max {
				return dst
			}
			dst = utf8.AppendRune(dst, r)
			i += n
		default:
			dst = append(dst, raw[i:i+2]...)
			i += 2
		}
	}
	return dst
}

// decodeU decodes \uXXXX (and a following low surrogate) at the start of
// s, returning the rune and the bytes used (0 when invalid).
func decodeU(s []byte) (rune, int) {
	if len(s) < 6 {
		return 0, 0
	}
	v, err := strconv.ParseUint(string(s[2:6]), 16, 32)
	if err != nil {
		return 0, 0
	}
	r := rune(v)
	if utf16.IsSurrogate(r) {
		if len(s) >= 12 && s[6] == '\\' && s[7] == 'u' {
			if v2, err := strconv.ParseUint(string(s[8:12]), 16, 32); err == nil {
				if dec := utf16.DecodeRune(r, rune(v2)); dec != utf8.RuneError {
					return dec, 12
				}
			}
		}
		return utf8.RuneError, 6
	}
	return r, 6
}
