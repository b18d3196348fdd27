package daemon

import (
	"slices"
	"time"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/session"
)

// sinkQueue is the assembler's sink: it hands every unit to the sinks
// (spans, metrics) at once, except during a read (reader.readSeq, between
// begin and end), when it copies the units into batches that a goroutine
// of its own delivers in order. The assembly, the one step of a read that
// runs in order, then no longer waits for the sinks: above all at a pause
// between two groups of files, where the backfill settles a group's
// requests at once and the decode workers, their window of ranges full,
// had nothing to do while the metrics took every request (1 GB one-shot:
// 0.18 s of flushes on one core, 55 % of it in the sinks).
//
// end waits until every unit queued was delivered, so a read returns with
// the sinks up to date, as before: nothing outside a read sees the
// difference. Nothing a sink reads is touched by the read meanwhile (the
// sinks own their state; the units are copies).
type sinkQueue struct {
	next session.Sink
	// depth counts the begins not yet ended: units are queued while it
	// is above 0 (a read within a read queues on).
	depth int
	cur   *unitBatch
	full  chan *unitBatch // to the delivering goroutine
	free  chan *unitBatch // back from it, for reuse
	done  chan struct{}   // closed when the goroutine has delivered all
	// made counts the batches made for this read: at most queueBatches.
	made int
	// lastSeen is the last window mark queued (see).
	lastSeen seenFile
}

// queueUnits is how many units a batch holds; queueBatches how many
// batches exist at once. A queue of this size holds the units of a few
// hundred requests at most: beyond it the assembly waits for the sinks.
const (
	queueUnits   = 256
	queueBatches = 4
)

func newSinkQueue(next session.Sink) *sinkQueue { return &sinkQueue{next: next} }

// unitKind says which of a batch's slices holds a unit.
type unitKind uint8

const (
	unitSession unitKind = iota
	unitTurn
	unitRequest
	unitRequestUpdate
	unitToolCall
	unitSubagent
	unitCompaction
	unitAPIError
	unitPullRequest
	unitSeen
)

// unitBatch holds units in the order they came (kinds) and by kind.
type unitBatch struct {
	kinds       []unitKind
	sessions    []session.Session
	turns       []session.Turn
	requests    []session.Request
	updates     []session.RequestUpdate
	tools       []session.ToolCall
	agents      []session.Subagent
	compactions []session.Compaction
	errors      []session.APIError
	prs         []session.PullRequest
	seen        []seenFile
}

// seenFile is a traceWindow.see queued with the units: the window decides
// which spans go out as they are built, so the records read mark it in
// their order with the units.
type seenFile struct {
	w     *traceWindow
	id    string
	mtime time.Time
}

// deliver hands b's units to s in order, then empties b (its copies let
// go of their strings).
func (b *unitBatch) deliver(s session.Sink) {
	var n [unitSeen + 1]int
	for _, k := range b.kinds {
		i := n[k]
		n[k]++
		switch k {
		case unitSession:
			s.Session(&b.sessions[i])
		case unitTurn:
			s.Turn(&b.turns[i])
		case unitRequest:
			s.Request(&b.requests[i])
		case unitRequestUpdate:
			s.RequestUpdate(&b.updates[i])
		case unitToolCall:
			s.ToolCall(&b.tools[i])
		case unitSubagent:
			s.Subagent(&b.agents[i])
		case unitCompaction:
			s.Compaction(&b.compactions[i])
		case unitAPIError:
			s.APIError(&b.errors[i])
		case unitPullRequest:
			s.PullRequest(&b.prs[i])
		case unitSeen:
			v := &b.seen[i]
			v.w.see(v.id, v.mtime)
		}
	}
	b.kinds = b.kinds[:0]
	b.sessions = emptied(b.sessions)
	b.turns = emptied(b.turns)
	b.requests = emptied(b.requests)
	b.updates = emptied(b.updates)
	b.tools = emptied(b.tools)
	b.agents = emptied(b.agents)
	b.compactions = emptied(b.compactions)
	b.errors = emptied(b.errors)
	b.prs = emptied(b.prs)
	b.seen = emptied(b.seen)
}

func emptied[T any](s []T) []T {
	clear(s)
	return s[:0]
}

// on says units are queued.
func (q *sinkQueue) on() bool { return q.depth > 0 }

// begin starts queueing. Only the goroutine that calls the sink methods
// calls begin and end.
func (q *sinkQueue) begin() {
	if q.depth++; q.depth > 1 {
		return
	}
	q.full = make(chan *unitBatch, queueBatches)
	q.free = make(chan *unitBatch, queueBatches)
	q.done = make(chan struct{})
	q.made = 1
	q.cur = &unitBatch{}
	go func(full <-chan *unitBatch, free chan<- *unitBatch, done chan<- struct{}) {
		defer close(done)
		for b := range full {
			b.deliver(q.next)
			free <- b
		}
	}(q.full, q.free, q.done)
}

