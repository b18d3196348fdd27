package daemon

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/session"
)

// logSink notes every unit it is handed, as text, and on which call.
type logSink struct {
	got []string
	// window, when set, is asked about each request's session as the
	// request arrives, as the spans sink asks its window.
	window *traceWindow
}

func (s *logSink) add(format string, a ...any) { s.got = append(s.got, fmt.Sprintf(format, a...)) }

func (s *logSink) Session(u *session.Session)             { s.add("session %s", u.SessionID) }
func (s *logSink) Turn(u *session.Turn)                   { s.add("turn %s %d", u.SessionID, u.Number) }
func (s *logSink) RequestUpdate(u *session.RequestUpdate) { s.add("update %s", u.MessageID) }
func (s *logSink) ToolCall(u *session.ToolCall)           { s.add("tool %s", u.ToolUseID) }
func (s *logSink) Subagent(u *session.Subagent)           { s.add("agent %s", u.AgentID) }
func (s *logSink) Compaction(u *session.Compaction)       { s.add("compaction %s", u.UUID) }
func (s *logSink) APIError(u *session.APIError)           { s.add("error %s", u.ID) }
func (s *logSink) PullRequest(u *session.PullRequest)     { s.add("pr %s", u.SessionID) }
func (s *logSink) Request(u *session.Request) {
	kept := ""
	if s.window != nil {
		_, ok := s.window.recent[u.SessionID]
		kept = fmt.Sprintf(" recent=%v", ok)
	}
	s.add("request %s %v %v%s", u.MessageID, u.ToolUseIDs, u.Advisor, kept)
}

var _ session.Sink = (*logSink)(nil)

// feed hands n units of every kind to s, mutating each request's slices
// after the call as the assembler may.
func feed(s session.Sink, n int) {
	for i := range n {
		id := fmt.Sprint(i)
		s.Session(&session.Session{Where: session.Where{SessionID: "s" + id}})
		s.Turn(&session.Turn{Where: session.Where{SessionID: "s" + id}, Number: i})
		req := session.Request{MessageID: "m" + id, ToolUseIDs: []string{"t" + id},
			Advisor: []session.ModelTokens{{Model: "a" + id}}}
		s.Request(&req)
		req.ToolUseIDs[0], req.Advisor[0].Model = "reused", "reused"
		s.RequestUpdate(&session.RequestUpdate{MessageID: "m" + id})
		s.ToolCall(&session.ToolCall{ToolUseID: "t" + id})
		s.Subagent(&session.Subagent{Where: session.Where{AgentID: "a" + id}})
		s.Compaction(&session.Compaction{UUID: "c" + id})
		s.APIError(&session.APIError{ID: "e" + id})
		s.PullRequest(&session.PullRequest{Where: session.Where{SessionID: "s" + id}})
	}
}

func TestSinkQueueDeliversWhatTheSinkWouldHaveTakenAtOnce(t *testing.T) {
	for _, n := range []int{0, 1, queueUnits/9 - 1, queueUnits, 5 * queueUnits * queueBatches} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			var direct logSink
			feed(&direct, n)
			var queued logSink
			q := newSinkQueue(&queued)
			q.begin()
			feed(q, n)
			q.end()
			if !slices.Equal(direct.got, queued.got) {
				t.Fatalf("queued delivery differs: %d units, want %d; first %q", len(queued.got), len(direct.got), first(queued.got, direct.got))
			}
		})
	}
}

func first(a, b []string) string {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return a[i] + " vs " + b[i]
		}
	}
	return "length"
}

func TestSinkQueueOutsideAReadDeliversAtOnce(t *testing.T) {
	var got logSink
	q := newSinkQueue(&got)
	q.begin()
	q.end()
	q.Request(&session.Request{MessageID: "m"})
	if len(got.got) != 1 {
		t.Fatalf("after end: %d units delivered on return, want 1", len(got.got))
	}
	q.end() // twice: no effect
	q.begin()
	q.Request(&session.Request{MessageID: "n"})
	q.end()
	if len(got.got) != 2 {
		t.Fatalf("end returned with %d units delivered, want 2", len(got.got))
	}
	// A read within a read: the inner end leaves the queue on.
	q.begin()
	q.begin()
	q.end()
	if !q.on() {
		t.Fatal("the inner end of a nested read stopped the queue")
	}
	q.Request(&session.Request{MessageID: "o"})
	q.end()
	if q.on() || len(got.got) != 3 {
		t.Fatalf("after the outer end: on %v, %d units delivered, want off and 3", q.on(), len(got.got))
	}
}

// The trace window is marked in order with the units: a request queued
// before its session was marked recent is judged as it would have been
// at once.
func TestSinkQueueMarksTheTraceWindowInOrder(t *testing.T) {
	run := func(s session.Sink, mark func(id string)) {
		s.Request(&session.Request{Where: session.Where{SessionID: "x"}, MessageID: "before"})
		mark("x")
		mark("x")
		s.Request(&session.Request{Where: session.Where{SessionID: "x"}, MessageID: "after"})
	}
	now := time.Unix(1e9, 0)
	var direct logSink
	direct.window = &traceWindow{}
	direct.window.begin(time.Hour, now)
	run(&direct, func(id string) { direct.window.see(id, now) })

	var queued logSink
	queued.window = &traceWindow{}
	queued.window.begin(time.Hour, now)
	q := newSinkQueue(&queued)
	q.begin()
	run(q, func(id string) { q.see(queued.window, id, now) })
	q.end()
	if !slices.Equal(direct.got, queued.got) {
		t.Fatalf("queued: %q, at once: %q", queued.got, direct.got)
	}
	if want := "request before [] [] recent=false"; queued.got[0] != want {
		t.Fatalf("first request: %q, want %q", queued.got[0], want)
	}
}
