package daemon

import (
	"log/slog"
	"math"
	"runtime/debug"
	"slices"
	"testing"
)

func TestSoftMemoryLimitThenGOGCBoundTheHeapsRoomToGrow(t *testing.T) {
	const mib = 1 << 20
	tests := []struct {
		name      string
		live      []uint64 // live heap after each collection
		held      []bool   // a state write in flight at that collection
		reading   []bool   // the backfill reading at that collection
		wantLifts int      // times the limit was lifted
		wantGC    []int    // the GOGC values set, in order
	}{
		{"a small heap keeps the limit and GOGC", []uint64{10 * mib, 20 * mib, 32 * mib, 36 * mib}, nil, nil, 0, nil},
		{"past where the limit leaves less room than liftRoom it is lifted and GOGC bounds the room",
			[]uint64{20 * mib, 35 * mib, 37 * mib, 48 * mib, 64 * mib, 10 * mib}, nil, nil, 1, []int{32, 25, 20, 100}},
		{"GOGC never goes below 20", []uint64{39 * mib, 200 * mib}, nil, nil, 1, []int{30, 20}},
		{"moves under 5 are not made", []uint64{40 * mib, 41 * mib, 42 * mib}, nil, nil, 1, []int{30}},
		{"a state write's snapshot does not lift the limit", []uint64{30 * mib, 45 * mib, 31 * mib},
			[]bool{false, true, false}, nil, 0, nil},
		{"a heap still large once the write is done does", []uint64{30 * mib, 45 * mib, 45 * mib},
			[]bool{false, true, false}, nil, 1, []int{26}},
		{"while the backfill reads, a heap that fits under the limit keeps it", []uint64{30 * mib, 38 * mib, 44 * mib, 32 * mib},
			nil, []bool{true, true, true, false}, 0, nil},
		{"while the backfill reads, a heap past the limit lifts it", []uint64{38 * mib, 45 * mib},
			nil, []bool{true, true}, 1, []int{26}},
		{"once the backfill is done, the usual rule", []uint64{38 * mib, 38 * mib},
			nil, []bool{true, false}, 1, []int{31}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var lifts int
			var gcs []int
			i := 0
			s := &softLimit{limit: softMemoryLimit, log: slog.New(slog.DiscardHandler),
				lift: func(v int64) int64 {
					if v != math.MaxInt64 {
						t.Errorf("limit set to %d, want it lifted", v)
					}
					lifts++
					return 0
				},
				gc:   func(v int) int { gcs = append(gcs, v); return 100 },
				live: func() uint64 { return tt.live[i] }}
			for i = range tt.live {
				if i < len(tt.held) && tt.held[i] {
					s.hold()
				}
				s.backfill(i < len(tt.reading) && tt.reading[i])
				if !s.check() {
					t.Fatalf("check after collection %d stopped checking", i)
				}
				if i < len(tt.held) && tt.held[i] {
					s.release()
				}
			}
			if lifts != tt.wantLifts || !slices.Equal(gcs, tt.wantGC) {
				t.Errorf("lifted %d times and GOGC set to %v, want %d and %v", lifts, gcs, tt.wantLifts, tt.wantGC)
			}
		})
	}
}

func TestSoftMemoryLimitLeavesGOMEMLIMITAndGOGCAloneAndIsRestored(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	for _, env := range []string{"GOMEMLIMIT", "GOGC"} {
		s := startSoftLimit(func(k string) string {
			if k == env {
				return "1GiB"
			}
			return ""
		}, slog.New(slog.DiscardHandler))
		if s != nil {
			t.Errorf("with %s set the limit was applied", env)
		}
		if got := debug.SetMemoryLimit(-1); got != before {
			t.Errorf("with %s set the limit changed to %d", env, got)
		}
		s.stop()
	}
	// GOGC set for a large heap is put back at stop.
	var gc []int
	s := &softLimit{limit: softMemoryLimit, prevGC: 100, log: slog.New(slog.DiscardHandler),
		lift: func(int64) int64 { return 0 }, gc: func(v int) int { gc = append(gc, v); return 0 },
		live: func() uint64 { return 64 << 20 }}
	s.check()
	s.stop()
	if !slices.Equal(gc, []int{20, 100}) {
		t.Errorf("GOGC set to %v, want [20 100]: set for the heap, then put back", gc)
	}
	s = startSoftLimit(func(string) string { return "" }, slog.New(slog.DiscardHandler))
	if got := debug.SetMemoryLimit(-1); got != softMemoryLimit && got != math.MaxInt64 {
		t.Errorf("limit %d, want %d (or lifted already)", got, softMemoryLimit)
	}
	s.stop()
	if got := debug.SetMemoryLimit(-1); got != before {
		t.Errorf("after stop the limit is %d, want %d", got, before)
	}
}

