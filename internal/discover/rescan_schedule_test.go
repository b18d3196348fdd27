package discover

import (
	"testing"
	"time"
)

func TestStepSchedulesRescansPerInterval(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	type step struct {
		scanAt time.Duration // when >= 0, Scan at t0+scanAt before stepping
		at     time.Duration
		want   bool
	}
	noScan := time.Duration(-1)
	tests := []struct {
		name     string
		interval time.Duration
		steps    []step
	}{
		{
			name:     "due before the first scan, then once per interval",
			interval: 0, // DefaultRescanInterval, 30s
			steps: []step{
				{noScan, 0, true},
				{noScan, 0, false},
				{noScan, 29 * time.Second, false},
				{noScan, 30 * time.Second, true},
				{noScan, 45 * time.Second, false},
				{noScan, 60 * time.Second, true},
			},
		},
		{
			name:     "a scan pushes the schedule",
			interval: 10 * time.Second,
			steps: []step{
				{0, 0, false}, // the scan at t0 already happened
				{noScan, 9 * time.Second, false},
				{7 * time.Second, 10 * time.Second, false}, // requested rescan at 7s
				{noScan, 16 * time.Second, false},
				{noScan, 17 * time.Second, true},
			},
		},
		{
			name:     "a late step fires once and restarts from its time",
			interval: 2 * time.Second,
			steps: []step{
				{noScan, 0, true},
				{noScan, 60 * time.Second, true},
				{noScan, 61 * time.Second, false},
				{noScan, 62 * time.Second, true},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := &fakeClock{t: t0}
			w := newTestWatcher(t, Config{
				Roots: []string{t.TempDir()}, PollOnly: true,
				RescanInterval: tt.interval, Now: clock.Now,
			})
			for i, s := range tt.steps {
				if s.scanAt >= 0 {
					clock.Set(t0.Add(s.scanAt))
					mustScan(t, w)
				}
				if got := w.Step(t0.Add(s.at)); got != s.want {
					t.Errorf("step %d: Step(t0+%v) = %v, want %v", i, s.at, got, s.want)
				}
			}
		})
	}
}
