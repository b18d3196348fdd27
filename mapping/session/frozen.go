package session

// A frozen state is the assembler's state at one moment, taken on the
// pipeline goroutine and read on another while the pipeline goes on (the
// periodic state write). Its three large parts are not copied as State
// holds them:
//
//   - the sessions are packed: numbers and times as bytes, strings as
//     indexes into a table that holds each working dir, branch, version
//     and project dir once (a SessionState is 232 bytes; packed, a
//     closed session takes about 90 with its table entries);
//   - the counted requests and the lines seen are shared: their sorted
//     segments are never changed but replaced by a merge (a counted
//     request's new value waits in doneIndex.over until then); only the
//     small maps of recent keys and new values are copied;
//   - a session's current turn is shared as State shares it (ownTurn).
//
// At 20,000 sessions the copy was 8 MB of a periodic write's 13 MB peak.

import (
	"encoding/binary"
	"errors"
	"maps"
	"slices"
	"time"
)

// Frozen is a State taken by Freeze; read it with Head, EachSession,
// EachDoneRequest, EachSeenKey and EachAgent, from any one goroutine.
type Frozen struct {
	head State
	// sessions holds the packed sessions, n of them; strs their strings
	// (strs[0] is ""), turns their turns in order (nil for none).
	sessions []byte
	n        int
	strs     []string
	turns    []*Turn
	closed   packedClosed
	// agents are copies of the unpacked subagents, packedAgents the
	// packed ones (their strings are closed.strs).
	agents       []AgentState
	packedAgents []string
	done         doneIndex
	seen         keySet
}

// Freeze returns the assembler's state as it is now, for reading while the
// assembler goes on. Call it between Adds.
func (a *Assembler) Freeze() *Frozen {
	n := len(a.sessions)
	// Sized up front (a closed session packs into about 50 bytes and one
	// string of its own): past a few hundred elements append grows a
	// slice by a quarter, which would allocate five times the result.
	f := &Frozen{head: a.StateHead(), n: n, sessions: make([]byte, 0, n*packedSessionBytes),
		strs: append(make([]string, 0, 1+n+n/4), ""), turns: make([]*Turn, 0, n)}
	p := packer{f: f, index: map[string]uint32{"": 0}}
	for _, s := range a.sessions {
		p.session(s)
	}
	f.closed = a.closed.freeze()
	f.agents = make([]AgentState, 0, len(a.agents))
	for _, ag := range a.agents {
		f.agents = append(f.agents, ag.state())
	}
	f.packedAgents = slices.AppendSeq(make([]string, 0, len(a.closed.agents.byID)), maps.Values(a.closed.agents.byID))
	f.done, f.seen = a.done.freeze(), a.seen.freeze()
	return f
}

// Head is the state without Sessions, DoneRequests and SeenKeys (see
// StateHead).
func (f *Frozen) Head() State { return f.head }

// EachSession calls fn with the sessions' states, at most n at a time, in
// a buffer fn must not keep; it stops at fn's first error.
func (f *Frozen) EachSession(n int, fn func([]SessionState) error) error {
	live := func(yield func(SessionState, error) bool) {
		u := unpacker{strs: f.strs, b: f.sessions}
		for i := 0; i < f.n; i++ {
			var ss SessionState
			if err := u.session(&ss, f.turns[i]); err != nil {
				yield(SessionState{}, err)
				return
			}
			if !yield(ss, nil) {
				return
			}
		}
	}
	return eachSessionBatch(live, f.closed.allInto, n, fn)
}

// EachDoneRequest calls fn with the counted requests, at most n at a time,
// in a buffer fn must not keep; it stops at fn's first error.
func (f *Frozen) EachDoneRequest(n int, fn func([]DoneRequest) error) error {
	return eachBatch(f.done.states(), n, fn)
}

