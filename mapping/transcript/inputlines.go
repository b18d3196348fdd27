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
	// MaxDiffCells bounds the pairs of lines compared (n×m of the lines
	// left after dropping the common leading and trailing ones); a
	// larger rest counts all its lines.
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
		next, err := arrayElems(b, v, func(v int) (int, error) {
			return d.multiEditElem(b, v, &tu.InputLines)
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
	added, removed := d.diffLines(pair[0].raw(b), pair[1].raw(b))
	tu.InputLines = InputLines{Has: true, Added: added, Removed: removed}
}

// multiEditElem adds the diff of one MultiEdit edit to l; an element that
// is not an object counts nothing.
func (d *Decoder) multiEditElem(b []byte, v int, l *InputLines) (int, error) {
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
	added, removed := d.diffLines(pair[0].raw(b), pair[1].raw(b))
	l.Added += added
	l.Removed += removed
	return end, nil
}

// diffLines returns the lines added and removed by replacing the text old
// with new (raw JSON string contents), by the rule of InputLines.
func (d *Decoder) diffLines(old, new []byte) (added, removed int64) {
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
	if n > 0 && m > 0 && n*m <= MaxDiffCells {
		common = s.lcs(a, b)
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
		i := nextBackslash(raw, it.i)
		if i+1 >= len(raw) {
			seg, it.i = raw[it.start:], len(raw)
			return seg, plain, true
		}
		switch raw[i+1] {
		case 'n':
			seg = raw[it.start:i]
			it.i, it.start = i+2, i+2
			return seg, plain, false
		case 'u', '/':
			plain = false
		}
		it.i = i + 2
	}
}

// nextBackslash is the index of the first backslash of b at or after i,
// or len(b), read a word at a time (see nextStringSpecial).
func nextBackslash(b []byte, i int) int {
	for ; i+8 <= len(b); i += 8 {
		w := binary.LittleEndian.Uint64(b[i:])
		s := w ^ (lsb * '\\')
		if m := ((s - lsb) &^ s) & hiBits; m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
	}
	for ; i < len(b); i++ {
		if b[i] == '\\' {
			return i
		}
	}
	return i
}

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

// countLines counts the lines of a JSON string's raw text: its unescaped
// text split at newlines (\n, \u000a), a last line without one counting;
// "" has none.
func countLines(raw []byte) int64 {
	var n int64
	it := segments{raw: raw}
	for {
		seg, plain, last := it.next()
		rest := len(seg) > 0 // text after the segment's last newline
		if !plain {
			// \u000a is a newline too (no writer seen uses it).
			for i := 0; i < len(seg); {
				if seg[i] != '\\' || i+1 >= len(seg) {
					i++
					continue
				}
				w, nl := escapeAt(seg, i)
				if nl {
					n++
					rest = i+w < len(seg)
				}
				i += w
			}
		}
		if last {
			if rest {
				n++
			}
			return n
		}
		n++
	}
}
