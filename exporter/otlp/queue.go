package otlp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/spans"
)

// Observer receives the queue's self-metrics. exporter/prom's Self backs
// it in the daemon; tests use fakes.
type Observer interface {
	// Acknowledged: n spans were accepted by the receiver at t.
	Acknowledged(n int, t time.Time)
	// Failed: an attempt to send n spans failed (they are kept and
	// retried), or the receiver rejected n spans (partial success).
	Failed(n int)
	// Pending: n spans are queued (in memory or in the spool) and not
	// yet acknowledged. Pending and Spooled are gauges: the queue calls
	// them with its lock held, so they arrive in the order the counts
	// changed (a count taken before a send must not land after the
	// send's), and they must not call back into the queue.
	Pending(n int)
	// Spooled: n of the pending spans are in the spool.
	Spooled(n int)
}

// Clock is the time the queue runs on.
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// QueueConfig configures a Queue. Zero values take defaults.
type QueueConfig struct {
	// BatchSize is the most spans sent in one request (--otlp.batch-size).
	BatchSize int
	// MaxQueue is the most spans held in memory; past it Enqueue blocks,
	// or, with a Spool, spills to the spool.
	MaxQueue int
	// Linger is how long a partial batch waits for more spans.
	Linger time.Duration
	// ExportTimeout bounds one attempt.
	ExportTimeout time.Duration
	// InitialBackoff and MaxBackoff bound the wait between attempts; it
	// doubles after each failure.
	InitialBackoff, MaxBackoff time.Duration
	// GiveUpAfter, when positive, stops retrying once sends have failed
	// for this long: the queue then drops what it holds and what it is
	// given, and Close reports the failure. Zero retries for as long as
	// the process runs (the daemon); one-shot runs set it. It is ignored
	// with a Spool.
	GiveUpAfter time.Duration
	// Spool, when set, makes Enqueue never block: spans wait in memory
	// while the receiver keeps up; when a send fails or MaxQueue spans
	// wait, the queue moves them, and every span after them, to the
	// spool, and sends from the spool until it is empty. The queue owns
	// the spool: Close closes it. Spans left in it are sent first by the
	// next queue opened on the same directory.
	Spool *Spool
	// Endpoint names the receiver in error messages.
	Endpoint string
	Observer Observer
	Logger   *slog.Logger
	Clock    Clock
}

// Queue defaults.
const (
	DefaultBatchSize      = 512
	DefaultLinger         = 200 * time.Millisecond
	DefaultExportTimeout  = 10 * time.Second
	DefaultInitialBackoff = 250 * time.Millisecond
	DefaultMaxBackoff     = 30 * time.Second
	minMaxQueue           = 4096
)

// Queue batches spans in front of an Exporter. Spans are sent in order,
// in batches of at most BatchSize, as soon as a batch is full or the
// oldest span has waited Linger; each batch is sent synchronously, so a
// nil answer is the receiver's acknowledgement of those spans. A failed
// batch is kept and retried with exponential backoff; spans are never
// dropped while the process runs (unless GiveUpAfter is set).
//
// Without a spool, Enqueue blocks when MaxQueue spans wait: the
// transcript reader stalls rather than memory growing. With a spool
// (the daemon), the queue has two modes. In memory mode spans wait in
// memory, and the spool is empty. A failed send, or MaxQueue spans in
// memory, switches to spool mode: the spans in memory are appended to
// the spool in order, and so is every span enqueued after them; the
// sender reads batches from the spool, sends them (with the same
// backoff) and acknowledges them in the spool, and goes back to memory
// mode once the spool is empty. Order is kept across the switches, memory
// stays bounded by MaxQueue plus one batch, and Enqueue never waits for
// the receiver.
type Queue struct {
	cfg QueueConfig
	exp Exporter

	mu       sync.Mutex
	buf      []spans.Span
	firstAt  time.Time     // when the oldest span of a partial batch arrived
	space    chan struct{} // closed (and replaced) when spans leave
	changed  chan struct{} // closed (and replaced) on every ack or failure
	wake     chan struct{} // buffered(1): spans arrived or Close began
	closing  bool
	retryAt  time.Time
	attempts int // failed attempts in a row
	total    int // failed attempts overall
	lastErr  error
	failing  time.Time // start of the current run of failures
	gaveUp   error
	dropped  int
	stopped  bool

	// Spool mode (cfg.Spool set).
	spooling    bool      // new spans go to the spool; the sender reads it
	spoolSince  time.Time // when spooling began
	spoolReason string    // why
	inflight    int       // spans of buf being sent
	// moved: the batch in flight was appended to the spool meanwhile (a
	// spill); movedOK: all of it. After a successful send the sender then
	// skips it in the spool.
	moved, movedOK bool
	// lost counts spans the spool failed to take: they exist only in the
	// transcripts now, so MemoryLen keeps them (until a restart rebuilds
	// them) and the state file does not move past them.
	lost       int
	closeTotal int // failed attempts when Close began

	ctx    context.Context // the sender's; cancelled by Close
	cancel context.CancelFunc
	done   chan struct{}
}

