package session

// Closed sessions are most of a long history's sessions, and all that is
// left of them is a few facts and their last turn: the turn is kept
// because Claude Code may still write its turn_duration, and a session
// may resume. As structs they took 700 bytes each (the session, its turn,
// their strings and map slots: 60 MB at 100,000 sessions). A session that
// closes with nothing open (no reading context, open tool call, subagent,
// pending Task call or sidechain) is packed into a few bytes instead:
// numbers as varints, times as gob writes them, the strings many sessions
// share (working dir, branch, version, project dir) as indexes into a
// table that holds each once, the others inline. A line that names it
// unpacks it (Assembler.session); a lookup that only needs its project
// reads the packed bytes.
//
// The packed sessions lie one after another in chunks of closedChunk
// bytes, each after its length, and the map holds where (chunk and
// offset): as a slice each, a session cost a slice header in the map and
// an allocation rounded up to its size class (100,000 sessions: 13.2 MB,
// now 9). Bytes are only ever appended to a chunk, so a frozen state
// shares the chunks. A session taken out leaves its bytes behind; once
// they are half of what the chunks hold, the live ones are copied to new
// chunks.
//
// A session's id is most often a canonical UUID (uuid.go): an index keys
// it by its 16 bytes (closed_index.go), and its string is built again only when the session is
// unpacked or listed. Kept as a string, an id the file table's paths no
// longer hold is an allocation of 48 bytes of its own (4.8 MB at 100,000
// sessions; TestClosedSessionsDoNotKeepUUIDIds). Any other id (upper
// case, not a UUID) is in a second map by its string, so that every id
// reads back exactly as it was put.

import (
	"cmp"
	"encoding/binary"
	"iter"
	"slices"
	"time"
)

// closedSessions holds the packed closed sessions, by id.
type closedSessions struct {
	// uuids is where the bytes of each session whose id is a canonical
	// UUID are in chunks (closedLoc), by the id's bytes; others is where
	// those of every other session are, by its id. An id is in one of
	// them only, as uuidOf says.
	uuids  uuidLocs
	others map[string]closedLoc
	chunks [][]byte
	// held is how many bytes the chunks hold, dead how many of them are
	// of sessions taken out or packed anew.
	held, dead int
	// strs is the table of shared strings (strs[0] is ""); it only grows,
	// so a frozen state shares it (Frozen.closed).
	strs  []string
	index map[string]uint32
	// agents are the packed subagents of closed sessions (agents_packed.go).
	agents packedAgents
	// scratch is where a session is packed before it is copied out at
	// its size.
	scratch []byte
}

// packedClosed is what a Frozen holds of the closed sessions: where
// their packed bytes are, in chunks whose bytes are never changed, and the
// table they index. uuids is a frozen view of closedSessions.uuids; the
// session whose id is others[i] is at otherAt[i]: a frozen state builds no
// id strings.
type packedClosed struct {
	uuids   frozenUUIDLocs
	others  []string
	otherAt []closedLoc
	chunks  [][]byte
	strs    []string
}

// closedLoc is where a packed session is: its chunk in the high 32 bits,
// its offset in the chunk in the low 32.
type closedLoc uint64

// closedChunk is the size of a chunk of packed sessions (a session larger
// than that has a chunk of its own).
const closedChunk = 64 << 10

// packedAt returns the packed session at loc in chunks.
func packedAt(chunks [][]byte, loc closedLoc) ([]byte, error) {
	ci, off := int(loc>>32), int(uint32(loc))
	if ci >= len(chunks) || off >= len(chunks[ci]) {
		return nil, errPacked
	}
	b := chunks[ci][off:]
	n, w := binary.Uvarint(b)
	if w <= 0 || n > uint64(len(b)-w) {
		return nil, errPacked
	}
	return b[w : w+int(n)], nil
}

// store appends a packed session to the chunks and returns where it is.
func (c *closedSessions) store(b []byte) closedLoc {
	need := binary.MaxVarintLen64 + len(b)
	last := len(c.chunks) - 1
	if last < 0 || cap(c.chunks[last])-len(c.chunks[last]) < need {
		c.chunks = append(c.chunks, make([]byte, 0, max(closedChunk, need)))
		last++
	}
	chunk := c.chunks[last]
	loc := closedLoc(uint64(last)<<32 | uint64(len(chunk)))
	chunk = binary.AppendUvarint(chunk, uint64(len(b)))
	chunk = append(chunk, b...)
	c.held += len(chunk) - len(c.chunks[last])
	c.chunks[last] = chunk
	return loc
}

