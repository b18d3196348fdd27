package otlp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/safefile"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/spans"
)

// Spool files.
const (
	// DefaultSegmentBytes is the size past which the spool starts a new
	// segment file.
	DefaultSegmentBytes = 4 << 20

	spoolPrefix = "spool-"
	spoolExt    = ".jsonl"
	cursorName  = "cursor.json"
	lockName    = "lock"
)

// SpoolConfig configures a Spool. Zero values take defaults.
type SpoolConfig struct {
	// SegmentBytes is the size past which appends go to a new segment.
	SegmentBytes int64
	// MaxBytes caps the spans waiting on disk (0: no cap). Past it, whole
	// segments are dropped, oldest first, so the spool holds at most
	// MaxBytes plus the segment being written. It should be several
	// segments (SegmentBytes is lowered to a quarter of it).
	MaxBytes int64
	// Dropped, when set, is told how many spans a drop removed. It is
	// called with the spool's lock held: it must not call the spool.
	Dropped func(spans int)
}

// Spool is a durable first-in first-out list of spans in a directory: the
// queue's overflow while the receiver is down or slow.
//
// Spans are appended, one JSON object per line, to segment files
// spool-<seq>.jsonl; a segment past SegmentBytes is synced and closed and
// the next one started. The reader takes spans from the oldest segment
// (Read) and, once the receiver has acknowledged them, moves the cursor
// past them (Ack): cursor.json holds the segment and byte offset of the
// first span not acknowledged, written atomically (temp file, fsync,
// rename), and segments wholly behind it are deleted; once everything is
// acknowledged only cursor.json is left.
//
// Appends are buffered: a span is durable once Sync returns. After a
// crash, OpenSpool resumes at the cursor; spans appended after the last Sync
// may be lost (the caller must not rely on them: see Queue.Checkpoint), a
// torn last line is cut off, and spans acknowledged after the last
// cursor write are read (and sent) again.
//
// A Spool is safe for concurrent use; Queue uses one reader.
type Spool struct {
	dir     string
	segSize int64
	cfg     SpoolConfig
	unlock  func()

	mu sync.Mutex
	// segs are the segment numbers on disk, ascending; the last one is
	// the one appended to when w is set.
	segs  []uint64
	next  uint64 // number of the next segment to create
	wf    *os.File
	w     *bufio.Writer
	wsize int64 // bytes in the open segment, buffered included
	dirty bool  // appended since the last fsync
	// dirDirty: a segment was created since the directory was synced.
	dirDirty bool

	acked position // first span not acknowledged
	// dropped is where the last drop (the cap) moved acked to.
	dropped position
	count   int   // spans not acknowledged
	bytes   int64 // bytes of spans not acknowledged

	// The reader's open segment and where its buffered reader stands.
	rf   *os.File
	rd   *bufio.Reader
	rseg uint64
	roff int64

	closed bool
}

// Cursor is a position in a Spool: a segment and a byte offset in it.
// Read returns the cursor after its batch, to pass to Ack.
type Cursor struct {
	Segment uint64
	Offset  int64

	from  position // the acknowledged position Read started from
	spans int      // spans between from and this cursor
	bytes int64    // bytes between from and this cursor
}

func (c Cursor) pos() position { return position{c.Segment, c.Offset} }

func (p position) less(q position) bool {
	return p.Segment < q.Segment || p.Segment == q.Segment && p.Offset < q.Offset
}

// between counts the spans and bytes from p to q (p before q).
func (s *Spool) between(p, q position) (int, int64, error) {
	n, b := 0, int64(0)
	for _, seq := range s.segs {
		if seq < p.Segment || seq > q.Segment {
			continue
		}
		from, to := int64(0), int64(-1)
		if seq == p.Segment {
			from = p.Offset
		}
		if seq == q.Segment {
			to = q.Offset
		}
		k, end, err := s.countRange(seq, from, to)
		if err != nil {
			return 0, 0, err
		}
		n, b = n+k, b+end-from
	}
	return n, b, nil
}

// position is a segment and a byte offset; also the cursor file's shape.
type position struct {
	Segment uint64 `json:"segment"`
	Offset  int64  `json:"offset"`
}

