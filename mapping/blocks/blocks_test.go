package blocks

import (
	"math/rand"
	"sort"
	"testing"
	"time"
)

var bounds = []float64{1e3, 1e4, 1e5, 1e6}

func ts(s string) time.Time { return at(s) }

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t
}

type ent struct {
	t   time.Time
	tok int64
}

// naive is ccusage's rule written out over sorted entries: the reference
// the tracker is checked against.
func naive(es []ent) []Block {
	es = append([]ent(nil), es...)
	sort.SliceStable(es, func(i, j int) bool { return es[i].t.Before(es[j].t) })
	var out []Block
	for _, e := range es {
		n := len(out) - 1
		if n < 0 || e.t.Sub(out[n].Start) > Length || e.t.Sub(out[n].Last) > Length {
			s := e.t.Truncate(time.Hour).UTC()
			out = append(out, Block{Start: s, End: s.Add(Length), First: e.t.UTC()})
			n++
		}
		out[n].Last = e.t.UTC()
		out[n].Entries++
		out[n].Tokens.Input += e.tok
	}
	return out
}

func TestBlocksFollowCcusageRule(t *testing.T) {
	for _, tc := range []struct {
		name   string
		times  []string
		starts []string
	}{
		{"one entry floors to the hour", []string{"2026-01-01T10:55:30Z"}, []string{"2026-01-01T10:00:00Z"}},
		{"entries within five hours share a block", []string{"2026-01-01T10:10:00Z", "2026-01-01T12:00:00Z", "2026-01-01T14:59:59Z"}, []string{"2026-01-01T10:00:00Z"}},
		{"an entry exactly at the end stays in the block", []string{"2026-01-01T10:10:00Z", "2026-01-01T15:00:00Z"}, []string{"2026-01-01T10:00:00Z"}},
		{"an entry a millisecond past the end starts a block", []string{"2026-01-01T10:10:00Z", "2026-01-01T15:00:00.001Z"}, []string{"2026-01-01T10:00:00Z", "2026-01-01T15:00:00Z"}},
		{"a gap over five hours starts a block", []string{"2026-01-01T10:10:00Z", "2026-01-01T18:30:00Z"}, []string{"2026-01-01T10:00:00Z", "2026-01-01T18:00:00Z"}},
		{"an entry at a whole hour starts its block there", []string{"2026-01-01T10:00:00Z", "2026-01-01T15:00:00Z", "2026-01-01T15:00:00.5Z"}, []string{"2026-01-01T10:00:00Z", "2026-01-01T15:00:00Z"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := NewTracker(bounds, 0)
			for _, s := range tc.times {
				tr.Add(at(s), true, Tokens{Input: 1}, 0)
			}
			bs := tr.Blocks()
			if len(bs) != len(tc.starts) {
				t.Fatalf("%d blocks %v, want starts %v", len(bs), bs, tc.starts)
			}
			for i, s := range tc.starts {
				if !bs[i].Start.Equal(at(s)) || !bs[i].End.Equal(at(s).Add(Length)) {
					t.Errorf("block %d: %v–%v, want start %s", i, bs[i].Start, bs[i].End, s)
				}
			}
		})
	}
}

func TestBlocksAreTheSameInAnyOrder(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	base := at("2026-03-01T00:00:00Z")
	for round := 0; round < 200; round++ {
		n := 1 + rng.Intn(60)
		es := make([]ent, n)
		for i := range es {
			// Clustered times, some on whole hours, gaps of all sizes.
			d := time.Duration(rng.Int63n(int64(72 * time.Hour)))
			if rng.Intn(5) == 0 {
				d = d.Truncate(time.Hour)
			}
			es[i] = ent{base.Add(d.Truncate(time.Millisecond)), rng.Int63n(1000)}
		}
		want := naive(es)
		for perm := 0; perm < 3; perm++ {
			rng.Shuffle(len(es), func(i, j int) { es[i], es[j] = es[j], es[i] })
			tr := NewTracker(bounds, 0)
			for _, e := range es {
				tr.Add(e.t, true, Tokens{Input: e.tok}, 0)
			}
			got := tr.Blocks()
			if len(got) != len(want) {
				t.Fatalf("round %d: %d blocks, want %d", round, len(got), len(want))
			}
			for i := range want {
				g, w := got[i], want[i]
				if !g.Start.Equal(w.Start) || !g.First.Equal(w.First) || !g.Last.Equal(w.Last) || g.Entries != w.Entries || g.Tokens != w.Tokens {
					t.Fatalf("round %d block %d: got %+v, want %+v", round, i, g, w)
				}
			}
		}
	}
}