// forget counts the bytes at loc dead, and copies the live sessions to
// new chunks once the dead are half of what the chunks hold.
func (c *closedSessions) forget(loc closedLoc) {
	b, err := packedAt(c.chunks, loc)
	if err != nil {
		panic(err) // stored by this goroutine: it cannot be damaged
	}
	c.dead += len(b) + binary.MaxVarintLen64/2
	if c.dead < closedChunk || c.dead < c.held/2 {
		return
	}
	old := c.chunks
	c.chunks, c.held, c.dead = nil, 0, 0
	moved := func(loc closedLoc) closedLoc {
		b, err := packedAt(old, loc)
		if err != nil {
			panic(err)
		}
		return c.store(b)
	}
	c.uuids.relocate(moved)
	for id, loc := range c.others {
		c.others[id] = moved(loc)
	}
}

// closedKey is a session id as the maps key it: its UUID's bytes when it
// is one (uuidOf), else the string. Made once per call (keyOf), not once
// per map operation.
type closedKey struct {
	id     string
	u      uuidKey
	isUUID bool
}

func keyOf(id string) closedKey {
	u, ok := uuidOf(id)
	return closedKey{id: id, u: u, isUUID: ok}
}

// lookup returns where the session k is.
func (c *closedSessions) lookup(k closedKey) (closedLoc, bool) {
	if k.isUUID {
		return c.uuids.get(k.u)
	}
	loc, ok := c.others[k.id]
	return loc, ok
}

// set records that the session k is at loc.
func (c *closedSessions) set(k closedKey, loc closedLoc) {
	if k.isUUID {
		c.uuids.set(k.u, loc)
		return
	}
	if c.others == nil {
		c.others = map[string]closedLoc{}
	}
	c.others[k.id] = loc
}

// remove forgets where the session k is (not its bytes: see forget).
func (c *closedSessions) remove(k closedKey) {
	if k.isUUID {
		c.uuids.remove(k.u)
		return
	}
	delete(c.others, k.id)
}

// Flags of a packed closed session, in one byte after the session's
// (sessState.flags).
const (
	closedHasTurn = packFlagsEnd << iota
	closedTurnHasReported
	closedTurnAgain
	closedTurnOwnSession // the turn's Where.SessionID is not the session's id
	closedTurnOwnID      // the turn's Where.TurnID is not its PromptUUID
)

// packable says a closed session holds nothing but what the packed form
// keeps.
func (s *sessState) packable() bool {
	return s.ended && !s.hasCtx && len(s.openTools) == 0 && len(s.agents) == 0 && len(s.pendingTasks) == 0 && len(s.side) == 0
}

func (c *closedSessions) len() int { return c.uuids.len() + len(c.others) }

// put packs s, which must be packable.
func (c *closedSessions) put(s *sessState) {
	c.ensureStrs()
	b := c.scratch[:0]
	b = c.appendShared(b, s.cwd)
	b = c.appendShared(b, s.projectDir)
	b = binary.AppendUvarint(b, s.seq)
	b = c.appendShared(b, s.branch)
	b = c.appendShared(b, s.version)
	b = appendInline(b, s.slug)
	b = appendInline(b, s.title)
	b = appendInline(b, s.lastSide)
	flags := s.flags()
	t := s.turn
	if t != nil {
		flags |= closedHasTurn
		if t.HasReported {
			flags |= closedTurnHasReported
		}
		if t.Again {
			flags |= closedTurnAgain
		}
		if t.SessionID != s.id {
			flags |= closedTurnOwnSession
		}
		if t.TurnID != t.PromptUUID {
			flags |= closedTurnOwnID
		}
	}
	b = append(b, flags)
	b = appendClosedTime(b, s.start, time.Time{})
	b = appendClosedTime(b, s.last, s.start)
	b = binary.AppendUvarint(b, uint64(s.turns))
	if t != nil {
		if flags&closedTurnOwnSession != 0 {
			b = appendID(b, t.SessionID)
		}
		if flags&closedTurnOwnID != 0 {
			b = appendID(b, t.TurnID)
		}
		b = appendInline(b, t.AgentID)
		b = c.appendShared(b, t.Project)
		b = appendID(b, t.PromptUUID)
		b = binary.AppendVarint(b, int64(t.Number))
		b = appendClosedTime(b, t.Start, s.start)
		b = appendClosedTime(b, t.End, s.start)
		b = appendInline(b, t.Prompt)
		b = binary.AppendVarint(b, int64(t.Requests))
		b = appendClosedTime(b, t.Closed, s.start)
		for _, d := range [...]time.Duration{t.SincePrevious, t.Work, t.Reported, t.Active, t.Counted} {
			b = binary.AppendVarint(b, int64(d))
		}
	}
	k := keyOf(s.id)
	if old, ok := c.lookup(k); ok {
		c.remove(k)
		c.forget(old)
	}
	c.set(k, c.store(b))
	c.scratch = b
}

