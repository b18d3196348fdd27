package daemon

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/exporter/prom"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/checkpoint"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/discover"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/safefile"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/tail"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/session"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/transcript"
)

// fileState is what the pipeline knows of one transcript file.
type fileState struct {
	// dir is the file's directory, shared with its siblings' entries
	// (or its own, holding its whole path, when nameKind() is
	// nameWhole), name its name packed (paths.go): path() makes the path.
	dir *dirEntry
	// offset: everything before it has been processed.
	offset int64
	// id, size and mtime (Unix nanoseconds) are from the file's last
	// stat, when flagStatted (id tells a new inode at the path).
	size  int64
	mtime int64
	id    fileID
	// fpSum and fpLen are the fingerprint of the file's first bytes (its
	// identity in the state file; fingerprint()), its length in 16 bits
	// where tail.Fingerprint's int32 took 2 bytes more.
	fpSum [tail.SumBytes]byte
	fpLen uint16
	// kinds holds the name's form (nameKind) and the session.SourceKind
	// (kind), set when the entry is made. What session.ClassifySource
	// tells of the path under projects/ is made when needed: kept in
	// every entry, a whole Source was half the table (100,000 files: 13
	// MB). kind is kept for sorting. path() reads nameKind on any
	// goroutine (a state write): kinds shares no byte with flags, which
	// the reader changes.
	kinds uint8
	flags fileFlags
	// seen is the generation of the last scan that found the file.
	seen uint32
	name [16]byte
	// session is a subagent's session (nameSubagent), as its UUID.
	session [16]byte
}

// The table holds an entry per transcript for as long as the daemon runs,
// so its size is the daemon's at 100,000 files: fields are ordered and
// typed to fit a 96-byte size class on Unix (stat_unix.go checks it),
// with its path's share of its directory and its packed name (was 208,
// then 112 and 96 with the path as a string of its own, 80 bytes more in
// the bench's trees; the subagents' .meta.json are in reader.metas,
// the device and inode one hash; the fingerprint's length in 16 bits and
// the flags in one byte took it from 112 to 96). A subagent's session
// UUID (nameSubagent: 9 MB of directory entries and paths less at
// 50,000 subagents) took it back to 112, and a fingerprint of 128 bits
// instead of 256 (tail.SumBytes) to 96.

// fileFlags are an entry's flags, one bit each.
type fileFlags uint8

const (
	// flagStatted says id, size and mtime are from a stat.
	flagStatted fileFlags = 1 << iota
	// flagVerify asks for a fingerprint check before the next read
	// (after a restore).
	flagVerify
	// flagMetaRead says the subagent .meta.json was looked for (what it
	// holds is in reader.metas).
	flagMetaRead
	// flagWarnedUsage says a rejected usage in this file was logged
	// (once per file; the rest are only counted).
	flagWarnedUsage
	// flagSkipped says the path was found not to be a regular file
	// (counted and logged once).
	flagSkipped
	// flagStreamed says a one-shot streams the file (streamFiles): it is
	// in no table, read once, and what the reader keeps for it (its
	// directory's entry, its .meta.json) goes once it is read.
	flagStreamed
)

// has, set and unset read and change f's flags. They share a byte: an
// entry's are changed on one goroutine at a time (prepare's on the
// feeder, the others on the pipeline's).
func (f *fileState) has(fl fileFlags) bool { return f.flags&fl != 0 }
func (f *fileState) set(fl fileFlags)      { f.flags |= fl }
func (f *fileState) unset(fl fileFlags)    { f.flags &^= fl }

// fpLen holds any fingerprint's length.
const _ uint16 = checkpoint.FingerprintBytes

// fingerprint returns the fingerprint of the file's first bytes.
func (f *fileState) fingerprint() checkpoint.Fingerprint {
	return checkpoint.Fingerprint{Sum: f.fpSum, Len: int32(f.fpLen)}
}