func TestActiveBlockAndProjection(t *testing.T) {
	tr := NewTracker(bounds, 0)
	tr.Add(at("2026-11-25T14:10:00Z"), true, Tokens{Input: 100, CacheRead: 500}, 1.0)
	tr.Add(at("2026-11-25T15:10:00Z"), true, Tokens{Output: 600}, 0.5)
	for _, tc := range []struct {
		name   string
		now    string
		active bool
	}{
		{"before the end, last entry recent", "2026-11-25T18:00:00Z", true},
		{"at the end", "2026-11-25T19:00:00Z", false},
		{"after the end", "2026-11-25T20:00:00Z", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr.Settle(at(tc.now))
			s := tr.Summary(at(tc.now))
			if (s.Active != nil) != tc.active {
				t.Fatalf("active %v, want %v", s.Active != nil, tc.active)
			}
			if s.Started != 1 {
				t.Errorf("started %d, want 1", s.Started)
			}
			if tc.active && s.Finished.Count != 0 || !tc.active && s.Finished.Count != 1 {
				t.Errorf("finished %d blocks", s.Finished.Count)
			}
		})
	}
	b := tr.Summary(at("2026-11-25T18:00:00Z")).Active
	rate, perHour, ok := b.BurnRate()
	// 1200 tokens over the 60 minutes from the first entry to the last.
	if !ok || rate != 20 || perHour != 1.5 {
		t.Fatalf("burn rate %v %v %v, want 20 tokens/min, $1.5/h", rate, perHour, ok)
	}
	// 60 minutes left at 18:00: 1200 + 20*60 tokens, $1.5 + $1.5.
	tok, usd, ok := b.Projection(at("2026-11-25T18:00:00Z"))
	if !ok || tok != 2400 || usd != 3 {
		t.Fatalf("projection %v %v %v, want 2400 tokens, $3", tok, usd, ok)
	}
	// ccusage rounds the minutes left: 59m40s is 60, 59m20s is 59.
	for at, want := range map[string]float64{"2026-11-25T18:00:20Z": 2400, "2026-11-25T18:00:40Z": 2380, "2026-11-25T20:00:00Z": 1200} {
		if tok, _, _ := b.Projection(ts(at)); tok != want {
			t.Errorf("projection at %s: %v tokens, want %v", at, tok, want)
		}
	}
	one := NewTracker(bounds, 0)
	one.Add(at("2026-11-25T14:10:00Z"), true, Tokens{Input: 1}, 0)
	if _, _, ok := one.Blocks()[0].BurnRate(); ok {
		t.Error("a block of one instant has a burn rate (ccusage shows none)")
	}
}

func TestGrowthJoinsItsBlock(t *testing.T) {
	tr := NewTracker(bounds, 0)
	tr.Add(at("2026-01-01T10:10:00Z"), true, Tokens{Output: 5}, 0)
	tr.Add(at("2026-01-01T11:30:00Z"), false, Tokens{Output: 7}, 0)
	bs := tr.Blocks()
	if len(bs) != 1 || bs[0].Tokens.Output != 12 || bs[0].Entries != 1 || !bs[0].Last.Equal(at("2026-01-01T10:10:00Z")) {
		t.Fatalf("blocks %+v: growth must add tokens without moving the block's last entry", bs)
	}
}