// NewQueue starts a queue sending to exp. Close stops it.
func NewQueue(exp Exporter, cfg QueueConfig) *Queue {
	q := newQueue(exp, cfg)
	go q.run(q.ctx)
	return q
}

// newQueue returns a queue whose sender is not started: tests drive step.
func newQueue(exp Exporter, cfg QueueConfig) *Queue {
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = DefaultBatchSize
	}
	if cfg.MaxQueue <= 0 {
		cfg.MaxQueue = max(4*cfg.BatchSize, minMaxQueue)
	}
	cfg.MaxQueue = max(cfg.MaxQueue, cfg.BatchSize)
	if cfg.Linger <= 0 {
		cfg.Linger = DefaultLinger
	}
	if cfg.ExportTimeout <= 0 {
		cfg.ExportTimeout = DefaultExportTimeout
	}
	if cfg.InitialBackoff <= 0 {
		cfg.InitialBackoff = DefaultInitialBackoff
	}
	if cfg.MaxBackoff < cfg.InitialBackoff {
		cfg.MaxBackoff = max(DefaultMaxBackoff, cfg.InitialBackoff)
	}
	if cfg.Observer == nil {
		cfg.Observer = nopObserver{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Clock == nil {
		cfg.Clock = realClock{}
	}
	if cfg.Spool != nil {
		cfg.GiveUpAfter = 0
	}
	ctx, cancel := context.WithCancel(context.Background())
	q := &Queue{
		cfg:     cfg,
		exp:     exp,
		space:   make(chan struct{}),
		changed: make(chan struct{}),
		wake:    make(chan struct{}, 1),
		ctx:     ctx,
		cancel:  cancel,
		done:    make(chan struct{}),
	}
	if cfg.Spool != nil {
		// What a previous run left in the spool goes out first.
		if n := cfg.Spool.Len(); n > 0 {
			q.spooling, q.spoolSince, q.spoolReason = true, cfg.Clock.Now(), reasonRestart
			cfg.Logger.Info("sending spans left in the spool", "dir", cfg.Spool.Dir(), "spans", n, "bytes", cfg.Spool.Bytes())
			cfg.Observer.Pending(n)
			cfg.Observer.Spooled(n)
		}
	}
	return q
}

type nopObserver struct{}

func (nopObserver) Acknowledged(int, time.Time) {}
func (nopObserver) Failed(int)                  {}
func (nopObserver) Pending(int)                 {}
func (nopObserver) Spooled(int)                 {}

// Enqueue adds a span. Without a spool it blocks while the queue is
// full, unless ctx is done (shutdown: the span is taken beyond the bound,
// so that the final flush completes and Close can try to deliver it);
// with a spool it never blocks. After the queue gave up (GiveUpAfter) or
// was closed it drops the span and returns the failure; with a spool, it
// also returns an error when the spool could not take the span.
func (q *Queue) Enqueue(ctx context.Context, s spans.Span) error {
	if q.cfg.Spool != nil {
		return q.enqueueSpooled(&s)
	}
	q.mu.Lock()
	for len(q.buf) >= q.cfg.MaxQueue && q.gaveUp == nil && ctx.Err() == nil {
		space := q.space
		q.mu.Unlock()
		select {
		case <-space:
		case <-ctx.Done():
		}
		q.mu.Lock()
	}
	if q.gaveUp != nil || q.stopped {
		q.dropped++
		err := q.gaveUp
		if err == nil {
			err = errClosed
		}
		q.mu.Unlock()
		return err
	}
	if len(q.buf) == 0 {
		q.firstAt = q.cfg.Clock.Now()
	}
	q.buf = append(q.buf, s)
	n := len(q.buf)
	q.cfg.Observer.Pending(n)
	q.mu.Unlock()
	if n == 1 || n%q.cfg.BatchSize == 0 {
		q.poke()
	}
	return nil
}

var errClosed = errors.New("export spans: queue closed")

// Why the queue went to spool mode.
const (
	reasonFull       = "memory queue full"
	reasonFailed     = "send failed"
	reasonCheckpoint = "checkpoint"
	reasonShutdown   = "shutdown"
	reasonRestart    = "left by the last run"
)

// enqueueSpooled is Enqueue with a spool: memory while the receiver keeps
// up, the spool once it did not.
func (q *Queue) enqueueSpooled(s *spans.Span) error {
	q.mu.Lock()
	if q.stopped {
		q.dropped++
		q.mu.Unlock()
		return errClosed
	}
	var (
		err  error
		poke bool
	)
	switch {
	case q.spooling:
		err = q.toSpoolLocked(s)
	case len(q.buf) >= q.cfg.MaxQueue:
		q.spillLocked(reasonFull)
		err = q.toSpoolLocked(s)
		poke = true
	default:
		if len(q.buf) == 0 {
			q.firstAt = q.cfg.Clock.Now()
		}
		q.buf = append(q.buf, *s)
		n := len(q.buf)
		poke = n == 1 || n%q.cfg.BatchSize == 0
	}
	n, spooled := q.lensLocked()
	q.cfg.Observer.Pending(n)
	q.cfg.Observer.Spooled(spooled)
	q.mu.Unlock()
	if poke {
		q.poke()
	}
	return err
}

// toSpoolLocked appends a span to the spool. A span the spool refuses is
// counted as lost. Called with q.mu held.
func (q *Queue) toSpoolLocked(s *spans.Span) error {
	err := q.cfg.Spool.Append(s)
	if err != nil {
		if q.lost == 0 {
			q.cfg.Logger.Error("spool write failed: spans are dropped until a restart builds them again from the transcripts; the state file stops moving",
				"dir", q.cfg.Spool.Dir(), "err", err)
		}
		q.lost++
	}
	return err
}

// spillLocked switches to spool mode: the spans in memory go to the spool,
// in order. Called with q.mu held, in memory mode (the spool is empty).
func (q *Queue) spillLocked(reason string) {
	n := len(q.buf)
	lostBefore := q.lost
	for i := range q.buf {
		_ = q.toSpoolLocked(&q.buf[i])
		if i == q.inflight-1 {
			q.movedOK = q.lost == lostBefore
		}
	}
	if q.inflight > 0 {
		q.moved = true
	}
	// Not cleared: a batch in flight still reads its part.
	q.buf = nil
	q.spooling, q.spoolSince, q.spoolReason = true, q.cfg.Clock.Now(), reason
	q.cfg.Logger.Log(context.Background(), q.spoolLevel(), "spooling spans", "reason", reason, "dir", q.cfg.Spool.Dir(), "spans", n)
}

// spoolLevel is the level of the messages about entering and leaving
// spool mode: checkpoints do so routinely, failures and overflows are
// news.
func (q *Queue) spoolLevel() slog.Level {
	if q.spoolReason == reasonCheckpoint {
		return slog.LevelDebug
	}
	return slog.LevelInfo
}

func (q *Queue) poke() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// Len returns the number of spans not yet acknowledged: in memory and,
// with a spool, in the spool.
func (q *Queue) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	n, _ := q.lensLocked()
	return n
}

