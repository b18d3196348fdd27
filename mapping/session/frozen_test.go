package session

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/gob"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/testonly/testbackend"
)

// gathered is a State read back from a Frozen, with its unordered slices
// sorted.
func gathered(t *testing.T, f *Frozen) State {
	t.Helper()
	st := f.Head()
	if err := f.EachSession(7, func(ss []SessionState) error { st.Sessions = append(st.Sessions, ss...); return nil }); err != nil {
		t.Fatal(err)
	}
	if err := f.EachDoneRequest(7, func(ds []DoneRequest) error { st.DoneRequests = append(st.DoneRequests, ds...); return nil }); err != nil {
		t.Fatal(err)
	}
	if err := f.EachAgent(7, func(as []AgentState) error { st.Agents = append(st.Agents, as...); return nil }); err != nil {
		t.Fatal(err)
	}
	if err := f.EachSeenKey(7, func(ks []uint64) error { st.SeenKeys = append(st.SeenKeys, ks...); return nil }); err != nil {
		t.Fatal(err)
	}
	return sortedState(st)
}

func sortedState(st State) State {
	slices.SortFunc(st.Sessions, func(a, b SessionState) int { return cmp.Compare(a.ID, b.ID) })
	for i := range st.Sessions {
		slices.Sort(st.Sessions[i].OpenTools)
		slices.Sort(st.Sessions[i].Agents)
	}
	slices.SortFunc(st.DoneRequests, func(a, b DoneRequest) int { return cmp.Compare(a.Key, b.Key) })
	slices.Sort(st.SeenKeys)
	slices.SortFunc(st.Requests, func(a, b RequestState) int { return cmp.Compare(a.Seq, b.Seq) })
	slices.SortFunc(st.Agents, func(a, b AgentState) int { return cmp.Compare(a.Seq, b.Seq) })
	slices.SortFunc(st.Tools, func(a, b ToolState) int { return cmp.Compare(a.Seq, b.Seq) })
	slices.Sort(st.DoneTools)
	slices.SortFunc(st.Early, func(a, b EarlyState) int { return cmp.Compare(a.ID, b.ID) })
	return st
}

// gobOf is what a state file would hold of st.
func gobOf(t *testing.T, st State) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(st); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestFrozenStateIsTheStateWhenFrozen freezes real trees' assemblers at
// several points, goes on reading (and reads every line again, so that
// counted requests get their later copies), and checks that the frozen
// state still encodes to exactly what State gave at the freeze.
func TestFrozenStateIsTheStateWhenFrozen(t *testing.T) {
	root := testbackend.CorpusDir(t)
	for _, tree := range []string{"aistrad", "eduardodmb", "spotter", "swordintel"} {
		lines := treeLines(t, filepath.Join(root, tree))
		if len(lines) == 0 {
			t.Fatalf("%s: no lines", tree)
		}
		for _, frac := range []int{2, 5, 8, 10} {
			now := time.Unix(0, 0)
			a := New(Config{}, newTally())
			cut := len(lines) * frac / 10
			feed(a, lines[:cut], now)
			a.Flush(now.Add(time.Minute), false)
			want := gobOf(t, sortedState(a.State()))
			for _, s := range a.sessions {
				s.turnShared = false // as if State had not been called: Freeze alone must share them
			}
			f := a.Freeze()
			if got := gobOf(t, gathered(t, f)); !bytes.Equal(got, want) {
				t.Fatalf("%s cut at %d/10: the frozen state differs from State at once", tree, frac)
			}
			feed(a, lines[cut:], now)
			feed(a, lines, now.Add(time.Hour))
			a.Flush(now.Add(2*time.Hour), true)
			if got := gobOf(t, gathered(t, f)); !bytes.Equal(got, want) {
				t.Errorf("%s cut at %d/10: the frozen state changed as the assembler went on", tree, frac)
			}
		}
	}
}

// TestFrozenDoneIndexKeepsValuesChangedLater: a counted request's value
// changed in place after a freeze (a later, better copy) changes in the
// assembler only.
func TestFrozenDoneIndexKeepsValuesChangedLater(t *testing.T) {
	var x doneIndex
	n := uint64(3 * mergeAt(0))
	for k := uint64(1); k <= n; k++ {
		x.put(k, doneReq{out: int64(k)})
	}
	var keys []uint64
	for k := range x.sorted.all() {
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		t.Fatal("no merge: the values are not in the sorted segments")
	}
	frozen := x.freeze()
	changed := keys[len(keys)/2]
	x.put(changed, doneReq{out: 1 << 20})
	x.put(n+1, doneReq{out: 7})
	x.put(keys[0], doneReq{out: 1 << 40}) // too wide for doneVal: moves to wide
	if d, _ := x.get(changed); d.out != 1<<20 {
		t.Fatalf("live value %d, want %d", d.out, 1<<20)
	}
	if d, _ := frozen.get(changed); d.out != int64(changed) {
		t.Errorf("frozen value %d, want %d", d.out, changed)
	}
	if d, _ := frozen.get(keys[0]); d.out != int64(keys[0]) {
		t.Errorf("frozen value of the widened key %d, want %d", d.out, keys[0])
	}
	if _, ok := frozen.get(n + 1); ok {
		t.Error("a request counted after the freeze is in the frozen index")
	}
	if frozen.len() != int(n) {
		t.Errorf("frozen index holds %d requests, want %d", frozen.len(), n)
	}
}