// setFingerprint records fp, whose Len is at most
// checkpoint.FingerprintBytes (tail.ParseFingerprint and
// tail.FingerprintOf make no other).
func (f *fileState) setFingerprint(fp checkpoint.Fingerprint) {
	f.fpSum, f.fpLen = fp.Sum, uint16(fp.Len)
}

// kinds: the name's form in the low 2 bits, the source kind above.
const nameKindBits = 2

// The source kinds (SourceLegacyAgent the last) fit beside the name's
// form.
const _ uint8 = uint8(session.SourceLegacyAgent) << nameKindBits

// kindsOf packs an entry's kinds.
func kindsOf(name uint8, kind session.SourceKind) uint8 {
	return uint8(kind)<<nameKindBits | name
}

// nameKind returns the form of f's name (nameWhole, nameUUID, nameAgent).
func (f *fileState) nameKind() uint8 { return f.kinds & (1<<nameKindBits - 1) }

// kind returns what f is by its place in the tree.
func (f *fileState) kind() session.SourceKind {
	return session.SourceKind(f.kinds >> nameKindBits)
}

// modTime returns the mtime of the file's last stat.
func (f *fileState) modTime() time.Time { return time.Unix(0, f.mtime) }

// setStat records a stat of the file. Modification times past 2262 (the
// end of Unix nanoseconds in an int64) all read as one time.
func (f *fileState) setStat(st os.FileInfo) {
	f.set(flagStatted)
	f.id, f.size, f.mtime = idOf(st), st.Size(), unixNano(st.ModTime())
}

// sameStat reports whether a file found with size and mtime looks as it
// did at its last stat.
func (f *fileState) sameStat(size int64, mtime time.Time) bool {
	return f.has(flagStatted) && size == f.size && unixNano(mtime) == f.mtime
}

// unixNano is t.UnixNano, clamped to what an int64 holds.
func unixNano(t time.Time) int64 {
	const maxSec = math.MaxInt64/int64(time.Second) - 1
	switch sec := t.Unix(); {
	case sec > maxSec:
		return math.MaxInt64
	case sec < -maxSec:
		return math.MinInt64
	}
	return t.UnixNano()
}

// reader owns the files and feeds their lines to the assembler. It runs
// on one goroutine.
type reader struct {
	cfg  *Config
	log  *slog.Logger
	self *prom.Self
	asm  *session.Assembler
	// decOpts configures the decode workers.
	decOpts transcript.Options
	planner tail.Planner
	// files is the file table, in path order (strings.Compare): a
	// lookup is a search, a scan's sorted list is matched in one pass,
	// and a state write lists it as it is. As a map it cost 34 bytes a
	// file more (100,000 files: 3.4 MB).
	files []*fileState
	// dirs interns the directories of the table's entries (paths.go).
	dirs map[string]*dirEntry
	// gen counts the scans synced (see sync).
	gen uint32
	// streamed counts the files a one-shot read without keeping them in
	// the table (streamFiles).
	streamed int
	// restored holds saved watermarks for files not yet scanned.
	restored map[string]checkpoint.Entry
	now      func() time.Time
	linesN   int64
	// live is set after the backfill: tail lag is observed from then on.
	live bool
	// window learns which sessions were active within --traces.since
	// from the records of recently modified files (nil: traces off).
	window *traceWindow
	// version grows whenever an offset or the file table changes.
	version atomic.Uint64
	// between, when set, runs between two groups of a long read (the
	// backfill flushes there; see readFiles). reading is the project
	// directory whose files go on after the pause ("" at a project's
	// end).
	between func(reading string)
	// sinks, when set, is the assembler's sink: it delivers on a
	// goroutine of its own while a read is under way (sinkqueue.go).
	sinks *sinkQueue
	// src is the source of srcOf, the file of the last record, made at
	// metaGen srcGen (record).
	src    session.Source
	srcOf  *fileState
	srcGen uint64
	// metas holds the .meta.json of the subagent files that have one;
	// the goroutine that opens files adds to it (readMeta) while the
	// pipeline reads it (source): metaMu guards it. metaGen grows at
	// every addition, so that record makes the source again.
	metaMu  sync.Mutex
	metas   map[*fileState]*subagentMeta
	metaGen atomic.Uint64
	// batches recycles decoded record batches across reads.
	batches chan []transcript.Record
	// fpScratch is prepare's fingerprint buffer (the feeder's: one read
	// at a time).
	fpScratch tail.Scratch
	// marks is the file table of a state write in flight (takeSnapshot):
	// an entry's watermark is kept there before it changes (changing).
	marks atomic.Pointer[fileMarks]
}