// lensLocked returns the spans not acknowledged, and those of them in
// the spool.
func (q *Queue) lensLocked() (pending, spooled int) {
	if q.cfg.Spool != nil {
		spooled = q.cfg.Spool.Len()
	}
	return len(q.buf) + spooled, spooled
}

// MemoryLen returns the number of spans handed to the queue that are
// neither acknowledged nor in the spool: those waiting in memory, plus
// any the spool failed to take (until a restart). Without a spool it is
// Len. Spans in the spool survive a crash once Sync has returned; these
// do not.
func (q *Queue) MemoryLen() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.buf) + q.lost
}

// Sync makes every span appended to the spool so far durable. Without a
// spool, or after Close (which syncs), it does nothing.
func (q *Queue) Sync() error {
	if q.cfg.Spool == nil {
		return nil
	}
	return q.cfg.Spool.Sync()
}

// Checkpoint makes every span handed to the queue so far durable: the
// spans waiting in memory move to the spool (as after a failed send; the
// sender sends them from there at once), and the spool is synced. After
// it returns nil, MemoryLen is 0 unless the spool failed to take spans.
// Without a spool it does nothing.
func (q *Queue) Checkpoint() error {
	if q.cfg.Spool == nil {
		return nil
	}
	q.mu.Lock()
	spilled := !q.stopped && !q.spooling && len(q.buf) > 0
	if spilled {
		q.spillLocked(reasonCheckpoint)
	}
	q.mu.Unlock()
	if spilled {
		q.poke()
	}
	return q.cfg.Spool.Sync()
}