// TestFrozenPendingRequestKeepsItsAdvisorUsage: a pending request's
// better copy, read after a freeze, changes its advisor usage in the
// assembler only (the frozen head once shared the slice it was rewritten
// into).
func TestFrozenPendingRequestKeepsItsAdvisorUsage(t *testing.T) {
	line := func(uuid string, out, advOut int64) string {
		return withUsage(t, A{UUID: uuid, Parent: "u1", Session: sessA, Sec: 1, Msg: "msg_1", Req: "req_1", In: 3, Out: out}.String(),
			map[string]any{"iterations": []any{advisorIt("claude-opus-5", 900, advOut)}}, nil, nil)
	}
	f := newFeeder(t, Config{})
	f.add(sessionPath(sessA), at(1), U{UUID: "u1", Session: sessA, Sec: 0, Text: "Plan the refactor."}.String(), line("a1", 40, 10))
	frozen := f.asm.Freeze()
	f.add(sessionPath(sessA), at(2), line("a2", 60, 50))
	head := frozen.Head()
	if len(head.Requests) != 1 || len(head.Requests[0].Advisor) != 1 {
		t.Fatalf("frozen pending requests = %+v, want msg_1 with one advisor iteration", head.Requests)
	}
	if got := head.Requests[0].Advisor[0].Output; got != 10 {
		t.Errorf("frozen advisor output = %d, want 10 (the line read before the freeze)", got)
	}
	if got := f.asm.StateHead().Requests[0].Advisor[0].Output; got != 50 {
		t.Errorf("live advisor output = %d, want 50", got)
	}
}

// TestFreezeMergesManyRecentEntriesFirst: a freeze with more than
// freezeCopyMax recent entries merges them into the sorted segments and
// lets their maps go, instead of copying them; the frozen view and the
// live index still answer for every key, and later changes stay out of
// the frozen view.
func TestFreezeMergesManyRecentEntriesFirst(t *testing.T) {
	for _, n := range []uint64{freezeCopyMax, freezeCopyMax + 1, 3 * freezeCopyMax} {
		t.Run(fmt.Sprint(n, " recent"), func(t *testing.T) {
			var x doneIndex
			var s keySet
			var u uuidLocs
			uk := func(k uint64) uuidKey {
				var b uuidKey
				binary.BigEndian.PutUint64(b[8:], k)
				return b
			}
			for k := uint64(1); k <= n; k++ {
				x.put(k, doneReq{out: int64(k)})
				s.add(k)
				u.set(uk(k), closedLoc(k))
			}
			if len(x.recent) != int(n) || len(s.recent) != int(n) || len(u.recent) != int(n) {
				t.Fatalf("%d, %d, %d recent before the freeze, want %d", len(x.recent), len(s.recent), len(u.recent), n)
			}
			fx, fs, fu := x.freeze(), s.freeze(), u.freeze()
			merged := n > freezeCopyMax
			for name, recent := range map[string]int{"requests": len(x.recent), "keys": len(s.recent), "uuids": len(u.recent)} {
				if (recent == 0) != merged {
					t.Errorf("%s: %d recent after the freeze, merged first: %v", name, recent, merged)
				}
			}
			x.put(n+1, doneReq{out: 1})
			x.put(1, doneReq{out: 1 << 20})
			s.add(n + 1)
			u.set(uk(n+1), 1)
			u.remove(uk(1))
			for k := uint64(1); k <= n; k++ {
				if d, ok := fx.get(k); !ok || d.out != int64(k) {
					t.Fatalf("frozen request %d: %d, %v", k, d.out, ok)
				}
				if !fs.has(k) {
					t.Fatalf("frozen key %d missing", k)
				}
				want := int64(k)
				if k == 1 {
					want = 1 << 20
				}
				if d, ok := x.get(k); !ok || d.out != want {
					t.Fatalf("live request %d: %d, %v; want %d", k, d.out, ok, want)
				}
				if !s.has(k) {
					t.Fatalf("live key %d missing", k)
				}
				if loc, ok := u.get(uk(k)); k > 1 && (!ok || loc != closedLoc(k)) {
					t.Fatalf("live uuid %d: %x, %v", k, loc, ok)
				}
			}
			if _, ok := fx.get(n + 1); ok || fs.has(n+1) {
				t.Error("a key added after the freeze is in the frozen view")
			}
			if got := maps.Collect(fu.all()); len(got) != int(n) || got[uk(1)] != 1 {
				t.Errorf("frozen uuids: %d, the first at %x; want %d, at 1", len(got), got[uk(1)], n)
			}
			if _, ok := u.get(uk(1)); ok {
				t.Error("a uuid removed after the freeze is still there")
			}
		})
	}
}
