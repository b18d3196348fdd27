package daemon

import (
	"log/slog"
	"time"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/exporter/prom"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/discover"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/session"
)

// follower keeps the pipeline going after the backfill: fsnotify hints
// read a file at once, the periodic rescan is the truth, polling covers
// mounts without notifications, and settled requests, idle sessions and
// the state file are handled on each step. Step takes the time, so the
// schedule is testable without sleeping.
type follower struct {
	cfg    *Config
	log    *slog.Logger
	rd     *reader
	w      *discover.Watcher
	asm    *session.Assembler
	usage  *prom.Metrics
	traces *tracesStage
	stats  *statsPublisher
	keep   *stateKeeper

	nextPoll  time.Time
	nextFlush time.Time
	// changed is rescan's list of files to read, kept for its memory
	// while it is small (the first rescan after a restore may list every
	// file: 0.8 MB at 100,000, held for good).
	changed []*fileState
}

// maxKeptChanged is the most files rescan's list keeps room for.
const maxKeptChanged = 4096

// rescan walks the roots and reads what changed.
func (f *follower) rescan() {
	// Read only the files the walk saw change: an idle daemon with
	// thousands of transcripts stats each once per rescan, not twice.
	changed := f.changed[:0]
	err := f.rd.sync(f.w.ScanEach, func(fs *fileState, fi discover.File) {
		if f.traces != nil {
			f.traces.window.see(f.rd.sessionID(fs), fi.ModTime)
		}
		// A FIFO, socket or device at the path is looked at again (the
		// reader counts it skipped once, and reads the path again once
		// it is a regular file).
		if fi.Irregular || fs.has(flagVerify) || fi.Size != fs.offset || !fs.sameStat(fi.Size, fi.ModTime) {
			changed = append(changed, fs)
		}
	})
	if err != nil {
		f.log.Debug("rescan incomplete", "err", err)
	}
	sortForRead(changed)
	f.rd.readFiles(changed, false)
	clear(changed)
	f.changed = changed[:0]
	if cap(changed) > maxKeptChanged {
		f.changed = nil
	}
}

// hint handles one fsnotify event: read the file now, or forget it.
func (f *follower) hint(ev discover.Event) {
	if ev.Op == discover.Removed {
		f.rd.drop(ev.Path)
		return
	}
	if fs := f.rd.add(ev.Path, ""); fs != nil {
		f.rd.readNew(fs, false)
	}
}

// polling reports whether known files must be polled: no notifications
// (--tail.poll-only) or the watch limit was reached.
func (f *follower) polling() bool {
	if f.cfg.PollOnly {
		return true
	}
	st := f.w.Stats()
	return st.Fallback
}

// Step does what is due at now.
func (f *follower) Step(now time.Time) {
	if f.w.Step(now) {
		f.rescan()
	}
	if f.polling() && !now.Before(f.nextPoll) {
		f.rd.readFiles(f.rd.sorted(), false)
		f.nextPoll = now.Add(f.cfg.PollInterval)
	}
	f.asm.Flush(now, false)
	f.stats.publish(f.asm.Stats())
	if !now.Before(f.nextFlush) {
		f.keep.save(f.usage, f.asm, f.rd, f.traces, now, false)
		f.nextFlush = now.Add(f.cfg.StateFlushInterval)
	}
	f.keep.age(now)
}
