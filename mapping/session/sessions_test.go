package session

import (
	"encoding/json"
	"slices"
	"testing"
	"time"
)

// TestSessionUnits pins the Session unit: one start (Ended=false) per
// session that has a main-transcript message, emitted at its first one,
// and one Ended=true at the final Flush carrying what was learnt since;
// copies and sessions seen only through subagents or non-message records
// add no start.
func TestSessionUnits(t *testing.T) {
	title := `{"type":"custom-title","customTitle":"CMMC assessment app","sessionId":"` + sessA + `"}`
	snapshot := `{"type":"file-history-snapshot","messageId":"6c954f3c-6463-4417-89ca-b42df4e59f61","snapshot":{"messageId":"6c954f3c","trackedFileBackups":{},"timestamp":"` + ts(0) + `"},"isSnapshotUpdate":false}`
	main := []string{
		snapshot,
		U{UUID: "u1", Sec: 10, Text: "Build the app."}.String(),
		A{UUID: "a1", Parent: "u1", Sec: 12, Msg: "msg_1", Out: 100, Stop: "end_turn"}.String(),
		title,
		U{UUID: "u2", Parent: "a1", Sec: 30, Text: "Add tests."}.String(),
		A{UUID: "a2", Parent: "u2", Sec: 45, Msg: "msg_2", Out: 100, Stop: "end_turn"}.String(),
	}
	tests := []struct {
		name   string
		files  []file
		starts map[string]int
	}{
		{
			name:   "one start per session with a main message",
			files:  []file{{sessionPath(sessA), main}},
			starts: map[string]int{sessA: 1},
		},
		{
			name:   "file read twice starts once",
			files:  []file{{sessionPath(sessA), main}, {sessionPath(sessA), main}},
			starts: map[string]int{sessA: 1},
		},
		{
			name: "a resumed session is a session of its own",
			files: []file{{sessionPath(sessA), main}, {sessionPath(sessB), []string{
				U{UUID: "u1", Session: sessB, Sec: 10, Text: "Build the app."}.String(),
				U{UUID: "u9", Session: sessB, Sec: 100, Text: "Continue."}.String(),
			}}},
			starts: map[string]int{sessA: 1, sessB: 1},
		},
		{
			name: "only non-message records start nothing",
			files: []file{{sessionPath(sessB), []string{
				`{"type":"file-history-snapshot","messageId":"m1","snapshot":{"messageId":"m1","trackedFileBackups":{},"timestamp":"` + ts(0) + `"},"isSnapshotUpdate":false}`,
				`{"type":"summary","summary":"CMMC app scaffolding","leafUuid":"f4b4538c-bf7f-4afa-a5b6-2c9a1c88bdd9"}`,
			}}},
			starts: map[string]int{sessB: 0},
		},
		{
			name: "session seen only through its subagents starts nothing",
			files: []file{
				{subagentPath(sessB, "a2244978809bf394d"), []string{U{UUID: "s0", Session: sessB, Sec: 1, Agent: "a2244978809bf394d", Text: "Build the views."}.String()}},
				{legacyAgentPath("a24fba1"), []string{U{UUID: "l0", Session: sessB, Sec: 1, Agent: "a24fba1", Text: "Explore."}.String()}},
			},
			starts: map[string]int{sessB: 0},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			log, _ := run(t, tc.files...)
			for sess, n := range tc.starts {
				starts, ends := log.sessionsOf(sess)
				if len(starts) != n {
					t.Errorf("session %s: %d starts, want %d", sess, len(starts), n)
				}
				if n > 0 && len(ends) != 1 {
					t.Errorf("session %s: %d ended units, want 1", sess, len(ends))
				}
			}
		})
	}

	// The fields of the two units. The snapshot line has no top-level
	// timestamp: the session starts at the prompt.
	log, _ := run(t, file{sessionPath(sessA), main})
	starts, ends := log.sessionsOf(sessA)
	s, e := one(t, "start", starts), one(t, "end", ends)
	if s.Cwd != cwdA || s.Project != cwdA || s.GitBranch != "main" || s.Version != "2.1.119" || !s.Start.Equal(at(10)) || s.Ended {
		t.Errorf("start unit %+v", s)
	}
	if !e.Ended || !e.End.Equal(at(45)) || e.Turns != 2 || e.Title != "CMMC assessment app" || e.Cwd != cwdA || !e.Start.Equal(at(10)) {
		t.Errorf("ended unit %+v, want ended at %v with 2 turns and the custom title", e, at(45))
	}
	if first := log.order[0]; first != "session:"+sessA+":ended=false" {
		t.Errorf("first unit %s, want the session start", first)
	}
	if last := log.order[len(log.order)-1]; last != "session:"+sessA+":ended=true" {
		t.Errorf("last unit %s, want the session end", last)
	}
}

