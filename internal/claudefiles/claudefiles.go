// Package claudefiles reads the Claude dir's files beside the transcripts
// (tasks/, todos/, sessions/, jobs/, history.jsonl) on every refresh, and
// only what changed since the last one: a JSON file is parsed again when
// its size, time or inode moves, and history files are read from where the
// last refresh stopped.
//
// What it returns is an Inventory (the gauges of the moment) and a Delta
// (prompts, slash commands and skipped files since the last refresh: the
// counters). A history file rewritten or cut shorter is counted again from
// its start, and only what it holds beyond what was counted before moves a
// counter, so counters never go down. sessions-index.json is never read:
// it has been unreliable since Claude Code 2.1.31, and the scan is the
// truth.
package claudefiles

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/safefile"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/tail"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/claudedir"
)

// File kinds (the file label of claude_dir_errors_total).
const (
	KindTask        = "task"
	KindTodos       = "todos"
	KindHistory     = "history"
	KindLiveSession = "live_session"
	KindJobState    = "job_state"
	KindJobTimeline = "job_timeline"
)

// Defaults.
const (
	DefaultMaxFileBytes = 16 << 20 // a task, todo, session or job file
	DefaultMaxLineBytes = 1 << 20  // a history or timeline line
	// MaxLabelValues bounds the distinct values of each label (status,
	// state, entrypoint, kind); later ones are "other".
	MaxLabelValues = 32
)

// Config of a Reader.
type Config struct {
	Roots        []string
	MaxFileBytes int64
	MaxLineBytes int
	// Alive reports whether a live session file's process runs; nil
	// treats every process as running.
	Alive func(pid int) bool
}

// ErrorKey names a skipped file or line.
type ErrorKey struct{ File, Reason string }

// PromptKey is the label set of history counts before the project path is
// turned into a label.
type PromptKey struct {
	Project string // the working directory as written
	Command string // "" for a prompt
}

// Delta is what the counters gain from one refresh.
type Delta struct {
	Prompts map[PromptKey]int64
	Errors  map[ErrorKey]int64
}

func (d *Delta) addErr(file, reason string) {
	if d.Errors == nil {
		d.Errors = map[ErrorKey]int64{}
	}
	d.Errors[ErrorKey{file, reason}]++
}

// Reader reads one set of Claude dirs. It is not safe for concurrent use.
type Reader struct {
	cfg  Config
	json map[string]*jsonFile
	hist map[string]*histFile
	// timelineErred are the most bad lines of each reason counted from
	// each timeline, kept while its job dir exists (its memo goes when a
	// refresh takes the state from state.json instead).
	timelineErred map[string]map[ErrorKey]int64
	limits        map[string]map[string]struct{}
	lines         *tail.Reader // reads the history files
}

// New returns a Reader.
func New(cfg Config) *Reader {
	if cfg.MaxFileBytes <= 0 {
		cfg.MaxFileBytes = DefaultMaxFileBytes
	}
	if cfg.MaxLineBytes <= 0 {
		cfg.MaxLineBytes = DefaultMaxLineBytes
	}
	return &Reader{cfg: cfg, json: map[string]*jsonFile{}, hist: map[string]*histFile{},
		timelineErred: map[string]map[ErrorKey]int64{},
		limits:        map[string]map[string]struct{}{},
		// One byte over the cap: a line's '\r' before its '\n' is not
		// its content (see histFile.readFrom).
		lines: tail.NewReader(64<<10, cfg.MaxLineBytes+1)}
}

// version identifies one content of a file for the memo.
type version struct {
	size  int64
	mtime time.Time
	ino   uint64
	mode  fs.FileMode
}

func versionOf(fi fs.FileInfo) version {
	return version{size: fi.Size(), mtime: fi.ModTime(), ino: inode(fi), mode: fi.Mode().Type()}
}

// jsonFile is the memo of one whole-file JSON document.
type jsonFile struct {
	kind string
	v    version
	ok   bool
	task claudedir.Task
	todo []string
	live claudedir.LiveSession
	job  claudedir.JobState
	last claudedir.JobEvent // a timeline's last event
	seen bool               // still present in this refresh
}

