package session

import (
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSegmentsAgreeWithAMapAndFrozenViewsStayAsTheyWere: keys merged in
// batches and values changed in place, over many segments, with views
// frozen along the way: the live segments hold what a map holds, in key
// order, and each frozen view what the map held when it was frozen.
func TestSegmentsAgreeWithAMapAndFrozenViewsStayAsTheyWere(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var s segments[uint64]
	model := map[uint64]uint64{}
	type view struct {
		s    segments[uint64]
		want map[uint64]uint64
	}
	var views []view
	check := func(name string, s *segments[uint64], want map[uint64]uint64) {
		t.Helper()
		got := map[uint64]uint64{}
		var order []uint64
		for k, v := range s.all() {
			got[k] = v
			order = append(order, k)
		}
		if !maps.Equal(got, want) || s.len() != len(want) || !slices.IsSorted(order) || len(order) != len(want) {
			t.Fatalf("%s: %d keys (len %d, sorted %v), want %d", name, len(got), s.len(), slices.IsSorted(order), len(want))
		}
		for k, v := range want {
			if g, ok := s.get(k); !ok || g != v {
				t.Fatalf("%s: get(%x) = %d, %v; want %d", name, k, g, ok, v)
			}
		}
		for range 100 {
			k := rng.Uint64()
			if _, in := want[k]; s.has(k) != in {
				t.Fatalf("%s: has(%x) = %v, want %v", name, k, s.has(k), in)
			}
		}
	}
	for round := range 12 {
		// A batch of new keys (some rounds more than a segment's worth).
		n := 1 + rng.IntN(3*segmentKeys)
		batch := map[uint64]uint64{}
		for len(batch) < n {
			k := rng.Uint64()
			if _, dup := model[k]; !dup {
				batch[k] = rng.Uint64()
			}
		}
		s.merge(slices.Sorted(maps.Keys(batch)), func(k uint64) uint64 { return batch[k] })
		maps.Copy(model, batch)
		// Values changed in place.
		for k := range model {
			if rng.IntN(10) == 0 {
				v := rng.Uint64()
				i, j := s.find(k)
				if i < 0 {
					t.Fatalf("round %d: find(%x) = -1", round, k)
				}
				s.set(i, j, v)
				model[k] = v
			}
		}
		if round%3 == 1 {
			views = append(views, view{s.freeze(), maps.Clone(model)})
		}
		check("live", &s, model)
	}
	for i := range views {
		check("frozen view", &views[i].s, views[i].want)
	}
	// Keys at the ends of the range and at segment boundaries.
	var b segments[uint64]
	edge := []uint64{0, 1, 1 << 63, ^uint64(0) - 1, ^uint64(0)}
	b.merge(edge, func(k uint64) uint64 { return k })
	for _, k := range edge {
		if v, ok := b.get(k); !ok || v != k {
			t.Errorf("edge key %x: %d, %v", k, v, ok)
		}
	}
	if len(s.firsts) < 10 {
		t.Fatalf("%d segments: the test should span many", len(s.firsts))
	}
	for _, first := range s.firsts {
		_, before := model[first-1]
		if !s.has(first) || s.has(first-1) != before {
			t.Errorf("segment boundary %x: has %v, key before %v (want %v)", first, s.has(first), s.has(first-1), before)
		}
	}
}
