package session

import (
	"encoding/binary"
	"maps"
	"math/rand/v2"
	"testing"
)

// TestUUIDLocsActAsAMap: the closed sessions' UUID index answers as a map
// would through sets, changes, removals and relocations, across the merges
// of its recent entries into its segments, for ids random or numbered (a
// shared prefix, as a generator writes them); a frozen view keeps
// answering as the map was when it was frozen.
func TestUUIDLocsActAsAMap(t *testing.T) {
	random := func(r *rand.Rand, i int) uuidKey {
		var u uuidKey
		binary.BigEndian.PutUint64(u[:], uint64(i)*0x9e3779b97f4a7c15)
		binary.BigEndian.PutUint64(u[8:], r.Uint64())
		return u
	}
	numbered := func(_ *rand.Rand, i int) uuidKey {
		var u uuidKey
		binary.BigEndian.PutUint64(u[8:], uint64(i))
		return u
	}
	for _, tc := range []struct {
		name string
		key  func(*rand.Rand, int) uuidKey
		ids  int // distinct ids drawn from
		ops  int
	}{
		{"few random ids", random, 50, 2_000},
		{"random ids over several merges", random, 20_000, 120_000},
		{"numbered ids over several merges", numbered, 20_000, 120_000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, uint64(tc.ids)))
			keys := make([]uuidKey, tc.ids)
			for i := range keys {
				keys[i] = tc.key(r, i)
			}
			var x uuidLocs
			model := map[uuidKey]closedLoc{}
			type view struct {
				f    frozenUUIDLocs
				want map[uuidKey]closedLoc
			}
			var views []view
			check := func(at int) {
				t.Helper()
				if x.len() != len(model) {
					t.Fatalf("op %d: len %d, want %d", at, x.len(), len(model))
				}
				for _, k := range keys {
					loc, ok := x.get(k)
					if want, wok := model[k]; ok != wok || loc != want {
						t.Fatalf("op %d: get %x = %x, %v; want %x, %v", at, k, loc, ok, want, wok)
					}
				}
				if got := maps.Collect(x.all()); !maps.Equal(got, model) {
					t.Fatalf("op %d: all yields %d entries, want %d (or they differ)", at, len(got), len(model))
				}
			}
			merges := 0
			for op := range tc.ops {
				k := keys[r.IntN(len(keys))]
				segs := len(x.segs)
				switch n := r.IntN(100); {
				case n < 60:
					loc := closedLoc(r.Uint64N(1 << 40))
					x.set(k, loc)
					model[k] = loc
				case n < 95:
					x.remove(k)
					delete(model, k)
				case n < 96:
					// Relocate: every location moves (closedSessions.forget).
					x.relocate(func(l closedLoc) closedLoc { return l ^ 0x5a5a })
					for k, l := range model {
						model[k] = l ^ 0x5a5a
					}
				case n < 97 && len(views) < 8:
					views = append(views, view{x.freeze(), maps.Clone(model)})
				}
				if len(x.segs) != segs || len(x.recent) == 0 && x.old > 0 {
					merges++
				}
				if op%(tc.ops/10) == 0 {
					check(op)
				}
			}
			check(tc.ops)
			for i, v := range views {
				if got := maps.Collect(v.f.all()); !maps.Equal(got, v.want) {
					t.Errorf("frozen view %d: %d entries, want %d (or they differ)", i, len(got), len(v.want))
				}
			}
			if tc.ids > uuidSegKeys && merges == 0 {
				t.Errorf("no merge in %d operations: the segments were not exercised", tc.ops)
			}
			for i, seg := range x.segs {
				if len(seg) == 0 || len(seg) > uuidSegKeys || seg[0].k != x.firsts[i] {
					t.Fatalf("segment %d: %d entries, first %x (firsts says %x)", i, len(seg), seg[0].k, x.firsts[i])
				}
				for j := 1; j < len(seg); j++ {
					if compareUUIDs(seg[j-1].k, seg[j].k) >= 0 {
						t.Fatalf("segment %d out of order at %d", i, j)
					}
				}
			}
		})
	}
}

// TestUUIDLocsMergeKeepsEveryEntryWhateverItsCount: a merge builds its
// segments from the entries there are, so a count gone wrong makes
// smaller segments, never a panic or a lost entry.
func TestUUIDLocsMergeKeepsEveryEntryWhateverItsCount(t *testing.T) {
	for _, off := range []int{-3, -1, 0, 1, 3} {
		var x uuidLocs
		want := map[uuidKey]closedLoc{}
		for i := range 50 {
			var k uuidKey
			binary.BigEndian.PutUint64(k[8:], uint64(i))
			x.set(k, closedLoc(i))
			want[k] = closedLoc(i)
		}
		x.n += off
		x.merge(nil)
		if got := maps.Collect(x.all()); !maps.Equal(got, want) {
			t.Errorf("count off by %d: %d entries after the merge, want %d", off, len(got), len(want))
		}
	}
}