// Refresh reads what changed. final says the read is the last one (a
// one-shot run): a history line without its newline is then counted.
func (r *Reader) Refresh(final bool) (claudedir.Inventory, Delta) {
	inv := claudedir.NewInventory()
	var d Delta
	for _, f := range r.json {
		f.seen = false
	}
	for _, root := range r.roots() {
		r.tasks(root, &inv, &d)
		r.todos(root, &inv, &d)
		r.sessions(root, &inv, &d)
		r.jobs(root, &inv, &d)
		r.history(filepath.Join(root, "history.jsonl"), &d, final)
		for _, dir := range subdirs(filepath.Join(root, "projects")) {
			r.history(filepath.Join(dir, ".history.jsonl"), &d, final)
		}
	}
	for p, f := range r.json {
		if !f.seen {
			delete(r.json, p)
		}
	}
	for p := range r.timelineErred {
		if _, err := os.Lstat(filepath.Dir(p)); errors.Is(err, fs.ErrNotExist) {
			delete(r.timelineErred, p)
		}
	}
	// A history file that disappears keeps its counts: its prompts were
	// typed. One that comes back is counted from the start against them.
	return inv, d
}

// roots are the configured dirs with links resolved and each dir once:
// ~/.config/claude linked to ~/.claude must not count every file twice.
func (r *Reader) roots() []string {
	seen := map[string]bool{}
	var out []string
	for _, root := range r.cfg.Roots {
		if resolved, err := filepath.EvalSymlinks(root); err == nil {
			root = resolved
		}
		if !seen[root] {
			seen[root] = true
			out = append(out, root)
		}
	}
	return out
}

// label bounds the distinct values of one label.
func (r *Reader) label(name, v string) string {
	seen := r.limits[name]
	if seen == nil {
		seen = map[string]struct{}{}
		r.limits[name] = seen
	}
	if _, ok := seen[v]; ok {
		return v
	}
	if len(seen) >= MaxLabelValues {
		return claudedir.Other
	}
	seen[v] = struct{}{}
	return v
}

// subdirs lists the directories in dir (none when it is missing).
func subdirs(dir string) []string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	return out
}

// files lists the entries of dir whose names end in suffix (not
// directories).
func files(dir, suffix string) []string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		if !e.IsDir() && strings.HasSuffix(e.Name(), suffix) && !strings.HasPrefix(e.Name(), ".") {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	return out
}

// load returns the memo of path, parsing it again when it changed. An
// error is counted once per version of the file.
func (r *Reader) load(path, kind string, d *Delta, parse func(b []byte, f *jsonFile) error) *jsonFile {
	fi, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil // gone between the listing and now
		}
		f := r.memo(path, kind)
		if f.ok || f.v != (version{mode: fs.ModeIrregular}) {
			f.v, f.ok = version{mode: fs.ModeIrregular}, false
			d.addErr(kind, "unreadable")
		}
		return f
	}
	v := versionOf(fi)
	if f := r.json[path]; f != nil && f.v == v && f.kind == kind {
		f.seen = true
		return f
	}
	f := r.memo(path, kind)
	f.v, f.ok = v, false
	b, err := safefile.ReadFile(path, r.cfg.MaxFileBytes)
	switch {
	case err != nil:
		d.addErr(kind, readReason(err))
	default:
		if perr := parse(b, f); perr != nil {
			d.addErr(kind, claudedir.Reason(perr))
		} else {
			f.ok = true
		}
	}
	return f
}

// readReason is the reason label of a file that could not be read.
func readReason(err error) string {
	switch {
	case errors.Is(err, safefile.ErrNotRegular):
		return "not_regular"
	case errors.Is(err, safefile.ErrTooLarge):
		return "too_large"
	}
	return "unreadable"
}

func (r *Reader) memo(path, kind string) *jsonFile {
	f := r.json[path]
	if f == nil || f.kind != kind {
		f = &jsonFile{kind: kind, v: version{mode: ^fs.FileMode(0)}}
		r.json[path] = f
	}
	f.seen = true
	return f
}

