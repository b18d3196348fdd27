package otlp

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/spans"
)

// fakeExporter records batches and answers from a script: each call
// takes the next error (nil when the script is exhausted).
type fakeExporter struct {
	mu       sync.Mutex
	script   []error
	batches  [][]string
	attempts int
	block    chan struct{} // when set, Export waits for it or ctx
	shutdown bool
}

func (f *fakeExporter) Export(ctx context.Context, batch []spans.Span) error {
	if f.block != nil {
		select {
		case <-f.block:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.attempts++
	var err error
	if len(f.script) > 0 {
		err, f.script = f.script[0], f.script[1:]
	}
	if err == nil || errors.As(err, new(*RejectedError)) {
		var names []string
		for _, s := range batch {
			names = append(names, s.Name)
		}
		f.batches = append(f.batches, names)
	}
	return err
}

func (f *fakeExporter) Shutdown(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.shutdown = true
	return nil
}

func (f *fakeExporter) sent() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var parts []string
	for _, b := range f.batches {
		parts = append(parts, strings.Join(b, ","))
	}
	return strings.Join(parts, "|")
}

type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}
func (c *fakeClock) After(d time.Duration) <-chan time.Time { return time.After(d) }
func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

type counts struct {
	mu                              sync.Mutex
	acked, failed, pending, spooled int
	last                            time.Time
}

func (c *counts) Acknowledged(n int, t time.Time) {
	c.mu.Lock()
	c.acked += n
	c.last = t
	c.mu.Unlock()
}
func (c *counts) Failed(n int)  { c.mu.Lock(); c.failed += n; c.mu.Unlock() }
func (c *counts) Pending(n int) { c.mu.Lock(); c.pending = n; c.mu.Unlock() }
func (c *counts) Spooled(n int) { c.mu.Lock(); c.spooled = n; c.mu.Unlock() }

func span(name string) spans.Span { return spans.Span{Name: name} }

func enqueue(t *testing.T, q *Queue, names ...string) {
	t.Helper()
	for _, n := range names {
		if err := q.Enqueue(context.Background(), span(n)); err != nil {
			t.Fatal(err)
		}
	}
}

var errUnavailable = fmt.Errorf("traces export: %w", status.Error(codes.Unavailable, "connection refused"))

func TestBatchesBySizeAndLinger(t *testing.T) {
	exp := &fakeExporter{}
	clk := &fakeClock{now: time.Unix(1000, 0)}
	obs := &counts{}
	q := newQueue(exp, QueueConfig{BatchSize: 3, Linger: time.Second, Clock: clk, Observer: obs})
	ctx := context.Background()

	enqueue(t, q, "a", "b")
	if wait, _ := q.step(ctx); wait != time.Second || exp.sent() != "" {
		t.Fatalf("partial batch sent before the linger (wait %v, sent %q)", wait, exp.sent())
	}
	enqueue(t, q, "c", "d")
	q.step(ctx) // a full batch goes at once
	if got := exp.sent(); got != "a,b,c" {
		t.Fatalf("sent %q", got)
	}
	// What was left waited during the send: it goes at once.
	q.step(ctx)
	if got := exp.sent(); got != "a,b,c|d" {
		t.Fatalf("sent %q", got)
	}
	enqueue(t, q, "e")
	clk.advance(999 * time.Millisecond)
	q.step(ctx)
	clk.advance(time.Millisecond)
	q.step(ctx)
	if got := exp.sent(); got != "a,b,c|d|e" {
		t.Fatalf("sent %q", got)
	}
	if wait, stop := q.step(ctx); wait >= 0 || stop {
		t.Errorf("empty queue: wait %v stop %v, want to wait until woken", wait, stop)
	}
	if obs.acked != 5 || obs.pending != 0 || obs.failed != 0 || !obs.last.Equal(clk.Now()) {
		t.Errorf("observer %+v", obs)
	}
}

