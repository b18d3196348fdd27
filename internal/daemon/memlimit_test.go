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
		wantLifts int      // times the limit was lifted
		wantGC    []int    // the GOGC values set, in order
	}{
		{"a small heap keeps the limit and GOGC", []uint64{10 * mib, 20 * mib, 32 * mib, 36 * mib}, nil, 0, nil},
		{"past where the limit leaves less room than liftRoom it is lifted and GOGC bounds the room",
			[]uint64{20 * mib, 35 * mib, 37 * mib, 48 * mib, 64 * mib, 10 * mib}, nil, 1, []int{32, 25, 20, 100}},
		{"GOGC never goes below 20", []uint64{39 * mib, 200 * mib}, nil, 1, []int{30, 20}},
		{"moves under 5 are not made", []uint64{40 * mib, 41 * mib, 42 * mib}, nil, 1, []int{30}},
		{"a state write's snapshot does not lift the limit", []uint64{30 * mib, 45 * mib, 31 * mib},
			[]bool{false, true, false}, 0, nil},
		{"a heap still large once the write is done does", []uint64{30 * mib, 45 * mib, 45 * mib},
			[]bool{false, true, false}, 1, []int{26}},
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
