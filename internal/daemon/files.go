package daemon

import (
	"encoding/json"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
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

// scan walks every root's projects/ dir and registers new transcript
// files; it returns the files in path order. Files that disappeared are
// dropped (their counts stay).
func (r *reader) scan() []*fileState {
	seen := map[string]bool{}
	for _, root := range r.cfg.ClaudeDirs {
		projects := filepath.Join(root, "projects")
		err := filepath.WalkDir(projects, func(p string, de fs.DirEntry, err error) error {
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return nil
				}
				r.log.Warn("walk failed", "path", p, "err", err)
				if de != nil && de.IsDir() {
					return fs.SkipDir
				}
				return nil
			}
			if de.IsDir() || !session.IsTranscriptName(de.Name()) || !de.Type().IsRegular() {
				return nil
			}
			seen[p] = true
			if _, ok := r.files[p]; !ok {
				rel, err := filepath.Rel(projects, p)
				if err != nil {
					return nil
				}
				fs := &fileState{path: p, src: session.ClassifySource(rel)}
				if e, ok := r.restored[p]; ok {
					fs.offset, fs.fp, fs.verify = e.Counted, checkpoint.Fingerprint{Sum: e.Fingerprint, Len: e.FPLen}, true
					delete(r.restored, p)
				}
				r.files[p] = fs
			}
			return nil
		})
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			r.log.Warn("walk failed", "root", root, "err", err)
		}
	}
	for p := range r.files {
		if !seen[p] {
			delete(r.files, p)
		}
	}
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
