package session

import (
	"bytes"
	"iter"
	"maps"
	"slices"
)

// uuidLocs is where the closed sessions whose ids are canonical UUIDs
// are: a session's location (closedLoc) by its id's 16 bytes. As a Go map
// it cost 63 bytes a session (100,000 sessions: 6.3 MB), most of it room
// to grow; here the older entries are sorted arrays of key and location
// (24 bytes each), cut into segments of uuidSegKeys, and the recent ones
// are in a map, merged into the sorted ones once they are an eighth of
// them (as the dedup index does, segments.go): about 30 bytes a session.
//
// A segment is never changed once built, so a frozen view shares them. A
// change to a key in the segments is written to the recent map (a removal
// as goneLoc) and wins over the segments until the next merge writes it
// in. Keys are compared as bytes: ids need not be random (a generator may
// number them), so segments are found by bisection, not interpolation.
type uuidLocs struct {
	segs [][]uuidLoc
	// firsts holds each segment's first key.
	firsts []uuidKey
	// old is how many entries the segments hold, n how many keys are
	// present (in the segments and not removed, or only in recent).
	old, n int
	recent map[uuidKey]closedLoc
}

// uuidLoc is an entry of a sorted segment.
type uuidLoc struct {
	k   uuidKey
	loc closedLoc
}

// goneLoc marks a key of the segments removed (in uuidLocs.recent); no
// chunk is that far.
const goneLoc = ^closedLoc(0)

// uuidSegKeys is the most entries a segment holds (96 KiB): a merge holds
// one segment more than the index.
const uuidSegKeys = 4096

func compareUUIDs(a, b uuidKey) int { return bytes.Compare(a[:], b[:]) }

// findIn returns the location of k in sorted segments segs (firsts their
// first keys).
func findIn(segs [][]uuidLoc, firsts []uuidKey, k uuidKey) (closedLoc, bool) {
	i, ok := slices.BinarySearchFunc(firsts, k, compareUUIDs)
	if ok {
		return segs[i][0].loc, true
	}
	if i == 0 {
		return 0, false
	}
	seg := segs[i-1]
	j, ok := slices.BinarySearchFunc(seg, k, func(e uuidLoc, k uuidKey) int { return compareUUIDs(e.k, k) })
	if !ok {
		return 0, false
	}
	return seg[j].loc, true
}

// get returns where the session k is.
func (x *uuidLocs) get(k uuidKey) (closedLoc, bool) {
	if loc, ok := x.recent[k]; ok {
		if loc == goneLoc {
			return 0, false
		}
		return loc, true
	}
	return findIn(x.segs, x.firsts, k)
}

// set records that the session k is at loc.
func (x *uuidLocs) set(k uuidKey, loc closedLoc) {
	if _, ok := x.get(k); !ok {
		x.n++
	}
	if x.recent == nil {
		x.recent = map[uuidKey]closedLoc{}
	}
	x.recent[k] = loc
	x.mergeIfDue()
}

// remove forgets the session k.
func (x *uuidLocs) remove(k uuidKey) {
	loc, inRecent := x.recent[k]
	if inRecent && loc == goneLoc {
		return
	}
	_, inSegs := findIn(x.segs, x.firsts, k)
	if !inRecent && !inSegs {
		return
	}
	x.n--
	if inSegs {
		if x.recent == nil {
			x.recent = map[uuidKey]closedLoc{}
		}
		x.recent[k] = goneLoc
	} else {
		delete(x.recent, k)
	}
	x.mergeIfDue()
}

func (x *uuidLocs) len() int { return x.n }

// mergeIfDue merges the recent entries into the segments once they are an
// eighth of them (mergeAt).
func (x *uuidLocs) mergeIfDue() {
	if len(x.recent) >= mergeAt(x.old) {
		x.merge(nil)
	}
}

// merge rebuilds the segments with the recent entries written in (a
// removal drops its key) and every location passed through move when it
// is not nil; recent is then empty. Each old segment is let go once
// copied (a frozen view may still hold it).
func (x *uuidLocs) merge(move func(closedLoc) closedLoc) {
	add := slices.SortedFunc(maps.Keys(x.recent), compareUUIDs)
	out := uuidLocs{n: x.n, recent: x.recent}
	var cur []uuidLoc
	put := func(k uuidKey, loc closedLoc) {
		if loc == goneLoc {
			return
		}
		if move != nil {
			loc = move(loc)
		}
		if cur == nil {
			cur = make([]uuidLoc, 0, min(uuidSegKeys, max(1, x.n-out.old)))
		}
		cur = append(cur, uuidLoc{k, loc})
		out.old++
		if len(cur) == cap(cur) {
			out.segs, out.firsts = append(out.segs, cur), append(out.firsts, cur[0].k)
			cur = nil
		}
	}
	j := 0
	for i, seg := range x.segs {
		for _, e := range seg {
			for j < len(add) && compareUUIDs(add[j], e.k) < 0 {
				put(add[j], x.recent[add[j]])
				j++
			}
			if j < len(add) && add[j] == e.k {
				put(e.k, x.recent[e.k]) // changed or removed since
				j++
				continue
			}
			put(e.k, e.loc)
		}
		x.segs[i] = nil
	}
	for ; j < len(add); j++ {
		put(add[j], x.recent[add[j]])
	}
	if cur != nil {
		// Only when n was wrong (then the segments are small, not lost).
		out.segs, out.firsts = append(out.segs, cur), append(out.firsts, cur[0].k)
	}
	clear(out.recent)
	*x = out
}

// relocate passes every location through move (closedSessions.forget
// copies the live sessions to new chunks).
func (x *uuidLocs) relocate(move func(closedLoc) closedLoc) { x.merge(move) }

// all yields every key and its location, in no particular order.
func (x *uuidLocs) all() iter.Seq2[uuidKey, closedLoc] {
	return frozenUUIDLocs{segs: x.segs, recent: x.recent}.all()
}

// freeze returns a view of the entries as they are now, which later
// changes leave alone: it shares the segments and copies the recent map
// (merged in first and let go when it holds more than freezeCopyMax).
func (x *uuidLocs) freeze() frozenUUIDLocs {
	if len(x.recent) > freezeCopyMax {
		x.merge(nil)
		x.recent = nil
	}
	return frozenUUIDLocs{segs: slices.Clone(x.segs), recent: maps.Clone(x.recent)}
}

// frozenUUIDLocs is a frozen uuidLocs: its segments and its recent map's
// entries, which win over them.
type frozenUUIDLocs struct {
	segs   [][]uuidLoc
	recent map[uuidKey]closedLoc
}

func (f frozenUUIDLocs) all() iter.Seq2[uuidKey, closedLoc] {
	return func(yield func(uuidKey, closedLoc) bool) {
		for _, seg := range f.segs {
			for _, e := range seg {
				if _, changed := f.recent[e.k]; changed {
					continue
				}
				if !yield(e.k, e.loc) {
					return
				}
			}
		}
		for k, loc := range f.recent {
			if loc == goneLoc {
				continue
			}
			if !yield(k, loc) {
				return
			}
		}
	}
}
