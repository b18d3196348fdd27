package daemon

import (
	"bytes"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/exporter/prom"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/checkpoint"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/safefile"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/metrics"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/session"
)

// snapshot is a consistent copy of the durable state, taken between two
// lines on the pipeline goroutine; encoding and writing it can then happen
// elsewhere.
type snapshot struct {
	cfg      *Config
	at       time.Time
	counters prom.State
	// asm is the assembler's state: a frozen copy of it (takeSnapshot),
	// or the assembler itself (inPlace).
	asm    assemblerState
	blocks prom.BlocksState
	// marks holds the table's own entries in path order, as the write
	// sees them: kept as they were when the reader changes them during
	// the write (takeSnapshot: the pipeline goes on beside it), or as they
	// are (inPlace: the pipeline waits for it). A copy of every watermark
	// was 6.4 MB more for each periodic write at 100,000 files.
	marks *fileMarks
	// projects is the label given to each working dir (basename labels):
	// a label once given never changes, across restarts too.
	projects map[string]string
	// agents are the subagent runs whose spans wait for their session's
	// end (tracesStage.heldAgents): the lines that made them are before
	// the saved offsets.
	agents []session.Subagent
	// release, when set, ends what the snapshot holds of the pipeline
	// (fileMarks) once it is written.
	release func()
}

// assemblerState is what a state file holds of the assembler, its large
// parts read a chunk at a time (session.Frozen and the assembler itself).
type assemblerState interface {
	Head() session.State
	EachSession(n int, fn func([]session.SessionState) error) error
	EachDoneRequest(n int, fn func([]session.DoneRequest) error) error
	EachSeenKey(n int, fn func([]uint64) error) error
	EachAgent(n int, fn func([]session.AgentState) error) error
}

// takeSnapshot freezes the assembler state (session.Freeze: packed and
// shared, not copied field by field), copies the counters, and lists the
// file table's entries, whose watermarks the reader keeps as they are now
// before it changes them (fileMarks) until release.
func takeSnapshot(cfg *Config, usage *prom.Metrics, asm *session.Assembler, rd *reader, now time.Time) *snapshot {
	snap := &snapshot{cfg: cfg, at: now, counters: usage.State(), asm: asm.Freeze()}
	snap.blocks = usage.BlocksState()
	m := tableMarks(rd)
	m.kept, m.done = map[*fileState]fileMark{}, false
	snap.marks = m
	rd.marks.Store(m)
	snap.release = func() {
		rd.marks.CompareAndSwap(m, nil)
		m.finish()
	}
	return snap
}

// tableMarks lists the reader's entries in path order, read as they are
// (done: nothing is kept).
func tableMarks(rd *reader) *fileMarks {
	return &fileMarks{files: slices.Clone(rd.files), done: true}
}

// fileMarks is the file table as a write in flight sees it: the entries
// at the snapshot, and the watermarks of those changed since as they were
// then. The reader calls keep before it changes an entry's offset or
// fingerprint (reader.changing), and the write reads an entry under the
// same lock: either the entry was kept, and the write reads the kept
// mark, or the write read it before any change.
type fileMarks struct {
	files []*fileState
	mu    sync.Mutex
	kept  map[*fileState]fileMark
	done  bool
}

// keep records f's watermark as it is, before a change.
func (m *fileMarks) keep(f *fileState) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.kept[f]; !ok && !m.done {
		m.kept[f] = markOf(f)
	}
}

// mark returns f's watermark at the snapshot.
func (m *fileMarks) mark(f *fileState) fileMark {
	m.mu.Lock()
	defer m.mu.Unlock()
	if k, ok := m.kept[f]; ok {
		return k
	}
	return markOf(f)
}

// finish ends the keeping: the write is done.
func (m *fileMarks) finish() {
	m.mu.Lock()
	m.done, m.kept = true, nil
	m.mu.Unlock()
}

func markOf(f *fileState) fileMark { return fileMark{f: f, fp: f.fingerprint(), offset: f.offset} }

