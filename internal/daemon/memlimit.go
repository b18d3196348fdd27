package daemon

import (
	"log/slog"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
)

// The Go runtime's default pacing lets the heap grow to twice what is live
// before it collects. A daemon's live heap is its history's index (files,
// closed sessions, counted requests), so a large history doubled: at
// 100,000 files a live heap of 48 MiB made a peak of 108 MiB resident at
// the end of the backfill and 125 MiB once lines arrived.
//
// The daemon sets the runtime's soft memory limit instead, and moves it
// with the live heap after every collection: the live heap plus a
// headroom of a quarter of it, at least minHeadroom, and never below
// softMemoryLimit. With the ~16 MiB of the binary's code pages a small
// history stays under 64 MiB resident as before (a cycle every 48 MiB less
// the live heap allocated); a large one holds live + max(16 MiB, live/4)
// instead of 2 × live. The headroom is what keeps the collector from
// running back to back: a cycle comes at worst every quarter of the live
// heap allocated, four times as often as the default pacing.
const (
	softMemoryLimit = 48 << 20
	minHeadroom     = 16 << 20
)

// limitFor is the soft limit for a live heap.
func limitFor(live uint64) int64 {
	return int64(max(softMemoryLimit, live+max(minHeadroom, live/4)))
}

// softLimit keeps the soft limit at limitFor(live heap). It checks after
// every collection.
type softLimit struct {
	limit   atomic.Int64
	prev    int64 // the limit before (restored at stop)
	set     func(int64) int64
	live    func() uint64
	log     *slog.Logger
	stopped atomic.Bool
	// held counts the state writes in flight: their snapshot is a copy
	// of the state, live until written and gone after, so the limit does
	// not rise for it while the headroom still holds the copy (without
	// the hold, the first periodic write after lines arrive lifted the
	// limit at 20,000 files, and the peak went from 61 to 89 MiB).
	held atomic.Int32
}

// startSoftLimit sets the soft limit unless GOMEMLIMIT is set (the user's
// own limit wins: then it returns nil, whose methods do nothing); stop
// restores the previous one.
func startSoftLimit(getenv func(string) string, log *slog.Logger) *softLimit {
	if getenv("GOMEMLIMIT") != "" {
		return nil
	}
	s := &softLimit{set: debug.SetMemoryLimit, live: liveHeap, log: log}
	s.limit.Store(softMemoryLimit)
	s.prev = debug.SetMemoryLimit(softMemoryLimit)
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

// check moves the limit to limitFor(live), and reports whether to keep
// checking. During a hold it only rises, and only when the live heap
// comes within half the minimum headroom of it: the collector then still
// has room to work.
func (s *softLimit) check() bool {
	if s.stopped.Load() {
		return false
	}
	live := s.live()
	cur, want := s.limit.Load(), limitFor(live)
	if s.held.Load() > 0 && (want < cur || int64(live)+minHeadroom/2 <= cur) {
		return true
	}
	// Small moves are not worth a call: 1 MiB is noise in a collection.
	if d := want - cur; d > 1<<20 || d < -(1<<20) {
		s.limit.Store(want)
		s.set(want)
		s.log.Debug("soft memory limit moved with the live heap", "live_bytes", live, "limit_bytes", want)
	}
	return true
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
	if s == nil || s.stopped.Swap(true) {
		return
	}
	s.set(s.prev)
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