func TestFoldingKeepsCountsAndBoundsMemory(t *testing.T) {
	es := []ent{}
	base := at("2024-01-01T00:00:00Z")
	for d := 0; d < 60; d++ {
		for h := 0; h < 10; h++ {
			es = append(es, ent{base.Add(time.Duration(d*24+h)*time.Hour + 17*time.Minute), int64(100 * (h + 1))})
		}
	}
	want := naive(es)
	tr := NewTracker(bounds, 48)
	for _, e := range es {
		tr.Add(e.t, true, Tokens{Input: e.tok}, 0)
	}
	if len(tr.buckets) > 48 {
		t.Fatalf("%d buckets kept, bound 48", len(tr.buckets))
	}
	tr.Settle(es[len(es)-1].t.Add(10 * Length))
	s := tr.Summary(es[len(es)-1].t.Add(10 * Length))
	if s.Started != int64(len(want)) || s.Finished.Count != uint64(len(want)) {
		t.Fatalf("started %d, finished %d, want %d", s.Started, s.Finished.Count, len(want))
	}
	var sum float64
	for _, b := range want {
		sum += float64(b.Tokens.Total())
	}
	if s.Finished.Sum != sum {
		t.Fatalf("histogram sum %v, want %v", s.Finished.Sum, sum)
	}
	if tr.Add(base, true, Tokens{Input: 1}, 0) || tr.Late() != 1 {
		t.Fatal("an entry within the folded history must count as late")
	}
	var st State = tr.State()
	back := NewTracker(bounds, 48)
	if err := back.Restore(st); err != nil {
		t.Fatal(err)
	}
	if got := back.Summary(es[len(es)-1].t.Add(10 * Length)); got.Started != s.Started || got.Finished.Sum != s.Finished.Sum || back.Late() != 1 {
		t.Fatalf("restored summary %+v, want %+v", got, s)
	}
	if err := NewTracker([]float64{1}, 0).Restore(st); err == nil {
		t.Error("a state of another histogram layout restored")
	}
}

func TestUnplaceableUsage(t *testing.T) {
	tr := NewTracker(bounds, 0)
	if tr.Add(time.Time{}, true, Tokens{Input: 1}, 0) || tr.Add(time.Unix(-5, 0), true, Tokens{Input: 1}, 0) {
		t.Fatal("usage without a time (or before 1970) placed")
	}
	if len(tr.Blocks()) != 0 {
		t.Fatal("blocks from unplaceable usage")
	}
}

func TestBlockAtIsTheWindowHoldingATime(t *testing.T) {
	tr := NewTracker(bounds, 0)
	tr.Add(at("2026-01-01T10:10:00Z"), true, Tokens{Input: 5}, 0)
	tr.Add(at("2026-01-01T11:10:00Z"), true, Tokens{Input: 7}, 0)
	for s, want := range map[string]int64{"2026-01-01T10:00:00Z": 12, "2026-01-01T14:30:00Z": 12, "2026-01-01T15:00:00Z": 12, "2026-01-01T15:00:01Z": -1, "2026-01-01T09:59:59Z": -1} {
		b, ok := tr.BlockAt(at(s))
		if got := map[bool]int64{true: b.Tokens.Total(), false: -1}[ok]; got != want {
			t.Errorf("BlockAt(%s) tokens %d, want %d", s, got, want)
		}
	}
}

func TestSettledHistogramOnlyGrows(t *testing.T) {
	tr := NewTracker(bounds, 0)
	tr.Add(at("2026-01-01T10:10:00Z"), true, Tokens{Input: 900}, 0)
	tr.Add(at("2026-01-01T18:10:00Z"), true, Tokens{Input: 5}, 0)
	now := at("2026-01-01T19:00:00Z")
	tr.Settle(now)
	tr.Settle(now)
	h := tr.Summary(now).Finished
	if h.Count != 1 || h.Sum != 900 || h.Counts[0] != 1 {
		t.Fatalf("histogram %+v: want the finished block once (the active one not yet)", h)
	}
	// A copy read later grows the finished block past a bound: the block
	// keeps the total it was observed with, so no bucket goes down.
	tr.Add(at("2026-01-01T10:20:00Z"), false, Tokens{Input: 5000}, 0)
	tr.Settle(now)
	if h2 := tr.Summary(now).Finished; h2.Count != 1 || h2.Counts[0] != 1 || h2.Sum != 900 {
		t.Fatalf("histogram %+v after growth: want it unchanged", h2)
	}
	// The active block is observed once it ends.
	tr.Settle(at("2026-01-02T00:00:00Z"))
	if h3 := tr.Summary(now).Finished; h3.Count != 2 || h3.Sum != 905 {
		t.Fatalf("histogram %+v: want both blocks", h3)
	}
}