func (q *Queue) run(ctx context.Context) {
	defer close(q.done)
	for {
		wait, stop := q.step(ctx)
		if stop {
			return
		}
		if wait == 0 {
			continue
		}
		var timer <-chan time.Time
		if wait > 0 {
			timer = q.cfg.Clock.After(wait)
		}
		select {
		case <-ctx.Done():
			return
		case <-q.wake:
		case <-timer:
		}
	}
}

// step sends one batch if one is ready. It returns how long to wait
// before the next step (0: at once; negative: until woken) and whether
// the queue is done (gave up, or stopped).
func (q *Queue) step(ctx context.Context) (time.Duration, bool) {
	if ctx.Err() != nil {
		return 0, true
	}
	q.mu.Lock()
	now := q.cfg.Clock.Now()
	if q.gaveUp != nil {
		q.mu.Unlock()
		return 0, true
	}
	if q.spooling && q.cfg.Spool.Len() == 0 {
		// Caught up: back to memory.
		q.spooling = false
		q.cfg.Logger.Log(ctx, q.spoolLevel(), "spool drained", "dir", q.cfg.Spool.Dir(), "reason", q.spoolReason,
			"spooled_for", now.Sub(q.spoolSince).Round(time.Millisecond))
	}
	if q.spooling {
		if wait := q.retryAt.Sub(now); wait > 0 {
			q.mu.Unlock()
			return wait, false
		}
		q.mu.Unlock()
		return q.sendSpooled(ctx), false
	}
	if len(q.buf) == 0 {
		q.mu.Unlock()
		return -1, false
	}
	if wait := q.retryAt.Sub(now); wait > 0 {
		q.mu.Unlock()
		return wait, false
	}
	n := min(len(q.buf), q.cfg.BatchSize)
	if n < q.cfg.BatchSize && !q.closing {
		if waited := now.Sub(q.firstAt); waited < q.cfg.Linger {
			q.mu.Unlock()
			return q.cfg.Linger - waited, false
		}
	}
	// Enqueue only appends (and a spill only drops the slice): the first
	// n spans stay as they are while the batch is out.
	batch := q.buf[:n:n]
	q.inflight = n
	q.mu.Unlock()

	actx, cancel := context.WithTimeout(ctx, q.cfg.ExportTimeout)
	err := q.exp.Export(actx, batch)
	cancel()
	return q.sent(ctx, n, err), false
}

// sent handles the answer to a batch sent from memory and returns the
// wait before the next step.
func (q *Queue) sent(ctx context.Context, n int, err error) time.Duration {
	var rej *RejectedError
	ok := err == nil || errors.As(err, &rej)
	q.mu.Lock()
	moved, movedOK := q.moved, q.movedOK
	q.inflight, q.moved, q.movedOK = 0, false, false
	if !ok && !moved && q.cfg.Spool != nil && ctx.Err() == nil {
		q.spillLocked(reasonFailed)
	}
	if ok && !moved {
		clear(q.buf[:n])
		q.buf = q.buf[n:]
		if len(q.buf) == 0 {
			q.buf = nil // let the backing array go
		} else if cap(q.buf) > 4*q.cfg.MaxQueue {
			q.buf = append([]spans.Span(nil), q.buf...)
		}
		// What is left has waited during the send: it goes out at once.
		q.firstAt = q.cfg.Clock.Now().Add(-q.cfg.Linger)
	}
	q.mu.Unlock()
	if !ok {
		return q.failed(ctx, n, err)
	}
	if moved && movedOK {
		// The batch went to the spool while it was out: it is the
		// spool's head; skip it there rather than send it twice.
		if err := q.skipSpooled(n); err != nil {
			q.cfg.Logger.Warn("spool: acknowledged spans will be sent again", "spans", n, "err", err)
		}
	}
	q.acked(n, rej)
	return 0
}

