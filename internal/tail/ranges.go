package tail

import (
	"bytes"
	"errors"
	"fmt"
	"io"
)

// Range is a part of a file made of whole lines: it starts at the start
// of a line and ends just after a '\n' (or, for the last range of a read
// AtEOF, at the end of the file). Ranges can be read and split into lines
// independently, so several goroutines can decode one large file.
type Range struct {
	Start, End int64
	// Unterminated says the range may end with bytes that have no '\n'
	// yet (only the last range of a plan made AtEOF, which ends at the
	// size).
	Unterminated bool
}

// probe is the most that is read at a time to find a line boundary;
// firstProbe the first read at a cut point. Most lines are a few KiB, so
// the '\n' after a cut is usually within the first read; a longer line
// doubles the read up to probe. (Reading a whole probe at every cut of
// 128 KiB ranges read half as many bytes again as the ranges hold.)
const (
	probe      = 64 << 10
	firstProbe = 4 << 10
)

// Planner splits files into ranges; it reuses its probe buffer, so one
// planner serves one goroutine.
type Planner struct {
	buf []byte
}

// Plan splits [from, size) of f into ranges of about chunk bytes, each
// ending at a line boundary. Without atEOF, the bytes after the last '\n'
// are left out (a half-written line waits); with it, they form the last
// range. It reads only small windows around the cut points.
func (p *Planner) Plan(f io.ReaderAt, from, size, chunk int64, atEOF bool) ([]Range, error) {
	if chunk <= 0 {
		chunk = 4 << 20
	}
	var out []Range
	start := from
	if p.buf == nil {
		p.buf = make([]byte, probe)
	}
	buf := p.buf
	for start < size {
		cut := start + chunk
		var end int64
		for {
			if cut >= size {
				if atEOF {
					// The rest fits in one range and is read to the end
					// whatever its last byte: Lines hands an unterminated
					// tail over as such, so there is nothing to look for
					// (a read of the last byte per file saved).
					return append(out, Range{Start: start, End: size, Unterminated: true}), nil
				}
				cut = size
			}
			if cut < size && cut-start < maxRangeChunks*chunk {
				// A cut inside a line that goes on past the first probe
				// moves on by a chunk rather than read the line to its
				// end: the probes of the cuts in long lines had read a
				// tenth of a 1 GB tree again.
				var err error
				if end, _, err = newlineIn(f, cut-1, size, buf[:firstProbe]); err != nil {
					return nil, err
				}
				if end < 0 {
					cut += chunk
					continue
				}
				break
			}
			// Find the first '\n' at or after cut-1, i.e. the end of the
			// line that holds byte cut-1.
			var err error
			if end, err = nextNewline(f, cut-1, size, buf); err != nil {
				return nil, err
			}
			break
		}
		if end < 0 {
			// No '\n' from cut-1 on: the rest is an unterminated line.
			// Whole lines before it still form a range.
			last, err := lastNewline(f, start, cut, buf)
			if err != nil {
				return nil, err
			}
			if last >= start {
				out = append(out, Range{Start: start, End: last + 1})
				start = last + 1
			}
			if atEOF && start < size {
				out = append(out, Range{Start: start, End: size, Unterminated: true})
			}
			return out, nil
		}
		out = append(out, Range{Start: start, End: end + 1})
		start = end + 1
	}
	return out, nil
}

// maxRangeChunks bounds how far Plan moves a cut that falls in a long line
// on: a range holds at most this many chunks before the line's end is
// looked for however far it is.
const maxRangeChunks = 4

// newlineIn reads the len(buf) bytes from at (fewer before to) at once and
// returns the offset of the first '\n' in them, or -1, and how many bytes
// it read.
func newlineIn(f io.ReaderAt, at, to int64, buf []byte) (nl int64, read int, err error) {
	n := min(int64(len(buf)), to-at)
	if n <= 0 {
		return -1, 0, nil
	}
	m, err := f.ReadAt(buf[:n], at)
	if err != nil && !errors.Is(err, io.EOF) {
		return 0, 0, fmt.Errorf("find line end: %w", err)
	}
	if i := bytes.IndexByte(buf[:m], '\n'); i >= 0 {
		return at + int64(i), m, nil
	}
	return -1, m, nil
}

// nextNewline returns the offset of the first '\n' in [at, size), or -1.
// It reads firstProbe bytes first and doubles each read up to len(buf).
func nextNewline(f io.ReaderAt, at, size int64, buf []byte) (int64, error) {
	n := min(firstProbe, len(buf))
	for at < size {
		nl, m, err := newlineIn(f, at, size, buf[:n])
		if err != nil || nl >= 0 {
			return nl, err
		}
		if m == 0 {
			break
		}
		at += int64(m)
		n = min(2*n, len(buf))
	}
	return -1, nil
}

// lastNewline returns the offset of the last '\n' in [from, to), or -1.
func lastNewline(f io.ReaderAt, from, to int64, buf []byte) (int64, error) {
	for to > from {
		n := int64(len(buf))
		if to-n < from {
			n = to - from
		}
		at := to - n
		m, err := f.ReadAt(buf[:n], at)
		if err != nil && !errors.Is(err, io.EOF) {
			return 0, fmt.Errorf("find line end: %w", err)
		}
		if i := bytes.LastIndexByte(buf[:m], '\n'); i >= 0 {
			return at + int64(i), nil
		}
		to = at
	}
	return -1, nil
}

// ReadRange reads a range into buf (grown as needed) and returns it.
func ReadRange(f io.ReaderAt, r Range, buf []byte) ([]byte, error) {
	n := int(r.End - r.Start)
	if cap(buf) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	m, err := f.ReadAt(buf, r.Start)
	if err != nil && !(errors.Is(err, io.EOF) && m == n) {
		return buf[:m], fmt.Errorf("read range: %w", err)
	}
	return buf, nil
}

// Lines calls fn for every line of a range's bytes, without its '\n', with
// the file offset just after it. Lines over maxLine bytes are handed over
// as nil with LineTooLong; the unterminated tail of a range read AtEOF as
// LineUnterminated. ascii says that the first ascii bytes of the line are
// ASCII, found so while looking for its end (see newlineASCII): 0 when it
// is not known, never more than there are.
func Lines(data []byte, r Range, maxLine int, fn func(line []byte, ascii int, end int64, st LineStatus)) {
	pos := r.Start
	for len(data) > 0 {
		i, ascii := newlineASCII(data)
		st := LineOK
		var line []byte
		var n int
		if i < 0 {
			line, n, st = data, len(data), LineUnterminated
		} else {
			line, n = data[:i], i+1
		}
		pos += int64(n)
		if maxLine > 0 && len(line) > maxLine {
			fn(nil, 0, pos, LineTooLong)
		} else {
			fn(line, ascii, pos, st)
		}
		data = data[n:]
	}
}