func segName(seq uint64) string { return fmt.Sprintf("%s%016d%s", spoolPrefix, seq, spoolExt) }

// OpenSpool opens the spool in dir, creating the directory if needed, and
// resumes where it was left: at the saved cursor, with a torn last line
// cut off and acknowledged segments deleted.
func OpenSpool(dir string, cfg SpoolConfig) (*Spool, error) {
	if cfg.SegmentBytes <= 0 {
		cfg.SegmentBytes = DefaultSegmentBytes
	}
	if cfg.MaxBytes > 0 && cfg.SegmentBytes > cfg.MaxBytes/4 {
		cfg.SegmentBytes = max(1, cfg.MaxBytes/4)
	}
	s := &Spool{dir: dir, segSize: cfg.SegmentBytes, cfg: cfg}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("open spool %s: %w", dir, err)
	}
	// One process per spool: two would send and delete each other's
	// spans.
	unlock, err := safefile.Lock(filepath.Join(dir, lockName))
	if err != nil {
		return nil, fmt.Errorf("open spool %s: %w", dir, err)
	}
	s.unlock = unlock
	if err := s.open(); err != nil {
		unlock()
		return nil, fmt.Errorf("open spool %s: %w", dir, err)
	}
	s.mu.Lock()
	err = s.capLocked()
	s.mu.Unlock()
	if err != nil {
		unlock()
		return nil, fmt.Errorf("open spool %s: %w", dir, err)
	}
	return s, nil
}

// capLocked drops whole segments, oldest first, while the spans waiting
// take more than MaxBytes; the segment being written is never dropped.
// Called with s.mu held.
func (s *Spool) capLocked() error {
	for s.cfg.MaxBytes > 0 && s.bytes > s.cfg.MaxBytes && len(s.segs) > 1 {
		seq := s.segs[0]
		from := int64(0)
		if seq == s.acked.Segment {
			from = s.acked.Offset
		}
		n, size, err := s.countRange(seq, from, -1)
		if err != nil {
			return fmt.Errorf("drop oldest spans: %w", err)
		}
		if s.rf != nil && s.rseg == seq {
			s.rf.Close()
			s.rf, s.rd = nil, nil
		}
		if err := os.Remove(filepath.Join(s.dir, segName(seq))); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("drop oldest spans: %w", err)
		}
		s.segs = s.segs[1:]
		s.acked = position{Segment: s.segs[0]}
		s.dropped = s.acked
		s.count -= n
		s.bytes -= size - from
		if s.cfg.Dropped != nil && n > 0 {
			s.cfg.Dropped(n)
		}
		if err := s.writeCursor(); err != nil {
			return fmt.Errorf("drop oldest spans: %w", err)
		}
	}
	return nil
}

// countRange counts the lines of a segment between two offsets (to < 0:
// its end) and returns the count and the end offset.
func (s *Spool) countRange(seq uint64, off, to int64) (int, int64, error) {
	f, err := os.Open(filepath.Join(s.dir, segName(seq)))
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return 0, 0, err
	}
	n, size := 0, off
	buf := make([]byte, 64<<10)
	for {
		if to >= 0 && size+int64(len(buf)) > to {
			buf = buf[:to-size]
		}
		if len(buf) == 0 {
			return n, size, nil
		}
		k, err := f.Read(buf)
		n += bytes.Count(buf[:k], []byte{'\n'})
		size += int64(k)
		if err == io.EOF {
			return n, size, nil
		}
		if err != nil {
			return 0, 0, err
		}
	}
}