// EachSeenKey calls fn with the keys of the lines seen, at most n at a
// time, in a buffer fn must not keep; it stops at fn's first error.
func (f *Frozen) EachSeenKey(n int, fn func([]uint64) error) error {
	return eachBatch(f.seen.all(), n, fn)
}

// EachAgent calls fn with the subagents, at most n at a time, in a buffer
// fn must not keep; it stops at fn's first error.
func (f *Frozen) EachAgent(n int, fn func([]AgentState) error) error {
	return eachBatch(withPacked(slices.Values(f.agents), slices.Values(f.packedAgents), f.closed.strs), n, fn)
}

// freezeCopyMax is the most recent entries a freeze copies: past it, it
// merges them into the sorted ones first and lets their map go. A map of
// recent entries grows to an eighth of the index before a merge and keeps
// its room after it (100,000 files: 2.5 MB of maps, copied by every
// periodic state write and held for good).
const freezeCopyMax = 1024

// freeze returns a view of x that later changes to x leave alone: the
// sorted segments are shared (never changed: a new value waits in over
// until a merge replaces them), the maps copied.
func (x *doneIndex) freeze() doneIndex {
	if len(x.recent)+len(x.over) > freezeCopyMax {
		x.mergeRecent()
		x.recent, x.over = nil, nil
	}
	return doneIndex{sorted: x.sorted.freeze(), recent: maps.Clone(x.recent), over: maps.Clone(x.over), wide: maps.Clone(x.wide)}
}

// freeze returns a view of s that later changes to s leave alone: the
// sorted segments are shared (they are only ever replaced by a merge), the
// recent keys copied.
func (s *keySet) freeze() keySet {
	if len(s.recent) > freezeCopyMax {
		s.mergeRecent()
		s.recent = nil
	}
	return keySet{old: s.old.freeze(), recent: maps.Clone(s.recent)}
}

// packer appends sessions to a Frozen.
type packer struct {
	f     *Frozen
	index map[string]uint32
}

// packedSessionBytes is what a session usually packs into: two times of
// 16 bytes, five string indexes and a few numbers.
const packedSessionBytes = 56

// Session flags, packed in one byte (a packed closed session adds its
// own after these, closed.go).
const (
	packStarted = 1 << iota
	packEnded
	packHasMain
	packFlagsEnd
)

// flags packs the session's flags.
func (s *sessState) flags() byte {
	var f byte
	if s.started {
		f |= packStarted
	}
	if s.ended {
		f |= packEnded
	}
	if s.hasMain {
		f |= packHasMain
	}
	return f
}

// setFlags reads the flags packed by sessState.flags into ss.
func (ss *SessionState) setFlags(f byte) {
	ss.Started, ss.Ended, ss.HasMain = f&packStarted != 0, f&packEnded != 0, f&packHasMain != 0
}

func (p *packer) session(s *sessState) {
	b := p.f.sessions
	b = binary.AppendUvarint(b, s.seq)
	b = binary.AppendUvarint(b, p.unique(s.id))
	for _, v := range [...]string{s.cwd, s.branch, s.version, s.projectDir} {
		b = binary.AppendUvarint(b, p.shared(v))
	}
	b = binary.AppendUvarint(b, p.unique(s.slug))
	b = binary.AppendUvarint(b, p.unique(s.title))
	b = append(b, s.flags())
	b = appendTime(b, s.start)
	b = appendTime(b, s.last)
	b = binary.AppendUvarint(b, uint64(s.turns))
	b = binary.AppendUvarint(b, uint64(len(s.openTools)))
	for id := range s.openTools {
		b = binary.AppendUvarint(b, p.unique(id))
	}
	b = binary.AppendUvarint(b, uint64(len(s.agents)))
	for id := range s.agents {
		b = binary.AppendUvarint(b, p.unique(id))
	}
	p.f.sessions = b
	var t *Turn
	if s.turn != nil {
		// Shared, not copied: the session copies it before changing it.
		t, s.turnShared = s.turn, true
	}
	p.f.turns = append(p.f.turns, t)
}

