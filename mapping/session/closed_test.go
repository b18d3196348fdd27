package session

import (
	"cmp"
	"fmt"
	"iter"
	"maps"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

// filled sets every field of the struct v points to (recursively) to a
// value of its own, so that a field the packed form forgets shows. A field
// of a kind it cannot fill fails the test: the packed form must learn it.
func filled(t *testing.T, v any, skip ...string) {
	t.Helper()
	n := 0
	var fill func(f reflect.Value, name string)
	fill = func(f reflect.Value, name string) {
		n++
		switch {
		case f.Type() == reflect.TypeFor[time.Time]():
			f.Set(reflect.ValueOf(time.Unix(1_700_000_000+int64(n)*3600, int64(n)*1_000_003).UTC()))
		case f.Kind() == reflect.String:
			f.SetString(name + "-" + strconv.Itoa(n))
		case f.Kind() == reflect.Bool:
			f.SetBool(true)
		case f.Kind() == reflect.Int || f.Kind() == reflect.Int64:
			f.SetInt(int64(n) * 1_000_000_007)
		case f.Kind() == reflect.Uint64:
			f.SetUint(uint64(n) * 1_000_000_007)
		case f.Kind() == reflect.Struct:
			for i := range f.NumField() {
				fill(f.Field(i), f.Type().Field(i).Name)
			}
		case f.Kind() == reflect.Pointer && f.Type().Elem().Kind() == reflect.Struct:
			f.Set(reflect.New(f.Type().Elem()))
			fill(f.Elem(), name)
		default:
			t.Fatalf("field %s of kind %s: teach the packed closed session (closed.go) and this test to keep it", name, f.Kind())
		}
	}
	s := reflect.ValueOf(v).Elem()
fields:
	for i := range s.NumField() {
		name := s.Type().Field(i).Name
		for _, k := range skip {
			if k == name {
				continue fields
			}
		}
		fill(s.Field(i), name)
	}
}

// TestClosedSessionPackedKeepsEveryField: a closed session packed and
// unpacked again has every field it had (State's and the sidechain
// lookup's), for every shape of its turn.
func TestClosedSessionPackedKeepsEveryField(t *testing.T) {
	var full SessionState
	filled(t, &full, "OpenTools", "Agents") // a session with either is not packed
	full.Ended = true
	cases := []struct {
		name string
		edit func(*SessionState)
	}{
		{"every field set", func(*SessionState) {}},
		{"no turn", func(s *SessionState) { s.Turn = nil }},
		{"turn of the session, named by its prompt", func(s *SessionState) {
			s.Turn.SessionID, s.Turn.TurnID = s.ID, s.Turn.PromptUUID
		}},
		{"ids that are UUIDs, packed as their bytes", func(s *SessionState) {
			s.ID = "0f8fad5b-d9cb-469f-a165-70867728950e"
			s.Turn.SessionID = "7c9e6679-7425-40de-944b-e07fc1f90ae7"
			s.Turn.PromptUUID = "16fd2706-8baf-433b-82eb-8c7fada847da"
			s.Turn.TurnID = "886313e1-3b8a-5372-9b90-0c9aee199e5d"
		}},
		{"the session's id and a prompt UUID naming the turn", func(s *SessionState) {
			s.ID = "0f8fad5b-d9cb-469f-a165-70867728950e"
			s.Turn.SessionID, s.Turn.PromptUUID = s.ID, "16fd2706-8baf-433b-82eb-8c7fada847da"
			s.Turn.TurnID = s.Turn.PromptUUID
		}},
		{"ids like UUIDs but not canonical", func(s *SessionState) {
			s.Turn.SessionID = "7C9E6679-7425-40DE-944B-E07FC1F90AE7"
			s.Turn.PromptUUID = "16fd27068baf433b82eb8c7fada847da"
			s.Turn.TurnID = ""
		}},
		{"negative and zero durations, zero times", func(s *SessionState) {
			s.Turn.SincePrevious, s.Turn.Active, s.Turn.Counted = -time.Second, 0, -1
			s.Turn.Closed, s.Start = time.Time{}, time.Time{}
		}},
		{"not started, no main conversation, empty strings", func(s *SessionState) {
			s.Started, s.HasMain, s.Slug, s.Title, s.Cwd, s.Turn.Prompt = false, false, "", "", "", ""
		}},
		{"a time with a zone", func(s *SessionState) {
			s.Last = s.Last.In(time.FixedZone("", 5*3600+30*60))
		}},
		{"times to the millisecond, before 1970 and far ahead", func(s *SessionState) {
			s.Start = time.UnixMilli(1_764_000_000_123).UTC()
			s.Last = time.Date(1969, 12, 31, 23, 59, 59, 999_000_000, time.UTC)
			s.Turn.Start = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)
			s.Turn.End = time.Date(1, 1, 1, 0, 0, 0, 1_000_000, time.UTC)
			s.Turn.Closed = time.Date(292277026, 1, 1, 0, 0, 0, 0, time.UTC)
		}},
	}
	var c closedSessions
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want := full
			turn := *full.Turn
			want.Turn = &turn
			tc.edit(&want)
			s := sessionOf(&want, time.Time{})
			s.lastSide = "agent-side"
			if !s.packable() {
				t.Fatal("the session is not packable")
			}
			c.put(s)
			if p, ok := c.project(want.ID); !ok || p != cmp.Or(want.Cwd, want.ProjectDir) {
				t.Errorf("project %q, %v; want %q", p, ok, cmp.Or(want.Cwd, want.ProjectDir))
			}
			frozen := c.freeze()
			got := c.take(want.ID)
			if got == nil {
				t.Fatal("the packed session is gone")
			}
			if c.take(want.ID) != nil {
				t.Error("a session taken is still packed")
			}
			if !reflect.DeepEqual(got.state(), want) {
				t.Errorf("unpacked\n%+v\n%+v\nwant\n%+v\n%+v", got.state(), got.state().Turn, want, want.Turn)
			}
			if got.lastSide != s.lastSide {
				t.Errorf("lastSide %q, want %q", got.lastSide, s.lastSide)
			}
			n := 0
			for ss, err := range frozen.all() {
				n++
				if err != nil || !reflect.DeepEqual(ss, want) {
					t.Errorf("frozen (%v)\n%+v\nwant\n%+v", err, ss, want)
				}
			}
			if n != 1 {
				t.Errorf("frozen: %d sessions, want 1", n)
			}
		})
	}
}

