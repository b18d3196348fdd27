package session

import (
	"encoding/binary"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
)

// u64Codec packs a uint64 as a varint: values of every length.
type u64Codec struct{}

func (u64Codec) append(dst []byte, v uint64) []byte { return binary.AppendUvarint(dst, v) }
func (u64Codec) read(b []byte) (uint64, int)        { return binary.Uvarint(b) }
func (c u64Codec) size(b []byte) int                { _, n := c.read(b); return n }

// TestSegmentsAgreeWithAMapAndFrozenViewsStayAsTheyWere: keys merged in
// batches and values changed by later merges, over many segments, with
// views frozen along the way: the live segments hold what a map holds, in
// key order, and each frozen view what the map held when it was frozen.
func TestSegmentsAgreeWithAMapAndFrozenViewsStayAsTheyWere(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var s segments[uint64, u64Codec]
	model := map[uint64]uint64{}
	type view struct {
		s    segments[uint64, u64Codec]
		want map[uint64]uint64
	}
	var views []view
	check := func(name string, s *segments[uint64, u64Codec], want map[uint64]uint64) {
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
		// Values of present keys changed in the same merge, and in a
		// merge of changes only: values of every varint length.
		changed := map[uint64]uint64{}
		for k := range model {
			if rng.IntN(10) == 0 {
				changed[k] = rng.Uint64() >> rng.IntN(64)
			}
		}
		s.merge(slices.Sorted(maps.Keys(batch)), func(k uint64) uint64 { return batch[k] },
			func(k uint64) (uint64, bool) { v, ok := changed[k]; return v, ok })
		maps.Copy(model, batch)
		maps.Copy(model, changed)
		if round%2 == 0 {
			clear(changed)
			for k := range model {
				if rng.IntN(20) == 0 {
					changed[k] = rng.Uint64() >> rng.IntN(64)
				}
			}
			s.merge(nil, nil, func(k uint64) (uint64, bool) { v, ok := changed[k]; return v, ok })
			maps.Copy(model, changed)
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
	var b segments[uint64, u64Codec]
	edge := []uint64{0, 1, 1 << 63, ^uint64(0) - 1, ^uint64(0)}
	b.merge(edge, func(k uint64) uint64 { return k }, nil)
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

// TestSetSegmentsAgreeWithAMap: a set's segments (no values) are merged
// by mergeKeys; over many segments, with views frozen along the way, keys
// lists every key in order and has finds them, in the live set and in
// each view as it was.
func TestSetSegmentsAgreeWithAMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	type set = segments[struct{}, noVals]
	var s set
	model := map[uint64]bool{}
	type view struct {
		s    set
		want []uint64
	}
	var views []view
	check := func(name string, s *set, want []uint64) {
		t.Helper()
		got := slices.Collect(s.keys())
		if !slices.Equal(got, want) || s.len() != len(want) {
			t.Fatalf("%s: %d keys listed (len %d), want %d in order", name, len(got), s.len(), len(want))
		}
		for _, k := range want {
			if !s.has(k) {
				t.Fatalf("%s: key %x lost", name, k)
			}
		}
		for range 100 {
			k := rng.Uint64()
			if !slices.Contains(want, k) && s.has(k) {
				t.Fatalf("%s: has(%x) for a key never added", name, k)
			}
		}
	}
	for round := range 10 {
		n := 1 + rng.IntN(3*segmentKeys)
		batch := map[uint64]bool{}
		for len(batch) < n {
			if k := rng.Uint64(); !model[k] {
				batch[k] = true
			}
		}
		s.merge(slices.Sorted(maps.Keys(batch)), func(uint64) struct{} { return struct{}{} }, nil)
		maps.Copy(model, batch)
		want := slices.Sorted(maps.Keys(model))
		if round%3 == 1 {
			views = append(views, view{s.freeze(), want})
		}
		check("live", &s, want)
	}
	for i := range views {
		check("frozen view", &views[i].s, views[i].want)
	}
	if len(s.firsts) < 10 {
		t.Fatalf("%d segments: the test should span many", len(s.firsts))
	}
}
