package transcript

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"math/bits"
	"strconv"
)

// errSyntax is returned by the scanner for any structural JSON error. The
// decoder maps it to ReasonInvalidJSON.
var errSyntax = errors.New("invalid json")

// The scanner works on one line held in memory. It never builds a tree: it
// walks the object keys the decoder asks for and skips everything else with
// skipValue, which jumps over strings with bytes.IndexByte so that large
// payloads (tool output, snapshots, thinking) cost a memchr, not an
// allocation.

// hasControl reports whether s holds a byte below 0x20, which JSON
// forbids inside strings. It looks at a word at a time: readLong checks
// the head of every long string it meets, up to 1.5 KiB, and a loop over
// bytes was 3 % of decoding assistant lines.
func hasControl(s []byte) bool {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		w := binary.LittleEndian.Uint64(s[i:])
		if (w-lsb*0x20)&^w&hiBits != 0 {
			return true
		}
	}
	for ; i < len(s); i++ {
		if s[i] < 0x20 {
			return true
		}
	}
	return false
}

// allDigits reports whether s holds only ASCII digits. (bytes.ContainsAny
// builds a set of its characters on every call: for the short numbers of
// token counts it took half the time of reading them.)
func allDigits(s []byte) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// isSpace reports JSON white space. The first test is all most bytes
// meet: Claude Code writes no white space between tokens.
func isSpace(c byte) bool { return c <= ' ' && (c == ' ' || c == '\t' || c == '\n' || c == '\r') }

func skipWS(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

// stringEnd returns the index of the closing quote of the string whose
// opening quote is at b[i-1] (i is the first content byte) and whether the
// string contains escapes. A raw control character before the closing
// quote, or no closing quote, is a syntax error.
//
// Keys and read values are short, so one pass finds the quote, the
// backslashes and the control characters together, a word at a time.
func stringEnd(b []byte, i int) (end int, escaped bool, err error) {
	for {
		i = nextStringSpecial(b, i)
		if i >= len(b) {
			return 0, false, errSyntax
		}
		switch c := b[i]; {
		case c == '"':
			return i, escaped, nil
		case c == '\\':
			// The escaped byte is never the end of the string, but a raw
			// control character there is as invalid as anywhere else.
			if i+1 >= len(b) || b[i+1] < 0x20 {
				return 0, false, errSyntax
			}
			escaped = true
			i += 2
		default:
			return 0, false, errSyntax
		}
	}
}

// lsb has the low bit of every byte of a word set: lsb*c repeats c.
const lsb = 0x0101010101010101

// specialBytes flags, in bit 7 of each byte, the bytes of the word w that
// end a plain run of string content: '"', '\\' and those below 0x20. A
// byte of x is zero iff its bit 7 is set in (x-lsb)&^x, and a byte of w is
// below 0x20 iff its bit 7 is set in (w-lsb*0x20)&^w. Borrows only flag
// bytes above a true match, so the lowest flagged byte is the first
// special one.
func specialBytes(w uint64) uint64 {
	q := w ^ (lsb * '"')
	s := w ^ (lsb * '\\')
	return (((q - lsb) &^ q) | ((s - lsb) &^ s) | ((w - lsb*0x20) &^ w)) & hiBits
}

// nextStringSpecial returns the index of the first '"', '\\' or control
// byte (below 0x20) at or after b[i], or len(b) when there is none.
func nextStringSpecial(b []byte, i int) int {
	for ; i+8 <= len(b); i += 8 {
		if m := specialBytes(binary.LittleEndian.Uint64(b[i:])); m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
	}
	for ; i < len(b); i++ {
		if c := b[i]; c == '"' || c == '\\' || c < 0x20 {
			return i
		}
	}
	return i
}

// skipString returns the index of the closing quote of the string whose
// first content byte is at b[i], without noting escapes: the fast path for
// strings nobody reads (tool output, file snapshots, thinking text). It
// does not check for raw control characters: skipped values are only
// delimited, not validated (strings that are read are checked).
func skipString(b []byte, i int) (int, error) {
	for {
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 {
			return 0, errSyntax
		}
		q := i + j
		if q == 0 || b[q-1] != '\\' {
			return q, nil
		}
		n := 1
		for k := q - 2; k >= i && b[k] == '\\'; k-- {
			n++
		}
		if n%2 == 0 {
			return q, nil
		}
		i = q + 1
	}
}

// readString expects b[i] == '"' and returns the raw bytes between the
// quotes, whether they hold escapes, and the index after the closing quote.
func readString(b []byte, i int) (raw []byte, escaped bool, next int, err error) {
	if i >= len(b) || b[i] != '"' {
		return nil, false, 0, errSyntax
	}
	// Most strings read are short and plain (keys, ids, times, names):
	// the scan of nextStringSpecial, here without the frames of its
	// callers, finds their closing quote; anything else is taken on by
	// stringEnd from the first special byte.
	j := i + 1
	for ; j+8 <= len(b); j += 8 {
		if m := specialBytes(binary.LittleEndian.Uint64(b[j:])); m != 0 {
			j += bits.TrailingZeros64(m) >> 3
			if b[j] == '"' {
				return b[i+1 : j], false, j + 1, nil
			}
			break
		}
	}
	end, esc, err := stringEnd(b, j)
	if err != nil {
		return nil, false, 0, err
	}
	return b[i+1 : end], esc, end + 1, nil
}

// skipValue skips the JSON value starting at b[i] (after whitespace) and
// returns the index after it. Containers are matched bracket by bracket so
// that a truncated or unbalanced value is a syntax error.
func skipValue(b []byte, i int) (int, error) {
	i = skipWS(b, i)
	if i >= len(b) {
		return 0, errSyntax
	}
	switch c := b[i]; c {
	case '"':
		end, err := skipString(b, i+1)
		if err != nil {
			return 0, err
		}
		return end + 1, nil
	case '{', '[':
		return skipContainer(b, i)
	case 't':
		return expectLit(b, i, "true")
	case 'f':
		return expectLit(b, i, "false")
	case 'n':
		return expectLit(b, i, "null")
	default:
		if c == '-' || (c >= '0' && c <= '9') {
			return skipNumber(b, i)
		}
		return 0, errSyntax
	}
}

func expectLit(b []byte, i int, lit string) (int, error) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return 0, errSyntax
	}
	return i + len(lit), nil
}