// TestClosedSessionDamagedIsAnError: bytes cut short or with trailing
// garbage do not unpack.
func TestClosedSessionDamagedIsAnError(t *testing.T) {
	var full SessionState
	filled(t, &full, "OpenTools", "Agents")
	full.Ended = true
	var c closedSessions
	c.put(sessionOf(&full, time.Time{}))
	b, err := packedAt(c.chunks, c.at[full.ID])
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][]byte{b[:len(b)-1], b[:len(b)/2], b[:1], append(append([]byte{}, b...), 0)} {
		var ss closedState
		if err := unpackClosed(&ss, full.ID, bad, c.strs); err == nil {
			t.Errorf("%d of %d bytes unpacked without an error", len(bad), len(b))
		}
	}
}

// TestClosedSessionsTakenAreReclaimed: sessions packed, taken out and
// packed again, with frozen views taken along the way: every session
// still packed unpacks as it was put, each frozen view keeps what it saw,
// and the bytes of sessions taken out are reclaimed (the chunks hold no
// more than twice what is live, past the first chunk).
func TestClosedSessionsTakenAreReclaimed(t *testing.T) {
	var c closedSessions
	want := map[string]SessionState{}
	put := func(id string, turns int) {
		ss := SessionState{ID: id, Cwd: "/w/" + id[:2], Started: true, Ended: true, Turns: turns, Title: strings.Repeat("t", turns%50)}
		c.put(sessionOf(&ss, time.Time{}))
		want[id] = ss
	}
	type view struct {
		p    packedClosed
		want map[string]SessionState
	}
	var views []view
	for round := range 20 {
		for i := range 2000 {
			put(fmt.Sprintf("%02d-%05d", i%7, round*2000+i), round+i)
		}
		// Take most of them out; pack some again.
		n := 0
		for id := range want {
			if n++; n%4 == 0 {
				continue
			}
			if c.take(id) == nil {
				t.Fatalf("round %d: %s gone", round, id)
			}
			delete(want, id)
		}
		if round%5 == 2 {
			views = append(views, view{c.freeze(), maps.Clone(want)})
		}
		if c.len() != len(want) {
			t.Fatalf("round %d: %d packed, want %d", round, c.len(), len(want))
		}
	}
	check := func(name string, all iter.Seq2[SessionState, error], want map[string]SessionState) {
		t.Helper()
		n := 0
		for ss, err := range all {
			n++
			if err != nil || !reflect.DeepEqual(ss, want[ss.ID]) {
				t.Fatalf("%s: %s (%v)\n%+v\nwant\n%+v", name, ss.ID, err, ss, want[ss.ID])
			}
		}
		if n != len(want) {
			t.Fatalf("%s: %d sessions, want %d", name, n, len(want))
		}
	}
	check("live", c.all(), want)
	for _, v := range views {
		check("frozen view", v.p.all(), v.want)
	}
	live := 0
	for _, loc := range c.at {
		b, err := packedAt(c.chunks, loc)
		if err != nil {
			t.Fatal(err)
		}
		live += len(b) + 1
	}
	held := 0
	for _, ch := range c.chunks {
		held += len(ch)
	}
	if held > 2*live+closedChunk {
		t.Errorf("chunks hold %d bytes for %d live", held, live)
	}
	for _, bad := range []closedLoc{closedLoc(uint64(len(c.chunks)) << 32), closedLoc(uint32(len(c.chunks[0])))} {
		if _, err := packedAt(c.chunks, bad); err == nil {
			t.Errorf("location %x outside the chunks read without an error", uint64(bad))
		}
	}
}