func TestFailedBatchIsKeptAndRetriedWithBackoff(t *testing.T) {
	exp := &fakeExporter{script: []error{errUnavailable, errUnavailable, nil}}
	clk := &fakeClock{now: time.Unix(1000, 0)}
	obs := &counts{}
	q := newQueue(exp, QueueConfig{BatchSize: 2, InitialBackoff: 100 * time.Millisecond, MaxBackoff: 150 * time.Millisecond, Clock: clk, Observer: obs})
	ctx := context.Background()
	enqueue(t, q, "a", "b", "c")

	var waits []time.Duration
	for range 3 {
		w, _ := q.step(ctx)
		waits = append(waits, w)
		if w > 0 {
			clk.advance(w)
		}
	}
	// Two failures: 100ms, then doubled but capped at 150ms; then sent.
	if waits[0] != 100*time.Millisecond || waits[1] != 150*time.Millisecond || waits[2] != 0 {
		t.Errorf("waits %v", waits)
	}
	q.step(ctx)
	if got := exp.sent(); got != "a,b|c" {
		t.Errorf("sent %q, want the failed batch again, in order", got)
	}
	if obs.failed != 4 || obs.acked != 3 || q.Len() != 0 {
		t.Errorf("observer %+v, left %d", obs, q.Len())
	}
}

func TestRejectedSpansAreAcknowledgedAndCounted(t *testing.T) {
	exp := &fakeExporter{script: []error{&RejectedError{Rejected: 1, Message: "bad span"}}}
	obs := &counts{}
	q := newQueue(exp, QueueConfig{BatchSize: 3, Observer: obs})
	enqueue(t, q, "a", "b", "c")
	q.step(context.Background())
	if q.Len() != 0 || obs.acked != 2 || obs.failed != 1 {
		t.Errorf("left %d, observer %+v", q.Len(), obs)
	}
}

func TestEnqueueBlocksWhenFull(t *testing.T) {
	exp := &fakeExporter{}
	q := newQueue(exp, QueueConfig{BatchSize: 2, MaxQueue: 2})
	enqueue(t, q, "a", "b")
	done := make(chan error)
	go func() { done <- q.Enqueue(context.Background(), span("c")) }()
	select {
	case <-done:
		t.Fatal("Enqueue did not block on a full queue")
	case <-time.After(20 * time.Millisecond):
	}
	q.step(context.Background())
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if q.Len() != 1 {
		t.Errorf("left %d", q.Len())
	}

	// Shutdown: a done context takes the span beyond the bound.
	enqueue(t, q, "d")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := q.Enqueue(ctx, span("e")); err != nil || q.Len() != 3 {
		t.Errorf("err %v, len %d", err, q.Len())
	}
}