// changing is called before f's offset or fingerprint changes, on
// whichever goroutine changes it: a state write in flight keeps the
// watermark it had.
func (r *reader) changing(f *fileState) {
	if m := r.marks.Load(); m != nil {
		m.keep(f)
	}
}

func newReader(cfg *Config, log *slog.Logger, self *prom.Self, asm *session.Assembler, decOpts transcript.Options, now func() time.Time) *reader {
	return &reader{
		cfg:      cfg,
		log:      log,
		self:     self,
		asm:      asm,
		decOpts:  decOpts,
		restored: map[string]checkpoint.Entry{},
		now:      now,
		batches:  make(chan []transcript.Record, recycledBatches(cores())),
	}
}

// sync makes the file table match the files a scan finds: scan hands each
// one over (discover.Watcher.ScanEach), new files are added (with their
// saved watermarks, if any) as they come, and once it returns, missing
// ones are dropped (their counts stay). visit, when not nil, is called
// with each found file that has an entry in the table. Files are marked
// with the scan's generation, so a rescan that found the same files
// builds nothing and only walks the table when some file went. It
// returns scan's error.
//
// The files are taken as the walk finds them, not gathered first: a list
// of every file found, each with its path, was 17 MB at 100,000 files
// (the daemon's largest transient at every rescan, and at the backfill
// past the soft memory limit, which it then lifted for good).
func (r *reader) sync(scan func(func(discover.File)) error, visit func(*fileState, discover.File)) error {
	r.gen++
	marked := 0
	// A scan lists paths in order, as the table holds them: the entry
	// of the next path is nearly always the one after the last.
	next := 0
	err := scan(func(fi discover.File) {
		var f *fileState
		if next < len(r.files) && r.files[next].comparePath(fi.Path) == 0 {
			f = r.files[next]
			next++
		} else {
			if f = r.add(fi.Path, fi.Dir); f == nil {
				return
			}
			next = r.index(fi.Path) + 1
		}
		if f.seen != r.gen {
			f.seen = r.gen
			marked++
		}
		f.listed(fi)
		if visit != nil {
			visit(f, fi)
		}
	})
	if marked != len(r.files) {
		n := len(r.files)
		r.files = slices.DeleteFunc(r.files, func(f *fileState) bool {
			if f.seen != r.gen {
				r.forget(f)
				return true
			}
			return false
		})
		if len(r.files) != n {
			r.version.Add(1)
		}
	}
	r.self.FilesWatched.Set(float64(len(r.files)))
	return err
}

// listed takes what a scan's listing says of f beyond its stat: that
// there is no .meta.json to look for (discover.File.NoMeta; readMeta).
func (f *fileState) listed(fi discover.File) {
	if fi.NoMeta {
		f.set(flagMetaRead)
	}
}

// find returns the entry of path p, or nil.
func (r *reader) find(p string) *fileState {
	if i, ok := r.search(p); ok {
		return r.files[i]
	}
	return nil
}

// search returns where p is in the table, or where it would go.
func (r *reader) search(p string) (int, bool) {
	return slices.BinarySearchFunc(r.files, p, (*fileState).comparePath)
}

// index returns where the entry of path p is (it must be there).
func (r *reader) index(p string) int {
	i, _ := r.search(p)
	return i
}

