package otlp

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/spans"
)

// enqueueNow enqueues spans and fails the test if Enqueue waits: with a
// spool, the caller (the transcript reader) is never held up.
func enqueueNow(t *testing.T, q *Queue, names ...string) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		for _, n := range names {
			if err := q.Enqueue(context.Background(), span(n)); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Enqueue blocked")
	}
}

// stepUntil drives the sender with the fake clock until the queue is
// empty or steps run out, and returns the waits it was asked for.
func stepUntilEmpty(t *testing.T, q *Queue, clk *fakeClock, steps int) {
	t.Helper()
	ctx := context.Background()
	for range steps {
		if q.Len() == 0 {
			return
		}
		w, stop := q.step(ctx)
		if stop {
			t.Fatal("sender stopped")
		}
		if w > 0 {
			clk.advance(w)
		}
	}
	t.Fatalf("%d spans left after %d steps", q.Len(), steps)
}

// delivered returns every span name the exporter took, in order.
func delivered(exp *fakeExporter) []string {
	s := exp.sent()
	if s == "" {
		return nil
	}
	return strings.Split(strings.ReplaceAll(s, "|", ","), ",")
}

func checkInOrderOnce(t *testing.T, got []string, n int) {
	t.Helper()
	if len(got) != n {
		t.Fatalf("%d spans delivered, want %d: %v", len(got), n, got)
	}
	for i, name := range got {
		if name != fmt.Sprint(i) {
			t.Fatalf("span %d is %s: order lost or span sent twice: %v", i, name, got)
		}
	}
}

func TestSpooledQueueKeepsEverySpanInOrderThroughAnOutage(t *testing.T) {
	dir := t.TempDir()
	sp := openSpool(t, dir, 300)
	exp := &fakeExporter{script: repeat(errUnavailable, 6)}
	clk := &fakeClock{now: time.Unix(1000, 0)}
	obs := &counts{}
	q := newQueue(exp, QueueConfig{BatchSize: 4, MaxQueue: 8, Linger: time.Second, InitialBackoff: time.Second,
		MaxBackoff: 4 * time.Second, Clock: clk, Observer: obs, Spool: sp})
	ctx := context.Background()

	// Healthy so far: spans wait in memory.
	enqueueNow(t, q, names(0, 4)...)
	if q.MemoryLen() != 4 || q.Len() != 4 || sp.Len() != 0 {
		t.Fatalf("memory %d, len %d, spooled %d", q.MemoryLen(), q.Len(), sp.Len())
	}
	// The receiver goes away: the failed batch and what is in memory go
	// to the spool.
	q.step(ctx)
	if q.MemoryLen() != 0 || q.Len() != 4 || sp.Len() != 4 {
		t.Fatalf("after a failed send: memory %d, len %d, spooled %d", q.MemoryLen(), q.Len(), sp.Len())
	}
	// Far more than MaxQueue spans arrive during the outage: the caller
	// never waits, memory stays empty.
	enqueueNow(t, q, names(4, 100)...)
	if q.MemoryLen() != 0 || q.Len() != 100 || obs.pending != 100 || obs.spooled != 100 {
		t.Fatalf("during the outage: memory %d, len %d, observer %+v", q.MemoryLen(), q.Len(), obs)
	}
	if err := q.Sync(); err != nil {
		t.Fatal(err)
	}
	// The sender keeps trying with backoff, and more spans arrive.
	for range 5 {
		w, _ := q.step(ctx)
		clk.advance(w)
	}
	enqueueNow(t, q, names(100, 110)...)
	if obs.acked != 0 || q.Len() != 110 {
		t.Fatalf("acked %d, len %d during the outage", obs.acked, q.Len())
	}
	// Back: the spool drains in order, then memory takes over again.
	stepUntilEmpty(t, q, clk, 100)
	checkInOrderOnce(t, delivered(exp), 110)
	if obs.acked != 110 || obs.pending != 0 || obs.spooled != 0 || sp.Len() != 0 {
		t.Errorf("observer %+v, spooled %d", obs, sp.Len())
	}
	q.step(ctx) // notices the spool is empty
	enqueueNow(t, q, "110")
	if q.MemoryLen() != 1 || sp.Len() != 0 {
		t.Errorf("after draining: memory %d, spooled %d; want memory mode", q.MemoryLen(), sp.Len())
	}
	if segs := segmentFiles(t, dir); len(segs) > 0 {
		t.Errorf("segments left after draining: %v", segs)
	}
}

