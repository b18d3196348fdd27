package transcript

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
)

// decodedLines counts the lines of raw by the rule of countLines on its
// text as encoding/json decodes it; ok is false when raw is not the
// content of a JSON string.
func decodedLines(raw []byte) (n int64, ok bool) {
	var s string
	if json.Unmarshal([]byte(`"`+string(raw)+`"`), &s) != nil {
		return 0, false
	}
	n = int64(strings.Count(s, "\n"))
	if s != "" && !strings.HasSuffix(s, "\n") {
		n++
	}
	return n, true
}

// corpusStrings holds the contents of the strings of the corpus's lines,
// once: raw as they stand in the lines, reencoded (every string value
// decoded by encoding/json and encoded again by json.Marshal, which
// writes <, >, & and U+2028 as \u escapes), and counted (the raw values
// of the keys the decoder counts the lines of: tool results' and Write's
// content, Edit's strings, NotebookEdit's source).
var corpusStrings struct {
	once                    sync.Once
	raw, reencoded, counted [][]byte
}

func loadCorpusStrings(tb testing.TB) (raw, reencoded, counted [][]byte) {
	tb.Helper()
	c := &corpusStrings
	c.once.Do(func() {
		lines, _ := loadCorpus(tb)
		for _, line := range lines {
			var v any
			if json.Unmarshal(line, &v) != nil {
				continue
			}
			c.raw = appendRawStrings(c.raw, line, false)
			c.counted = appendRawStrings(c.counted, line, true)
			c.reencoded = appendReencoded(c.reencoded, v)
		}
	})
	if len(c.raw) < 10000 || len(c.reencoded) < 10000 {
		tb.Fatalf("only %d raw and %d reencoded strings in the corpus", len(c.raw), len(c.reencoded))
	}
	return c.raw, c.reencoded, c.counted
}

// appendRawStrings appends the content of every string (keys too) of the
// valid JSON text line, escapes as they are; only the values of the keys
// whose lines are counted (content, old_string, new_string, new_source)
// when counted is set.
func appendRawStrings(dst [][]byte, line []byte, counted bool) [][]byte {
	var key []byte
	for i := 0; i < len(line); i++ {
		if line[i] != '"' {
			continue
		}
		j := i + 1
		for line[j] != '"' {
			if line[j] == '\\' {
				j++
			}
			j++
		}
		s := line[i+1 : j]
		i = j
		isKey := bytes.HasPrefix(bytes.TrimLeft(line[j+1:], " "), []byte(":"))
		switch {
		case !counted:
			dst = append(dst, bytes.Clone(s))
		case isKey:
			key = s
		default:
			switch string(key) {
			case "content", "old_string", "new_string", "new_source":
				dst = append(dst, bytes.Clone(s))
			}
		}
	}
	return dst
}

// appendReencoded appends the raw content of every string value in v as
// json.Marshal writes it.
func appendReencoded(dst [][]byte, v any) [][]byte {
	switch v := v.(type) {
	case string:
		b, err := json.Marshal(v)
		if err != nil {
			panic(err)
		}
		dst = append(dst, b[1:len(b)-1])
	case []any:
		for _, e := range v {
			dst = appendReencoded(dst, e)
		}
	case map[string]any:
		for _, e := range v {
			dst = appendReencoded(dst, e)
		}
	}
	return dst
}

// craftedLines are raw texts around the 16-byte blocks of newlineEscapes
// (which start at 1, read a byte on each side and go 4 at a time):
// backslash runs of 1 to 5 before n, u000a and u000A at every offset to
// 140, random strings of every length to 200 made of the bytes that
// matter, a backslash at the end.
func craftedLines() [][]byte {
	var out [][]byte
	for run := 1; run <= 5; run++ {
		for _, after := range []string{"n", "u000a", "u000A", "u000b", "u00", "\\n", "x", ""} {
			for off := 0; off <= 140; off++ {
				for _, tail := range []int{0, 1, 2, 17, 40} {
					s := strings.Repeat("a", off) + strings.Repeat("\\", run) + after + strings.Repeat("b", tail)
					out = append(out, []byte(s))
				}
			}
		}
	}
	rng := rand.New(rand.NewPCG(16, 17))
	alphabet := []byte("\\\\\\nnnuu000aAbx\"")
	for l := 0; l <= 200; l++ {
		for range 200 {
			b := make([]byte, l)
			for i := range b {
				b[i] = alphabet[rng.IntN(len(alphabet))]
			}
			out = append(out, b)
		}
		out = append(out, []byte(strings.Repeat("x", l)), []byte(strings.Repeat("\\n", l/2)), []byte(strings.Repeat("\\", l)))
		out = append(out, []byte(strings.Repeat("x", l)+"\\"), []byte(strings.Repeat("\\u000a", l/6)+"\\"))
	}
	return out
}

// checkCountLines compares countLines on raw with the Go fallback (the
// word-at-a-time loop it replaced, unchanged) and both with the
// encoding/json count when raw is valid, and the kernel (if any) with its
// byte-at-a-time model.
func checkCountLines(t *testing.T, raw []byte) {
	t.Helper()
	got := countLines(raw)
	if want := countLinesWords(raw); got != want {
		t.Fatalf("countLines(%q) = %d; the word-at-a-time loop it replaced says %d", raw, got, want)
	}
	if want, ok := decodedLines(raw); ok && got != want {
		t.Fatalf("countLines(%q) = %d; encoding/json's text has %d lines", raw, got, want)
	}
	checkKernel(t, raw)
}

// TestCountLinesEqualsReferenceAndDecodedText: on every string of the
// corpus (raw and re-encoded) and on texts crafted around the 16-byte
// blocks, countLines equals the word-at-a-time loop it replaced and the
// lines of the text encoding/json decodes.
func TestCountLinesEqualsReferenceAndDecodedText(t *testing.T) {
	raw, reencoded, _ := loadCorpusStrings(t)
	cases := []struct {
		name  string
		texts [][]byte
	}{
		{"corpus strings as written", raw},
		{"corpus strings re-encoded by json.Marshal", reencoded},
		{"crafted texts around the blocks", craftedLines()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			valid := 0
			for _, s := range tc.texts {
				checkCountLines(t, s)
				if _, ok := decodedLines(s); ok {
					valid++
				}
			}
			t.Logf("%d texts, %d of them valid JSON string contents", len(tc.texts), valid)
		})
	}
}

// FuzzCountLines holds countLines to the word-at-a-time reference and to
// encoding/json on any bytes.
func FuzzCountLines(f *testing.F) {
	for _, s := range []string{"", "a", "\\", "a\\nb", "a\\\\nb", "\\u000a", "\\u000A\\u000a", strings.Repeat("x\\n", 20), strings.Repeat("\\", 33) + "n", strings.Repeat("ab\\\\\\u000a", 9)} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		checkCountLines(t, raw)
	})
}

// BenchmarkCountLines counts the lines of the strings of the corpus the
// decoder counts (raw, as they stand in its lines) per iteration: new is
// countLines, word the word-at-a-time loop it replaced.
func BenchmarkCountLines(b *testing.B) {
	_, _, counted := loadCorpusStrings(b)
	var total int64
	for _, s := range counted {
		total += int64(len(s))
	}
	for _, impl := range []struct {
		name string
		fn   func([]byte) int64
	}{{"new", countLines}, {"word", countLinesWords}} {
		b.Run(impl.name, func(b *testing.B) {
			b.SetBytes(total)
			var n int64
			for b.Loop() {
				for _, s := range counted {
					n += impl.fn(s)
				}
			}
			sink = n
		})
	}
}

var sink int64