// inPlace is takeSnapshot for a snapshot written before the pipeline goes
// on (at the end of the backfill and at shutdown): the assembler's
// sessions, counted requests and seen lines, most of the state, are not
// frozen but encoded from the assembler a chunk at a time.
func inPlace(cfg *Config, usage *prom.Metrics, asm *session.Assembler, rd *reader, now time.Time) *snapshot {
	snap := &snapshot{cfg: cfg, at: now, counters: usage.State(), asm: liveAssembler{asm}}
	snap.blocks = usage.BlocksState()
	snap.marks = tableMarks(rd)
	return snap
}

// liveAssembler reads the assembler itself as an assemblerState.
type liveAssembler struct{ *session.Assembler }

func (l liveAssembler) Head() session.State { return l.StateHead() }

// saved says the state file keeps the file's watermark (a file never
// read, or read from nothing, has none).
func (fs *fileState) saved() bool { return markOf(fs).saved() }

// fileMark is a file's identity and watermark in a snapshot: its entry in
// the state file, with the fingerprint as bytes (made hex a chunk at a
// time as it is written, entries).
type fileMark struct {
	f      *fileState // its path, made as it is written (it never changes)
	fp     checkpoint.Fingerprint
	offset int64
}

// saved says the state file keeps the watermark (a file never read, or
// read from nothing, has none).
func (m fileMark) saved() bool { return m.offset != 0 || m.fp.Len != 0 }

// entries yields the file table as the state file holds it.
func (s *snapshot) entries(yield func([]checkpoint.Entry) error) error {
	buf := make([]checkpoint.Entry, 0, checkpoint.ChunkLen)
	add := func(path string, fp checkpoint.Fingerprint, offset int64) error {
		buf = append(buf, checkpoint.Entry{Path: path, Fingerprint: fp.Hex(), FPLen: int(fp.Len), Counted: offset, Exported: offset})
		if len(buf) < checkpoint.ChunkLen {
			return nil
		}
		err := yield(buf)
		buf = buf[:0]
		return err
	}
	for _, f := range s.marks.files {
		if m := s.marks.mark(f); m.saved() {
			if err := add(m.f.path(), m.fp, m.offset); err != nil {
				return err
			}
		}
	}
	if len(buf) > 0 {
		return yield(buf)
	}
	return nil
}

// large says the snapshot is big enough that its garbage is worth a
// collection (a history of thousands of files).
func (s *snapshot) large() bool { return len(s.marks.files) > 2000 }

// write encodes the snapshot and writes the state file atomically; the
// counters and the assembler state are streamed to the file after its
// header.
func (s *snapshot) write() error {
	f := &checkpoint.File{WrittenAt: s.at.UTC(), Roots: s.cfg.ClaudeDirs, FileStream: s.entries}
	core, extra := s.payloads()
	return checkpoint.Write(s.cfg.StateFile, f, append(core, extra...)...)
}

// payloads lists the values written after the file table, in order: core
// are the counters and the assembler state, extra what files written
// before they were kept lack (blocks, project labels, held subagents). The assembler's
// large slices (one element per session, per request counted, per line
// seen) follow its other fields as checkpoint.Stream values, so that no
// encoded buffer holds one whole; restoreState reads them back.
func (s *snapshot) payloads() (core, extra []any) {
	if s.projects == nil {
		s.projects = map[string]string{}
	}
	head := s.asm.Head()
	head.Sessions, head.DoneRequests, head.SeenKeys, head.Agents = nil, nil, nil, nil
	asm := s.asm
	core = []any{&s.counters, &head,
		checkpoint.Stream[session.SessionState](func(yield func([]session.SessionState) error) error {
			return asm.EachSession(checkpoint.ChunkLen, yield)
		}),
		checkpoint.Stream[session.DoneRequest](func(yield func([]session.DoneRequest) error) error {
			return asm.EachDoneRequest(checkpoint.ChunkLen, yield)
		}),
		checkpoint.Stream[uint64](func(yield func([]uint64) error) error {
			return asm.EachSeenKey(checkpoint.ChunkLen, yield)
		}),
		// Since version 5: one per subagent (50,000 of them were 7 MB
		// encoded in the head's one gob value, and a copy of 8 MB).
		checkpoint.Stream[session.AgentState](func(yield func([]session.AgentState) error) error {
			return asm.EachAgent(checkpoint.ChunkLen, yield)
		}),
	}
	return core, []any{&s.blocks, &s.projects, &s.agents}
}