func skipNumber(b []byte, i int) (int, error) {
	start := i
	for i < len(b) {
		c := b[i]
		if (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' {
			i++
			continue
		}
		break
	}
	if i == start {
		return 0, errSyntax
	}
	return i, nil
}

// skipContainer skips an object or array starting at b[i]. It checks that
// brackets nest and close with the right kind, and that strings terminate;
// it does not check commas and colons inside skipped values (the decoder
// only needs to know where a value ends).
func skipContainer(b []byte, i int) (int, error) {
	var small [64]byte
	stack := small[:0]
	for i < len(b) {
		c := b[i]
		switch c {
		case '"':
			end, err := skipString(b, i+1)
			if err != nil {
				return 0, err
			}
			i = end + 1
			continue
		case '{':
			stack = append(stack, '}')
		case '[':
			stack = append(stack, ']')
		case '}', ']':
			if len(stack) == 0 || stack[len(stack)-1] != c {
				return 0, errSyntax
			}
			stack = stack[:len(stack)-1]
			if len(stack) == 0 {
				return i + 1, nil
			}
		default:
			if c < 0x20 && !isSpace(c) {
				return 0, errSyntax
			}
		}
		i++
	}
	return 0, errSyntax
}

// objectFields calls fn for every key of the object starting at b[i]. fn
// receives the raw key and the index of the value (after whitespace) and
// returns the index after the value. It returns the index after the
// closing brace.
func objectFields(b []byte, i int, fn func(key []byte, v int) (int, error)) (int, error) {
	return fields(b, i, fn, nil)
}

