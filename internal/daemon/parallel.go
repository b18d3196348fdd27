package daemon

import (
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/checkpoint"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/safefile"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/tail"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/session"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/transcript"
)

// The decode stage runs in parallel, the assembly in order. A feeder
// goroutine opens and checks files one after the other and cuts them into
// ranges of whole lines; workers read and decode ranges into records; the
// pipeline goroutine hands the records to the assembler in file and line
// order, so global deduplication and every "first seen" rule stay exactly
// as in a sequential read. Opening, decoding and assembling overlap; at
// most a window of ranges is decoded and not yet assembled, which bounds
// memory, and at most feedAhead more are fed, which bounds open files.

// chunkBytes is the size of a range a worker decodes at once.
const chunkBytes = 128 << 10

// maxBatchRecords bounds the records of one batch (a record is 624 bytes;
// a range of typical lines holds a hundred or two), so every batch can be
// kept for reuse. A range of many short lines goes to the assembly in
// parts of at most this many records: 128 KiB
// of "{}" lines is 43,690 records, 27 MB of them if held at once, and a
// batch that grew to that size was allocated anew for every range. The
// first part waits for its turn with the other ranges in flight; each
// later one is handed over when the assembly takes it, while the worker
// decodes the next, so a worker holds at most three parts (about 2 MB).
const maxBatchRecords = 1024

// recycledBatches is how many consumed batches are kept for n cores: one
// per job in flight, so that no worker makes a new one while a kept one
// waits (with fewer, a wider window allocated a batch per range and the
// collector ran twice as often), but at most maxRecycledBatches: kept
// batches stay for the daemon's life, up to maxBatchRecords records
// (about 0.64 MB) each, and a machine of many cores would keep dozens.
func recycledBatches(n int) int { return min(inFlightPerCore*max(n, 1), maxRecycledBatches) }

// maxRecycledBatches bounds recycledBatches (6 on 2 cores, as measured).
const maxRecycledBatches = 8

// job is one range of one file, or a pause between two groups of files.
type job struct {
	seq int
	f   *fileState
	fh  *safefile.File
	// reads, when set, counts the file's ranges not yet read, on every
	// job of the file: the worker that reads the last closes fh (the
	// closes were 7,296 syscalls a 1 GB one-shot on the assembly's
	// goroutine, which the workers wait for when their window is full).
	// Without it, fh is the caller's to close.
	reads *atomic.Int32
	rg    tail.Range
	// last marks the file's last range: its end is the file's new offset.
	last bool
	// pause marks the end of a group (see readFiles): no range. f is
	// then the file after it when that file goes on in the same project
	// directory (a group too large to end at a project's end), else nil.
	pause bool
}

// doneReading closes the job's file once all its ranges are read, when
// the job owns it (reads). (reader.readDone is another matter: the meta.)
func (j *job) doneReading() {
	if j.reads != nil && j.reads.Add(-1) == 0 {
		j.fh.Close()
	}
}

// decoded is what a worker made of a job.
type decoded struct {
	job
	recs    []transcript.Record
	lines   int
	blank   int
	reasons map[transcript.Reason]int
	err     error
	// big says the range held a line of megabytes: the buffers grown for
	// it were dropped, and the read ends by returning memory to the OS.
	big bool
	// part says more records of the same range follow (maxBatchRecords):
	// the counts and records of a part are its own; the range's error and
	// end come with its last part, which has part unset. The first part
	// of a split range carries more, on which the others arrive in order
	// and which is closed after the last.
	part bool
	more chan decoded
}

// bigBuffer is the buffer size past which a worker drops its buffer after
// a range instead of keeping it for the next.
const bigBuffer = 8 << 20

// worker owns a decoder and buffers.
type worker struct {
	dec *transcript.Decoder
	buf []byte
	rd  *tail.Reader // made on first use: few ranges are streamed
	max int
	// out takes what the worker made of each job (the first part of a
	// split range); free holds consumed batches for reuse.
	out  chan<- decoded
	free chan []transcript.Record
}

// batch returns a consumed batch to decode into, or nil.
func (w *worker) batch() []transcript.Record {
	select {
	case recs := <-w.free:
		return recs[:0]
	default:
		return nil
	}
}