// take unpacks the closed session id and removes it from the packed ones
// (nil when it is not there).
func (c *closedSessions) take(id string) *sessState {
	k := keyOf(id)
	loc, ok := c.lookup(k)
	if !ok {
		return nil
	}
	b, err := packedAt(c.chunks, loc)
	var ss closedState
	if err == nil {
		err = unpackClosed(&ss, id, b, c.strs, nil)
	}
	if err != nil {
		// Packed by put on this goroutine: it cannot be damaged.
		panic(err)
	}
	c.remove(k)
	c.forget(loc)
	s := sessionOf(&ss.SessionState, time.Time{})
	s.lastSide = ss.lastSide
	return s
}

// project returns the project (working dir, else project dir) of the
// closed session id.
func (c *closedSessions) project(id string) (string, bool) {
	loc, ok := c.lookup(keyOf(id))
	if !ok {
		return "", false
	}
	b, err := packedAt(c.chunks, loc)
	if err != nil {
		panic(err) // stored by this goroutine: it cannot be damaged
	}
	u := unpacker{strs: c.strs, b: b}
	return cmp.Or(u.str(), u.str()), true // the working dir, else the project dir
}

// freeze returns the packed sessions as they are now.
func (c *closedSessions) freeze() packedClosed {
	p := packedClosed{
		uuids:  c.uuids.freeze(),
		others: make([]string, 0, len(c.others)), otherAt: make([]closedLoc, 0, len(c.others)),
		chunks: slices.Clone(c.chunks), strs: c.strs,
	}
	for id, loc := range c.others {
		p.others = append(p.others, id)
		p.otherAt = append(p.otherAt, loc)
	}
	return p
}

// all yields the closed sessions unpacked, in no particular order; a
// damaged one ends it with its error. A UUID id's string is built as its
// session is yielded.
func (c *closedSessions) all() iter.Seq2[SessionState, error] { return c.allInto(nil) }

// allInto is all with each turn unpacked into newTurn() (nil: a Turn of
// its own).
func (c *closedSessions) allInto(newTurn func() *Turn) iter.Seq2[SessionState, error] {
	return unpackAll(func(yield func(string, closedLoc) bool) {
		for u, loc := range c.uuids.all() {
			if !yield(u.String(), loc) {
				return
			}
		}
		for id, loc := range c.others {
			if !yield(id, loc) {
				return
			}
		}
	}, c.chunks, c.strs, newTurn)
}

// all yields the frozen closed sessions; see closedSessions.all.
func (p *packedClosed) all() iter.Seq2[SessionState, error] { return p.allInto(nil) }

// allInto is all with each turn unpacked into newTurn() (see
// closedSessions.allInto).
func (p *packedClosed) allInto(newTurn func() *Turn) iter.Seq2[SessionState, error] {
	return unpackAll(func(yield func(string, closedLoc) bool) {
		for u, loc := range p.uuids.all() {
			if !yield(u.String(), loc) {
				return
			}
		}
		for i, id := range p.others {
			if !yield(id, p.otherAt[i]) {
				return
			}
		}
	}, p.chunks, p.strs, newTurn)
}

// unpackAll yields the sessions at, by id and location in chunks,
// unpacked (turns into newTurn(), unless nil); a damaged one ends it with
// its error.
func unpackAll(at iter.Seq2[string, closedLoc], chunks [][]byte, strs []string, newTurn func() *Turn) iter.Seq2[SessionState, error] {
	return func(yield func(SessionState, error) bool) {
		for id, loc := range at {
			var ss closedState
			b, err := packedAt(chunks, loc)
			if err == nil {
				err = unpackClosed(&ss, id, b, strs, newTurn)
			}
			if err != nil {
				yield(SessionState{}, err)
				return
			}
			if !yield(ss.SessionState, nil) {
				return
			}
		}
	}
}

