package tail

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
)

// LineStatus tells the caller what kind of line it is handed.
type LineStatus uint8

// Line statuses.
const (
	// LineOK is a complete '\n'-terminated line (the '\n' removed).
	LineOK LineStatus = iota
	// LineTooLong is a complete line longer than the cap: its bytes are
	// skipped without being buffered and line is nil.
	LineTooLong
	// LineUnterminated is the last bytes of a file that has no final
	// '\n', handed over only when the caller asked for them (AtEOF).
	LineUnterminated
)

// Reader reads complete lines from a file at an offset. It reuses its
// buffers across calls; one Reader serves one goroutine.
type Reader struct {
	br      *bufio.Reader
	long    []byte
	maxLine int
}

// NewReader returns a reader that buffers bufSize bytes and accepts lines
// up to maxLine bytes.
func NewReader(bufSize, maxLine int) *Reader {
	if bufSize <= 0 {
		bufSize = 1 << 20
	}
	return &Reader{br: bufio.NewReaderSize(nil, bufSize), maxLine: maxLine}
}

// ReadOptions say how far to read.
type ReadOptions struct {
	// Limit stops reading at this offset (0: to the end of the file).
	Limit int64
	// AtEOF hands an unterminated last line to fn as LineUnterminated and
	// counts it as read; otherwise it is left for a later call (a
	// half-written line waits for its newline).
	AtEOF bool
}

// File is what ReadFrom reads: a file read at offsets, named in errors
// (an *os.File, a safefile.File).
type File interface {
	io.ReaderAt
	Name() string
}

// ReadFrom reads f from offset and calls fn for each line with the offset
// just after it. It returns the offset after the last line handed over:
// the caller's new watermark. fn returning an error stops the read.
func (r *Reader) ReadFrom(f File, offset int64, opts ReadOptions, fn func(line []byte, end int64, st LineStatus) error) (int64, error) {
	// Read at offsets (pread), never from the handle's position: the
	// ranges of one file are read by several workers at once on one
	// handle, and a seek of one moved another's reads.
	n := int64(math.MaxInt64) - offset
	if opts.Limit > 0 {
		if opts.Limit <= offset {
			return offset, nil
		}
		n = opts.Limit - offset
	}
	r.br.Reset(io.NewSectionReader(f, offset, n))
	defer r.br.Reset(nil)
	pos := offset
	r.long = r.long[:0]
	skipping := false // inside a line over the cap
	var skipped int64
	for {
		chunk, err := r.br.ReadSlice('\n')
		switch {
		case err == nil:
			n := int64(len(chunk))
			if skipping {
				end := pos + skipped + n
				skipping, skipped = false, 0
				if ferr := fn(nil, end, LineTooLong); ferr != nil {
					return pos, ferr
				}
				pos = end
				continue
			}
			line := chunk[:len(chunk)-1]
			if len(r.long) > 0 {
				r.long = append(r.long, line...)
				line = r.long
			}
			end := pos + int64(len(line)) + 1
			if r.maxLine > 0 && len(line) > r.maxLine {
				if ferr := fn(nil, end, LineTooLong); ferr != nil {
					return pos, ferr
				}
			} else if ferr := fn(line, end, LineOK); ferr != nil {
				return pos, ferr
			}
			pos = end
			r.long = r.long[:0]
		case errors.Is(err, bufio.ErrBufferFull):
			if skipping {
				skipped += int64(len(chunk))
				continue
			}
			if r.maxLine > 0 && len(r.long)+len(chunk) > r.maxLine {
				skipping = true
				skipped = int64(len(r.long) + len(chunk))
				r.long = r.long[:0]
				continue
			}
			r.long = append(r.long, chunk...)
		case errors.Is(err, io.EOF):
			if !opts.AtEOF || (len(chunk) == 0 && len(r.long) == 0 && !skipping) {
				return pos, nil
			}
			end := pos + int64(len(r.long)) + int64(len(chunk)) + skipped
			if skipping {
				if ferr := fn(nil, end, LineTooLong); ferr != nil {
					return pos, ferr
				}
				return end, nil
			}
			line := chunk
			if len(r.long) > 0 {
				r.long = append(r.long, chunk...)
				line = r.long
			}
			if r.maxLine > 0 && len(line) > r.maxLine {
				// Over the cap without filling the buffer: too long, like
				// a terminated line of that length.
				r.long = r.long[:0]
				if ferr := fn(nil, end, LineTooLong); ferr != nil {
					return pos, ferr
				}
				return end, nil
			}
			if len(bytes.TrimSpace(line)) > 0 {
				if ferr := fn(line, end, LineUnterminated); ferr != nil {
					return pos, ferr
				}
			}
			r.long = r.long[:0]
			return end, nil
		default:
			return pos, fmt.Errorf("read %s: %w", f.Name(), err)
		}
	}
}
