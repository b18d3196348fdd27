package session

import (
	"bytes"
	"cmp"
	"encoding/gob"
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