func (s *Spool) open() error {
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return err
	}
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return err
	}
	var maxSeq uint64
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, cursorName+".") {
			_ = os.Remove(filepath.Join(s.dir, name)) // an interrupted cursor write
			continue
		}
		if !strings.HasPrefix(name, spoolPrefix) || !strings.HasSuffix(name, spoolExt) || e.IsDir() {
			continue
		}
		seq, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(name, spoolPrefix), spoolExt), 10, 64)
		if err != nil {
			continue
		}
		s.segs = append(s.segs, seq)
		maxSeq = max(maxSeq, seq)
	}
	slices.Sort(s.segs)

	cur, err := readCursor(filepath.Join(s.dir, cursorName))
	if err != nil {
		return err
	}
	if cur == nil {
		cur = &position{}
		if len(s.segs) > 0 {
			cur.Segment = s.segs[0]
		}
	}
	s.next = max(maxSeq, cur.Segment) + 1

	// Delete what is behind the cursor; start at the next segment when
	// the cursor's own is gone.
	keep := s.segs[:0]
	for _, seq := range s.segs {
		if seq < cur.Segment {
			if err := os.Remove(filepath.Join(s.dir, segName(seq))); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
			continue
		}
		keep = append(keep, seq)
	}
	s.segs = keep
	if len(s.segs) == 0 {
		*cur = position{Segment: s.next}
	} else if s.segs[0] != cur.Segment {
		*cur = position{Segment: s.segs[0]}
	}

	// Cut torn last lines and count what is left to send.
	for _, seq := range s.segs {
		off := int64(0)
		if seq == cur.Segment {
			off = cur.Offset
		}
		n, size, err := s.scan(seq, off)
		if err != nil {
			return err
		}
		if seq == cur.Segment && off > size {
			cur.Offset = size // written after the data it points past was lost
		}
		s.count += n
	}
	s.acked = *cur
	s.bytes = s.sizeFrom(s.acked)
	return nil
}

// scan cuts a segment after its last newline and counts the lines from
// off. It returns the count and the segment's size after the cut.
func (s *Spool) scan(seq uint64, off int64) (int, int64, error) {
	path := filepath.Join(s.dir, segName(seq))
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	var (
		n, pos, end int64 // lines from off; bytes read; end of the last complete line
		buf         = make([]byte, 64<<10)
	)
	for {
		k, err := f.Read(buf)
		for i := 0; i < k; {
			j := bytes.IndexByte(buf[i:k], '\n')
			if j < 0 {
				break
			}
			i += j + 1
			end = pos + int64(i)
			if end > off {
				n++
			}
		}
		pos += int64(k)
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, 0, err
		}
	}
	if end < pos {
		// A line without its newline: the process died while appending.
		if err := f.Truncate(end); err != nil {
			return 0, 0, err
		}
		if err := f.Sync(); err != nil {
			return 0, 0, err
		}
	}
	return int(n), end, nil
}

// sizeFrom is the number of bytes on disk from c to the end. Called at
// open only.
func (s *Spool) sizeFrom(c position) int64 {
	var total int64
	for _, seq := range s.segs {
		st, err := os.Stat(filepath.Join(s.dir, segName(seq)))
		if err != nil {
			continue
		}
		total += st.Size()
		if seq == c.Segment {
			total -= min(c.Offset, st.Size())
		}
	}
	return total
}

func readCursor(path string) (*position, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var c position
	if err := json.Unmarshal(b, &c); err != nil || c.Offset < 0 {
		// Only a power loss between the write and the rename leaves a bad
		// cursor (the fsync precedes the rename); start over at the
		// oldest segment: acknowledged spans are sent again, none lost.
		return nil, nil
	}
	return &c, nil
}

