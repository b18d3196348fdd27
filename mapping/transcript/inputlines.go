package transcript

import (
	"bytes"
	"encoding/binary"
	"hash/maphash"
	"math/bits"
)

// Bounds of the line diff of an Edit's old_string and new_string (see
// InputLines). Real edits stay far below them: the largest in the corpus
// diffs 134 by 140 lines.
const (
	// MaxDiffLines bounds the lines of a pair of texts that are diffed;
	// a larger pair counts all its lines.
	MaxDiffLines = 1 << 16
	// MaxDiffCells bounds the pairs of lines one call compares (n×m of
	// the lines left after dropping the common leading and trailing
	// ones, summed over a MultiEdit's edits); an edit whose rest would
	// pass what is left of it counts all the lines of that rest.
	MaxDiffCells = 1 << 20
)

// keepScratch is the largest scratch (in elements) a decoder keeps for
// the next edit; larger ones are let go after use.
const keepScratch = 4096

// diffScratch is the memory an edit's line diff reuses from one call to
// the next: line hashes of both texts, the LCS row, unescaped line text.
// It holds hashes, never text beyond the line being hashed.
type diffScratch struct {
	seed       maphash.Seed
	old, new   []uint64
	row        []int32
	line, text []byte
	seedIsMade bool
}

// editInputLines reads an edit tool's input for InputLines: an Edit's
// old_string and new_string (into pair, counted by finishEdit once every
// key is read), a MultiEdit's edits, a Write's content. key is the
// input's key at b[v]; ok says it was one of them. A repeated key counts
// its last value, and a value of another JSON type counts as no text, as
// a JSON reader reads them.
func (d *Decoder) editInputLines(b []byte, key []byte, v int, tu *ToolUse, pair *[2]span) (next int, ok bool, err error) {
	switch {
	case tu.Name == "Edit" && pairKey(key) >= 0:
		return readPairString(b, v, &pair[pairKey(key)])
	case tu.Name == "MultiEdit" && string(key) == "edits":
		tu.InputLines = InputLines{}
		if v >= len(b) || b[v] != '[' {
			return 0, false, nil
		}
		tu.InputLines.Has = true
		budget := MaxDiffCells
		next, err := arrayElems(b, v, func(v int) (int, error) {
			return d.multiEditElem(b, v, &tu.InputLines, &budget)
		})
		return next, true, err
	case tu.Name == "Write" && string(key) == "content":
		tu.InputLines = InputLines{}
		if v >= len(b) || b[v] != '"' {
			return 0, false, nil
		}
		raw, next, err := readLong(b, v)
		if err == nil {
			tu.InputLines = InputLines{Has: true, Added: countLines(raw)}
		}
		return next, true, err
	}
	return 0, false, nil
}

// pairKey is 0 for old_string, 1 for new_string, -1 for other keys.
func pairKey(key []byte) int {
	switch string(key) {
	case "old_string":
		return 0
	case "new_string":
		return 1
	}
	return -1
}

// readPairString locates the string at b[v] into s; a value that is not a
// string clears s and is left to the caller (ok false).
func readPairString(b []byte, v int, s *span) (next int, ok bool, err error) {
	*s = span{}
	if v >= len(b) || b[v] != '"' {
		return 0, false, nil
	}
	raw, next, err := readLong(b, v)
	if err == nil {
		*s = span{start: v + 1, end: v + 1 + len(raw), set: true}
	}
	return next, true, err
}

// finishEdit counts an Edit's old_string → new_string once both are read
// (keys come in any order).
func (d *Decoder) finishEdit(b []byte, tu *ToolUse, pair *[2]span) {
	if tu.Name != "Edit" || (!pair[0].set && !pair[1].set) {
		return
	}
	budget := MaxDiffCells
	added, removed := d.diffLines(pair[0].raw(b), pair[1].raw(b), &budget)
	tu.InputLines = InputLines{Has: true, Added: added, Removed: removed}
}

// multiEditElem adds the diff of one MultiEdit edit to l, within the
// call's budget of compared line pairs; an element that is not an object
// counts nothing.
func (d *Decoder) multiEditElem(b []byte, v int, l *InputLines, budget *int) (int, error) {
	if v >= len(b) || b[v] != '{' {
		return skipValue(b, v)
	}
	var pair [2]span
	end, err := objectFields(b, v, func(key []byte, v int) (int, error) {
		if k := pairKey(key); k >= 0 {
			if next, ok, err := readPairString(b, v, &pair[k]); ok {
				return next, err
			}
		}
		return skipValue(b, v)
	})
	if err != nil {
		return 0, err
	}
	added, removed := d.diffLines(pair[0].raw(b), pair[1].raw(b), budget)
	l.Added += added
	l.Removed += removed
	return end, nil
}

