package daemon

import (
	"log/slog"
	"math"
	"runtime/debug"
	"testing"
)

func TestSoftMemoryLimitIsLiftedOnceTheLiveHeapOutgrowsIt(t *testing.T) {
	const limit = 48 << 20
	tests := []struct {
		name      string
		live      []uint64 // live heap after each collection
		held      []bool   // a state write in flight at that collection
		wantLifts []int64
		wantKeep  []bool
	}{
		{"a small heap keeps the limit", []uint64{10 << 20, 20 << 20, 38 << 20}, nil, nil, []bool{true, true, true}},
		{"past four fifths of it the limit is lifted for good", []uint64{20 << 20, 39 << 20, 10 << 20}, nil,
			[]int64{math.MaxInt64}, []bool{true, false, false}},
		{"a state write's snapshot does not lift it", []uint64{30 << 20, 45 << 20, 30 << 20}, []bool{false, true, false},
			nil, []bool{true, true, true}},
		{"a heap still large once the write is done does", []uint64{30 << 20, 45 << 20, 45 << 20}, []bool{false, true, false},
			[]int64{math.MaxInt64}, []bool{true, true, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var lifts []int64
			i := 0
			s := &softLimit{limit: limit, log: slog.New(slog.DiscardHandler),
				lift: func(v int64) int64 { lifts = append(lifts, v); return 0 },
				live: func() uint64 { return tt.live[i] }}
			for i = range tt.live {
				if i < len(tt.held) && tt.held[i] {
					s.hold()
				}
				got := s.check()
				if i < len(tt.held) && tt.held[i] {
					s.release()
				}
				if got != tt.wantKeep[i] {
					t.Errorf("check after collection %d (live %d MiB) = %v, want %v", i, tt.live[i]>>20, got, tt.wantKeep[i])
				}
			}
			if len(lifts) != len(tt.wantLifts) || len(lifts) > 0 && lifts[0] != tt.wantLifts[0] {
				t.Errorf("limit set to %v, want %v", lifts, tt.wantLifts)
			}
		})
	}
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
	if got := debug.SetMemoryLimit(-1); got != softMemoryLimit && got != math.MaxInt64 {
		t.Errorf("limit %d, want %d (or lifted already)", got, softMemoryLimit)
	}
	s.stop()
	if got := debug.SetMemoryLimit(-1); got != before {
		t.Errorf("after stop the limit is %d, want %d", got, before)
	}
}