// restoreState loads a saved state into the counters, the assembler and
// the reader's file table. Files are checked against their fingerprints
// before they are read again.
func restoreState(f *checkpoint.File, usage *prom.Metrics, asm *session.Assembler, mapper *metrics.Mapper, traces *tracesStage, rd *reader, now time.Time) error {
	var (
		ms prom.State
		as session.State
	)
	// Version 2 files carry the payloads as bytes in the header;
	// version 3 streams them after it.
	decodeNext := f.Next
	if len(f.Metrics) > 0 || len(f.Assembler) > 0 {
		payloads := [][]byte{f.Metrics, f.Assembler}
		decodeNext = func(v any) error {
			if len(payloads) == 0 {
				return io.EOF
			}
			p := payloads[0]
			payloads = payloads[1:]
			return gob.NewDecoder(bytes.NewReader(p)).Decode(v)
		}
	}
	if err := decodeNext(&ms); err != nil {
		return fmt.Errorf("restore counters: %w", err)
	}
	if err := usage.Restore(ms); err != nil {
		return err
	}
	if err := decodeNext(&as); err != nil {
		return fmt.Errorf("restore assembler state: %w", err)
	}
	if f.Version >= 4 {
		// Its large slices follow in chunks (snapshot.payloads).
		var err error
		if as.Sessions, err = checkpoint.NextChunked(f, as.Sessions); err == nil {
			if as.DoneRequests, err = checkpoint.NextChunked(f, as.DoneRequests); err == nil {
				as.SeenKeys, err = checkpoint.NextChunked(f, as.SeenKeys)
			}
		}
		if err == nil && f.Version >= 5 {
			as.Agents, err = checkpoint.NextChunked(f, as.Agents)
		}
		if err != nil {
			return fmt.Errorf("restore assembler state: %w", err)
		}
	}
	if err := asm.Restore(as, now); err != nil {
		return err
	}
	// The blocks and then the project labels follow in files written
	// since they are kept; an older file ends before them (the blocks then
	// start from what is read after it, the labels are given afresh).
	var bs prom.BlocksState
	switch err := decodeNext(&bs); {
	case errors.Is(err, io.EOF):
	case err != nil:
		return fmt.Errorf("restore blocks: %w", err)
	default:
		if err := usage.RestoreBlocks(bs); err != nil {
			return err
		}
	}
	var projects map[string]string
	if err := decodeNext(&projects); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("restore project labels: %w", err)
	}
	if mapper != nil {
		mapper.RestoreProjectLabels(projects)
	}
	// The held subagents follow in files written since 2026-11-26 (an
	// older file ends before them, and a crash then lost their spans).
	var agents []session.Subagent
	if err := decodeNext(&agents); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("restore held subagents: %w", err)
	}
	if traces != nil && traces.restoreAgents != nil {
		traces.restoreAgents(agents)
	}
	for _, e := range f.Files {
		rd.restored[e.Path] = e
	}
	return nil
}

// stateKeeper writes the state file on a period and at shutdown. A
// snapshot is taken on the pipeline goroutine; it is encoded and written
// on another, one write at a time, so that the pipeline pauses only for
// the copy. Nothing is written when nothing changed since the last write.
//
// state_file_age_seconds counts from the last write that succeeded (or
// the last check that found the file current): a state that cannot be
// written ages, and its failures are counted, so the stale-state alert
// fires.
type stateKeeper struct {
	cfg    *Config
	mapper *metrics.Mapper // its project labels are saved
	log    interface{ Warn(string, ...any) }
	self   *prom.Self
	limit  *softLimit // held while a snapshot is written (memlimit.go)
	// good is when the file on disk was last known current (Unix ns): the
	// last successful write, the restored file's time, else the start.
	good atomic.Int64

	saved   [2]uint64 // assembler and reader versions of the last snapshot
	writing chan struct{}
	failed  atomic.Bool // the last write failed: write again even if nothing changed
	wrote   bool        // a snapshot was taken at least once
}