// Append adds a span at the end. It is durable once Sync returns.
func (s *Spool) Append(sp *spans.Span) error {
	line, err := encodeSpan(sp)
	if err != nil {
		return fmt.Errorf("append to spool: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("append to spool: closed")
	}
	if s.w == nil || s.wsize >= s.segSize {
		if err := s.roll(); err != nil {
			return fmt.Errorf("append to spool: %w", err)
		}
	}
	if _, err := s.w.Write(line); err != nil {
		return fmt.Errorf("append to spool: %w", err)
	}
	s.wsize += int64(len(line))
	s.bytes += int64(len(line))
	s.count++
	s.dirty = true
	if err := s.capLocked(); err != nil {
		return fmt.Errorf("append to spool: %w", err)
	}
	return nil
}

// roll syncs and closes the open segment and creates the next one.
func (s *Spool) roll() error {
	if s.w != nil {
		if err := s.w.Flush(); err != nil {
			return err
		}
		if err := s.wf.Sync(); err != nil {
			return err
		}
		if err := s.wf.Close(); err != nil {
			return err
		}
		s.wf, s.w, s.dirty = nil, nil, false
	}
	seq := s.next
	f, err := os.OpenFile(filepath.Join(s.dir, segName(seq)), os.O_CREATE|os.O_EXCL|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	s.next++
	s.segs = append(s.segs, seq)
	s.wf, s.w, s.wsize, s.dirDirty = f, bufio.NewWriterSize(f, 64<<10), 0, true
	return nil
}

// Sync makes every span appended so far durable.
func (s *Spool) Sync() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.syncLocked(); err != nil {
		return fmt.Errorf("sync spool %s: %w", s.dir, err)
	}
	return nil
}

func (s *Spool) syncLocked() error {
	if s.w == nil {
		return nil
	}
	if err := s.w.Flush(); err != nil {
		return err
	}
	if s.dirty {
		if err := s.wf.Sync(); err != nil {
			return err
		}
		s.dirty = false
	}
	if s.dirDirty {
		if err := syncDir(s.dir); err != nil {
			return err
		}
		s.dirDirty = false
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// Len returns the number of spans not acknowledged.
func (s *Spool) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.count
}

// Bytes returns the size on disk of the spans not acknowledged.
func (s *Spool) Bytes() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bytes
}

// Read returns up to n spans from the first one not acknowledged, and
// the cursor after them. Reading does not move the acknowledged position:
// a second Read without Ack returns the same spans. Lines that do not
// decode (a damaged disk) are skipped and counted in bad; the cursor
// passes them.
func (s *Spool) Read(n int) (batch []spans.Span, end Cursor, bad int, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, Cursor{}, 0, errors.New("read spool: closed")
	}
	if s.w != nil {
		if err := s.w.Flush(); err != nil {
			return nil, Cursor{}, 0, fmt.Errorf("read spool %s: %w", s.dir, err)
		}
	}
	end = Cursor{Segment: s.acked.Segment, Offset: s.acked.Offset, from: s.acked}
	for end.spans < n {
		line, err := s.readLine(end.pos())
		if err != nil {
			return nil, Cursor{}, 0, fmt.Errorf("read spool %s: %w", s.dir, err)
		}
		if line == nil {
			// End of this segment: go on with the next one, if any.
			i, found := slices.BinarySearch(s.segs, end.Segment)
			if found {
				i++
			}
			if i >= len(s.segs) {
				break
			}
			end.Segment, end.Offset = s.segs[i], 0
			continue
		}
		end.Offset += int64(len(line))
		end.bytes += int64(len(line))
		end.spans++
		sp, err := decodeSpan(line)
		if err != nil {
			bad++
			continue
		}
		batch = append(batch, sp)
	}
	// A cursor at the end of a finished segment moves to the next one, so
	// that acknowledging it lets the finished one be deleted.
	if i, found := slices.BinarySearch(s.segs, end.Segment); found && i+1 < len(s.segs) {
		if size, err := s.segmentSize(end.Segment); err == nil && end.Offset >= size {
			end.Segment, end.Offset = s.segs[i+1], 0
		}
	}
	return batch, end, bad, nil
}

