package discover

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
)

func TestWatchLimitFallsBackToPollingAndLogsOnce(t *testing.T) {
	tests := []struct {
		name  string
		err   error
		limit int // adds that succeed before the error
	}{
		{"inotify max_user_watches (ENOSPC)", syscall.ENOSPC, 2},
		{"out of descriptors (EMFILE), wrapped", fmt.Errorf("add watch: %w", syscall.EMFILE), 3},
		{"limit at the first add", syscall.ENOSPC, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			var want []string
			for _, rel := range []string{"-a/s.jsonl", "-b/s.jsonl", "-c/s/subagents/agent-x.jsonl", "-d/s.jsonl"} {
				p := filepath.Join(root, "projects", filepath.FromSlash(rel))
				writeFile(t, p, "{}\n")
				want = append(want, p)
			}
			var (
				mu    sync.Mutex
				calls int
			)
			logs := &syncBuffer{}
			cfg := Config{Roots: []string{root}, Logger: testLogger(logs)}
			cfg.addWatchHook = func(string) error {
				mu.Lock()
				defer mu.Unlock()
				calls++
				if calls > tt.limit {
					return tt.err
				}
				return nil
			}
			w := newTestWatcher(t, cfg)

			for i := range 3 {
				files := mustScan(t, w)
				if got := paths(files); strings.Join(got, ",") != strings.Join(want, ",") {
					t.Fatalf("scan %d = %q, want %q", i, got, want)
				}
			}
			st := w.Stats()
			if !st.Fallback || st.DirsWatched != tt.limit || st.WatchErrors != 1 {
				t.Errorf("Stats = %+v, want Fallback, %d dirs, 1 watch error", st, tt.limit)
			}
			mu.Lock()
			if calls != tt.limit+1 {
				t.Errorf("%d watch adds attempted, want %d (none after the limit)", calls, tt.limit+1)
			}
			mu.Unlock()
			out := logs.String()
			if n := strings.Count(out, "directory watch limit reached"); n != 1 {
				t.Errorf("limit logged %d times, want once:\n%s", n, out)
			}
			if !strings.Contains(out, "level=WARN") || !strings.Contains(out, "max_user_watches") {
				t.Errorf("limit log lacks warn level or sysctl hint:\n%s", out)
			}
		})
	}
}
