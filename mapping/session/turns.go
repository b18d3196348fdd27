package session

// Turns: a human prompt opens one, the next prompt or the session's
// close emits it with its active time; system records (turn_duration,
// compactions, API retries) are read here too.

import (
	"time"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/transcript"
)

func (a *Assembler) user(c *ctxState, r *transcript.Record, now time.Time) {
	m := &r.Message
	a.takeResults(r)
	if c.agent != nil && !c.agent.warmupKnown && r.HasMessage && len(m.ToolResults) == 0 {
		c.agent.warmupKnown = true
		c.agent.warmup = m.FirstTextIs("Warmup")
		if c.agent.warmup {
			a.emitAgent(c.agent)
		}
	}
	if IsInterruptMarker(r) {
		if p, ok := c.lookup(r.ParentUUID); ok && p.msgID != "" {
			if st := a.requests[p.msgID]; st != nil {
				st.interrupt = true
			}
		}
	}
	if c.agent == nil && IsHumanPrompt(r) && r.UUID != "" && a.firstSeen(keyPrompt, r.UUID) {
		s := c.sess
		var since time.Duration
		if s.turn != nil {
			a.emitTurn(s.ownTurn(), r.Timestamp)
			if !s.turn.End.IsZero() && !r.Timestamp.IsZero() && r.Timestamp.After(s.turn.End) {
				since = r.Timestamp.Sub(s.turn.End)
			}
		}
		s.turns++
		s.turn = &Turn{
			Where:         Where{SessionID: s.id, Project: a.project(s), TurnID: r.UUID},
			PromptUUID:    r.UUID,
			Number:        s.turns,
			Start:         r.Timestamp,
			End:           r.Timestamp,
			Prompt:        m.Text,
			SincePrevious: since,
		}
	}
	c.remember(r.UUID, r.Timestamp, "")
}

// emitTurn hands a closing turn to the sink: counted the first time, and
// each time with the active time it adds since (see Turn).
func (a *Assembler) emitTurn(t *Turn, closed time.Time) {
	active := t.ActiveTime() - t.Counted
	if t.Again && active <= 0 {
		return
	}
	a.version++
	t.Active = max(active, 0)
	t.Closed = closed
	a.sink.Turn(t)
	t.Counted += t.Active
	t.Again = true
	t.Prompt = "" // sent with the turn's first emission; not kept
}

func (a *Assembler) system(c *ctxState, r *transcript.Record) {
	x := r.Rare()
	switch x.Subtype {
	case "compact_boundary":
		if r.UUID != "" && !a.firstSeen(keyCompaction, r.UUID) {
			return
		}
		trigger := x.CompactTrigger
		if trigger == "" {
			trigger = "unknown"
		}
		a.sink.Compaction(&Compaction{Where: a.where(c), UUID: r.UUID, Trigger: trigger, PreTokens: x.CompactPreTokens, Time: r.Timestamp})
	case "api_error":
		if r.UUID != "" && !a.firstSeen(keyError, r.UUID) {
			return
		}
		a.sink.APIError(&APIError{Where: a.where(c), ID: r.UUID, Kind: KindRetry, Time: r.Timestamp})
	case "turn_duration":
		// Claude Code's own figure for the turn's active time, written
		// as the turn ends; copies (resume) count once.
		if c.agent != nil || x.DurationMs < 0 || r.UUID != "" && !a.firstSeen(keyTurnDuration, r.UUID) {
			return
		}
		d := time.Duration(x.DurationMs) * time.Millisecond
		if t := c.sess.ownTurn(); t != nil {
			t.Reported += d
			t.HasReported = true
			return
		}
		// Work outside any turn (a session opened by a slash command such
		// as /init, whose prompt is Claude Code's): its time still counts,
		// as Claude Code reports it, with no turn of its own.
		a.stats.OrphanTurnDurations++
		s := c.sess
		a.version++
		a.sink.Turn(&Turn{Where: Where{SessionID: s.id, Project: a.project(s)}, Start: r.Timestamp, End: r.Timestamp,
			Closed: r.Timestamp, Reported: d, HasReported: true, Active: d, Again: true})
	}
	c.remember(r.UUID, r.Timestamp, "")
}