// run decodes job j and sends the result on w.out: the whole range, or
// its first part with the others following on the part's more.
func (w *worker) run(j job) {
	d := decoded{job: j, recs: w.batch()}
	if j.pause {
		w.out <- d
		return
	}
	var more chan decoded
	defer func() {
		if more == nil {
			w.out <- d
			return
		}
		more <- d
		close(more)
	}()
	// split hands the records decoded so far over as a part and starts
	// the next part in another batch.
	split := func() {
		p := d
		p.part, p.err, p.big = true, nil, false
		d.recs, d.lines, d.blank, d.reasons = w.batch(), 0, 0, nil
		if more == nil {
			more = make(chan decoded)
			p.more = more
			w.out <- p
			return
		}
		more <- p
	}
	n := j.rg.End - j.rg.Start
	add := func(line []byte, ascii int, st tail.LineStatus) {
		if len(d.recs) == maxBatchRecords {
			split() // a part's lines are those of its records
		}
		d.lines++
		if st == tail.LineTooLong {
			d.reason(transcript.ReasonTooLong)
			return
		}
		if transcript.IsBlank(line) {
			d.blank++
			return
		}
		// Reuse the records of a consumed batch: Decode resets them but
		// keeps their slices, so steady-state decoding allocates little.
		if len(d.recs) == cap(d.recs) {
			// Grown to an exact capacity, never past maxBatchRecords,
			// so that every batch can be kept for reuse.
			grown := make([]transcript.Record, len(d.recs), min(max(2*cap(d.recs), 64), maxBatchRecords))
			copy(grown, d.recs)
			d.recs = grown
		}
		d.recs = d.recs[:len(d.recs)+1]
		r := &d.recs[len(d.recs)-1]
		if err := w.dec.DecodeChecked(line, ascii, r); err != nil {
			d.recs = d.recs[:len(d.recs)-1]
			reason := transcript.ReasonOf(err)
			if st == tail.LineUnterminated {
				reason = transcript.ReasonTruncated
			}
			d.reason(reason)
		}
	}
	if n > 2*chunkBytes+int64(w.max) || n > 2*chunkBytes && w.max < chunkBytes {
		// A range this long holds a line over the cap or close to it:
		// stream it, so that what is over the cap is never buffered.
		if w.rd == nil {
			w.rd = tail.NewReader(1<<20, w.max)
		}
		_, d.err = w.rd.ReadFrom(j.fh, j.rg.Start, tail.ReadOptions{Limit: j.rg.End, AtEOF: j.rg.Unterminated},
			func(line []byte, _ int64, st tail.LineStatus) error {
				add(line, 0, st)
				return nil
			})
		j.doneReading()
		// The reader grew to hold the long line: let it go.
		w.rd, d.big = nil, true
		return
	}
	data, err := tail.ReadRange(j.fh, j.rg, w.buf)
	j.doneReading()
	if err != nil {
		d.err = err
		return
	}
	w.buf = data[:0]
	tail.Lines(data, j.rg, w.max, func(line []byte, ascii int, _ int64, st tail.LineStatus) { add(line, ascii, st) })
	if cap(w.buf) > bigBuffer {
		w.buf, d.big = nil, true
	}
}

func (d *decoded) reason(r transcript.Reason) {
	if d.reasons == nil {
		d.reasons = map[transcript.Reason]int{}
	}
	d.reasons[r]++
}

// inFlightPerCore is how many jobs per core may be emitted and not yet
// consumed. Every one of them may sit decoded in the results channel: a
// worker that finished a range never waits for the assembly to take it.
// (With results buffered by n and 2n in flight, a worker that finished
// waited while the assembler worked through a long range, and a core sat
// idle: 1 GB one-shot, binaries alternated 8 times, 1.48 s at 2n against
// 1.41 s at 3n and 1.41 s at 4n; peak RSS 48.4, 51.1 and 54.1 MiB.)
const inFlightPerCore = 3

// workersPerCore is how many workers a core has. A worker spends a fifth
// of its time in pread, copying its range out of the page cache; once the
// runtime hands its core on, another worker decodes there meanwhile
// instead of the core sitting idle when nothing else is ready. The window
// (inFlightPerCore) stays per core, so memory does not follow: a worker
// more is a decoder and a read buffer. 1 GB one-shot on 2 cores, one
// binary alternated 14 times, 6 jobs in flight: 2 workers 0.670 s (1.21 s
// CPU), 4 workers 0.640 s (1.19), 6 workers 0.640 s (1.20); in two runs
// before, 0.720 and 0.675 s against 0.670 and 0.645 s.
const workersPerCore = 2