func (r *Reader) tasks(root string, inv *claudedir.Inventory, d *Delta) {
	for _, dir := range subdirs(filepath.Join(root, "tasks")) {
		for _, p := range files(dir, ".json") {
			f := r.load(p, KindTask, d, func(b []byte, f *jsonFile) (err error) {
				f.task, err = claudedir.ParseTask(b)
				return err
			})
			if f != nil && f.ok {
				inv.Tasks[r.label("task_status", f.task.Status)]++
			}
		}
	}
}

func (r *Reader) todos(root string, inv *claudedir.Inventory, d *Delta) {
	for _, p := range files(filepath.Join(root, "todos"), ".json") {
		f := r.load(p, KindTodos, d, func(b []byte, f *jsonFile) (err error) {
			f.todo, err = claudedir.ParseTodos(b)
			return err
		})
		if f != nil && f.ok {
			for _, s := range f.todo {
				inv.Todos[r.label("todo_status", s)]++
			}
		}
	}
}

func (r *Reader) sessions(root string, inv *claudedir.Inventory, d *Delta) {
	for _, p := range files(filepath.Join(root, "sessions"), ".json") {
		f := r.load(p, KindLiveSession, d, func(b []byte, f *jsonFile) (err error) {
			f.live, err = claudedir.ParseLiveSession(b)
			return err
		})
		if f == nil || !f.ok {
			continue
		}
		// A process that ended without removing its file (a crash, a
		// kill) is not running: its pid says so, every refresh.
		if f.live.PID > 0 && r.cfg.Alive != nil && !r.cfg.Alive(f.live.PID) {
			inv.Stale++
			continue
		}
		inv.Live[claudedir.LiveKey{
			Entrypoint: r.label("entrypoint", f.live.Entrypoint),
			Kind:       r.label("kind", f.live.Kind),
			Status:     r.label("session_status", f.live.Status),
		}]++
	}
}

func (r *Reader) jobs(root string, inv *claudedir.Inventory, d *Delta) {
	for _, dir := range subdirs(filepath.Join(root, "jobs")) {
		state := claudedir.Unknown
		statePath := filepath.Join(dir, "state.json")
		if _, err := os.Lstat(statePath); err == nil {
			f := r.load(statePath, KindJobState, d, func(b []byte, f *jsonFile) (err error) {
				f.job, err = claudedir.ParseJobState(b)
				return err
			})
			if f != nil && f.ok {
				state = f.job.State
			}
		}
		if state == claudedir.Unknown {
			// No state file (or none readable): the timeline's last
			// event says where the job is.
			tl := filepath.Join(dir, "timeline.jsonl")
			if _, err := os.Lstat(tl); err == nil {
				f := r.load(tl, KindJobTimeline, d, func(b []byte, f *jsonFile) error {
					return r.lastEvent(tl, b, f, d)
				})
				if f != nil && f.ok && f.last.State != "" {
					state = f.last.State
				}
			}
		}
		inv.Jobs[r.label("job_state", state)]++
	}
}

// lastEvent keeps a timeline's last well-formed event; bad lines are
// counted (once: a timeline read again counts only new ones) and skipped.
func (r *Reader) lastEvent(path string, b []byte, f *jsonFile, d *Delta) error {
	f.last = claudedir.JobEvent{}
	errs := map[ErrorKey]int64{}
	defer func() {
		erred := r.timelineErred[path]
		if erred == nil {
			erred = map[ErrorKey]int64{}
			r.timelineErred[path] = erred
		}
		for k, n := range errs {
			if n > erred[k] {
				addErrN(d, k, n-erred[k])
				erred[k] = n
			}
		}
	}()
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if len(line) > r.cfg.MaxLineBytes {
			errs[ErrorKey{KindJobTimeline, "too_long"}]++
			continue
		}
		ev, err := claudedir.ParseJobEvent(line)
		if err != nil {
			errs[ErrorKey{KindJobTimeline, claudedir.Reason(err)}]++
			continue
		}
		f.last = ev
	}
	return nil
}

// histFile is the read position and the counts of one history file.
type histFile struct {
	v      version
	offset int64
	fp     tail.Fingerprint // the file's first bytes, up to 1 KiB: its identity
	// counts are those of the content read since the file was last
	// (re)read from its start; counted are the most the counters ever
	// took from this file, per key. A counter gains only what counts
	// hold beyond counted, so a file cut, emptied or rewritten and then
	// refilled with what it held moves nothing.
	counts  map[PromptKey]int64
	errs    map[ErrorKey]int64
	counted map[PromptKey]int64
	erred   map[ErrorKey]int64
}