// idleSession is a session left mid-work: an open turn, a request still
// settling and a tool call never answered.
func idleSession(session string, sec int) []string {
	return []string{
		U{UUID: session + "-u1", Session: session, Sec: sec, Text: "Run the migration."}.String(),
		// No stop reason (a response cut off mid-stream): the request waits
		// for the settle time or the session's close.
		A{UUID: session + "-a1", Parent: session + "-u1", Session: session, Sec: sec + 1, Msg: "msg_" + session, Out: 80, Blocks: blocks(toolUseB("toolu_"+session, "Bash", ""))}.String(),
	}
}

// TestIdleTimeoutClosesSessions pins Config.IdleTimeout: a non-final Flush
// closes a session without a record for IdleTimeout (pending requests
// first, then unanswered tool calls, the open turn, the Ended unit), leaves
// active sessions open, closes nothing when the timeout is zero, and the
// final Flush does not close the same session twice.
func TestIdleTimeoutClosesSessions(t *testing.T) {
	tests := []struct {
		name    string
		idle    time.Duration
		flushAt time.Duration // after the idle session's last record
		closed  bool
	}{
		{"not idle long enough", 10 * time.Minute, 9 * time.Minute, false},
		{"idle exactly the timeout", 10 * time.Minute, 10 * time.Minute, true},
		{"idle past the timeout", 10 * time.Minute, time.Hour, true},
		{"zero timeout never closes on a non-final flush", 0, 24 * time.Hour, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFeeder(t, Config{IdleTimeout: tc.idle, Settle: time.Hour * 48})
			f.add(sessionPath(sessA), at(0), idleSession(sessA, 0)...)
			// Another session stays active until the flush.
			f.add(sessionPath(sessB), at(0), idleSession(sessB, 0)[0])
			f.add(sessionPath(sessB), at(0).Add(tc.flushAt), idleSession(sessB, 0)[1])
			f.flush(at(0).Add(tc.flushAt), false)

			_, ends := f.log.sessionsOf(sessA)
			if got := len(ends) == 1; got != tc.closed {
				t.Fatalf("session closed = %v, want %v (units %v)", got, tc.closed, f.log.order)
			}
			if _, endsB := f.log.sessionsOf(sessB); len(endsB) != 0 {
				t.Errorf("active session closed: %v", f.log.order)
			}
			if tc.closed {
				want := []string{"request:msg_" + sessA, "tool:toolu_" + sessA + ":unanswered", "turn:" + sessA + "-u1", "session:" + sessA + ":ended=true"}
				i := slices.Index(f.log.order, want[0])
				if i < 0 || len(f.log.order) < i+len(want) || !slices.Equal(f.log.order[i:i+len(want)], want) {
					t.Errorf("closing units %v, want %v in that order", f.log.order, want)
				}
				if e := ends[0]; !e.End.Equal(at(1)) || e.Turns != 1 {
					t.Errorf("ended unit %+v, want end %v and 1 turn", e, at(1))
				}
			} else if len(f.log.tools) != 0 || len(f.log.turns) != 0 {
				t.Errorf("open session emitted %v", f.log.order)
			}
			f.flush(at(0).Add(tc.flushAt+time.Second), true)
			_, ends = f.log.sessionsOf(sessA)
			one(t, "ended units of the idle session after the final flush", ends)
			one(t, "unanswered tool of the idle session", f.log.toolsOf("toolu_"+sessA))
			one(t, "request of the idle session", f.log.requestsOf("msg_"+sessA))
		})
	}
}

