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
	// Pending: n spans are queued and not yet acknowledged.
	Pending(n int)
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
	// MaxQueue is the most spans held; Enqueue blocks past it.
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
	// the process runs (the daemon); one-shot runs set it.
	GiveUpAfter time.Duration
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
// dropped while the process runs (unless GiveUpAfter is set). When
// MaxQueue spans wait, Enqueue blocks: the transcript reader stalls
// rather than memory growing. During a long receiver outage the daemon
// therefore stops reading; the durable exported watermark (a later
// issue) is what will let it drop spans and derive them again from the
// transcripts instead.
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
	return q
}

type nopObserver struct{}

func (nopObserver) Acknowledged(int, time.Time) {}
func (nopObserver) Failed(int)                  {}
func (nopObserver) Pending(int)                 {}

// Enqueue adds a span. It blocks while the queue is full, unless ctx is
// done (shutdown: the span is taken beyond the bound, so that the final
// flush completes and Close can try to deliver it). After the queue gave
// up (GiveUpAfter) it drops the span and returns the failure.
func (q *Queue) Enqueue(ctx context.Context, s spans.Span) error {
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
			err = errors.New("export spans: queue closed")
		}
		q.mu.Unlock()
		return err
	}
	if len(q.buf) == 0 {
		q.firstAt = q.cfg.Clock.Now()
	}
	q.buf = append(q.buf, s)
	n := len(q.buf)
	q.mu.Unlock()
	q.cfg.Observer.Pending(n)
	if n == 1 || n%q.cfg.BatchSize == 0 {
		q.poke()
	}
	return nil
}

func (q *Queue) poke() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// Len returns the number of spans not yet acknowledged.
func (q *Queue) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.buf)
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
	if len(q.buf) == 0 {
		q.mu.Unlock()
		return -1, false
	}
	if now.Before(q.retryAt) {
		q.mu.Unlock()
		return q.retryAt.Sub(now), false
	}
	n := min(len(q.buf), q.cfg.BatchSize)
	if n < q.cfg.BatchSize && !q.closing {
		if waited := now.Sub(q.firstAt); waited < q.cfg.Linger {
			q.mu.Unlock()
			return q.cfg.Linger - waited, false
		}
	}
	// Enqueue only appends: the first n spans stay as they are while the
	// batch is out.
	batch := q.buf[:n:n]
	q.mu.Unlock()

	actx, cancel := context.WithTimeout(ctx, q.cfg.ExportTimeout)
	err := q.exp.Export(actx, batch)
	cancel()
	var rej *RejectedError
	if err != nil && !errors.As(err, &rej) {
		return q.failed(ctx, n, err), false
	}
	q.acked(n, rej)
	return 0, false
}

// acked removes the first n spans after the receiver answered.
func (q *Queue) acked(n int, rej *RejectedError) {
	now := q.cfg.Clock.Now()
	q.mu.Lock()
	clear(q.buf[:n])
	q.buf = q.buf[n:]
	if len(q.buf) == 0 {
		q.buf = nil // let the backing array go
	} else if cap(q.buf) > 4*q.cfg.MaxQueue {
		q.buf = append([]spans.Span(nil), q.buf...)
	}
	// What is left has waited during the send: it goes out at once.
	q.firstAt = now.Add(-q.cfg.Linger)
	q.attempts, q.retryAt, q.failing = 0, time.Time{}, time.Time{}
	left := len(q.buf)
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
	q.cfg.Observer.Pending(left)
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
		q.cfg.Logger.Warn("span export failed, retrying", "endpoint", q.cfg.Endpoint, "attempt", q.attempts,
			"spans", n, "pending", len(q.buf), "retry_in", backoff, "err", err)
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
func (q *Queue) Close(ctx context.Context) error {
	q.mu.Lock()
	q.closing = true
	q.retryAt = time.Time{} // one more attempt now
	q.mu.Unlock()
	q.poke()
	var err error
	for {
		q.mu.Lock()
		left, gaveUp, changed := len(q.buf), q.gaveUp, q.changed
		q.mu.Unlock()
		if gaveUp != nil {
			err = gaveUp
			break
		}
		if left == 0 {
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
		if len(q.buf) > 0 {
			err = q.failure(len(q.buf))
		}
		q.mu.Unlock()
		break
	}
	q.cancel()
	<-q.done
	q.mu.Lock()
	q.stopped = true
	q.mu.Unlock()
	sctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if serr := q.exp.Shutdown(sctx); serr != nil && err == nil {
		q.cfg.Logger.Debug("exporter shutdown", "err", serr)
	}
	return err
}