func newHistFile() *histFile {
	return &histFile{counts: map[PromptKey]int64{}, errs: map[ErrorKey]int64{},
		counted: map[PromptKey]int64{}, erred: map[ErrorKey]int64{}}
}

// history reads what a history file gained since the last refresh.
func (r *Reader) history(path string, d *Delta, final bool) {
	h := r.hist[path]
	f, fi, err := safefile.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return
		}
		if h == nil || h.v.mode != fs.ModeIrregular {
			if h == nil {
				h = newHistFile()
				r.hist[path] = h
			}
			h.v.mode = fs.ModeIrregular
			d.addErr(KindHistory, readReason(err))
		}
		return
	}
	defer f.Close()
	v := versionOf(fi)
	if h != nil && h.v == v && !final {
		return
	}
	// The identity of the file as it was stat'ed: its first bytes up to
	// the size read.
	fp, err := tail.FingerprintOf(io.NewSectionReader(f, 0, fi.Size()))
	if err != nil || int64(fp.Len) != min(tail.FingerprintBytes, fi.Size()) {
		return // changed under us: the next refresh reads it
	}
	if h == nil {
		h = newHistFile()
		r.hist[path] = h
	}
	if h.offset > 0 && (fi.Size() < h.offset || !sameFile(f, h.fp, h.offset)) {
		// Cut, rewritten, or not the file whose lines ended at the
		// offset: read it again from the start.
		h.offset = 0
		h.counts, h.errs = map[PromptKey]int64{}, map[ErrorKey]int64{}
	}
	h.readFrom(r.lines, f, fi.Size(), r.cfg.MaxLineBytes, final)
	h.v, h.fp = v, fp
	for k, n := range h.counts {
		if n > h.counted[k] {
			addPrompt(d, k, n-h.counted[k])
			h.counted[k] = n
		}
	}
	for k, n := range h.errs {
		if n > h.erred[k] {
			addErrN(d, k, n-h.erred[k])
			h.erred[k] = n
		}
	}
}

// sameFile reports whether f is still the file whose lines ended at off:
// its first bytes are those fp was taken of, and off ends a line. A check
// that cannot be made says no: the file is read again from its start.
func sameFile(f *os.File, fp tail.Fingerprint, off int64) bool {
	same, err := fp.Matches(f)
	if err != nil || !same {
		return false
	}
	ends, err := tail.EndsLine(f, off)
	return err == nil && ends
}

// readFrom reads the complete lines between the offset and size (and,
// when final, a last line without its newline) into the counts. A line's
// '\r' before its '\n' is dropped before the cap applies (lines reaches one
// byte further for it); a blank line counts nothing.
func (h *histFile) readFrom(lines *tail.Reader, f *os.File, size int64, maxLine int, final bool) {
	if size <= h.offset {
		return
	}
	// A read error stops at the last whole line: the next refresh reads on.
	h.offset, _ = lines.ReadFrom(f, h.offset, tail.ReadOptions{Limit: size, AtEOF: final},
		func(line []byte, _ int64, st tail.LineStatus) error {
			line = bytes.TrimSuffix(line, []byte("\r"))
			switch {
			case st == tail.LineTooLong || len(line) > maxLine:
				h.errs[ErrorKey{KindHistory, "too_long"}]++
			case len(bytes.TrimSpace(line)) == 0:
			default:
				if p, perr := claudedir.ParsePrompt(line); perr != nil {
					h.errs[ErrorKey{KindHistory, claudedir.Reason(perr)}]++
				} else {
					h.counts[PromptKey{Project: p.Project, Command: p.Command}]++
				}
			}
			return nil
		})
}

func addPrompt(d *Delta, k PromptKey, n int64) {
	if d.Prompts == nil {
		d.Prompts = map[PromptKey]int64{}
	}
	d.Prompts[k] += n
}

func addErrN(d *Delta, k ErrorKey, n int64) {
	if d.Errors == nil {
		d.Errors = map[ErrorKey]int64{}
	}
	d.Errors[k] += n
}