// TestActivityAfterIdleCloseIsNotLost pins what happens when a session
// closed by the idle timeout comes back (the user returns to it): the
// new turn, its unanswered tool calls and the later end are still emitted
// by the final Flush, and the session is not counted as started again.
func TestActivityAfterIdleCloseIsNotLost(t *testing.T) {
	f := newFeeder(t, Config{IdleTimeout: 10 * time.Minute})
	f.add(sessionPath(sessA), at(0),
		U{UUID: "u1", Sec: 0, Text: "Run the migration."}.String(),
		A{UUID: "a1", Parent: "u1", Sec: 1, Msg: "msg_1", Out: 80, Stop: "end_turn"}.String(),
	)
	f.flush(at(0).Add(30*time.Minute), false)
	if _, ends := f.log.sessionsOf(sessA); len(ends) != 1 {
		t.Fatalf("idle session not closed: %v", f.log.order)
	}
	// The user comes back an hour later.
	back := at(3600)
	f.add(sessionPath(sessA), back,
		U{UUID: "u2", Parent: "a1", Sec: 3600, Text: "Now roll it back."}.String(),
		A{UUID: "a2", Parent: "u2", Sec: 3601, Msg: "msg_2", Out: 80, Stop: "tool_use", Blocks: blocks(toolUseB("toolu_back", "Bash", ""))}.String(),
	)
	// It came back out of the closed sessions: one state, live and open,
	// none left packed (records written to the state a reading context
	// kept from before the close would miss both).
	if s := f.asm.sessions[sessA]; s == nil || f.asm.open[sessA] != s {
		t.Errorf("session back after the idle close: live %p, open %p; want one state in both", s, f.asm.open[sessA])
	}
	if _, packed := f.asm.closed.project(sessA); packed {
		t.Error("session back after the idle close is still packed as well")
	}
	f.flush(back.Add(time.Second), true)

	if i := slices.IndexFunc(f.log.turns, func(tu Turn) bool { return tu.PromptUUID == "u2" }); i < 0 {
		t.Errorf("turn u2 after the idle close never emitted: %v", f.log.order)
	}
	if calls := f.log.toolsOf("toolu_back"); len(calls) != 1 || calls[0].Outcome != OutcomeUnanswered {
		t.Errorf("tool call after the idle close: %+v, want one unanswered", calls)
	}
	one(t, "request after the idle close", f.log.requestsOf("msg_2"))
	starts, ends := f.log.sessionsOf(sessA)
	if len(starts) != 1 {
		t.Errorf("session started %d times, want 1", len(starts))
	}
	if len(ends) == 0 || !ends[len(ends)-1].End.Equal(at(3601)) {
		t.Errorf("session end units %+v, want the last to end at %v", ends, at(3601))
	}
}

// TestARecordAfterTheContextsWereDroppedReadsAfresh: a backfill's pause
// drops the reading contexts of a session it keeps open (its project is
// not known yet) once a whole group went by without it; its next record
// must read in a new context, registered like the first, not in the
// dropped one.
func TestARecordAfterTheContextsWereDroppedReadsAfresh(t *testing.T) {
	noCwd := func(line string) string {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatal(err)
		}
		delete(m, "cwd")
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	f := newFeeder(t, Config{IdleTimeout: 10 * time.Minute})
	f.add(sessionPath(sessA), at(0),
		noCwd(U{UUID: "u1", Sec: 0, Text: "List the files."}.String()),
		noCwd(A{UUID: "a1", Parent: "u1", Sec: 1, Msg: "msg_1", Out: 80, Stop: "end_turn"}.String()),
	)
	f.asm.FlushHistory(at(2), "") // the group that read it
	f.asm.FlushHistory(at(3), "") // a group without it
	s := f.asm.sessions[sessA]
	if s == nil || s.ended {
		t.Fatal("the session of unknown project was not kept open; the test needs it live")
	}
	if s.hasCtx || f.asm.ctxs[ctxKey{sessA, ""}] != nil {
		t.Fatal("the pause kept the quiet session's reading context")
	}
	f.add(sessionPath(sessA), at(4),
		noCwd(U{UUID: "u2", Parent: "a1", Sec: 4, Text: "And the hidden ones."}.String()),
	)
	if c := f.asm.ctxs[ctxKey{sessA, ""}]; c == nil || !s.hasCtx || c.sess != s {
		t.Errorf("the record after the pause read in a context not registered (ctx %p, hasCtx %v)", c, s.hasCtx)
	}
}
