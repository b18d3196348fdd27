package transcript

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// stringEndByQuotes is the reference for stringEnd: jump from quote to
// quote with IndexByte, count the backslashes before each, and check the
// bytes passed over for escapes and control characters.
func stringEndByQuotes(b []byte, i int) (end int, escaped bool, err error) {
	for {
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 {
			return 0, false, errSyntax
		}
		q := i + j
		n := 0
		for k := q - 1; k >= i && b[k] == '\\'; k-- {
			n++
		}
		if bytes.IndexByte(b[i:q], '\\') >= 0 {
			escaped = true
		}
		if hasControl(b[i:q]) {
			return 0, false, errSyntax
		}
		if n%2 == 0 {
			return q, escaped, nil
		}
		i = q + 1
	}
}

// skipByBytes is the reference for skipString, written another way: a
// byte at a time, a backslash taking the byte after it along.
func skipByBytes(b []byte, i int) (int, error) {
	for j := i; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j, nil
		}
	}
	return 0, errSyntax
}

func TestSkipStringFindsTheClosingQuote(t *testing.T) {
	long := strings.Repeat("abcdefgh", 9) // past the words scanned one at a time
	tests := []struct {
		name string
		in   string // the string's content and what follows it
		end  int
		bad  bool
	}{
		{name: "empty string", in: `"`, end: 0},
		{name: "short value", in: `user"}`, end: 4},
		{name: "quote in every word position", in: `1234567"`, end: 7},
		{name: "long string", in: long + `",`, end: len(long)},
		{name: "escaped quote", in: `a\"b"`, end: 4},
		{name: "escaped backslash before the closing quote", in: `a\\"b"`, end: 3},
		{name: "three backslashes escape the quote", in: `a\\\"b"`, end: 6},
		{name: "escaped quote at a word boundary", in: `1234567\"9"`, end: 10},
		{name: "backslash last in a word, quote first in the next", in: `123456\\"`, end: 8},
		{name: "escaped quotes past the short words", in: long + `\"x\\\"y\\"`, end: len(long) + 10},
		{name: "escaped backslash ending the short words", in: strings.Repeat("x", 30) + `\\"`, end: 32},
		{name: "escape straddling the short words", in: strings.Repeat("x", 31) + `\"ab"`, end: 35},
		{name: "control bytes are not checked", in: "a\nb\"", end: 3},
		{name: "no closing quote", in: `abc`, bad: true},
		{name: "only an escaped quote", in: `abc\"`, bad: true},
		{name: "only an escaped quote, long", in: long + `\"`, bad: true},
		{name: "backslash at the end", in: `abc\`, bad: true},
		{name: "backslash at the end of a word", in: `1234567\`, bad: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for pad := range 9 {
				b := []byte(strings.Repeat(" ", pad) + `"` + tt.in)
				i := pad + 1
				end, err := skipString(b, i)
				if tt.bad {
					if err == nil {
						t.Fatalf("pad %d: got end %d, want a syntax error", pad, end-i)
					}
					continue
				}
				if err != nil || end != i+tt.end {
					t.Fatalf("pad %d: got (%d, %v), want (%d, nil)", pad, end-i, err, tt.end)
				}
			}
		})
	}
}

func TestStringEnd(t *testing.T) {
	long := strings.Repeat("abcdefgh", 9) // longer than a few words
	tests := []struct {
		name    string
		in      string // the string's content and what follows it
		end     int
		escaped bool
		bad     bool
	}{
		{name: "empty string", in: `"`, end: 0},
		{name: "short key", in: `type":"user"}`, end: 4},
		{name: "quote in every word position", in: `1234567"`, end: 7},
		{name: "long string", in: long + `",`, end: len(long)},
		{name: "non-ascii bytes are content", in: "h\u00e9llo \u2500\u2500\"", end: len("h\u00e9llo \u2500\u2500")},
		{name: "escaped quote", in: `a\"b"`, end: 4, escaped: true},
		{name: "escaped backslash before the closing quote", in: `a\\"b"`, end: 3, escaped: true},
		{name: "three backslashes escape the quote", in: `a\\\"b"`, end: 6, escaped: true},
		{name: "escape after a long run", in: long + `\n"`, end: len(long) + 2, escaped: true},
		{name: "unicode escape", in: `\u00e9"`, end: 6, escaped: true},
		{name: "escaped quote at a word boundary", in: `1234567\"9"`, end: 10, escaped: true},
		{name: "raw newline", in: "a\nb\"", bad: true},
		{name: "raw tab after a long run", in: long + "\t\"", bad: true},
		{name: "raw nul", in: "\x00\"", bad: true},
		{name: "raw control byte after a backslash", in: "\\\x01\"", bad: true},
		{name: "raw control byte after an escaped quote", in: `a\"` + "\x1f\"", bad: true},
		{name: "del is not a control character", in: "\x7f\"", end: 1},
		{name: "no closing quote", in: `abc`, bad: true},
		{name: "only an escaped quote", in: `abc\"`, bad: true},
		{name: "backslash at the end", in: `abc\`, bad: true},
		{name: "control byte after the closing quote is not ours", in: "ab\"\x01", end: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Open the string at several offsets so that it starts at
			// every position of a word.
			for pad := range 9 {
				b := []byte(strings.Repeat(" ", pad) + `"` + tt.in)
				i := pad + 1
				end, esc, err := stringEnd(b, i)
				if tt.bad {
					if err == nil {
						t.Fatalf("pad %d: got end %d, want a syntax error", pad, end)
					}
					continue
				}
				if err != nil || end != i+tt.end || esc != tt.escaped {
					t.Fatalf("pad %d: got (%d, %v, %v), want (%d, %v, nil)", pad, end-i, esc, err, tt.end, tt.escaped)
				}
			}
		})
	}
}

