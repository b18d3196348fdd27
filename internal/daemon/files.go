package daemon

import (
	"encoding/json"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/exporter/prom"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/checkpoint"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/tail"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/session"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/transcript"
)

// fileState is what the pipeline knows of one transcript file.
type fileState struct {
	path   string
	src    session.Source
	offset int64 // everything before it has been processed
	size   int64
	mtime  time.Time
	// metaRead says the subagent .meta.json was looked for.
	metaRead bool
	// info is the last stat (for inode changes); fp the fingerprint of
	// the file's first bytes (its identity); verify asks for a
	// fingerprint check before the next read (after a restore).
	info   os.FileInfo
	fp     checkpoint.Fingerprint
	verify bool
}

// reader owns the files and feeds their lines to the assembler. It runs
// on one goroutine.
type reader struct {
	cfg   *Config
	log   *slog.Logger
	self  *prom.Self
	asm   *session.Assembler
	dec   *transcript.Decoder
	rd    *tail.Reader
	rec   transcript.Record
	files map[string]*fileState
	// restored holds saved watermarks for files not yet scanned.
	restored map[string]checkpoint.Entry
	now      func() time.Time
	linesN   int64
	// live is set after the backfill: tail lag is observed from then on.
	live bool
}

func newReader(cfg *Config, log *slog.Logger, self *prom.Self, asm *session.Assembler, dec *transcript.Decoder, now func() time.Time) *reader {
	return &reader{
		cfg:      cfg,
		log:      log,
		self:     self,
		asm:      asm,
		dec:      dec,
		rd:       tail.NewReader(1<<20, cfg.MaxLineBytes),
		files:    map[string]*fileState{},
		restored: map[string]checkpoint.Entry{},
		now:      now,
	}
}

// sync makes the file table match the paths found by a scan: new files
// are added (with their saved watermarks, if any), missing ones dropped
// (their counts stay). It returns the files in path order.
func (r *reader) sync(paths []string) []*fileState {
	seen := make(map[string]bool, len(paths))
	for _, p := range paths {
		seen[p] = true
		r.add(p)
	}
	for p := range r.files {
		if !seen[p] {
			delete(r.files, p)
		}
	}
	return r.sorted()
}

// add registers a transcript file if it is new and returns it (nil when
// the path is under no root's projects/ dir).
func (r *reader) add(p string) *fileState {
	if f, ok := r.files[p]; ok {
		return f
	}
	for _, root := range r.cfg.ClaudeDirs {
		projects := filepath.Join(root, "projects")
		rel, err := filepath.Rel(projects, p)
		if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
			continue
		}
		f := &fileState{path: p, src: session.ClassifySource(rel)}
		if e, ok := r.restored[p]; ok {
			f.offset, f.fp, f.verify = e.Counted, checkpoint.Fingerprint{Sum: e.Fingerprint, Len: e.FPLen}, true
			delete(r.restored, p)
		}
		r.files[p] = f
		r.self.FilesWatched.Set(float64(len(r.files)))
		return f
	}
	return nil
}

// drop forgets a file that was removed; its counts stay.
func (r *reader) drop(p string) {
	delete(r.files, p)
	r.self.FilesWatched.Set(float64(len(r.files)))
}

func (r *reader) sorted() []*fileState {
	out := make([]*fileState, 0, len(r.files))
	for _, f := range r.files {
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].path < out[j].path })
	r.self.FilesWatched.Set(float64(len(out)))
	return out
}

// subagentMeta is the .meta.json beside a subagent transcript.
type subagentMeta struct {
	AgentType   string `json:"agentType"`
	Description string `json:"description"`
	ToolUseID   string `json:"toolUseId"`
}

func (r *reader) readMeta(f *fileState) {
	if f.metaRead {
		return
	}
	mp := session.MetaPath(f.path)
	if mp == "" {
		f.metaRead = true
		return
	}
	b, err := os.ReadFile(mp)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			f.metaRead = true
		}
		return
	}
	var m subagentMeta
	if err := json.Unmarshal(b, &m); err != nil {
		r.log.Debug("bad subagent meta", "path", mp, "err", err)
		f.metaRead = true
		return
	}
	f.src.AgentType, f.src.Description, f.src.ToolUseID = m.AgentType, m.Description, m.ToolUseID
	f.metaRead = true
}