// diffLines returns the lines added and removed by replacing the text old
// with new (raw JSON string contents), by the rule of InputLines; the
// line pairs it compares come off budget.
func (d *Decoder) diffLines(old, new []byte, budget *int) (added, removed int64) {
	s := &d.diff
	if !s.seedIsMade {
		s.seed, s.seedIsMade = maphash.MakeSeed(), true
	}
	var over bool
	s.old, over = s.lineHashes(s.old[:0], old, MaxDiffLines)
	if !over {
		s.new, over = s.lineHashes(s.new[:0], new, MaxDiffLines-len(s.old))
	}
	if over {
		s.release()
		return countLines(new), countLines(old)
	}
	a, b := s.old, s.new
	for len(a) > 0 && len(b) > 0 && a[0] == b[0] {
		a, b = a[1:], b[1:]
	}
	for len(a) > 0 && len(b) > 0 && a[len(a)-1] == b[len(b)-1] {
		a, b = a[:len(a)-1], b[:len(b)-1]
	}
	n, m := len(a), len(b)
	common := 0
	if n > 0 && m > 0 && n*m <= *budget {
		common = s.lcs(a, b)
		*budget -= n * m
	}
	s.release()
	return int64(m - common), int64(n - common)
}

// lineHashes appends the hash of each line of a JSON string's raw text
// (the lines countLines counts), stopping, over true, past limit lines.
// Lines compare by their unescaped text: a line is hashed in a canonical
// escaped form, which is its raw text when its only escapes are \" \\ \t
// \r \b \f (as Claude Code writes them), else rebuilt from its text.
func (s *diffScratch) lineHashes(dst []uint64, raw []byte, limit int) (_ []uint64, over bool) {
	n := 0
	it := segments{raw: raw}
	for {
		seg, plain, last := it.next()
		if plain {
			if len(seg) > 0 || !last {
				if n++; n > limit {
					return dst, true
				}
				dst = append(dst, maphash.Bytes(s.seed, seg))
			}
		} else {
			s.text = appendUnescaped(s.text[:0], seg, -1)
			for text := s.text; ; {
				i := bytes.IndexByte(text, '\n')
				line := text
				if i >= 0 {
					line = text[:i]
				} else if len(text) == 0 && last {
					break
				}
				if n++; n > limit {
					return dst, true
				}
				s.line = appendCanonical(s.line[:0], line)
				dst = append(dst, maphash.Bytes(s.seed, s.line))
				if i < 0 {
					break
				}
				text = text[i+1:]
			}
		}
		if last {
			return dst, false
		}
	}
}

// segments splits a JSON string's raw text at its \n escapes.
type segments struct {
	raw      []byte
	i, start int
}

// next returns the next segment, whether its only escapes are \" \\ \t
// \r \b \f (plain: no \u, which can hide a newline, nor \/), and whether
// it is the last one.
func (it *segments) next() (seg []byte, plain, last bool) {
	raw := it.raw
	plain = true
	for {
		i := nextLineEscape(raw, it.i)
		if i >= len(raw) {
			seg, it.i = raw[it.start:], len(raw)
			return seg, plain, true
		}
		// The backslash starts an escape unless it is the second of an
		// escaped backslash: an odd run of backslashes before it.
		k := i
		for k > 0 && raw[k-1] == '\\' {
			k--
		}
		if (i-k)%2 == 1 {
			it.i = i + 1
			continue
		}
		if raw[i+1] == 'n' {
			seg = raw[it.start:i]
			it.i, it.start = i+2, i+2
			return seg, plain, false
		}
		plain = false
		it.i = i + 2
	}
}

// nextLineEscape is the index of the first backslash of b at or after i
// followed by n, u or / (what can end a line or make it not plain), or
// len(b), read a word at a time.
func nextLineEscape(b []byte, i int) int {
	for ; i+9 <= len(b); i += 8 {
		w := binary.LittleEndian.Uint64(b[i:])
		next := binary.LittleEndian.Uint64(b[i+1:])
		m := zeroBytes(w^(lsb*'\\')) & (zeroBytes(next^(lsb*'n')) | zeroBytes(next^(lsb*'u')) | zeroBytes(next^(lsb*'/')))
		if m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
	}
	for ; i+1 < len(b); i++ {
		if b[i] == '\\' && (b[i+1] == 'n' || b[i+1] == 'u' || b[i+1] == '/') {
			return i
		}
	}
	return len(b)
}

