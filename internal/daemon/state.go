package daemon

import (
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/exporter/prom"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/checkpoint"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/session"
)

// snapshot is a consistent copy of the durable state, taken between two
// lines on the pipeline goroutine.
type snapshot struct {
	file *checkpoint.File
	at   time.Time
}

// takeSnapshot copies the counters, the assembler state and the file
// watermarks.
func takeSnapshot(cfg *Config, usage *prom.Metrics, asm *session.Assembler, rd *reader, now time.Time) (*snapshot, error) {
	m, err := json.Marshal(usage.State())
	if err != nil {
		return nil, fmt.Errorf("save counters: %w", err)
	}
	a, err := json.Marshal(asm.State())
	if err != nil {
		return nil, fmt.Errorf("save assembler state: %w", err)
	}
	f := &checkpoint.File{WrittenAt: now.UTC(), Roots: cfg.ClaudeDirs, Metrics: m, Assembler: a}
	for _, fs := range rd.files {
		if fs.offset == 0 && fs.fp.Len == 0 {
			continue
		}
		f.Files = append(f.Files, checkpoint.Entry{Path: fs.path, Fingerprint: fs.fp.Sum, FPLen: fs.fp.Len, Counted: fs.offset, Exported: fs.offset})
	}
	sort.Slice(f.Files, func(i, j int) bool { return f.Files[i].Path < f.Files[j].Path })
	return &snapshot{file: f, at: now}, nil
}

// restoreState loads a saved state into the counters, the assembler and
// the reader's file table. Files are checked against their fingerprints
// before they are read again.
func restoreState(f *checkpoint.File, usage *prom.Metrics, asm *session.Assembler, rd *reader, now time.Time) error {
	var ms prom.State
	if err := json.Unmarshal(f.Metrics, &ms); err != nil {
		return fmt.Errorf("restore counters: %w", err)
	}
	if err := usage.Restore(ms); err != nil {
		return err
	}
	var as session.State
	if err := json.Unmarshal(f.Assembler, &as); err != nil {
		return fmt.Errorf("restore assembler state: %w", err)
	}
	if err := asm.Restore(as, now); err != nil {
		return err
	}
	for _, e := range f.Files {
		rd.restored[e.Path] = e
	}
	return nil
}

// stateKeeper writes the state file on a period and at shutdown.
type stateKeeper struct {
	cfg  *Config
	log  interface{ Warn(string, ...any) }
	self *prom.Self
	last time.Time
}

// save writes a snapshot of the state. With traces on, a snapshot is
// written only once every span built so far is safe: acknowledged by the
// receiver, or synced to the spool, which the next run sends first. The
// watermarks it saves are then both counted and exported (or as good as).
// Without a spool, a receiver outage keeps the file at the last
// acknowledged point and a restart re-reads (and re-sends) from there.
func (k *stateKeeper) save(usage *prom.Metrics, asm *session.Assembler, rd *reader, traces *tracesStage, now time.Time) {
	if k.cfg.StateFile == "" {
		return
	}
	if traces != nil && traces.durable != nil {
		ok, err := traces.durable()
		if err != nil {
			k.log.Warn("state not written", "err", err)
		}
		if !ok {
			return
		}
	}
	snap, err := takeSnapshot(k.cfg, usage, asm, rd, now)
	if err == nil {
		err = checkpoint.Write(k.cfg.StateFile, snap.file)
	}
	if err != nil {
		k.log.Warn("state not written", "err", err)
		return
	}
	k.last = now
	k.self.StateFileAge.Set(0)
}

func (k *stateKeeper) age(now time.Time) {
	if k.cfg.StateFile != "" && !k.last.IsZero() {
		k.self.StateFileAge.Set(now.Sub(k.last).Seconds())
	}
}