func TestSpooledQueueSpillsWhenMemoryIsFull(t *testing.T) {
	sp := openSpool(t, t.TempDir(), 0)
	exp := &fakeExporter{}
	clk := &fakeClock{now: time.Unix(1000, 0)}
	q := newQueue(exp, QueueConfig{BatchSize: 4, MaxQueue: 8, Clock: clk, Spool: sp})
	// The sender is slower than the reader (here: not running at all).
	enqueueNow(t, q, names(0, 8)...)
	if q.MemoryLen() != 8 || sp.Len() != 0 {
		t.Fatalf("memory %d, spooled %d", q.MemoryLen(), sp.Len())
	}
	enqueueNow(t, q, names(8, 30)...)
	if q.MemoryLen() != 0 || sp.Len() != 30 || q.Len() != 30 {
		t.Fatalf("past MaxQueue: memory %d, spooled %d, len %d", q.MemoryLen(), sp.Len(), q.Len())
	}
	stepUntilEmpty(t, q, clk, 100)
	checkInOrderOnce(t, delivered(exp), 30)
}

// gateExporter holds each Export until released, and says when one began.
type gateExporter struct {
	fakeExporter
	began   chan struct{}
	release chan error
}

func (g *gateExporter) Export(ctx context.Context, batch []spans.Span) error {
	g.began <- struct{}{}
	err := <-g.release
	g.mu.Lock()
	g.script = append([]error{err}, g.script...)
	g.mu.Unlock()
	return g.fakeExporter.Export(ctx, batch)
}

func TestSpooledQueueSpillDuringASendKeepsOrderWithoutDuplicates(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer error
	}{
		{"send succeeds", nil},
		{"send fails", errUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sp := openSpool(t, t.TempDir(), 0)
			exp := &gateExporter{began: make(chan struct{}), release: make(chan error)}
			clk := &fakeClock{now: time.Unix(1000, 0)}
			q := newQueue(exp, QueueConfig{BatchSize: 4, MaxQueue: 6, InitialBackoff: time.Second, Clock: clk, Spool: sp})
			ctx := context.Background()
			enqueueNow(t, q, names(0, 6)...)
			stepped := make(chan struct{})
			go func() { q.step(ctx); close(stepped) }()
			<-exp.began // spans 0..3 are out
			// Memory is full: the rest spills to the spool, with the batch
			// in flight at its head.
			enqueueNow(t, q, names(6, 20)...)
			if q.MemoryLen() != 0 || sp.Len() != 20 {
				t.Fatalf("memory %d, spooled %d", q.MemoryLen(), sp.Len())
			}
			exp.release <- tc.answer
			<-stepped
			go func() {
				for range exp.began {
					exp.release <- nil
				}
			}()
			defer close(exp.began)
			stepUntilEmpty(t, q, clk, 100)
			checkInOrderOnce(t, delivered(&exp.fakeExporter), 20)
		})
	}
}

func TestSpooledQueueResumesFromTheSpoolDirAfterRestart(t *testing.T) {
	dir := t.TempDir()
	down := &fakeExporter{script: repeat(errUnavailable, 1000)}
	q := NewQueue(down, QueueConfig{BatchSize: 4, MaxQueue: 8, InitialBackoff: time.Millisecond, Spool: openSpool(t, dir, 200)})
	enqueueNow(t, q, names(0, 25)...)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// The receiver is down: Close keeps everything in the spool, and does
	// not wait for the deadline.
	start := time.Now()
	if err := q.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("Close waited %v with the receiver down", time.Since(start))
	}
	if q.MemoryLen() != 0 || len(down.batches) != 0 {
		t.Fatalf("memory %d, delivered %v", q.MemoryLen(), down.batches)
	}

	// The next run sends the spool first, then what it builds.
	sp := openSpool(t, dir, 200)
	if sp.Len() != 25 {
		t.Fatalf("reopened spool holds %d spans, want 25", sp.Len())
	}
	up := &fakeExporter{}
	clk := &fakeClock{now: time.Unix(1000, 0)}
	obs := &counts{}
	q = newQueue(up, QueueConfig{BatchSize: 4, MaxQueue: 8, Clock: clk, Observer: obs, Spool: sp})
	if q.Len() != 25 || q.MemoryLen() != 0 || obs.pending != 25 || obs.spooled != 25 {
		t.Fatalf("len %d, memory %d, observer %+v", q.Len(), q.MemoryLen(), obs)
	}
	enqueueNow(t, q, names(25, 30)...)
	if q.MemoryLen() != 0 {
		t.Errorf("new spans went to memory (%d) ahead of the spool", q.MemoryLen())
	}
	stepUntilEmpty(t, q, clk, 100)
	checkInOrderOnce(t, delivered(up), 30)
	sp.Close()
}