// low7 is 0x7f in every byte.
const low7 = 0x7f7f7f7f7f7f7f7f

// zeroBytes has bit 7 set in exactly the bytes of x that are zero.
func zeroBytes(x uint64) uint64 { return ^(((x & low7) + low7) | x | low7) }

// appendCanonical appends text escaped as a plain line is: " \ tab CR BS
// FF as two-byte escapes, every other byte as it is.
func appendCanonical(dst, text []byte) []byte {
	for _, c := range text {
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\t':
			dst = append(dst, '\\', 't')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\f':
			dst = append(dst, '\\', 'f')
		default:
			dst = append(dst, c)
		}
	}
	return dst
}

// escapeAt reads the escape at raw[j] (a backslash followed by at least
// one byte): its width and whether it is a newline (\n, \u000a).
func escapeAt(raw []byte, j int) (width int, newline bool) {
	switch raw[j+1] {
	case 'n':
		return 2, true
	case 'u':
		if r, k := decodeU(raw[j:]); k > 0 {
			return k, r == '\n'
		}
	}
	return 2, false
}

// lcs is the length of the longest common subsequence of a and b, by the
// textbook dynamic program over one row of the shorter.
func (s *diffScratch) lcs(a, b []uint64) int {
	if len(b) > len(a) {
		a, b = b, a
	}
	if cap(s.row) < len(b)+1 {
		s.row = make([]int32, len(b)+1)
	}
	row := s.row[:len(b)+1]
	clear(row)
	for _, x := range a {
		diag := int32(0)
		for j, y := range b {
			up := row[j+1]
			switch {
			case x == y:
				row[j+1] = diag + 1
			case row[j] > up:
				row[j+1] = row[j]
			}
			diag = up
		}
	}
	return int(row[len(b)])
}

// release lets go of scratch grown by a large edit.
func (s *diffScratch) release() {
	if cap(s.old) > keepScratch {
		s.old = nil
	}
	if cap(s.new) > keepScratch {
		s.new = nil
	}
	if cap(s.row) > keepScratch {
		s.row = nil
	}
	if cap(s.line) > 16*keepScratch {
		s.line = nil
	}
	if cap(s.text) > 16*keepScratch {
		s.text = nil
	}
}

// countLinesWords is countLines in Go, for the platforms without an
// assembly kernel. It reads a word at a time: a backslash followed by n is
// a newline unless an odd run of backslashes comes before it, which only a
// word holding two backslashes side by side (or a \u) needs checked.
func countLinesWords(raw []byte) int64 {
	var n int64
	i := 0
	for ; i+9 <= len(raw); i += 8 {
		w := binary.LittleEndian.Uint64(raw[i:])
		bs := zeroBytes(w ^ (lsb * '\\'))
		if bs == 0 {
			continue
		}
		next := binary.LittleEndian.Uint64(raw[i+1:])
		nl := bs & zeroBytes(next^(lsb*'n'))
		u := bs & zeroBytes(next^(lsb*'u'))
		if nl == 0 && u == 0 {
			continue
		}
		if u == 0 && bs&(bs<<8) == 0 && (i == 0 || raw[i-1] != '\\' || bs&0x80 == 0) {
			n += int64(bits.OnesCount64(nl))
			continue
		}
		for m := nl | u; m != 0; m &= m - 1 {
			if isNewlineEscape(raw, i+bits.TrailingZeros64(m)>>3) {
				n++
			}
		}
	}
	for ; i+1 < len(raw); i++ {
		if raw[i] == '\\' && (raw[i+1] == 'n' || raw[i+1] == 'u') && isNewlineEscape(raw, i) {
			n++
		}
	}
	if len(raw) > 0 && !endsWithNewline(raw) {
		n++
	}
	return n
}

// isNewlineEscape says the backslash at raw[j] starts an escape (an even
// run of backslashes comes before it) that is a newline (\n, \u000a).
func isNewlineEscape(raw []byte, j int) bool {
	k := j
	for k > 0 && raw[k-1] == '\\' {
		k--
	}
	if (j-k)%2 == 1 || j+1 >= len(raw) {
		return false
	}
	_, nl := escapeAt(raw, j)
	return nl
}

// endsWithNewline says the text ends with a newline escape.
func endsWithNewline(raw []byte) bool {
	l := len(raw)
	if l >= 2 && raw[l-1] == 'n' && raw[l-2] == '\\' && isNewlineEscape(raw, l-2) {
		return true
	}
	return l >= 6 && raw[l-6] == '\\' && raw[l-5] == 'u' && isNewlineEscape(raw, l-6)
}