// feedAhead is how many jobs the feeder may have emitted (files opened and
// planned) before a worker takes them. The window is taken by the worker
// as it takes a job, not by the feeder as it emits one: with the feeder
// waiting for the window, every job the assembly consumed woke the feeder
// on the assembly's core, where it waited for that goroutine to block
// while the workers waited for it (a trace of the 1 GB one-shot: feeder
// runnable, not running, for 285 ms of 800; both workers out of work for
// 309 ms each). Ahead by 32, alternated 10 times: 0.755 -> 0.685 s
// (by 8: 0.700 s, by 64: 0.695 s).
const feedAhead = 32

// decodeInOrder runs the jobs feed emits on workersPerCore·n workers
// (n cores) and calls consume with each result in job order. feed runs on
// its own goroutine and runs ahead by at most feedAhead jobs; a worker
// takes a job only while fewer than inFlightPerCore·n are taken and not
// yet consumed, which bounds memory.
//
// free holds record batches handed back after consumption, for reuse; it
// may be shared by successive calls.
func decodeInOrder(feed func(emit func(job)), n, maxLine int, opts transcript.Options, free chan []transcript.Record, consume func(*decoded)) {
	if n < 1 {
		n = 1
	}
	in := make(chan job, feedAhead)
	out := make(chan decoded, inFlightPerCore*n)
	window := make(chan struct{}, inFlightPerCore*n)
	var wg sync.WaitGroup
	for range workersPerCore * n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := &worker{dec: transcript.NewDecoder(opts), max: maxLine, out: out, free: free}
			for {
				window <- struct{}{}
				j, ok := <-in
				if !ok {
					<-window
					return
				}
				w.run(j)
			}
		}()
	}
	go func() {
		seq := 0
		feed(func(j job) {
			j.seq = seq
			seq++
			in <- j
		})
		close(in)
		wg.Wait()
		close(out)
	}()
	pending := map[int]decoded{}
	next := 0
	for d := range out {
		pending[d.seq] = d
		for {
			r, ok := pending[next]
			if !ok {
				break
			}
			delete(pending, next)
			consume(&r)
			recycle(free, r.recs)
			if r.more != nil {
				// The rest of a split range, in order; its worker waits
				// for each part to be taken.
				for p := range r.more {
					consume(&p)
					recycle(free, p.recs)
				}
			}
			<-window
			next++
		}
	}
}

// recycle keeps a consumed batch for reuse when there is room.
func recycle(free chan []transcript.Record, recs []transcript.Record) {
	if recs != nil {
		select {
		case free <- recs:
		default:
		}
	}
}

// cores is the number of cores the decoding runs on.
func cores() int { return runtime.GOMAXPROCS(0) }

// A backfill reads in groups of files, with a hook between groups: the
// pipeline flushes there, so that settled requests and idle sessions of the
// history leave memory as the read goes on, instead of all of it waiting
// for the end. A group ends once it holds Config.GroupBytes to read, at a
// file that does not continue the session before it (its subagents stay in
// the group), or at groupFiles files. (Open descriptors are bounded by
// the ranges in flight and fed ahead: files are opened as they are fed.)
// Before that, a group ends at the end of a project directory once it
// holds projectGroupBytes (see groupDue).
const groupFiles = 1024

// DefaultGroupBytes is the default --tail.backfill-group-bytes.
const DefaultGroupBytes = 64 << 20

// projectGroupBytes ends a group early, at the end of a project
// directory. A pause stops the assembly for the flush while the workers
// fill their window and then wait: at 64 MiB, 15 pauses of about 7 ms in
// the 1 GB one-shot (105 to 116 ms of its 0.65 s), most of it with one
// core idle. Shorter groups flush less at a time, about as fast as the
// window fills, and keep the tables they flush small (one binary with the
// group size from its flag, alternated 12 times a round: 64 MiB 0.650 s,
// 8 MiB 0.625, 4 MiB 0.615, 2 MiB 0.620). Only at a project's end: a
// session's files are all in its project's directory, and its legacy
// agent-*.jsonl sort after the rest of it, so a pause there closes every
// idle session of the project, while one inside a project must keep the
// project's sessions open (Assembler.FlushHistory) until its end.
const projectGroupBytes = 4 << 20

// groupDue reports whether the group that holds took files and pending
// bytes ends before f, the file after prev: at a project's end once it
// holds projectGroupBytes (or the configured size, if smaller); anywhere
// but inside a session's own files once it holds groupFiles files or the
// configured size.
func (r *reader) groupDue(took int, pending int64, prev, f *fileState) bool {
	if took == 0 {
		return false
	}
	if took >= groupFiles || pending >= int64(r.cfg.GroupBytes) {
		return !r.continues(prev, f)
	}
	return pending >= projectGroupBytes && !sameProject(prev, f)
}