// end delivers what is queued, waits for it, and goes back to handing
// units over at once.
func (q *sinkQueue) end() {
	if q.depth == 0 {
		return
	}
	if q.depth--; q.depth > 0 {
		return
	}
	if len(q.cur.kinds) > 0 {
		q.full <- q.cur
	}
	close(q.full)
	<-q.done
	q.cur, q.full, q.free, q.done = nil, nil, nil, nil
	q.lastSeen = seenFile{}
}

// queued records that a unit of kind k was appended to the current batch,
// and hands the batch over once it is full.
func (q *sinkQueue) queued(k unitKind) {
	q.cur.kinds = append(q.cur.kinds, k)
	if len(q.cur.kinds) < queueUnits {
		return
	}
	q.full <- q.cur
	select {
	case q.cur = <-q.free:
	default:
		if q.made < queueBatches {
			q.made++
			q.cur = &unitBatch{}
		} else {
			q.cur = <-q.free
		}
	}
}

// put queues a copy of u in the current batch's slice list returns, when
// queueing; it reports whether it did.
func put[T any](q *sinkQueue, k unitKind, list func(*unitBatch) *[]T, u *T) bool {
	if !q.on() {
		return false
	}
	l := list(q.cur)
	*l = append(*l, *u)
	q.queued(k)
	return true
}

// Session implements session.Sink.
func (q *sinkQueue) Session(u *session.Session) {
	if !put(q, unitSession, func(b *unitBatch) *[]session.Session { return &b.sessions }, u) {
		q.next.Session(u)
	}
}

// Turn implements session.Sink.
func (q *sinkQueue) Turn(u *session.Turn) {
	if !put(q, unitTurn, func(b *unitBatch) *[]session.Turn { return &b.turns }, u) {
		q.next.Turn(u)
	}
}

// Request implements session.Sink. Its slices are copied: the assembler
// may reuse them once the call returns.
func (q *sinkQueue) Request(u *session.Request) {
	if !q.on() {
		q.next.Request(u)
		return
	}
	c := *u
	c.ToolUseIDs = slices.Clone(u.ToolUseIDs)
	c.Advisor = slices.Clone(u.Advisor)
	put(q, unitRequest, func(b *unitBatch) *[]session.Request { return &b.requests }, &c)
}

// RequestUpdate implements session.Sink.
func (q *sinkQueue) RequestUpdate(u *session.RequestUpdate) {
	if !put(q, unitRequestUpdate, func(b *unitBatch) *[]session.RequestUpdate { return &b.updates }, u) {
		q.next.RequestUpdate(u)
	}
}

// ToolCall implements session.Sink.
func (q *sinkQueue) ToolCall(u *session.ToolCall) {
	if !put(q, unitToolCall, func(b *unitBatch) *[]session.ToolCall { return &b.tools }, u) {
		q.next.ToolCall(u)
	}
}

// Subagent implements session.Sink.
func (q *sinkQueue) Subagent(u *session.Subagent) {
	if !put(q, unitSubagent, func(b *unitBatch) *[]session.Subagent { return &b.agents }, u) {
		q.next.Subagent(u)
	}
}

// Compaction implements session.Sink.
func (q *sinkQueue) Compaction(u *session.Compaction) {
	if !put(q, unitCompaction, func(b *unitBatch) *[]session.Compaction { return &b.compactions }, u) {
		q.next.Compaction(u)
	}
}

// APIError implements session.Sink.
func (q *sinkQueue) APIError(u *session.APIError) {
	if !put(q, unitAPIError, func(b *unitBatch) *[]session.APIError { return &b.errors }, u) {
		q.next.APIError(u)
	}
}

// PullRequest implements session.Sink.
func (q *sinkQueue) PullRequest(u *session.PullRequest) {
	if !put(q, unitPullRequest, func(b *unitBatch) *[]session.PullRequest { return &b.prs }, u) {
		q.next.PullRequest(u)
	}
}

// see marks session id in w (traceWindow.see) in order with the units
// queued: the spans of units queued before it are kept or not as if it
// had not happened yet, as when they were delivered at once. A file's
// records repeat the mark: it is queued once per change.
func (q *sinkQueue) see(w *traceWindow, id string, mtime time.Time) {
	if !q.on() {
		w.see(id, mtime)
		return
	}
	if q.lastSeen == (seenFile{w, id, mtime}) {
		return
	}
	q.lastSeen = seenFile{w, id, mtime}
	q.cur.seen = append(q.cur.seen, q.lastSeen)
	q.queued(unitSeen)
}