func TestGiveUp(t *testing.T) {
	exp := &fakeExporter{script: []error{errUnavailable, errUnavailable, errUnavailable}}
	clk := &fakeClock{now: time.Unix(1000, 0)}
	q := newQueue(exp, QueueConfig{BatchSize: 10, InitialBackoff: time.Second, GiveUpAfter: 2 * time.Second, Clock: clk, Endpoint: "127.0.0.1:4317"})
	ctx := context.Background()
	enqueue(t, q, "a", "b")
	q.closing = true
	for range 3 {
		w, stop := q.step(ctx)
		if stop {
			break
		}
		clk.advance(w)
	}
	err := q.Enqueue(ctx, span("c"))
	if err == nil {
		t.Fatal("Enqueue after giving up: no error")
	}
	for _, want := range []string{"export spans: receiver at 127.0.0.1:4317 unreachable after 3 attempts", "connection refused", "2 spans not acknowledged"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if _, stop := q.step(ctx); !stop {
		t.Error("sender goes on after giving up")
	}
}

func TestCloseDrains(t *testing.T) {
	exp := &fakeExporter{script: []error{errUnavailable}}
	q := NewQueue(exp, QueueConfig{BatchSize: 100, InitialBackoff: time.Millisecond, Linger: time.Hour})
	enqueue(t, q, "a", "b", "c")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := q.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if got := exp.sent(); got != "a,b,c" || !exp.shutdown {
		t.Errorf("sent %q, shutdown %v", got, exp.shutdown)
	}
	if err := q.Enqueue(context.Background(), span("late")); err == nil {
		t.Error("Enqueue after Close: no error")
	}
}

func TestCloseReportsUnacknowledged(t *testing.T) {
	tests := []struct {
		name string
		exp  *fakeExporter
		want []string
	}{
		{"unreachable", &fakeExporter{script: repeat(errUnavailable, 1000)},
			[]string{"receiver at rx:4317 unreachable after", "attempts", "3 spans not acknowledged"}},
		{"refused", &fakeExporter{script: repeat(fmt.Errorf("traces export: %w", status.Error(codes.Unauthenticated, "bad token")), 1000)},
			[]string{"receiver at rx:4317 refused the spans after", "bad token"}},
		{"no answer before the deadline", &fakeExporter{block: make(chan struct{})},
			[]string{"receiver at rx:4317 did not acknowledge 3 spans before the deadline"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q := NewQueue(tc.exp, QueueConfig{InitialBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond, Endpoint: "rx:4317"})
			enqueue(t, q, "a", "b", "c")
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			err := q.Close(ctx)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func repeat(err error, n int) []error {
	out := make([]error, n)
	for i := range out {
		out[i] = err
	}
	return out
}

func TestConcurrentEnqueueAndSend(t *testing.T) {
	exp := &fakeExporter{script: []error{errUnavailable, nil, errUnavailable}}
	obs := &counts{}
	q := NewQueue(exp, QueueConfig{BatchSize: 7, MaxQueue: 10, InitialBackoff: time.Millisecond, Linger: time.Millisecond, Observer: obs})
	const n = 500
	for i := range n {
		if err := q.Enqueue(context.Background(), span(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := q.Close(ctx); err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.ReplaceAll(exp.sent(), "|", ","), ",")
	if len(got) != n {
		t.Fatalf("%d spans delivered, want %d", len(got), n)
	}
	for i, name := range got {
		if name != fmt.Sprint(i) {
			t.Fatalf("span %d is %s: order lost", i, name)
		}
	}
	if obs.acked != n || obs.pending != 0 {
		t.Errorf("observer acked %d, pending %d; want %d, 0", obs.acked, obs.pending, n)
	}
}

// lateObserver holds its first report of two pending spans until the
// receiver has acknowledged something (or 300 ms pass): the moment at
// which a count taken before a send, and reported after the queue's
// lock is let go, lands after the send's own count.
type lateObserver struct {
	counts
	once, held sync.Once
	ack        chan struct{}
}

func (o *lateObserver) Acknowledged(n int, t time.Time) {
	o.counts.Acknowledged(n, t)
	o.once.Do(func() { close(o.ack) })
}

func (o *lateObserver) Pending(n int) {
	if n == 2 {
		o.held.Do(func() {
			select {
			case <-o.ack:
			case <-time.After(300 * time.Millisecond):
			}
		})
	}
	o.counts.Pending(n)
}

func TestPendingGaugeEndsAtZeroWhenASendOvertakesTheReport(t *testing.T) {
	for _, spool := range []bool{false, true} {
		t.Run(fmt.Sprintf("spool=%v", spool), func(t *testing.T) {
			obs := &lateObserver{ack: make(chan struct{})}
			// The first span wakes the sender, which lingers 50 ms for
			// a full batch; the second fills it while its report is held.
			cfg := QueueConfig{BatchSize: 2, MaxQueue: 10, Linger: 50 * time.Millisecond, InitialBackoff: time.Millisecond, Observer: obs}
			if spool {
				cfg.Spool = openSpool(t, t.TempDir(), 200)
			}
			exp := &fakeExporter{}
			q := NewQueue(exp, cfg)
			enqueue(t, q, "a", "b")
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := q.Close(ctx); err != nil {
				t.Fatal(err)
			}
			obs.mu.Lock()
			defer obs.mu.Unlock()
			if exp.sent() != "a,b" || obs.acked != 2 || obs.pending != 0 || obs.spooled != 0 {
				t.Errorf("sent %q; observer acked %d, pending %d, spooled %d; want a,b; 2, 0, 0", exp.sent(), obs.acked, obs.pending, obs.spooled)
			}
		})
	}
}
