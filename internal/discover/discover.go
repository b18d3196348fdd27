package discover

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
)

// DefaultRescanInterval is the period of the full rescan when
// Config.RescanInterval is zero (--tail.rescan-interval).
const DefaultRescanInterval = 30 * time.Second

// DefaultWatchedRescanInterval is the period of the full rescan while the
// watches cover every transcript (see Config.WatchedRescanInterval) when
// that field is zero (--tail.watched-rescan-interval).
const DefaultWatchedRescanInterval = 10 * time.Minute

const (
	// eventBuffer is the capacity of the Events channel.
	eventBuffer = 256
	// maxPendingHints bounds the distinct paths waiting for the consumer;
	// past it a hint is dropped and a rescan requested instead.
	maxPendingHints = 4096
)

// Config says what to watch and how.
type Config struct {
	// Roots are Claude config dirs (--claude.dir); transcripts live under
	// <root>/projects/. A root or its projects/ dir may not exist yet.
	Roots []string
	// Match reports whether a file's base name is a transcript (for
	// example session.IsTranscriptName). Required.
	Match func(name string) bool
	// RescanInterval is the period Step schedules full rescans on
	// (--tail.rescan-interval); zero means DefaultRescanInterval.
	RescanInterval time.Duration
	// WatchedRescanInterval is the period Step schedules full rescans on
	// while notifications cover every transcript: the watcher runs, the
	// watch limit was not reached, and the last Scan found every
	// transcript in a watched directory, read every directory and saw
	// every root's projects/ dir (or watched the root for it). Lost
	// notifications (overflow, watcher error, a dropped hint) request a
	// Scan of their own. Zero means DefaultWatchedRescanInterval; it is
	// never shorter than RescanInterval, which applies whenever the
	// watches do not cover everything (--tail.watched-rescan-interval).
	WatchedRescanInterval time.Duration
	// PollOnly disables fsnotify entirely (--tail.poll-only): for NFS,
	// FUSE and Docker Desktop mounts where change events do not arrive.
	PollOnly bool
	// Logger receives warnings (watch limit reached, watcher errors); the
	// caller adds the component attribute. Nil discards.
	Logger *slog.Logger
	// Now is the clock Scan stamps the rescan schedule with; nil means
	// time.Now.
	Now func() time.Time

	// addWatchHook, when set (tests only), runs before every watch add;
	// an error it returns is taken as the add's error.
	addWatchHook func(dir string) error
}

// Op is the kind of a hint.
type Op uint8

// Hint kinds.
const (
	// Changed: the file was created or written (or found in a directory
	// that just appeared).
	Changed Op = iota + 1
	// Removed: the file was removed or renamed away.
	Removed
)

func (o Op) String() string {
	switch o {
	case Changed:
		return "changed"
	case Removed:
		return "removed"
	}
	return "unknown"
}

// Event is a path-level hint. It may be late, duplicated or lost; a Scan
// is the truth.
type Event struct {
	Path string
	Op   Op
}

// File is one transcript found by Scan.
type File struct {
	Path string
	// Dir is the directory Path is in, as a scan walked (and watched) it:
	// a string of its own that a caller keeping the directory may share
	// rather than copy out of Path ("" when unknown).
	Dir     string
	Size    int64
	ModTime time.Time
	// Dev and Ino identify the file where the platform says (Unix); both
	// are zero elsewhere. Ino is never zero when known.
	Dev, Ino uint64
	// Irregular says the path is a FIFO, a socket or a device (Size is
	// then 0). It is listed, never opened here, so that the reader counts
	// it as a file it skips: a transcript's place taken by one is not a
	// transcript gone.
	Irregular bool
	// NoMeta says the listing of Dir held no .meta.json and the file was
	// last written over MetaSettled before it: a subagent transcript
	// there has no .meta.json to look for (an older Claude Code wrote
	// none; a newer one writes it as the agent starts). Set by scans only.
	NoMeta bool
}

// MetaSettled is how long a file must have gone unwritten before a
// listing without a .meta.json says it has none (NoMeta).
const MetaSettled = time.Minute

// irregular are the file types listed as Irregular (a symlink is not
// listed: transcripts are not followed through links).
const irregular = fs.ModeNamedPipe | fs.ModeSocket | fs.ModeDevice

// Stats is a snapshot of the watcher's state for self-metrics.
type Stats struct {
	// DirsWatched is the number of directories with a watch now.
	DirsWatched int
	// WatchErrors counts failed watch adds (a directory vanishing under us
	// excluded) and errors the watcher reported, overflows excluded.
	WatchErrors uint64
	// Overflows counts kernel event queue overflows.
	Overflows uint64
	// DroppedHints counts hints not queued because too many were pending
	// (each one also requested a rescan).
	DroppedHints uint64
	// Fallback is set once the watch limit was reached or the watcher
	// could not be created: no watch is added any more and new
	// directories are found by the rescan only.
	Fallback bool
	// PollOnly mirrors Config.PollOnly.
	PollOnly bool
}