func (c *closedSessions) appendShared(b []byte, s string) []byte {
	i, ok := c.index[s]
	if !ok {
		i = uint32(len(c.strs))
		c.strs = append(c.strs, s)
		c.index[s] = i
	}
	return binary.AppendUvarint(b, uint64(i))
}

// Times of a packed closed session: most are UTC to the millisecond (as
// transcripts write them) and take a tag and the milliseconds, or, after
// the session's start, the milliseconds since it (its other times are
// minutes or hours after it: 2 to 4 bytes where a date takes 6; 100,000
// sessions: 2 MB); others are written as gob writes them.
const (
	closedTimeZero = iota
	closedTimeMilli
	closedTimeOther
	closedTimeSince
)

// milliUTC reports whether t is UTC to the millisecond.
func milliUTC(t time.Time) bool {
	return t.Location() == time.UTC && t.Nanosecond()%1e6 == 0 && t.Equal(time.UnixMilli(t.UnixMilli()))
}

// appendClosedTime appends t, as the milliseconds since base when both
// are UTC to the millisecond (base zero: never).
func appendClosedTime(b []byte, t, base time.Time) []byte {
	switch {
	case t.IsZero():
		return append(b, closedTimeZero)
	case milliUTC(t):
		if !base.IsZero() && milliUTC(base) {
			// The difference may wrap (years apart at the ends of
			// int64): adding it back wraps back.
			b = append(b, closedTimeSince)
			return binary.AppendVarint(b, t.UnixMilli()-base.UnixMilli())
		}
		b = append(b, closedTimeMilli)
		return binary.AppendVarint(b, t.UnixMilli())
	default:
		return appendTime(append(b, closedTimeOther), t)
	}
}

// closedTime reads what appendClosedTime appended with the same base.
func (u *unpacker) closedTime(base time.Time) time.Time {
	switch u.byte() {
	case closedTimeZero:
		return time.Time{}
	case closedTimeMilli:
		return time.UnixMilli(u.varint()).UTC()
	case closedTimeOther:
		return u.time()
	case closedTimeSince:
		if !base.IsZero() {
			return time.UnixMilli(base.UnixMilli() + u.varint()).UTC()
		}
	}
	u.err, u.b = errPacked, nil
	return time.Time{}
}

func appendInline(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// closedState is a SessionState with what only the packed form keeps.
type closedState struct {
	SessionState
	lastSide string
}

// unpackClosed reads a packed closed session into ss.
// Its turn goes into newTurn() when newTurn is not nil, else into a Turn
// of its own.
func unpackClosed(ss *closedState, id string, packed []byte, strs []string, newTurn func() *Turn) error {
	u := unpacker{strs: strs, b: packed}
	*ss = closedState{}
	ss.ID = id
	ss.Cwd, ss.ProjectDir = u.str(), u.str()
	ss.Seq = u.uvarint()
	ss.Branch, ss.Version = u.str(), u.str()
	ss.Slug, ss.Title, ss.lastSide = u.inline(), u.inline(), u.inline()
	flags := u.byte()
	ss.setFlags(flags)
	ss.Start = u.closedTime(time.Time{})
	ss.Last = u.closedTime(ss.Start)
	ss.Turns = int(u.uvarint())
	if flags&closedHasTurn != 0 {
		var t *Turn
		if newTurn != nil {
			t = newTurn()
		} else {
			t = new(Turn)
		}
		*t = Turn{HasReported: flags&closedTurnHasReported != 0, Again: flags&closedTurnAgain != 0}
		t.SessionID = id
		if flags&closedTurnOwnSession != 0 {
			t.SessionID = u.id()
		}
		ownID := flags&closedTurnOwnID != 0
		if ownID {
			t.TurnID = u.id()
		}
		t.AgentID = u.inline()
		t.Project = u.str()
		t.PromptUUID = u.id()
		if !ownID {
			t.TurnID = t.PromptUUID
		}
		t.Number = int(u.varint())
		t.Start, t.End = u.closedTime(ss.Start), u.closedTime(ss.Start)
		t.Prompt = u.inline()
		t.Requests = int(u.varint())
		t.Closed = u.closedTime(ss.Start)
		for _, d := range [...]*time.Duration{&t.SincePrevious, &t.Work, &t.Reported, &t.Active, &t.Counted} {
			*d = time.Duration(u.varint())
		}
		ss.Turn = t
	}
	if u.err == nil && len(u.b) != 0 {
		u.err = errPacked
	}
	return u.err
}