// segmentSize is a finished segment's size (the open one's is wsize).
func (s *Spool) segmentSize(seq uint64) (int64, error) {
	if s.rf != nil && s.rseg == seq {
		st, err := s.rf.Stat()
		if err != nil {
			return 0, err
		}
		return st.Size(), nil
	}
	st, err := os.Stat(filepath.Join(s.dir, segName(seq)))
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

// readLine returns the line at c with its newline, or nil at the end of
// the segment (or before an incomplete line). Called with s.mu held.
func (s *Spool) readLine(c position) ([]byte, error) {
	if s.rd == nil || s.rseg != c.Segment || s.roff != c.Offset {
		if s.rf == nil || s.rseg != c.Segment {
			if s.rf != nil {
				s.rf.Close()
				s.rf = nil
			}
			f, err := os.Open(filepath.Join(s.dir, segName(c.Segment)))
			if errors.Is(err, os.ErrNotExist) {
				return nil, nil
			}
			if err != nil {
				return nil, err
			}
			s.rf, s.rseg = f, c.Segment
		}
		if _, err := s.rf.Seek(c.Offset, io.SeekStart); err != nil {
			return nil, err
		}
		if s.rd == nil {
			s.rd = bufio.NewReaderSize(s.rf, 64<<10)
		} else {
			s.rd.Reset(s.rf)
		}
		s.roff = c.Offset
	}
	line, err := s.rd.ReadBytes('\n')
	if err == io.EOF || (err == nil && len(line) == 0) {
		// An incomplete line is not there yet: read it again next time.
		s.rd.Reset(s.rf)
		s.roff = -1
		return nil, nil
	}
	if err != nil {
		s.roff = -1
		return nil, err
	}
	s.roff += int64(len(line))
	return line, nil
}

// Ack marks the spans before c, a cursor returned by the last Read, as
// acknowledged: the cursor file is rewritten and segments wholly before c
// are deleted. The position moves in memory even when writing the file
// fails (the error says so): the spans would then be sent again after a
// restart, never lost.
func (s *Spool) Ack(c Cursor) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("acknowledge spool: closed")
	}
	if c.from != s.acked {
		if !c.from.less(s.acked) || s.acked != s.dropped {
			return fmt.Errorf("acknowledge spool: cursor %d:%d is not from the last read", c.Segment, c.Offset)
		}
		// The cap dropped the oldest spans since the read: those of the
		// batch are gone already; acknowledge what it holds after them.
		if !s.acked.less(c.pos()) {
			return nil
		}
		n, b, err := s.between(s.acked, c.pos())
		if err != nil {
			return fmt.Errorf("acknowledge spool: %w", err)
		}
		c.from, c.spans, c.bytes = s.acked, n, b
	}
	if c.pos() == s.acked {
		return nil
	}
	s.acked = c.pos()
	s.count -= c.spans
	s.bytes -= c.bytes
	if s.count == 0 {
		// Everything appended is acknowledged: retire the last segment
		// too, so that an idle spool keeps no spans on disk. The next
		// Append starts the segment the cursor now points at.
		s.acked = position{Segment: s.next}
		if s.w != nil {
			_ = s.w.Flush()
			if err := s.wf.Close(); err != nil {
				return fmt.Errorf("acknowledge spool: %w", err)
			}
			s.wf, s.w, s.wsize, s.dirty = nil, nil, 0, false
		}
	}
	if err := s.writeCursor(); err != nil {
		return fmt.Errorf("acknowledge spool: %w", err)
	}
	// Segments wholly before the cursor are done.
	keep := s.segs[:0]
	var rmErr error
	for _, seq := range s.segs {
		if seq >= s.acked.Segment {
			keep = append(keep, seq)
			continue
		}
		if s.rf != nil && s.rseg == seq {
			s.rf.Close()
			s.rf, s.rd = nil, nil
		}
		if err := os.Remove(filepath.Join(s.dir, segName(seq))); err != nil && !errors.Is(err, os.ErrNotExist) && rmErr == nil {
			rmErr = fmt.Errorf("acknowledge spool: %w", err)
		}
	}
	s.segs = keep
	return rmErr
}

// writeCursor writes the acknowledged position: temp file, fsync,
// rename. The directory is not synced: a rename lost to a power cut only
// means acknowledged spans are sent again.
func (s *Spool) writeCursor() error {
	b, err := json.Marshal(s.acked)
	if err != nil {
		return err
	}
	path := filepath.Join(s.dir, cursorName)
	tmp, err := os.CreateTemp(s.dir, cursorName+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// Close syncs and closes the spool. Later calls do nothing.
func (s *Spool) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if s.unlock != nil {
		defer s.unlock()
	}
	err := s.syncLocked()
	if s.wf != nil {
		if cerr := s.wf.Close(); err == nil {
			err = cerr
		}
		s.wf, s.w = nil, nil
	}
	if s.rf != nil {
		s.rf.Close()
		s.rf, s.rd = nil, nil
	}
	if err != nil {
		return fmt.Errorf("close spool %s: %w", s.dir, err)
	}
	return nil
}

// Dir returns the spool's directory.
func (s *Spool) Dir() string { return s.dir }