// Watcher finds transcript files under the roots. Its methods are safe
// for concurrent use; Scan calls are serialised.
type Watcher struct {
	roots    []string
	match    func(string) bool
	interval time.Duration
	// watchedInterval is the period while the watches cover everything.
	watchedInterval time.Duration
	log             *slog.Logger
	now             func() time.Time
	hook            func(string) error

	fsw    *fsnotify.Watcher // nil when polling only or unavailable
	events chan Event
	rescan chan struct{} // capacity 1: signals coalesce
	done   chan struct{}
	wg     sync.WaitGroup

	scanMu    sync.Mutex // serialises Scan; guards the one below
	lastCount int

	mu      sync.Mutex // guards everything below
	watched map[string]watchMark
	seq     uint64 // bumped on every watch added
	// mark is the mark of the current Scan's walk, or of its check of the
	// watch list (watchMark.mark).
	mark    uint64
	closed  bool
	last    time.Time // when the last periodic or requested rescan ran
	scanned bool      // last is set
	// blind says the last Scan found something the watches do not cover:
	// a transcript in a directory without a watch, a directory it could
	// not read or watch, a root without a watch. The periodic rescan is
	// then the only way to see it change, so it keeps the short interval.
	blind      bool
	stats      Stats
	overflowed bool // the first overflow was logged

	hints hintQueue // has its own lock

	closeOnce sync.Once
	closeErr  error
}

// New validates cfg and starts watching (unless cfg.PollOnly). Watches are
// added by Scan, so call it once to start; until then Step reports a
// rescan due. A watcher that cannot be created is not an error: it is
// logged, Stats().Fallback is set and the caller relies on the rescan.
func New(cfg Config) (*Watcher, error) {
	if cfg.Match == nil {
		return nil, errors.New("new discover watcher: Match is nil")
	}
	if len(cfg.Roots) == 0 {
		return nil, errors.New("new discover watcher: no roots")
	}
	if cfg.RescanInterval < 0 || cfg.WatchedRescanInterval < 0 {
		return nil, errors.New("new discover watcher: negative rescan interval")
	}
	w := &Watcher{
		match:           cfg.Match,
		interval:        cfg.RescanInterval,
		watchedInterval: cfg.WatchedRescanInterval,
		log:             cfg.Logger,
		now:             cfg.Now,
		hook:            cfg.addWatchHook,
		events:          make(chan Event, eventBuffer),
		rescan:          make(chan struct{}, 1),
		done:            make(chan struct{}),
		watched:         map[string]watchMark{},
	}
	if w.interval == 0 {
		w.interval = DefaultRescanInterval
	}
	if w.watchedInterval == 0 {
		w.watchedInterval = DefaultWatchedRescanInterval
	}
	w.watchedInterval = max(w.watchedInterval, w.interval)
	if w.log == nil {
		w.log = slog.New(slog.DiscardHandler)
	}
	if w.now == nil {
		w.now = time.Now
	}
	seen := map[string]bool{}
	for _, r := range cfg.Roots {
		r = filepath.Clean(r)
		if !seen[r] {
			seen[r] = true
			w.roots = append(w.roots, r)
		}
	}
	w.hints = hintQueue{pending: map[string]Op{}, max: maxPendingHints, wake: make(chan struct{}, 1)}
	w.stats.PollOnly = cfg.PollOnly
	if cfg.PollOnly {
		return w, nil
	}
	fsw, err := fsnotify.NewWatcher()
	if err != nil {
		w.stats.Fallback = true
		w.log.Warn("directory watcher unavailable, polling only", "err", err,
			"hint", "raise fs.inotify.max_user_instances (sysctl) or use --tail.poll-only")
		return w, nil
	}
	w.fsw = fsw
	w.wg.Add(2)
	go w.run()
	go w.pump()
	return w, nil
}

// Events returns the hint channel. Hints are coalesced per path (the last
// op wins) and never block the watcher; when too many are pending a hint
// is dropped and RescanNeeded is signalled instead. The channel is not
// closed by Close, and nothing is sent on it when polling only.
func (w *Watcher) Events() <-chan Event { return w.events }

// RescanNeeded is signalled (coalesced, capacity 1) when hints may have
// been lost or a directory appeared: watcher overflow or error, a dropped
// hint, a new or removed watched directory. The caller should Scan.
func (w *Watcher) RescanNeeded() <-chan struct{} { return w.rescan }

// Step reports whether the periodic rescan is due at now: a period
// (RescanPeriod, as it is now) after the last time Step said so or a Scan
// ran (Config.Now). Before the first Scan it is due.
func (w *Watcher) Step(now time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.scanned && now.Before(w.last.Add(w.periodLocked())) {
		return false
	}
	w.last, w.scanned = now, true
	return true
}

// RescanPeriod is the period of the periodic rescan now: the watched
// interval while notifications cover every transcript, else the rescan
// interval (polling only, no watcher, watch limit reached, or the last
// Scan found something the watches do not cover).
func (w *Watcher) RescanPeriod() time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.periodLocked()
}

func (w *Watcher) periodLocked() time.Duration {
	if w.fsw == nil || w.closed || w.stats.Fallback || w.blind || !w.scanned {
		return w.interval
	}
	return w.watchedInterval
}

// Stats returns a snapshot of the watcher's counters and flags.
func (w *Watcher) Stats() Stats {
	w.mu.Lock()
	defer w.mu.Unlock()
	st := w.stats
	st.DirsWatched = len(w.watched)
	st.DroppedHints = w.hints.droppedCount()
	return st
}

// Close stops watching and waits for the watcher's goroutines. It is
// idempotent; later calls return the first call's result. Scan still works
// after Close (without adding watches).
func (w *Watcher) Close() error {
	w.closeOnce.Do(func() {
		w.mu.Lock()
		w.closed = true
		clear(w.watched)
		w.mu.Unlock()
		close(w.done)
		if w.fsw != nil {
			if err := w.fsw.Close(); err != nil {
				w.closeErr = fmt.Errorf("close directory watcher: %w", err)
			}
		}
		w.wg.Wait()
	})
	return w.closeErr
}

// signalRescan asks the caller for a Scan without blocking.
func (w *Watcher) signalRescan() {
	select {
	case w.rescan <- struct{}{}:
	default:
	}
}