// FuzzStringEnd compares stringEnd, readString (which scans plain strings
// itself and hands the rest to stringEnd) and skipString with the
// references.
func FuzzStringEnd(f *testing.F) {
	for _, s := range []string{`"`, `abc"`, `a\"b"`, `a\\"`, "a\nb\"", `\u00e9"`, `1234567\"9"`, "\u2500\u2500\"", `abc\`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		end, esc, err := stringEnd(b, 0)
		wantEnd, wantEsc, wantErr := stringEndByQuotes(b, 0)
		if (err != nil) != (wantErr != nil) || end != wantEnd || esc != wantEsc {
			t.Fatalf("stringEnd(%q) = (%d, %v, %v), reference says (%d, %v, %v)", b, end, esc, err, wantEnd, wantEsc, wantErr)
		}
		skip, err := skipString(b, 0)
		wantSkip, wantSkipErr := skipByBytes(b, 0)
		if (err != nil) != (wantSkipErr != nil) || skip != wantSkip {
			t.Fatalf("skipString(%q) = (%d, %v), reference says (%d, %v)", b, skip, err, wantSkip, wantSkipErr)
		}
		quoted := append([]byte{'"'}, b...)
		raw, esc, next, err := readString(quoted, 0)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("readString(%q): error %v, reference says %v", quoted, err, wantErr)
		}
		if err == nil && (string(raw) != string(b[:wantEnd]) || esc != wantEsc || next != wantEnd+2) {
			t.Fatalf("readString(%q) = (%q, %v, %d), reference says (%q, %v, %d)", quoted, raw, esc, next, b[:wantEnd], wantEsc, wantEnd+2)
		}
	})
}

// TestWordScansAgreeWithByteLoops: hasControl and allDigits, which look at
// a word at a time, answer as a loop over the bytes does, for a control
// character or a non-digit at every position of strings of every length
// around the word size, and next to bytes at or above 0x80 (whose borrow
// must not make a false match).
func TestWordScansAgreeWithByteLoops(t *testing.T) {
	byteControl := func(s []byte) bool { return slices.ContainsFunc(s, func(c byte) bool { return c < 0x20 }) }
	byteDigits := func(s []byte) bool { return !slices.ContainsFunc(s, func(c byte) bool { return c < '0' || c > '9' }) }
	for n := 0; n <= 20; n++ {
		for _, fill := range []byte{'a', ' ', 0x80, 0xff, '0', '9', 0x20, 0x21} {
			base := bytes.Repeat([]byte{fill}, n)
			cases := [][]byte{base}
			for at := 0; at < n; at++ {
				for _, c := range []byte{0x00, 0x1f, 0x20, '\n', '.', 'e', '-', '/', ':', 0x9f, 0xa0} {
					s := bytes.Clone(base)
					s[at] = c
					cases = append(cases, s)
				}
			}
			for _, s := range cases {
				if got, want := hasControl(s), byteControl(s); got != want {
					t.Fatalf("hasControl(%q) = %v, the byte loop says %v", s, got, want)
				}
				if got, want := allDigits(s), byteDigits(s); got != want {
					t.Fatalf("allDigits(%q) = %v, the byte loop says %v", s, got, want)
				}
			}
		}
	}
}

// An object's keys, read in place when plain and short, are what
// readString reads, whatever their length, wherever a quote, backslash or
// control byte falls in them, and however few bytes follow them: the
// same keys and the same errors.
func TestObjectKeysAreReadAsReadStringReadsThem(t *testing.T) {
	var keys [][]byte
	for n := 0; n <= 20; n++ {
		base := bytes.Repeat([]byte{'k'}, n)
		keys = append(keys, base)
		for at := 0; at < n; at++ {
			for _, c := range [][]byte{{'\\', '"'}, {'\\', '\\'}, {'\\', 'u', '0', '0', '4', '1'}, {0x1f}, {'\t'}, {0xc3, 0xa9}, {'"'}} {
				keys = append(keys, slices.Concat(base[:at], c, base[at:]))
			}
		}
	}
	for _, key := range keys {
		for _, after := range []string{`:1}`, `:1,"x":2}`, `:1` + strings.Repeat(" ", 20) + `}`, `:`, ``} {
			line := []byte(`{"` + string(key) + `"` + after)
			var got []string
			_, gotErr := objectFields(line, 0, func(k []byte, v int) (int, error) {
				got = append(got, string(k))
				return skipValue(line, v)
			})
			// The reference: every key through readString.
			var want []string
			var wantErr error
			i := 1
			for {
				raw, esc, next, err := readString(line, i)
				if err != nil {
					wantErr = err
					break
				}
				if esc {
					raw = appendUnescaped(nil, raw, 64)
				}
				if next >= len(line) || line[next] != ':' {
					wantErr = errSyntax
					break
				}
				want = append(want, string(raw))
				end, err := skipValue(line, next+1)
				if err != nil {
					wantErr = err
					break
				}
				if end = skipWS(line, end); end < len(line) && line[end] == ',' {
					i = end + 1
					continue
				}
				if end >= len(line) || line[end] != '}' {
					wantErr = errSyntax
				}
				break
			}
			if (gotErr == nil) != (wantErr == nil) || gotErr == nil && !slices.Equal(got, want) {
				t.Fatalf("%q: keys %q (err %v), readString reads %q (err %v)", line, got, gotErr, want, wantErr)
			}
		}
	}
}

// A line with white space around its ':'s and ','s (spaces, tabs,
// newlines, as json.Indent or a hand-written test file has them) decodes
// to the record its compact form does: the fast path taken when there is
// none is only a shortcut.
func TestSpacedLinesDecodeAsCompactOnes(t *testing.T) {
	lines := fuzzSeedLines(t)
	lines = append(lines, []byte(goodLine), []byte(contentLine))
	spacers := []struct {
		name  string
		space func(compact []byte) []byte
	}{
		{"indented", func(c []byte) []byte {
			var b bytes.Buffer
			if err := json.Indent(&b, c, "", "\t"); err != nil {
				t.Fatal(err)
			}
			return b.Bytes()
		}},
		{"spaced after ':' and ','", func(c []byte) []byte { return respace(c, " ", "") }},
		{"spaced before ':' and ','", func(c []byte) []byte { return respace(c, "", " ") }},
		{"tabs and newlines both sides", func(c []byte) []byte { return respace(c, "\n\t", "\r\n") }},
	}
	for _, sp := range spacers {
		t.Run(sp.name, func(t *testing.T) {
			compared := 0
			defer func() {
				if compared < 40 {
					t.Errorf("%d lines compared, want the seeds (at least 40)", compared)
				}
			}()
			for _, line := range lines {
				var compact bytes.Buffer
				if err := json.Compact(&compact, line); err != nil {
					continue // a seed that is not JSON
				}
				var want, got Record
				wantErr := NewDecoder(Options{}).Decode(compact.Bytes(), &want)
				spaced := sp.space(compact.Bytes())
				gotErr := NewDecoder(Options{}).Decode(spaced, &got)
				compared++
				if (gotErr == nil) != (wantErr == nil) || !reflect.DeepEqual(got, want) {
					t.Fatalf("%q decodes to %+v (err %v), its compact form to %+v (err %v)", spaced, got, gotErr, want, wantErr)
				}
			}
		})
	}
}

// respace puts after (before) every ':' and ',' of compact JSON outside
// its strings.
func respace(c []byte, after, before string) []byte {
	var out []byte
	in, esc := false, false
	for _, ch := range c {
		switch {
		case in && esc:
			esc = false
		case in && ch == '\\':
			esc = true
		case in && ch == '"':
			in = false
		case in:
		case ch == '"':
			in = true
		case ch == ':' || ch == ',':
			out = append(out, before...)
			out = append(out, ch)
			out = append(out, after...)
			continue
		}
		out = append(out, ch)
	}
	return out
}