func TestOneshotCollectsOnlyAtItsLimitUntilTheHeapOutgrowsIt(t *testing.T) {
	const mib = 1 << 20
	beforeLimit, beforeGC := debug.SetMemoryLimit(-1), debug.SetGCPercent(-1)
	debug.SetGCPercent(beforeGC)
	t.Cleanup(func() {
		debug.SetMemoryLimit(beforeLimit)
		debug.SetGCPercent(beforeGC)
	})
	s := startOneshotLimit(func(string) string { return "" }, slog.New(slog.DiscardHandler))
	// A collection between here and the reads may run check, but this
	// test's live heap is far below where the one-shot lifts its limit.
	if got := debug.SetMemoryLimit(-1); got != softMemoryLimit {
		t.Errorf("limit %d, want %d (the daemon's)", got, softMemoryLimit)
	}
	if got := debug.SetGCPercent(-1); got != -1 {
		t.Errorf("GOGC %d while the limit holds, want off (-1)", got)
	}
	s.stop()
	if got := debug.SetMemoryLimit(-1); got != beforeLimit {
		t.Errorf("after stop the limit is %d, want %d", got, beforeLimit)
	}
	if got := debug.SetGCPercent(beforeGC); got != beforeGC {
		t.Errorf("after stop GOGC is %d, want %d", got, beforeGC)
	}
	for _, env := range []string{"GOMEMLIMIT", "GOGC"} {
		if s := startOneshotLimit(func(k string) string {
			if k == env {
				return "1"
			}
			return ""
		}, slog.New(slog.DiscardHandler)); s != nil {
			t.Errorf("with %s set the one-shot limit was applied", env)
			s.stop()
		}
	}

	// Below 36 MiB live the limit holds and GOGC stays off; past it the
	// limit goes and GOGC follows the live heap as the daemon's does, so
	// that a history larger than the limit still grows its heap by at
	// most minHeadroom (a fifth of it at worst), never by half (GOGC 50,
	// what a lifted one-shot went back to before: 68 MiB at 100,000 files).
	var lifts int
	var gcs []int
	live := uint64(0)
	s = &softLimit{limit: softMemoryLimit, gcOff: true, prevGC: 50, log: slog.New(slog.DiscardHandler),
		lift: func(int64) int64 { lifts++; return 0 },
		gc:   func(v int) int { gcs = append(gcs, v); return 0 },
		live: func() uint64 { return live }}
	s.pct.Store(-1)
	for _, l := range []uint64{10 * mib, 15 * mib, 30 * mib, 36 * mib} {
		live = l
		if !s.check() {
			t.Fatalf("at %d MiB live the checks stopped", l/mib)
		}
	}
	if lifts != 0 || gcs != nil {
		t.Errorf("a live heap of at most 36 MiB lifted the limit %d times and set GOGC to %v", lifts, gcs)
	}
	for _, l := range []uint64{37 * mib, 48 * mib, 120 * mib} {
		live = l
		if !s.check() {
			t.Fatalf("at %d MiB live the checks stopped", l/mib)
		}
	}
	if want := []int{gcPercentFor(37 * mib), gcPercentFor(48 * mib), minGCPercent}; lifts != 1 || !slices.Equal(gcs, want) {
		t.Errorf("past 36 MiB: lifted %d times, GOGC set to %v; want 1 and %v", lifts, gcs, want)
	}
	s.stop()
	if s.check() || gcs[len(gcs)-1] != 50 || lifts != 2 {
		t.Errorf("after stop: GOGC set to %v and the limit %d times, want GOGC 50 (from before) and the limit put back", gcs, lifts)
	}
}