// add registers a transcript file if it is new and returns it (nil when
// the path is under no root's projects/ dir). dir, when not "", is p's
// directory as a scan gave it (discover.File.Dir), to share.
func (r *reader) add(p, dir string) *fileState {
	i, ok := r.search(p)
	if ok {
		return r.files[i]
	}
	rel, ok := r.relOf(p)
	if !ok {
		return nil
	}
	f := r.newFileState(p, rel, dir)
	if e, ok := r.restored[p]; ok {
		if fp, ok := checkpoint.EntryFingerprint(e); ok {
			f.offset = e.Counted
			f.setFingerprint(fp)
			f.set(flagVerify)
		} else {
			// Not the file's identity: read it from the start (global
			// dedup keeps what was counted from counting twice).
			r.log.Info("saved fingerprint damaged, reading from the start", "path", p)
			r.self.FilesReread.Inc()
		}
		delete(r.restored, p)
	}
	r.files = slices.Insert(r.files, i, f)
	r.version.Add(1)
	r.self.FilesWatched.Set(float64(len(r.files)))
	return f
}

// relOf returns the path of a transcript under the projects/ dir of the
// first root that holds it.
func (r *reader) relOf(p string) (string, bool) {
	for _, root := range r.cfg.ClaudeDirs {
		projects := filepath.Join(root, "projects")
		// The relative path is a substring of the path when it can be (a
		// path discover found always is): the table then holds each
		// path's bytes once, not twice (100,000 files: 6 MB).
		rel, ok := strings.CutPrefix(p, projects+string(filepath.Separator))
		if !ok || rel != filepath.Clean(rel) {
			var err error
			if rel, err = filepath.Rel(projects, p); err != nil {
				continue
			}
		}
		if rel == "." || strings.HasPrefix(rel, "..") {
			continue
		}
		return rel, true
	}
	return "", false
}

// sessionID returns the session f belongs to by its place in the tree
// ("" for a legacy agent or another file: their records tell).
func (r *reader) sessionID(f *fileState) string {
	if k := f.kind(); k != session.SourceSession && k != session.SourceSubagent {
		return ""
	}
	return session.ClassifySource(f.rel()).SessionID
}

// source tells what the file is (session.ClassifySource), with its
// subagent's .meta.json.
func (r *reader) source(f *fileState) session.Source {
	src := session.ClassifySource(f.rel())
	if m := r.meta(f); m != nil {
		src.AgentType, src.Description, src.ToolUseID = m.AgentType, m.Description, m.ToolUseID
	}
	return src
}

// meta returns the .meta.json of f (nil: none).
func (r *reader) meta(f *fileState) *subagentMeta {
	r.metaMu.Lock()
	defer r.metaMu.Unlock()
	return r.metas[f]
}

// setMeta keeps the .meta.json of f (nil forgets it).
func (r *reader) setMeta(f *fileState, m *subagentMeta) {
	r.metaMu.Lock()
	defer r.metaMu.Unlock()
	if m == nil {
		delete(r.metas, f)
		return
	}
	if r.metas == nil {
		r.metas = map[*fileState]*subagentMeta{}
	}
	r.metas[f] = m
	r.metaGen.Add(1)
}

// drop forgets a file that was removed; its counts stay.
func (r *reader) drop(p string) {
	i, ok := r.search(p)
	if !ok {
		return
	}
	r.forget(r.files[i])
	r.files = slices.Delete(r.files, i, i+1)
	r.version.Add(1)
	r.self.FilesWatched.Set(float64(len(r.files)))
}

// forget drops what is kept of f outside its entry.
func (r *reader) forget(f *fileState) {
	r.release(f)
	if f.has(flagMetaRead) {
		r.setMeta(f, nil)
	}
}

func (r *reader) sorted() []*fileState {
	out := slices.Clone(r.files)
	legacyAgentsLast(out) // the table is in path order already
	r.self.FilesWatched.Set(float64(len(out)))
	return out
}

// sortForRead puts files in reading order: by path, so that a session's
// subagents (<session>/subagents/) follow it, except that legacy
// agent-*.jsonl files come after everything else in their project
// directory. A subagent is then read after the session that launched it
// and its Task call, which name its type, even when the backfill settles
// and closes sessions between groups of files.
func sortForRead(files []*fileState) {
	slices.SortFunc(files, comparePaths)
	legacyAgentsLast(files)
}

