package daemon

import (
	"log/slog"
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
)

// softMemoryLimit is the Go runtime's soft memory limit while a daemon's
// live heap is small: with the ~16 MiB of the binary's code pages it keeps
// the resident size under 64 MiB where the default pacing (the heap may
// grow to twice what is live) lets a history of 20,000 files (a live heap
// of about 35 MiB at the end of its backfill) reach 68 MiB. It binds only
// when twice the live heap passes it, and is lifted for good as soon as
// the live heap passes four fifths of it (38.4 MiB), so that a larger
// history never makes the collector run back to back: while it binds, a
// cycle comes every 48 MiB less the live heap allocated instead of every
// live heap's worth, at worst (live 38 MiB) four times as often. At 20,000
// files the backfill took as long with it as without (2.25 s both, 2.45 s
// and 2.36 s on a loaded machine).
const softMemoryLimit = 48 << 20

// softLimit applies softMemoryLimit and lifts it when the live heap
// outgrows it. It checks after every collection.
type softLimit struct {
	limit   int64
	prev    int64 // the limit before (restored at stop)
	lift    func(int64) int64
	live    func() uint64
	log     *slog.Logger
	stopped atomic.Bool
	lifted  atomic.Bool
	// held counts the state writes in flight: their snapshot is a copy
	// of the state, live until written, and no sign that the history
	// outgrew the limit (without the hold, the first periodic write after
	// lines arrive lifted it at 20,000 files, and the peak went from 61
	// to 89 MiB).
	held atomic.Int32
}

// startSoftLimit sets the soft limit unless GOMEMLIMIT is set (the user's
// own limit wins: then it returns nil, whose methods do nothing); stop
// restores the previous one.
func startSoftLimit(getenv func(string) string, log *slog.Logger) *softLimit {
	if getenv("GOMEMLIMIT") != "" {
		return nil
	}
	s := &softLimit{limit: softMemoryLimit, lift: debug.SetMemoryLimit, live: liveHeap, log: log}
	s.prev = debug.SetMemoryLimit(s.limit)
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

// check lifts the limit once the live heap passes four fifths of it
// outside a hold, and reports whether to keep checking.
func (s *softLimit) check() bool {
	if s.stopped.Load() || s.lifted.Load() {
		return false
	}
	if s.held.Load() > 0 {
		return true
	}
	if live := s.live(); live > uint64(s.limit)/5*4 {
		s.lifted.Store(true)
		s.lift(math.MaxInt64)
		s.log.Debug("soft memory limit lifted: the live heap outgrew it", "live_bytes", live, "limit_bytes", s.limit)
		return false
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