// sameProject reports whether a and b are in one project directory (the
// first part of their path under projects/).
func sameProject(a, b *fileState) bool {
	if a.dir == b.dir && a.nameKind() != nameWhole {
		return true
	}
	return projectOf(a) == projectOf(b)
}

// projectOf returns the first part of f's path under projects/: its
// session.Source.ProjectDir, without making its path (for a file right in
// projects/, in no project, it may be "" instead).
func projectOf(f *fileState) string {
	rel := f.dir.rel
	if i := strings.IndexByte(rel, filepath.Separator); i >= 0 {
		return rel[:i]
	}
	return rel
}

// continues reports whether f belongs with prev: a subagent file of the
// same session (<session>.jsonl sorts right before <session>/subagents/).
func (r *reader) continues(prev, f *fileState) bool {
	if prev == nil || f.kind() != session.SourceSubagent {
		return false
	}
	id := r.sessionID(f)
	return id != "" && r.sessionID(prev) == id
}

// readFiles reads what was appended to each file since its offset, decoding
// in parallel and assembling in order. atEOF hands unterminated last lines
// over (one-shot runs). It returns the number of files that had new lines.
//
// Files are opened, checked (prepare) and planned on the feeder goroutine,
// ahead of the assembly: prepare and Plan touch only the file at hand and
// the planner, which nothing else uses during a read.
func (r *reader) readFiles(files []*fileState, atEOF bool) int {
	if len(files) == 0 {
		return 0
	}
	return r.readSeq(slices.Values(files), atEOF)
}

// readSeq is readFiles over the files files yields, in reading order. It
// runs files on the feeder goroutine, while the assembly consumes what
// was fed before: the one-shot's files come from a walk still under way
// (streamFiles).
func (r *reader) readSeq(files iter.Seq[*fileState], atEOF bool) int {
	feed := func(emit func(job)) {
		var pendingBytes int64
		var prev *fileState
		took := 0
		for f := range files {
			if r.between != nil && r.groupDue(took, pendingBytes, prev, f) {
				p := job{pause: true}
				if sameProject(prev, f) {
					p.f = f
				}
				emit(p)
				took, pendingBytes = 0, 0
			}
			took++
			prev = f
			fh, from, size := r.prepare(f)
			if fh == nil {
				continue
			}
			ranges, err := r.planner.Plan(fh, from, size, chunkBytes, atEOF)
			if err != nil || len(ranges) == 0 {
				if err != nil {
					r.log.Warn("read failed", "path", f.path(), "err", err)
				}
				fh.Close()
				r.readDone(f)
				continue
			}
			pendingBytes += size - from
			reads := new(atomic.Int32)
			reads.Store(int32(len(ranges)))
			for i, rg := range ranges {
				emit(job{f: f, fh: fh, reads: reads, rg: rg, last: i == len(ranges)-1})
			}
		}
	}
	if r.sinks != nil {
		r.sinks.begin()
		defer r.sinks.end()
	}
	now := r.now()
	// A file's ranges are consumed in order, one after another: it is
	// counted at the first that read (a set of the files read held an
	// entry per file to the end of a backfill, 4.6 MB at 100,000).
	changed, last := 0, (*fileState)(nil)
	big := false
	defer func() {
		if big {
			// Megabytes of line buffers just became garbage. An idle
			// daemon allocates too little to trigger a collection, so
			// collect now and hand the pages back to the OS.
			debug.FreeOSMemory()
		}
	}()
	decodeInOrder(feed, cores(), r.cfg.MaxLineBytes, r.decOpts, r.batches, func(d *decoded) {
		if d.pause {
			reading := ""
			if d.f != nil {
				reading = projectOf(d.f)
			}
			r.between(reading)
			return
		}
		f := d.f
		big = big || d.big
		if d.err != nil {
			r.log.Warn("read failed", "path", f.path(), "err", d.err)
		}
		r.linesN += int64(d.lines)
		r.self.LinesRead.Add(float64(d.lines))
		for reason, n := range d.reasons {
			r.self.DecodeErrors.WithLabelValues(string(reason)).Add(float64(n))
		}
		for i := range d.recs {
			r.record(f, &d.recs[i], now)
		}
		if d.part {
			return // the range goes on in its next part
		}
		if d.last {
			// Every range of the file was read before its last one is
			// consumed; the worker of the last read closed the file.
			defer r.readDone(f)
		}
		if d.err == nil {
			r.self.BytesRead.Add(float64(d.rg.End - f.offset))
			r.changing(f)
			f.offset = d.rg.End
			r.version.Add(1)
			if f != last {
				changed, last = changed+1, f
			}
		}
		if d.last && r.live && d.err == nil {
			r.self.TailLag.Observe(max(0, r.now().Sub(f.modTime()).Seconds()))
		}
	})
	return changed
}