// legacyAgentsLast moves the legacy agents of files, in path order, after
// the rest of their project directory: its entries are one run in path
// order, and its legacy agents wait until the run ends. (No keys are
// made: at 100,000 files they were 8 MB on the backfill's serial start.)
func legacyAgentsLast(files []*fileState) {
	out := make([]*fileState, 0, len(files))
	var a agentsLast
	emit := func(f *fileState) { out = append(out, f) }
	for _, f := range files {
		a.next(f, emit)
	}
	a.end(emit)
	copy(files, out)
}

// agentsLast puts files that arrive in path order in reading order (see
// sortForRead) as they arrive: it holds legacy agent files back until a
// file outside their directory comes, or the end.
type agentsLast struct {
	wait []*fileState
	dir  string
}

// next takes the next file in path order and hands on those now in
// reading order.
func (a *agentsLast) next(f *fileState, emit func(*fileState)) {
	if len(a.wait) > 0 && !under(f, a.dir) {
		a.end(emit)
	}
	if f.kind() == session.SourceLegacyAgent {
		if len(a.wait) == 0 {
			a.dir = dirOfEntry(f)
		}
		if under(f, a.dir) {
			a.wait = append(a.wait, f)
			return
		}
	}
	emit(f)
}

// end hands on the files held back.
func (a *agentsLast) end(emit func(*fileState)) {
	for _, f := range a.wait {
		emit(f)
	}
	clear(a.wait)
	a.wait = a.wait[:0]
}

// comparePaths orders entries by path (strings.Compare) without making
// strings.
func comparePaths(a, b *fileState) int {
	var ab, bb [512]byte
	return bytes.Compare(a.appendPath(ab[:0]), b.appendPath(bb[:0]))
}

// dirOfEntry returns the directory f is in.
func dirOfEntry(f *fileState) string {
	if f.nameKind() != nameSubagent && f.nameKind() != nameWhole {
		return f.dir.path // shared, not copied
	}
	var buf [256]byte
	return string(f.appendDir(buf[:0]))
}

// under reports whether f's path is in dir or below it.
func under(f *fileState, dir string) bool {
	var buf [256]byte
	p := f.appendDir(buf[:0])
	return string(p) == dir || len(p) > len(dir) && p[len(dir)] == filepath.Separator && string(p[:len(dir)]) == dir
}

// subagentMeta is the .meta.json beside a subagent transcript.
type subagentMeta struct {
	AgentType   string `json:"agentType"`
	Description string `json:"description"`
	ToolUseID   string `json:"toolUseId"`
}

// maxMetaBytes caps a subagent's .meta.json (a few hundred bytes in
// practice).
const maxMetaBytes = 1 << 20

func (r *reader) readMeta(f *fileState) {
	if f.has(flagMetaRead) {
		return
	}
	mp := session.MetaPath(f.path())
	if mp == "" {
		f.set(flagMetaRead)
		return
	}
	b, err := safefile.ReadFile(mp, maxMetaBytes)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, safefile.ErrNotRegular) || errors.Is(err, safefile.ErrTooLarge) {
			f.set(flagMetaRead)
		}
		return
	}
	var m subagentMeta
	if err := json.Unmarshal(b, &m); err != nil {
		r.log.Debug("bad subagent meta", "path", mp, "err", err)
		f.set(flagMetaRead)
		return
	}
	if m != (subagentMeta{}) {
		r.setMeta(f, &m)
	}
	f.set(flagMetaRead)
}

// readNew reads what was appended to f since its offset. atEOF hands an
// unterminated last line over (one-shot runs); otherwise it waits. It
// reports whether anything was read.
// readNew reads what was appended to f since its offset (see readFiles).
func (r *reader) readNew(f *fileState, atEOF bool) bool {
	return r.readFiles([]*fileState{f}, atEOF) > 0
}