// readNew reads what was appended to f since its offset. atEOF hands an
// unterminated last line over (one-shot runs); otherwise it waits. It
// reports whether anything was read.
func (r *reader) readNew(f *fileState, atEOF bool) bool {
	st, err := os.Stat(f.path)
	if err != nil {
		return false
	}
	replaced := f.info != nil && !os.SameFile(f.info, st)
	if !replaced && !f.verify && st.Size() == f.offset {
		f.info = st
		return false
	}
	fh, err := os.Open(f.path)
	if err != nil {
		r.log.Warn("open failed", "path", f.path, "err", err)
		return false
	}
	defer fh.Close()
	if (replaced || f.verify) && f.fp.Len > 0 {
		same, err := checkpoint.SameFile(fh, checkpoint.Entry{Fingerprint: f.fp.Sum, FPLen: f.fp.Len})
		if err != nil {
			r.log.Warn("fingerprint failed", "path", f.path, "err", err)
			return false
		}
		if !same {
			// Another file at this path: read it from the start; global
			// dedup keeps copies of what was counted from counting twice.
			r.log.Info("file replaced, reading from the start", "path", f.path)
			f.offset, f.fp = 0, checkpoint.Fingerprint{}
		}
	}
	f.verify = false
	f.info = st
	if st.Size() < f.offset {
		// Truncated or rewritten in place: read again from the start;
		// global dedup keeps lines already counted from counting twice.
		r.log.Info("file shrank, reading again", "path", f.path, "offset", f.offset, "size", st.Size())
		f.offset = 0
	}
	f.size, f.mtime = st.Size(), st.ModTime()
	if st.Size() == f.offset {
		return false
	}
	if f.fp.Len < checkpoint.FingerprintBytes {
		if fp, err := checkpoint.FingerprintOf(fh); err == nil {
			f.fp = fp
		}
	}
	r.readMeta(f)
	start := f.offset
	now := r.now()
	end, err := r.rd.ReadFrom(fh, f.offset, tail.ReadOptions{AtEOF: atEOF}, func(line []byte, _ int64, ls tail.LineStatus) error {
		r.line(f, line, ls, now)
		return nil
	})
	if err != nil {
		r.log.Warn("read failed", "path", f.path, "err", err)
	}
	if r.live && end > start {
		// From the file's last write to the processing of its lines.
		r.self.TailLag.Observe(max(0, r.now().Sub(st.ModTime()).Seconds()))
	}
	f.offset = end
	r.self.BytesRead.Add(float64(end - start))
	return end > start
}

func (r *reader) line(f *fileState, line []byte, ls tail.LineStatus, now time.Time) {
	r.self.LinesRead.Inc()
	r.linesN++
	if ls == tail.LineTooLong {
		r.self.DecodeErrors.WithLabelValues(string(transcript.ReasonTooLong)).Inc()
		return
	}
	if transcript.IsBlank(line) {
		return
	}
	if err := r.dec.Decode(line, &r.rec); err != nil {
		reason := transcript.ReasonOf(err)
		if ls == tail.LineUnterminated {
			reason = transcript.ReasonTruncated
		}
		r.self.DecodeErrors.WithLabelValues(string(reason)).Inc()
		return
	}
	if !r.rec.Kind.Known() {
		t := r.rec.Type
		if t == "" {
			t = "(none)"
		}
		r.self.UnknownRecords.WithLabelValues(boundType(t)).Inc()
	}
	if r.rec.UnknownFields > 0 {
		r.self.UnknownFields.Add(float64(r.rec.UnknownFields))
	}
	r.asm.Add(&f.src, &r.rec, now)
}

// boundType keeps unknown-type label values short and printable.
func boundType(t string) string {
	if len(t) > 64 {
		t = t[:64]
	}
	return t
}

// readAll reads every known file to its end.
func (r *reader) readAll(files []*fileState, atEOF bool) int {
	n := 0
	for _, f := range files {
		if r.readNew(f, atEOF) {
			n++
		}
	}
	return n
}
