package discover

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// waitLimit bounds every wait on a channel; real fsnotify events arrive in
// milliseconds, so this only matters when a test is failing.
const waitLimit = 10 * time.Second

// isTranscript mirrors session.IsTranscriptName, which discover may not
// import.
func isTranscript(name string) bool {
	return strings.HasSuffix(name, ".jsonl") && !strings.HasPrefix(name, ".")
}

func newTestWatcher(t *testing.T, cfg Config) *Watcher {
	t.Helper()
	if cfg.Match == nil {
		cfg.Match = isTranscript
	}
	w, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = w.Close() })
	return w
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func mkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}

func mustScan(t *testing.T, w *Watcher) []File {
	t.Helper()
	files, err := w.Scan()
	if err != nil {
		t.Fatalf("Scan: %v", err)
	}
	return files
}

func paths(files []File) []string {
	var ps []string
	for _, f := range files {
		ps = append(ps, f.Path)
	}
	return ps
}

// waitEvent reads hints until one for path with op arrives.
func waitEvent(t *testing.T, w *Watcher, path string, op Op) {
	t.Helper()
	waitEvents(t, w, Event{Path: path, Op: op})
}

// waitEvents reads hints until each of want has arrived, in any order.
func waitEvents(t *testing.T, w *Watcher, want ...Event) {
	t.Helper()
	missing := map[Event]bool{}
	for _, ev := range want {
		missing[ev] = true
	}
	timeout := time.After(waitLimit)
	var seen []Event
	for len(missing) > 0 {
		select {
		case ev := <-w.Events():
			delete(missing, ev)
			seen = append(seen, ev)
		case <-timeout:
			t.Fatalf("hints %v missing after %v; saw %v", missing, waitLimit, seen)
		}
	}
}

// waitFound waits until path is known to the caller the way the daemon
// learns it: a Changed hint, or a rescan request after which Scan lists it.
func waitFound(t *testing.T, w *Watcher, path string) {
	t.Helper()
	timeout := time.After(waitLimit)
	for {
		select {
		case ev := <-w.Events():
			if ev.Path == path && ev.Op == Changed {
				return
			}
		case <-w.RescanNeeded():
			if slices.Contains(paths(mustScan(t, w)), path) {
				return
			}
		case <-timeout:
			t.Fatalf("%s neither hinted nor found by a requested rescan within %v", path, waitLimit)
		}
	}
}

// watchedDirs returns the watched directories, sorted.
func watchedDirs(w *Watcher) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var ds []string
	for d := range w.watched {
		ds = append(ds, d)
	}
	slices.Sort(ds)
	return ds
}

// syncBuffer is a log sink safe for the watcher's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func testLogger(buf *syncBuffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// fakeClock is an injected clock the test moves by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

func timeAfterLimit() <-chan time.Time { return time.After(waitLimit) }

func countLines(s, sub string) int {
	n := 0
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			n++
		}
	}
	return n
}