// readDone lets go of what the reader kept for a file while it was read:
// its .meta.json, which the assembly took with its records. The next read
// of the file (lines appended later) reads it again (prepare): kept for
// every subagent file in the table, the metas were 7.5 MB at 50,000. A
// file is in one read at a time (readSeq returns once every range it fed
// was consumed), so the flag is not read while this clears it.
func (r *reader) readDone(f *fileState) {
	if f.has(flagMetaRead) {
		r.setMeta(f, nil)
		f.unset(flagMetaRead)
	}
}

// openFailed reports a transcript that could not be opened. A path that is
// not a regular file (a FIFO, a device, a socket) is never read: it is
// counted by kind and logged once, and looked at again on later scans.
func (r *reader) openFailed(f *fileState, err error) {
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	if !errors.Is(err, safefile.ErrNotRegular) {
		r.log.Warn("open failed", "path", f.path(), "err", err)
		return
	}
	if f.has(flagSkipped) {
		return
	}
	f.set(flagSkipped)
	kind := "irregular"
	path := f.path()
	if st, serr := os.Lstat(path); serr == nil {
		kind = safefile.Kind(st.Mode())
	}
	if kind == "regular" || kind == "symlink" {
		kind = "irregular"
	}
	r.self.FilesSkipped.WithLabelValues(kind).Inc()
	r.log.Warn("not a regular file: not read", "path", path, "kind", kind)
}

// prepare checks a file before reading it (identity, truncation) and
// returns it open with the range to read, or nil when there is nothing
// new.
func (r *reader) prepare(f *fileState) (*safefile.File, int64, int64) {
	var (
		fh       *safefile.File
		st       os.FileInfo
		err      error
		replaced bool
		path     = f.path()
	)
	if !f.has(flagStatted) && !f.has(flagVerify) {
		// Never read (the backfill's case): open it and stat the open
		// file, one path lookup instead of two.
		if fh, st, err = safefile.OpenFile(path); err != nil {
			r.openFailed(f, err)
			return nil, 0, 0
		}
	} else {
		if st, err = os.Stat(path); err != nil {
			return nil, 0, 0
		}
		if !st.Mode().IsRegular() {
			r.openFailed(f, fmt.Errorf("%s: %w (%s)", path, safefile.ErrNotRegular, safefile.Kind(st.Mode())))
			return nil, 0, 0
		}
		replaced = f.has(flagStatted) && !f.id.same(idOf(st))
		// Same size and time: nothing new. (A file rewritten to the same
		// size has a new time: checkIdentity looks at it.)
		if !replaced && !f.has(flagVerify) && st.Size() == f.offset && unixNano(st.ModTime()) == f.mtime {
			f.setStat(st)
			return nil, 0, 0
		}
		// Opened without blocking and checked again on the handle: the
		// path may have become a FIFO since the stat.
		if fh, st, err = safefile.OpenFile(path); err != nil {
			r.openFailed(f, err)
			return nil, 0, 0
		}
		replaced = replaced || (f.has(flagStatted) && !f.id.same(idOf(st)))
	}
	f.unset(flagSkipped)
	if !r.checkIdentity(f, fh, replaced) {
		fh.Close()
		return nil, 0, 0
	}
	f.setStat(st)
	if st.Size() < f.offset {
		// Truncated or rewritten in place: read again from the start;
		// global dedup keeps lines already counted from counting twice.
		r.log.Info("file shrank, reading again", "path", path, "offset", f.offset, "size", st.Size())
		r.self.FilesReread.Inc()
		r.changing(f)
		f.offset = 0
		f.setFingerprint(checkpoint.Fingerprint{})
		r.version.Add(1)
	}
	if st.Size() == f.offset {
		fh.Close()
		return nil, 0, 0
	}
	if !r.cfg.Oneshot {
		// The fingerprint is a file's identity in the state file, which
		// a one-shot run does not write.
		r.updateFingerprint(f, fh)
	}
	r.readMeta(f)
	return fh, f.offset, st.Size()
}
