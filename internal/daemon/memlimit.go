package daemon

import (
	"log/slog"
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
)

// The Go runtime's default pacing lets the heap grow to twice what is live
// before it collects. A daemon's live heap is its history's index (files,
// closed sessions, counted requests), so a large history doubled.
//
// While the live heap is small the daemon sets a soft memory limit,
// softMemoryLimit: with the ~16 MiB of the binary's code pages it keeps
// the resident size under 64 MiB where the default pacing let a history of
// 20,000 files (a live heap of about 35 MiB at the end of its backfill)
// reach 68 MiB. Once the live heap passes 36 MiB, where the limit would
// leave it less room than liftRoom (48 MiB less 8 of room and about 4 of
// the runtime's own), the limit is lifted for good, so that a larger
// history never makes the collector run back to back; from then on the heap's room to grow is
// bounded instead: GOGC is lowered so that it may grow minHeadroom past
// the live heap, but never less than a fifth of it (GOGC 20), so that a
// cycle comes at worst every fifth of the live heap allocated. At 100,000
// files (a live heap of about 48 MiB after the backfill, 55 during it)
// the peak resident size was 93 MiB at the end of the backfill and 103
// once requests were appended, against 108 and 125 with the default
// pacing (BENCH_STEPS=memory bench/run.sh, eb97213; with the smaller
// index and file table of 35d2cf5, a live heap of about 40 MiB after the
// backfill, 86 and 94 MiB).
//
// The limit was lifted at 32 MiB (12 MiB of room) until 2026-11-27: a
// 100,000-file backfill, whose live heap is 29 to 34 MiB, then peaked at
// 76 to 78 MiB; kept, it peaks at 62, for more collections (115 where the
// lifted limit made 86) and 3 to 9 % more CPU. The limit leaves the heap
// less room than it seems (the runtime's own memory and the heap's free
// spans count against it: the collector's goal is about 34 MB at a live
// heap of 30), so while requests arrive the collector runs more often:
// with 30 requests appended and their state writes, 241 collections and
// 14.9 s of CPU where the lifted limit made 138 and 11.7, for a peak of
// 63 MiB instead of 84.
//
// (A soft limit that follows the live heap was tried first: the limit
// counts all of the runtime's memory, not only the heap, so at 100,000
// files live + 16 MiB left the heap a megabyte of room during a state
// write and the collector ran back to back for most of a second.)
//
// A one-shot run (startOneshotLimit) keeps the same limit and lift, with
// GOGC off while the limit holds: its heap is garbage but for the history's
// index, so it collects only as the limit nears. It had a limit of its own
// until 2026-11-27, 40 MiB, lifted at 14 MiB live for the GOGC from before
// (50) for good: 17 collections over the 1 GB bench corpus where GOGC 50
// made 54. But a history whose index outgrew 14 MiB then grew its heap by
// half its live size: a one-shot over 100,000 files (a live heap of 30 MiB
// at the end) peaked at 68 to 71 MiB, past the 64 MiB the daemon keeps on
// the same files. At the daemon's limit it peaks at 62 MiB, for 10 % more
// wall time there (the collector runs every few MB allocated once the
// index fills most of the limit), and the 1 GB corpus, whose live heap
// stays under 17 MiB, collects less often: 3 % less wall time, 61 MiB
// resident at the peak instead of 53 (binaries alternated; bench/README.md).
const (
	softMemoryLimit = 48 << 20
	minHeadroom     = 12 << 20
	liftRoom        = 8 << 20
	minGCPercent    = 20
	nonHeap         = 4 << 20
)

// gcPercentFor is the GOGC for a live heap once the limit is lifted.
func gcPercentFor(live uint64) int {
	if live == 0 {
		return 100
	}
	return int(min(100, max(minGCPercent, minHeadroom*100/live)))
}

// softLimit applies a soft memory limit, lifts it when the live heap
// outgrows it, and then keeps GOGC at gcPercentFor(live heap). It checks
// after every collection.
type softLimit struct {
	limit int64
	// gcOff says GOGC is off while the limit holds (a one-shot's): the
	// collector runs only as the limit nears.
	gcOff bool
	// mu keeps check (on the finalizer's goroutine) and stop apart, so
	// that a check never sets the limit or GOGC after stop restored them.
	mu     sync.Mutex
	prev   int64 // the limit before (restored at stop)
	prevGC int   // GOGC before (restored at stop, if set)
	lift   func(int64) int64
	gc     func(int) int
	live   func() uint64
	log    *slog.Logger
	// pct is the GOGC set (0: none yet).
	pct     atomic.Int32
	stopped atomic.Bool
	lifted  atomic.Bool
	// held counts the state writes in flight: their snapshot is a copy
	// of the state, live until written, and no sign that the history
	// outgrew the limit (without the hold, the first periodic write after
	// lines arrive lifted it at 20,000 files, and the peak went from 61
	// to 89 MiB).
	held atomic.Int32
	// reading says the backfill is under way: a collection then counts
	// as live what was allocated while it marked (decode batches and
	// records, settled requests: a few MiB over what stays), so the
	// limit is lifted only once the heap could not fit under it at all
	// (limit less nonHeap); once the backfill is done, the collection
	// that returns its garbage (debug.FreeOSMemory) measures the live
	// heap for the usual rule. At 50,000 sessions with a subagent each
	// the live heap stays at 32 MiB after the backfill, but collections
	// during its last groups measured 36 to 38: 2 runs of 5 lifted the
	// limit and peaked at 72 MiB instead of 62.
	reading atomic.Bool
}