// checkIdentity makes sure a file is still the one its offset was taken
// in before reading on from that offset: its first bytes must match the
// saved fingerprint, and the byte before the offset must end a line (every
// offset of a followed file is a line's end). A file truncated and
// rewritten in place keeps its inode and may already be longer than the
// offset; reading on would start mid-line in the new content. Anything
// else is read again from the start; global dedup keeps what was counted
// from counting twice. It reports false when the check itself failed.
func (r *reader) checkIdentity(f *fileState, fh io.ReaderAt, replaced bool) bool {
	defer f.unset(flagVerify)
	if f.offset == 0 && !replaced && !f.has(flagVerify) {
		return true
	}
	same := true
	if f.fpLen > 0 {
		ok, err := r.fpScratch.Matches(f.fingerprint(), fh)
		if err != nil {
			r.log.Warn("fingerprint failed", "path", f.path(), "err", err)
			return false
		}
		same = ok
	}
	if same && f.offset > 0 {
		var b [1]byte
		if _, err := fh.ReadAt(b[:], f.offset-1); err == nil {
			same = b[0] == '\n'
		} else if !errors.Is(err, io.EOF) {
			r.log.Warn("read failed", "path", f.path(), "err", err)
			return false
		}
		// At EOF the file shrank below the offset: prepare reads it again.
	}
	if !same {
		r.log.Info("file replaced or rewritten, reading from the start", "path", f.path(), "offset", f.offset)
		r.self.FilesReread.Inc()
		r.changing(f)
		f.offset = 0
		f.setFingerprint(checkpoint.Fingerprint{})
		r.version.Add(1)
	}
	return true
}

// updateFingerprint completes the fingerprint of a file that was shorter
// than the fingerprint's length.
func (r *reader) updateFingerprint(f *fileState, fh io.ReaderAt) {
	if f.fpLen < checkpoint.FingerprintBytes {
		if fp, err := r.fpScratch.FingerprintOf(fh); err == nil && fp != f.fingerprint() {
			r.changing(f)
			f.setFingerprint(fp)
		}
	}
}

// record hands one decoded record to the assembler, counting unknown
// types and fields.
func (r *reader) record(f *fileState, rec *transcript.Record, now time.Time) {
	if !rec.Kind.Known() {
		t := rec.Type
		if t == "" {
			t = "(none)"
		}
		r.self.UnknownRecords.WithLabelValues(boundType(t)).Inc()
	}
	if rec.UnknownFields > 0 {
		r.self.UnknownFields.Add(float64(rec.UnknownFields))
	}
	problem := rec.Message.Usage.Problem
	if problem == "" && rec.HasEmbedded() {
		problem = rec.Embedded.Message.Usage.Problem
	}
	if problem != "" {
		r.self.InvalidUsage.WithLabelValues(string(problem)).Inc()
		if !f.has(flagWarnedUsage) {
			f.set(flagWarnedUsage)
			r.log.Warn("token usage rejected: counts must be whole numbers from 0 to 100,000,000; "+
				"the line's tokens are not counted (later ones in this file only in claude_transcript_exporter_invalid_usage_total)",
				"path", f.path(), "reason", problem)
		}
	}
	if r.window != nil {
		if r.sinks != nil {
			// In order with the units the sinks take (sinkqueue.go).
			r.sinks.see(r.window, rec.SessionID, f.modTime())
		} else {
			r.window.see(rec.SessionID, f.modTime())
		}
	}
	if gen := r.metaGen.Load(); r.srcOf != f || r.srcGen != gen {
		// Records come file by file: the source is made once per run of
		// them (and again if a .meta.json was read since; it is read on
		// the goroutine that opens files, before the file's lines are
		// handed over).
		r.src, r.srcOf, r.srcGen = r.source(f), f, gen
	}
	r.asm.Add(&r.src, rec, now)
}

// boundType keeps unknown-type label values short and printable.
func boundType(t string) string {
	if len(t) > 64 {
		t = t[:64]
	}
	return t
}