// unique adds a string most sessions do not share to the table.
func (p *packer) unique(s string) uint64 {
	if s == "" {
		return 0
	}
	p.f.strs = append(p.f.strs, s)
	return uint64(len(p.f.strs) - 1)
}

// shared adds a string many sessions share to the table once.
func (p *packer) shared(s string) uint64 {
	if i, ok := p.index[s]; ok {
		return uint64(i)
	}
	i := uint32(len(p.f.strs))
	p.f.strs = append(p.f.strs, s)
	p.index[s] = i
	return uint64(i)
}

// appendTime appends t as time.Time.MarshalBinary writes it, which is what
// gob writes: the unpacked time encodes to the same bytes.
func appendTime(b []byte, t time.Time) []byte {
	at := len(b)
	b = append(b, 0)
	b, err := t.AppendBinary(b)
	if err != nil {
		// A zone offset that is not whole minutes or out of range: gob
		// would fail on it too. Keep the instant, in UTC.
		b, _ = t.UTC().AppendBinary(b[:at+1])
	}
	b[at] = byte(len(b) - at - 1)
	return b
}

var errPacked = errors.New("session: damaged frozen state")

// unpacker reads the packed sessions back.
type unpacker struct {
	strs []string
	b    []byte
	err  error
}

// skip moves past n bytes read, or fails the unpacking when n is not a
// length read (a varint's n <= 0).
func (u *unpacker) skip(n int) bool {
	if n <= 0 || n > len(u.b) {
		u.err, u.b = errPacked, nil
		return false
	}
	u.b = u.b[n:]
	return true
}

func (u *unpacker) uvarint() uint64 {
	v, n := binary.Uvarint(u.b)
	if !u.skip(n) {
		return 0
	}
	return v
}

func (u *unpacker) varint() int64 {
	v, n := binary.Varint(u.b)
	if !u.skip(n) {
		return 0
	}
	return v
}

func (u *unpacker) byte() byte {
	if len(u.b) == 0 {
		u.err = errPacked
		return 0
	}
	c := u.b[0]
	u.b = u.b[1:]
	return c
}

// str reads an index into the string table.
func (u *unpacker) str() string {
	i := u.uvarint()
	if i >= uint64(len(u.strs)) {
		u.err = errPacked
		return ""
	}
	return u.strs[i]
}

// inline reads a string written with its length.
func (u *unpacker) inline() string {
	n := u.uvarint()
	if n > uint64(len(u.b)) {
		u.err, u.b = errPacked, nil
		return ""
	}
	s := string(u.b[:n])
	u.b = u.b[n:]
	return s
}

func (u *unpacker) time() time.Time {
	if len(u.b) == 0 || int(u.b[0]) >= len(u.b) {
		u.err, u.b = errPacked, nil
		return time.Time{}
	}
	n := int(u.b[0])
	var t time.Time
	if err := t.UnmarshalBinary(u.b[1 : 1+n]); err != nil {
		u.err = err
	}
	u.b = u.b[1+n:]
	return t
}

func (u *unpacker) session(ss *SessionState, turn *Turn) error {
	ss.Seq = u.uvarint()
	ss.ID = u.str()
	ss.Cwd, ss.Branch, ss.Version, ss.ProjectDir = u.str(), u.str(), u.str(), u.str()
	ss.Slug, ss.Title = u.str(), u.str()
	ss.setFlags(u.byte())
	ss.Start, ss.Last = u.time(), u.time()
	ss.Turns = int(u.uvarint())
	ss.Turn = turn
	for n := u.uvarint(); n > 0 && u.err == nil; n-- {
		ss.OpenTools = append(ss.OpenTools, u.str())
	}
	for n := u.uvarint(); n > 0 && u.err == nil; n-- {
		ss.Agents = append(ss.Agents, u.str())
	}
	return u.err
}