// skipSpooled acknowledges the first n spans of the spool.
func (q *Queue) skipSpooled(n int) error {
	batch, cur, bad, err := q.cfg.Spool.Read(n)
	if err != nil {
		return err
	}
	if len(batch)+bad != n {
		return fmt.Errorf("skip %d spans in spool: found %d", n, len(batch)+bad)
	}
	return q.cfg.Spool.Ack(cur)
}

// sendSpooled sends the oldest batch of the spool and returns the wait
// before the next step.
func (q *Queue) sendSpooled(ctx context.Context) time.Duration {
	batch, cur, bad, err := q.cfg.Spool.Read(q.cfg.BatchSize)
	if err != nil {
		return q.failed(ctx, 0, err)
	}
	if bad > 0 {
		q.cfg.Observer.Failed(bad)
		q.cfg.Logger.Warn("spool: dropped lines that do not decode", "dir", q.cfg.Spool.Dir(), "lines", bad)
	}
	if len(batch) == 0 {
		if bad == 0 {
			// Counted but not readable: should not happen; do not spin.
			return q.failed(ctx, 0, fmt.Errorf("read spool %s: %d spans counted, none read", q.cfg.Spool.Dir(), q.cfg.Spool.Len()))
		}
		if err := q.cfg.Spool.Ack(cur); err != nil {
			q.cfg.Logger.Warn("spool cursor not written", "err", err)
		}
		return 0
	}
	actx, cancel := context.WithTimeout(ctx, q.cfg.ExportTimeout)
	err = q.exp.Export(actx, batch)
	cancel()
	var rej *RejectedError
	if err != nil && !errors.As(err, &rej) {
		return q.failed(ctx, len(batch), err)
	}
	if err := q.cfg.Spool.Ack(cur); err != nil {
		q.cfg.Logger.Warn("spool cursor not written: acknowledged spans may be sent again after a restart", "err", err)
	}
	q.acked(len(batch), rej)
	return 0
}

// acked records that the receiver answered for n spans (already removed
// from memory or the spool).
func (q *Queue) acked(n int, rej *RejectedError) {
	now := q.cfg.Clock.Now()
	q.mu.Lock()
	q.attempts, q.retryAt, q.failing = 0, time.Time{}, time.Time{}
	left, spooled := q.lensLocked()
	q.cfg.Observer.Pending(left)
	q.cfg.Observer.Spooled(spooled)
	close(q.space)
	q.space = make(chan struct{})
	close(q.changed)
	q.changed = make(chan struct{})
	q.mu.Unlock()

	accepted := n
	if rej != nil {
		rejected := int(min(max(rej.Rejected, 0), int64(n)))
		accepted -= rejected
		q.cfg.Observer.Failed(rejected)
		q.cfg.Logger.Warn("receiver rejected spans", "endpoint", q.cfg.Endpoint, "rejected", rejected, "msg", rej.Message)
	}
	q.cfg.Observer.Acknowledged(accepted, now)
}

