package session

import (
	"iter"
	"slices"
)

// segments is the sorted part of the dedup index (keySet, doneIndex): keys
// in order, with a value each, cut into segments of at most segmentKeys
// keys. As one array, every merge of the recent keys built a new array the
// size of the whole index while the old one was still held: the live heap
// doubled for the length of the merge (at 200,000 requests, 10 MB), and
// the collector's next goal with it. A merge now rebuilds segment by
// segment and lets each old one go as soon as it is copied, so it holds
// one segment more than the index.
//
// A frozen view (Frozen) shares the segments: they are never changed in
// place once frozen. A value changed after a freeze is changed in a copy
// of its segment's values (set), and a merge makes new segments.
type segments[V any] struct {
	segs []*segment[V]
	// firsts holds each segment's first key (a search finds the segment
	// first).
	firsts []uint64
	n      int
	// gen grows at every freeze; a segment made before it (its gen is
	// lower) is shared with a frozen view.
	gen uint32
}

type segment[V any] struct {
	keys []uint64
	vals []V
	gen  uint32
}

// segmentKeys is the most keys a segment holds: small enough that a merge
// holds little more than the index, large enough that a search finds its
// segment in a few steps.
const segmentKeys = 4096

// find returns where k is (segment and index), or -1, -1.
func (s *segments[V]) find(k uint64) (int, int) {
	i, ok := slices.BinarySearch(s.firsts, k)
	if ok {
		return i, 0
	}
	if i == 0 {
		return -1, -1
	}
	if j := search(s.segs[i-1].keys, k); j >= 0 {
		return i - 1, j
	}
	return -1, -1
}

func (s *segments[V]) has(k uint64) bool {
	i, _ := s.find(k)
	return i >= 0
}

func (s *segments[V]) get(k uint64) (V, bool) {
	if i, j := s.find(k); i >= 0 {
		return s.segs[i].vals[j], true
	}
	var zero V
	return zero, false
}

// set changes the value at (i, j), as find returned them, copying the
// segment's values first if a frozen view holds them.
func (s *segments[V]) set(i, j int, v V) {
	seg := s.segs[i]
	if seg.gen != s.gen {
		seg = &segment[V]{keys: seg.keys, vals: slices.Clone(seg.vals), gen: s.gen}
		s.segs[i] = seg
	}
	seg.vals[j] = v
}

// merge adds keys, sorted and none of them present, with their values
// (val).
func (s *segments[V]) merge(add []uint64, val func(uint64) V) {
	total := s.n + len(add)
	out := segments[V]{segs: make([]*segment[V], 0, (total+segmentKeys-1)/segmentKeys), n: total, gen: s.gen}
	var cur *segment[V]
	emit := func(k uint64, v V) {
		if cur == nil {
			size := min(segmentKeys, total-len(out.segs)*segmentKeys)
			cur = &segment[V]{keys: make([]uint64, 0, size), vals: make([]V, 0, size), gen: s.gen}
		}
		cur.keys, cur.vals = append(cur.keys, k), append(cur.vals, v)
		if len(cur.keys) == cap(cur.keys) {
			out.segs, out.firsts = append(out.segs, cur), append(out.firsts, cur.keys[0])
			cur = nil
		}
	}
	j := 0
	for i, seg := range s.segs {
		for n, k := range seg.keys {
			for j < len(add) && add[j] < k {
				emit(add[j], val(add[j]))
				j++
			}
			emit(k, seg.vals[n])
		}
		// Copied: let it go (a frozen view may still hold it).
		s.segs[i] = nil
	}
	for ; j < len(add); j++ {
		emit(add[j], val(add[j]))
	}
	*s = out
}

func (s *segments[V]) len() int { return s.n }

// all yields every key and value, in key order.
func (s *segments[V]) all() iter.Seq2[uint64, V] {
	return func(yield func(uint64, V) bool) {
		for _, seg := range s.segs {
			for i, k := range seg.keys {
				if !yield(k, seg.vals[i]) {
					return
				}
			}
		}
	}
}

// freeze returns a view of s that later changes to s leave alone.
func (s *segments[V]) freeze() segments[V] {
	s.gen++
	return segments[V]{segs: slices.Clone(s.segs), firsts: slices.Clone(s.firsts), n: s.n, gen: s.gen}
}