// startSoftLimit sets the daemon's soft limit unless GOMEMLIMIT or GOGC is
// set (the user's own setting wins: then it returns nil, whose methods do
// nothing); stop restores the previous one.
func startSoftLimit(getenv func(string) string, log *slog.Logger) *softLimit {
	return startLimit(getenv, &softLimit{limit: softMemoryLimit, log: log})
}

// startOneshotLimit is startSoftLimit for a one-shot run: GOGC is off
// while the limit holds, so that the collector runs only as the limit
// nears.
func startOneshotLimit(getenv func(string) string, log *slog.Logger) *softLimit {
	return startLimit(getenv, &softLimit{limit: softMemoryLimit, gcOff: true, log: log})
}

// startLimit applies s's limit (and turns GOGC off for gcOff) unless
// the environment sets GOMEMLIMIT or GOGC, and starts its checks.
func startLimit(getenv func(string) string, s *softLimit) *softLimit {
	if getenv("GOMEMLIMIT") != "" || getenv("GOGC") != "" {
		return nil
	}
	s.lift, s.gc, s.live = debug.SetMemoryLimit, debug.SetGCPercent, liveHeap
	s.prev = debug.SetMemoryLimit(s.limit)
	if s.gcOff {
		s.prevGC = debug.SetGCPercent(-1)
		s.pct.Store(-1)
	} else {
		s.prevGC = debug.SetGCPercent(100)
		debug.SetGCPercent(s.prevGC)
	}
	s.arm()
	return s
}

// hold keeps the limit while a state snapshot is being written; release
// ends that hold.
func (s *softLimit) hold() {
	if s != nil {
		s.held.Add(1)
	}
}

func (s *softLimit) release() {
	if s != nil {
		s.held.Add(-1)
	}
}

// backfill says whether the backfill is reading (see softLimit.reading).
func (s *softLimit) backfill(on bool) {
	if s != nil {
		s.reading.Store(on)
	}
}

// liftAt is the live heap past which the limit is lifted: where the
// limit leaves the heap no more room than liftRoom (the rest of the
// runtime's memory, nonHeap, counts against the limit too).
func (s *softLimit) liftAt() uint64 {
	return uint64(max(0, s.limit-liftRoom-nonHeap))
}

// check lifts the limit once the live heap passes liftAt
// outside a hold, then sets GOGC for the live heap; it reports whether to
// keep checking.
func (s *softLimit) check() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped.Load() {
		return false
	}
	live := s.live()
	if !s.lifted.Load() {
		at := s.liftAt()
		if s.reading.Load() {
			at = uint64(max(0, s.limit-nonHeap))
		}
		if s.held.Load() > 0 || live <= at {
			return true
		}
		s.lifted.Store(true)
		s.lift(math.MaxInt64)
		s.log.Debug("soft memory limit lifted: the live heap outgrew it", "live_bytes", live, "limit_bytes", s.limit)
	}
	// Small moves are not worth a call.
	if pct := gcPercentFor(live); abs(pct-int(s.pct.Load())) >= 5 {
		s.gc(pct)
		s.pct.Store(int32(pct))
		s.log.Debug("GOGC set for the live heap", "live_bytes", live, "gogc", pct)
	}
	return true
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// arm runs check after the next collection, and again after each one
// while check says so (a finalizer runs once the collector has found its
// object unreachable, that is after a cycle).
func (s *softLimit) arm() {
	sentinel := new([32]byte) // not a tiny allocation: those may never be finalized
	runtime.SetFinalizer(sentinel, func(*[32]byte) {
		if s.check() {
			s.arm()
		}
	})
}

func (s *softLimit) stop() {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped.Swap(true) {
		return
	}
	// GOGC first: a one-shot's is off, and without the limit nothing
	// would bound the heap in between.
	if s.pct.Load() != 0 {
		s.gc(s.prevGC)
	}
	s.lift(s.prev)
}

// liveHeap is the live heap measured by the last collection.
func liveHeap() uint64 {
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(sample)
	if sample[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return sample[0].Value.Uint64()
}