// failed records a failed attempt and returns the backoff before the
// next one.
func (q *Queue) failed(ctx context.Context, n int, err error) time.Duration {
	q.cfg.Observer.Failed(n)
	now := q.cfg.Clock.Now()
	q.mu.Lock()
	defer q.mu.Unlock()
	if ctx.Err() != nil {
		// Stopped by Close while sending: not the receiver's fault.
		return 0
	}
	q.attempts++
	q.total++
	q.lastErr = err
	if q.spooling && q.spoolReason == reasonCheckpoint {
		q.spoolReason = reasonFailed // news now
	}
	if q.failing.IsZero() {
		q.failing = now
	}
	backoff := q.cfg.InitialBackoff
	for i := 1; i < q.attempts && backoff < q.cfg.MaxBackoff; i++ {
		backoff *= 2
	}
	backoff = min(backoff, q.cfg.MaxBackoff)
	q.retryAt = now.Add(backoff)
	if q.attempts == 1 || q.attempts%10 == 0 {
		pending, spooled := q.lensLocked()
		q.cfg.Logger.Warn("span export failed, retrying", "endpoint", q.cfg.Endpoint, "attempt", q.attempts,
			"spans", n, "pending", pending, "spooled", spooled, "retry_in", backoff, "err", err)
	}
	if q.cfg.GiveUpAfter > 0 && now.Sub(q.failing) >= q.cfg.GiveUpAfter {
		q.gaveUp = q.failure(len(q.buf))
		q.dropped += len(q.buf)
		q.buf = nil
		close(q.space)
		q.space = make(chan struct{})
	}
	close(q.changed)
	q.changed = make(chan struct{})
	return backoff
}

// failure describes why n spans were not delivered. Called with q.mu held.
func (q *Queue) failure(n int) error {
	if q.lastErr == nil {
		return fmt.Errorf("export spans: receiver at %s did not acknowledge %d spans before the deadline", q.cfg.Endpoint, n)
	}
	return fmt.Errorf("export spans: receiver at %s %s after %d attempts: %w (%d spans not acknowledged)",
		q.cfg.Endpoint, describe(q.lastErr), q.total, q.lastErr, n)
}

// describe says what an export error means for the user: the receiver
// could not be reached (or did not answer in time), or it answered no.
func describe(err error) string {
	if st, ok := status.FromError(err); ok {
		switch st.Code() {
		case codes.Unavailable, codes.DeadlineExceeded, codes.Canceled:
			return "unreachable"
		}
		return "refused the spans"
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return "unreachable"
	}
	return "failed"
}

// Close sends what is queued without waiting for full batches, waits
// until the receiver has acknowledged it or ctx ends, and stops. It
// returns an error naming the receiver and the last failure when spans
// remain unacknowledged.
//
// With a spool, Close stops waiting as soon as a send fails, moves what
// is left in memory to the spool, syncs and closes it: those spans go
// out first in the next run, and Close returns nil unless the spool
// failed.
func (q *Queue) Close(ctx context.Context) error {
	q.mu.Lock()
	q.closing = true
	q.retryAt = time.Time{} // one more attempt now
	q.closeTotal = q.total
	q.mu.Unlock()
	q.poke()
	var err error
	for {
		q.mu.Lock()
		left, _ := q.lensLocked()
		gaveUp, changed := q.gaveUp, q.changed
		keep := q.cfg.Spool != nil && q.total > q.closeTotal
		q.mu.Unlock()
		if gaveUp != nil {
			err = gaveUp
			break
		}
		if left == 0 || keep {
			break
		}
		select {
		case <-changed:
			continue
		case <-ctx.Done():
		}
		// Deadline: stop the sender (aborting a send in flight) and
		// report what is left.
		q.cancel()
		<-q.done
		q.mu.Lock()
		if len(q.buf) > 0 && q.cfg.Spool == nil {
			err = q.failure(len(q.buf))
		}
		q.mu.Unlock()
		break
	}
	q.cancel()
	<-q.done
	q.mu.Lock()
	q.stopped = true
	if q.cfg.Spool != nil && len(q.buf) > 0 {
		q.inflight = 0 // the sender has stopped
		q.spillLocked(reasonShutdown)
	}
	lost := q.lost
	q.mu.Unlock()
	if q.cfg.Spool != nil {
		if n := q.cfg.Spool.Len(); n > 0 {
			q.cfg.Logger.Info("spans kept in the spool for the next run", "dir", q.cfg.Spool.Dir(), "spans", n, "bytes", q.cfg.Spool.Bytes())
		}
		if cerr := q.cfg.Spool.Close(); cerr != nil {
			err = fmt.Errorf("export spans: %w", cerr)
		} else if lost > 0 {
			err = fmt.Errorf("export spans: the spool in %s did not take %d spans (they are built again from the transcripts at the next start)", q.cfg.Spool.Dir(), lost)
		}
	}
	sctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if serr := q.exp.Shutdown(sctx); serr != nil && err == nil {
		q.cfg.Logger.Debug("exporter shutdown", "err", serr)
	}
	return err
}
