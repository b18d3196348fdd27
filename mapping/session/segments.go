package session

import (
	"bytes"
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
// The values are packed (valCodec): a request's counts are small numbers,
// and as varints they take 20 bytes where 32-bit fields took 40 (200,000
// requests: 4 MB). A segment keeps where every valStride-th value starts,
// so a lookup decodes at most valStride values.
//
// A segment is never changed once built, so a frozen view (Frozen)
// shares them: a value that changes is kept beside the segments until the
// next merge writes it in (doneIndex.over).
type segments[V any, C valCodec[V]] struct {
	segs []*segment
	// firsts holds each segment's first key (a search finds the segment
	// first).
	firsts []uint64
	n      int
}

type segment struct {
	keys []uint64
	// vals holds the values, packed one after another; offs where the
	// values 0, valStride, 2·valStride... start (nil when values take no
	// bytes).
	vals []byte
	offs []uint32
}

// valCodec packs the values of a segments: append writes v, read returns
// the value at the start of b and its length, size only the length.
type valCodec[V any] interface {
	append(dst []byte, v V) []byte
	read(b []byte) (V, int)
	size(b []byte) int
}

// noVals is the codec of a set: no value, no bytes.
type noVals struct{}

func (noVals) append(dst []byte, _ struct{}) []byte { return dst }
func (noVals) read([]byte) (struct{}, int)          { return struct{}{}, 0 }
func (noVals) size([]byte) int                      { return 0 }

// segmentKeys is the most keys a segment holds: small enough that a merge
// holds little more than the index, large enough that a search finds its
// segment in a few steps.
const segmentKeys = 4096

// valStride is how many values follow each kept offset.
const valStride = 16

// find returns where k is (segment and index), or -1, -1.
func (s *segments[V, C]) find(k uint64) (int, int) {
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

func (s *segments[V, C]) has(k uint64) bool {
	i, _ := s.find(k)
	return i >= 0
}

func (s *segments[V, C]) get(k uint64) (V, bool) {
	if i, j := s.find(k); i >= 0 {
		return s.value(s.segs[i], j), true
	}
	var zero V
	return zero, false
}

// value decodes the value at index j of seg.
func (s *segments[V, C]) value(seg *segment, j int) V {
	var c C
	if seg.offs == nil {
		v, _ := c.read(nil)
		return v
	}
	b := seg.vals[seg.offs[j/valStride]:]
	for range j % valStride {
		b = b[c.size(b):]
	}
	v, _ := c.read(b)
	return v
}

// merge adds keys, sorted and none of them present, with their values
// (val). over, when not nil, gives new values for keys already present.
func (s *segments[V, C]) merge(add []uint64, val func(uint64) V, over func(uint64) (V, bool)) {
	var c C
	if s.valueless() {
		s.mergeKeys(add)
		return
	}
	total := s.n + len(add)
	out := segments[V, C]{segs: make([]*segment, 0, (total+segmentKeys-1)/segmentKeys), n: total}
	var cur *segment
	// Values are packed in scratch and copied out at their size when
	// the segment is full.
	var scratch []byte
	var offs []uint32
	put := func(k uint64, packed []byte) {
		if cur == nil {
			size := min(segmentKeys, total-len(out.segs)*segmentKeys)
			cur = &segment{keys: make([]uint64, 0, size)}
			scratch, offs = scratch[:0], offs[:0]
		}
		if len(cur.keys)%valStride == 0 {
			offs = append(offs, uint32(len(scratch)))
		}
		cur.keys = append(cur.keys, k)
		scratch = append(scratch, packed...)
		if len(cur.keys) == cap(cur.keys) {
			if len(scratch) > 0 {
				cur.vals, cur.offs = bytes.Clone(scratch), slices.Clone(offs)
			}
			out.segs, out.firsts = append(out.segs, cur), append(out.firsts, cur.keys[0])
			cur = nil
		}
	}
	var one []byte
	pack := func(v V) []byte {
		one = c.append(one[:0], v)
		return one
	}
	j := 0
	for i, seg := range s.segs {
		b := seg.vals
		for _, k := range seg.keys {
			for j < len(add) && add[j] < k {
				put(add[j], pack(val(add[j])))
				j++
			}
			n := c.size(b)
			if v, ok := lookup(over, k); ok {
				put(k, pack(v))
			} else {
				put(k, b[:n])
			}
			b = b[n:]
		}
		// Copied: let it go (a frozen view may still hold it).
		s.segs[i] = nil
	}
	for ; j < len(add); j++ {
		put(add[j], pack(val(add[j])))
	}
	*s = out
}

// valueless reports whether values take no bytes (a set, noVals).
func (s *segments[V, C]) valueless() bool {
	var c C
	var zero V
	return len(c.append(nil, zero)) == 0
}

// mergeKeys is merge for a set: the keys alone, merged in order into
// segments of segmentKeys, without a value to size or copy for each (a
// third less time for a set of tool calls). It is a function of its own:
// merge with the values skipped by a flag was 15 % slower on 100,000
// adds to a keySet (33-37 ms against 29-33, 5 alternated runs each).
func (s *segments[V, C]) mergeKeys(add []uint64) {
	total := s.n + len(add)
	out := segments[V, C]{segs: make([]*segment, 0, (total+segmentKeys-1)/segmentKeys), n: total}
	var cur *segment
	put := func(k uint64) {
		if cur == nil {
			cur = &segment{keys: make([]uint64, 0, min(segmentKeys, total-len(out.segs)*segmentKeys))}
		}
		cur.keys = append(cur.keys, k)
		if len(cur.keys) == cap(cur.keys) {
			out.segs, out.firsts = append(out.segs, cur), append(out.firsts, cur.keys[0])
			cur = nil
		}
	}
	j := 0
	for i, seg := range s.segs {
		for _, k := range seg.keys {
			for j < len(add) && add[j] < k {
				put(add[j])
				j++
			}
			put(k)
		}
		s.segs[i] = nil // copied: let it go (a frozen view may still hold it)
	}
	for _, k := range add[j:] {
		put(k)
	}
	*s = out
}

// lookup calls over if there is one.
func lookup[V any](over func(uint64) (V, bool), k uint64) (V, bool) {
	if over == nil {
		var zero V
		return zero, false
	}
	return over(k)
}

func (s *segments[V, C]) len() int { return s.n }

// all yields every key and value, in key order.
func (s *segments[V, C]) all() iter.Seq2[uint64, V] {
	return func(yield func(uint64, V) bool) {
		var c C
		for _, seg := range s.segs {
			b := seg.vals
			for _, k := range seg.keys {
				v, n := c.read(b)
				b = b[n:]
				if !yield(k, v) {
					return
				}
			}
		}
	}
}

// keys yields every key, in order, without reading the values.
func (s *segments[V, C]) keys() iter.Seq[uint64] {
	return func(yield func(uint64) bool) {
		for _, seg := range s.segs {
			for _, k := range seg.keys {
				if !yield(k) {
					return
				}
			}
		}
	}
}

// freeze returns a view of s that later changes to s leave alone: the
// segments are shared (never changed), the lists that hold them are not
// (a merge clears them as it goes).
func (s *segments[V, C]) freeze() segments[V, C] {
	return segments[V, C]{segs: slices.Clone(s.segs), firsts: slices.Clone(s.firsts), n: s.n}
}