func TestSpooledQueueCloseDeliversWhenTheReceiverIsUp(t *testing.T) {
	dir := t.TempDir()
	exp := &fakeExporter{}
	q := NewQueue(exp, QueueConfig{BatchSize: 4, MaxQueue: 8, InitialBackoff: time.Millisecond, Linger: time.Hour, Spool: openSpool(t, dir, 0)})
	enqueueNow(t, q, names(0, 10)...)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := q.Close(ctx); err != nil {
		t.Fatal(err)
	}
	checkInOrderOnce(t, delivered(exp), 10)
	if sp := openSpool(t, dir, 0); sp.Len() != 0 {
		t.Errorf("%d spans left in the spool", sp.Len())
	}
}

// waitDrained waits until every span was acknowledged or ctx ends.
func waitDrained(ctx context.Context, q *Queue) {
	for {
		q.mu.Lock()
		left, _ := q.lensLocked()
		changed := q.changed
		q.mu.Unlock()
		if left == 0 {
			return
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return
		}
	}
}

// flakyExporter fails every third attempt.
type flakyExporter struct {
	fakeExporter
	n int
}

func (f *flakyExporter) Export(ctx context.Context, batch []spans.Span) error {
	f.mu.Lock()
	f.n++
	fail := f.n%3 == 0
	f.mu.Unlock()
	if fail {
		return errUnavailable
	}
	return f.fakeExporter.Export(ctx, batch)
}

func TestSpooledQueueConcurrentEnqueueThroughFailures(t *testing.T) {
	exp := &flakyExporter{}
	obs := &counts{}
	q := NewQueue(exp, QueueConfig{BatchSize: 7, MaxQueue: 10, InitialBackoff: time.Millisecond, Linger: time.Millisecond,
		Observer: obs, Spool: openSpool(t, t.TempDir(), 1000)})
	const n = 3000
	enqueueNow(t, q, names(0, n)...)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// Close stops at the first failure with a spool: let the flaky
	// receiver take everything first.
	waitDrained(ctx, q)
	if err := q.Close(ctx); err != nil {
		t.Fatal(err)
	}
	checkInOrderOnce(t, delivered(&exp.fakeExporter), n)
	if obs.acked != n || obs.pending != 0 || obs.spooled != 0 {
		t.Errorf("observer %+v", obs)
	}
}

func TestSpooledQueueCheckpointMakesMemoryDurable(t *testing.T) {
	dir := t.TempDir()
	sp := openSpool(t, dir, 0)
	exp := &fakeExporter{}
	clk := &fakeClock{now: time.Unix(1000, 0)}
	q := newQueue(exp, QueueConfig{BatchSize: 4, MaxQueue: 100, Linger: time.Second, Clock: clk, Spool: sp})
	enqueueNow(t, q, names(0, 6)...)
	if q.MemoryLen() != 6 {
		t.Fatalf("memory %d", q.MemoryLen())
	}
	if err := q.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	if q.MemoryLen() != 0 || q.Len() != 6 {
		t.Fatalf("after a checkpoint: memory %d, len %d", q.MemoryLen(), q.Len())
	}
	// Were the process killed now, the next run would find them.
	die(sp)
	if again := openSpool(t, dir, 0); again.Len() != 6 {
		t.Fatalf("a new process finds %d spans in the spool, want 6", again.Len())
	}
	// Spans after the checkpoint queue up behind the spooled ones.
	enqueueNow(t, q, names(6, 9)...)
	stepUntilEmpty(t, q, clk, 20)
	checkInOrderOnce(t, delivered(exp), 9)
	q.step(context.Background())
	enqueueNow(t, q, "9")
	if q.MemoryLen() != 1 {
		t.Errorf("memory %d after the spool drained, want memory mode", q.MemoryLen())
	}
	// Without a spool a checkpoint does nothing.
	plain := newQueue(&fakeExporter{}, QueueConfig{})
	enqueue(t, plain, "a")
	if err := plain.Checkpoint(); err != nil || plain.MemoryLen() != 1 {
		t.Errorf("no spool: err %v, memory %d", err, plain.MemoryLen())
	}
}