// since sets the time the state on disk dates from.
func (k *stateKeeper) since(t time.Time) { k.good.Store(t.UnixNano()) }

// save writes a snapshot of the state. With traces on, a snapshot is
// written only once every span built so far is safe: acknowledged by the
// receiver, or synced to the spool, which the next run sends first. The
// watermarks it saves are then both counted and exported (or as good as).
// Without a spool, a receiver outage keeps the file at the last
// acknowledged point and a restart re-reads (and re-sends) from there.
// final waits for the write (shutdown).
func (k *stateKeeper) save(usage *prom.Metrics, asm *session.Assembler, rd *reader, traces *tracesStage, now time.Time, final bool) {
	if k.cfg.StateFile == "" {
		return
	}
	if k.writing == nil {
		k.writing = make(chan struct{}, 1)
	}
	version := [2]uint64{asm.Version(), rd.version.Load()}
	if version == k.saved && k.wrote && !k.failed.Load() {
		// Nothing changed: the file on disk is current.
		k.since(now)
		k.self.StateFileAge.Set(0)
		return
	}
	select {
	case k.writing <- struct{}{}:
	default:
		if !final {
			return // the previous write is still going; try next time
		}
		k.writing <- struct{}{}
	}
	if traces != nil && traces.durable != nil {
		ok, err := traces.durable()
		if err != nil {
			k.log.Warn("state not written", "err", err)
		}
		if !ok {
			<-k.writing
			return
		}
	}
	k.limit.hold()
	var snap *snapshot
	if final {
		// Written before the pipeline goes on: nothing to copy.
		snap = inPlace(k.cfg, usage, asm, rd, now)
	} else {
		snap = takeSnapshot(k.cfg, usage, asm, rd, now)
	}
	if k.mapper != nil {
		snap.projects = k.mapper.ProjectLabels()
	}
	if traces != nil && traces.heldAgents != nil {
		snap.agents = traces.heldAgents()
	}
	k.failed.Store(false)
	done := func() {
		if err := snap.write(); err != nil {
			k.failed.Store(true)
			k.self.StateWriteFailures.Inc()
			k.log.Warn("state not written", "err", err)
		} else {
			k.since(snap.at)
		}
		if snap.release != nil {
			snap.release()
		}
		if snap.large() {
			// A large history's snapshot is tens of megabytes of garbage
			// once written: return it rather than let the heap keep it.
			debug.FreeOSMemory()
		}
		k.limit.release()
		<-k.writing
	}
	k.saved, k.wrote = version, true
	if final {
		done()
		return
	}
	go done()
}

// wait blocks until a write in progress is done.
func (k *stateKeeper) wait() {
	if k.writing != nil {
		k.writing <- struct{}{}
		<-k.writing
	}
}

// age publishes state_file_age_seconds.
func (k *stateKeeper) age(now time.Time) {
	if k.cfg.StateFile != "" {
		k.self.StateFileAge.Set(max(0, now.Sub(time.Unix(0, k.good.Load())).Seconds()))
	}
}

// lockState takes the lock beside the state file (<file>.lock). Another
// exporter holding it is a start error naming --state.file; a directory
// where the lock cannot be made, or a lock file this user may not open,
// gives no lock (nil release), the reason (for the warning) and no error:
// the daemon runs, and state_file_age_seconds shows whether the state is
// saved.
func lockState(path string) (release func(), why string, err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Sprintf("its directory cannot be made (%v): the state cannot be saved either", err), nil
	}
	release, err = safefile.Lock(path + ".lock")
	if errors.Is(err, safefile.ErrLocked) {
		return nil, "", &StartError{fmt.Errorf("--state.file: %w; give each exporter its own --state.file", err)}
	}
	if err != nil {
		return nil, lockProblem(path+".lock", err), nil
	}
	return release, "", nil
}

// lockProblem says why the state's lock file could not be taken.
func lockProblem(lock string, err error) string {
	if errors.Is(err, fs.ErrPermission) {
		return fmt.Sprintf("this user may not open %s (it belongs to another user, or its directory is not writable): "+
			"run the exporter as the state file's owner, or give it a --state.file of its own", lock)
	}
	return err.Error()
}
