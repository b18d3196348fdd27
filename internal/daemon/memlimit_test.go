package daemon

import (
	"log/slog"
	"math"
	"runtime/debug"
	"slices"
	"testing"
)

func TestSoftMemoryLimitFollowsTheLiveHeapWithBoundedHeadroom(t *testing.T) {
	const mib = 1 << 20
	tests := []struct {
		name     string
		live     []uint64 // live heap after each collection
		held     []bool   // a state write in flight at that collection
		wantSets []int64  // the limits set, in order
	}{
		{"a small heap keeps the 48 MiB limit", []uint64{10 * mib, 20 * mib, 32 * mib}, nil, nil},
		{"a larger one gets 16 MiB over its live heap", []uint64{20 * mib, 40 * mib, 48 * mib}, nil,
			[]int64{56 * mib, 64 * mib}},
		{"a much larger one a quarter of it", []uint64{100 * mib}, nil, []int64{125 * mib}},
		{"it comes down when the heap does", []uint64{60 * mib, 20 * mib}, nil, []int64{76 * mib, 48 * mib}},
		{"moves under 1 MiB are not made", []uint64{40 * mib, 40*mib + 512<<10}, nil, []int64{56 * mib}},
		{"a state write's snapshot does not raise it while there is room", []uint64{30 * mib, 38 * mib, 30 * mib},
			[]bool{false, true, false}, nil},
		{"nor lower it", []uint64{48 * mib, 20 * mib, 20 * mib}, []bool{false, true, false},
			[]int64{64 * mib, 48 * mib}},
		{"but raises it before the collector runs out of room", []uint64{30 * mib, 44 * mib}, []bool{false, true},
			[]int64{60 * mib}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var sets []int64
			i := 0
			s := &softLimit{log: slog.New(slog.DiscardHandler),
				set:  func(v int64) int64 { sets = append(sets, v); return 0 },
				live: func() uint64 { return tt.live[i] }}
			s.limit.Store(softMemoryLimit)
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
			if !slices.Equal(sets, tt.wantSets) {
				t.Errorf("limits set %v MiB, want %v MiB", inMiB(sets), inMiB(tt.wantSets))
			}
		})
	}
}

func inMiB(v []int64) []int64 {
	out := make([]int64, len(v))
	for i, x := range v {
		out[i] = x >> 20
	}
	return out
}

func TestSoftMemoryLimitLeavesGOMEMLIMITAloneAndIsRestored(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	s := startSoftLimit(func(k string) string {
		if k == "GOMEMLIMIT" {
			return "1GiB"
		}
		return ""
	}, slog.New(slog.DiscardHandler))
	if got := debug.SetMemoryLimit(-1); got != before {
		t.Errorf("with GOMEMLIMIT set the limit changed to %d", got)
	}
	s.stop()
	s = startSoftLimit(func(string) string { return "" }, slog.New(slog.DiscardHandler))
	if got := debug.SetMemoryLimit(-1); got < softMemoryLimit || got == math.MaxInt64 {
		t.Errorf("limit %d, want %d or more, following the live heap", got, softMemoryLimit)
	}
	s.stop()
	if got := debug.SetMemoryLimit(-1); got != before {
		t.Errorf("after stop the limit is %d, want %d", got, before)
	}
}
