package transcript

// countLines counts the lines of a JSON string's raw text: its unescaped
// text split at newlines (\n, \u000a), a last line without one counting;
// "" has none. A backslash followed by n is a newline unless an odd run
// of backslashes comes before it, so newlineEscapes counts the \n escapes
// of 16-byte blocks at once and leaves to isNewlineEscape only the blocks
// holding a \u or a \n after a backslash (about 1 block in 900 of the
// corpus's strings of 64 bytes or more). Against countLinesWords, the Go
// loop it replaced: BenchmarkCountLines (the 36 MB of strings of the
// corpus whose lines the decoder counts) 27.6 -> 11.1 ms, medians of 6
// alternated runs; countLines 5.6 -> 0.6 % of the CPU samples of a
// decode of an eighth of the 1 GB benchmark corpus.
func countLines(raw []byte) int64 {
	var n int64
	check := func(j int) {
		if raw[j] == '\\' && (raw[j+1] == 'n' || raw[j+1] == 'u') && isNewlineEscape(raw, j) {
			n++
		}
	}
	i := 0
	if len(raw) >= 2 {
		// The blocks start at 1: each is read with the byte before it.
		check(0)
		i = 1
	}
	for i+17 <= len(raw) {
		c, o := newlineEscapes(raw[i-1:])
		n += int64(c)
		if i += o - 1; i+17 > len(raw) {
			break
		}
		for end := i + 16; i < end; i++ {
			check(i)
		}
	}
	for ; i+1 < len(raw); i++ {
		check(i)
	}
	if len(raw) > 0 && !endsWithNewline(raw) {
		n++
	}
	return n
}

// newlineEscapes counts the \n escapes whose backslash is in a 16-byte
// block of p at offset o = 1, 17, 33 ... while p[o-1] and p[o+16] are in p
// (a backslash followed by n, not itself after a backslash), stopping at
// the first block that holds a \u or a \n after a backslash, which the
// caller checks: n is the count before block o, the block it stopped at
// or the first that does not fit. In assembly: SSE2 compares four blocks,
// and the bytes before and after each, in a few instructions.
//
//go:noescape
func newlineEscapes(p []byte) (n, o int)