// fields is objectFields; with rs, for the object of a line, it also takes
// and keeps the run of fields the lines repeat (run.go).
func fields(b []byte, i int, fn func(key []byte, v int) (int, error), rs *runScan) (int, error) {
	i = skipWS(b, i)
	if i >= len(b) || b[i] != '{' {
		return 0, errSyntax
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, nil
	}
	for {
		taken := 0
		if rs != nil {
			taken = rs.reuse(b, i)
		}
		if taken > 0 {
			i = taken
		} else {
			start := i
			var key []byte
			var esc bool
			var next int
			var err error
			// A plain key whose closing quote is in its first 16 bytes
			// (nearly every key) is read here, without readString's call:
			// its first two steps, written out because a function of them
			// is too costly for the compiler to inline (148 against 80).
			if i+17 <= len(b) && b[i] == '"' {
				if m := specialBytes(binary.LittleEndian.Uint64(b[i+1:])); m != 0 {
					if j := i + 1 + bits.TrailingZeros64(m)>>3; b[j] == '"' {
						key, next = b[i+1:j], j+1
					}
				} else if m := specialBytes(binary.LittleEndian.Uint64(b[i+9:])); m != 0 {
					if j := i + 9 + bits.TrailingZeros64(m)>>3; b[j] == '"' {
						key, next = b[i+1:j], j+1
					}
				}
			}
			if next == 0 {
				if key, esc, next, err = readString(b, i); err != nil {
					return 0, err
				}
			}
			if esc {
				var buf [64]byte
				key = appendUnescaped(buf[:0], key, 64)
			}
			if next+1 < len(b) && b[next] == ':' && b[next+1] > ' ' {
				i = next + 1 // no white space around the ':', as Claude Code writes it
			} else {
				i = skipWS(b, next)
				if i >= len(b) || b[i] != ':' {
					return 0, errSyntax
				}
				i = skipWS(b, i+1)
				if i >= len(b) {
					return 0, errSyntax
				}
			}
			i, err = fn(key, i)
			if err != nil {
				return 0, err
			}
			if rs != nil {
				rs.note(b, start, i)
			}
		}
		if i+1 < len(b) && b[i] == ',' && b[i+1] > ' ' {
			i++ // the next key right after the ','
			continue
		}
		i = skipWS(b, i)
		if i >= len(b) {
			return 0, errSyntax
		}
		switch b[i] {
		case ',':
			i = skipWS(b, i+1)
		case '}':
			if rs != nil {
				rs.done(b)
			}
			return i + 1, nil
		default:
			return 0, errSyntax
		}
	}
}

// arrayElems calls fn for every element of the array starting at b[i].
func arrayElems(b []byte, i int, fn func(v int) (int, error)) (int, error) {
	i = skipWS(b, i)
	if i >= len(b) || b[i] != '[' {
		return 0, errSyntax
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == ']' {
		return i + 1, nil
	}
	for {
		var err error
		i, err = fn(i)
		if err != nil {
			return 0, err
		}
		if i+1 < len(b) && b[i] == ',' && b[i+1] > ' ' {
			i++ // the next element right after the ','
			continue
		}
		i = skipWS(b, i)
		if i >= len(b) {
			return 0, errSyntax
		}
		switch b[i] {
		case ',':
			i = skipWS(b, i+1)
		case ']':
			return i + 1, nil
		default:
			return 0, errSyntax
		}
	}
}

// readInt reads a JSON number (or null) at b[i] as an int64, truncating a
// fraction, honouring an exponent and saturating out of range. Non-numbers
// are skipped and read as 0.
func readInt(b []byte, i int) (int64, int, error) {
	if i < len(b) && (b[i] == '-' || (b[i] >= '0' && b[i] <= '9')) {
		end, err := skipNumber(b, i)
		if err != nil {
			return 0, 0, err
		}
		j := i
		neg := b[j] == '-'
		if neg {
			j++
		}
		var n int64
		for ; j < end && b[j] >= '0' && b[j] <= '9'; j++ {
			d := int64(b[j] - '0')
			if n > (math.MaxInt64-d)/10 {
				j = -1 // overflow
				break
			}
			n = n*10 + d
		}
		// Stopped before the end: a fraction or an exponent follows.
		if j < 0 || j < end && bytes.ContainsAny(b[i:end], "eE") {
			f, _ := strconv.ParseFloat(string(b[i:end]), 64)
			switch {
			case f >= math.MaxInt64:
				return math.MaxInt64, end, nil
			case f <= math.MinInt64:
				return math.MinInt64, end, nil
			}
			return int64(f), end, nil
		}
		if neg {
			n = -n
		}
		return n, end, nil
	}
	end, err := skipValue(b, i)
	return 0, end, err
}

// readBool reads true/false; anything else is skipped and read as false.
func readBool(b []byte, i int) (bool, int, error) {
	if i < len(b) && b[i] == 't' {
		end, err := expectLit(b, i, "true")
		return err == nil, end, err
	}
	end, err := skipValue(b, i)
	return false, end, err
}
