package session

import (
	"encoding/binary"
	"errors"
	"iter"
	"maps"
	"math"
	"math/bits"
	"slices"
	"time"
)

// The dedup index. Deduplication is global and exact over the whole
// history, so the assembler must remember every request, tool call, prompt,
// compaction and API error it has counted, for as long as it runs (a
// resumed session copies its history into a new file, years of it). What
// it remembers of each is kept small: a 64-bit hash of the id in place of
// the id, and for a request only what a later, better copy needs to be
// counted by difference. Everything else about a request, a tool call or a
// session is dropped once it is emitted or closed.
//
// Two distinct ids with the same 64-bit hash would fold into one. With a
// well-mixed 64-bit hash the chance of any such pair among n ids is about
// n²/2⁶⁵: one in 37 million for a million requests.

// idKey is the index key of an id: FNV-1a over prefix then id, with a
// final avalanche (FNV's low bits mix poorly on their own). It is stable
// across runs and builds, so that keys can be saved in the state file.
func idKey(prefix, id string) uint64 {
	const (
		offset = 14695981039346656037
		prime  = 1099511628211
	)
	h := uint64(offset)
	for i := 0; i < len(prefix); i++ {
		h ^= uint64(prefix[i])
		h *= prime
	}
	for i := 0; i < len(id); i++ {
		h ^= uint64(id[i])
		h *= prime
	}
	// fmix64 from MurmurHash3.
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}

// Key prefixes of the index namespaces. They match the string keys of
// state version 1, so that a saved key migrates as idKey(prefix, id).
const (
	keyRequest      = ""
	keyTool         = ""
	keyPrompt       = "p:"
	keyCompaction   = "c:"
	keyError        = "e:"
	keyTurnDuration = "d:"
	keyPR           = "pr:"
)

// doneReq is what an emitted request keeps: what was counted, the best
// copy so far (by output, then total), and the labels it was counted
// under (an index into Assembler.labelList). A later, better copy adds its
// difference under those labels. It holds no pointer, so that the garbage
// collector never scans the index, however long the history.
type doneReq struct {
	counted Tokens
	out     int64
	total   int64
	lab     uint32
	// day is the request's UTC day (Unix days; 0 unknown): a later copy
	// is priced on it.
	day int32
}

// reqLabels are the labels requests were counted under, which a later,
// better copy is counted under too: the project, the model, who spent it
// and how it is priced. Few requests have labels of their own, so the
// index refers to them by number.
type reqLabels struct {
	project string
	model   string
	attr    Attribution
}

// labels returns the index of the shared labels k.
func (a *Assembler) labels(k reqLabels) uint32 {
	// Requests emitted one after another mostly share their labels,
	// whose nine strings the set's lookup hashed every time.
	if int(a.lastLabel) < len(a.labelList) && a.labelList[a.lastLabel] == k {
		return a.lastLabel
	}
	i, ok := a.labelSet[k]
	if !ok {
		i = uint32(len(a.labelList))
		a.labelList = append(a.labelList, k)
		a.labelSet[k] = i
	}
	a.lastLabel = i
	return i
}

// DayOf is the UTC day of t in Unix days (0 for the zero time).
func DayOf(t time.Time) int32 {
	if t.IsZero() {
		return 0
	}
	return int32(t.Unix() / 86400)
}

// better reports whether a copy with output out and total tot beats the
// best one so far.
func better(out, tot, bestOut, bestTot int64) bool {
	return out > bestOut || (out == bestOut && tot > bestTot)
}

// keySet is a set of index keys at about 8 bytes a key: the old keys
// sorted (segments), found by interpolation (keys are uniform hashes), and
// the recent ones in a map, merged into the sorted ones once they are an
// eighth of them. A Go map alone costs 24 to 36 bytes a key, most of it
// room to grow.
type keySet struct {
	old    segments[struct{}, noVals]
	recent map[uint64]struct{}
	// filter holds every key once one is added (none in a frozen view).
	filter keyFilter
}

// mergeAt is how many recent keys n sorted keys take in before
// a merge: merges cost O(n) each, so they are spaced out as n grows.
func mergeAt(n int) int { return max(4096, n/8) }

func (s *keySet) has(k uint64) bool {
	if s.filter.ready() && !s.filter.mayHave(k) {
		return false
	}
	if _, ok := s.recent[k]; ok {
		return true
	}
	return s.old.has(k)
}

// add adds k and reports whether it was new.
func (s *keySet) add(k uint64) bool {
	if s.has(k) {
		return false
	}
	if s.recent == nil {
		s.recent = make(map[uint64]struct{})
	}
	s.recent[k] = struct{}{}
	if !s.filter.ready() || s.filter.add(k) {
		s.filter.build(s.len(), s.all())
	}
	if len(s.recent) >= mergeAt(s.old.len()) {
		s.mergeRecent()
	}
	return true
}

// mergeRecent merges the recent keys into the sorted ones.
func (s *keySet) mergeRecent() {
	s.old.merge(slices.Sorted(maps.Keys(s.recent)), func(uint64) struct{} { return struct{}{} }, nil)
	clear(s.recent)
}

func (s *keySet) len() int { return s.old.len() + len(s.recent) }

// all yields every key, in no particular order.
func (s *keySet) all() iter.Seq[uint64] {
	return func(yield func(uint64) bool) {
		for k := range s.old.keys() {
			if !yield(k) {
				return
			}
		}
		for k := range s.recent {
			if !yield(k) {
				return
			}
		}
	}
}

// appendTo appends every key to dst, in no particular order.
func (s *keySet) appendTo(dst []uint64) []uint64 {
	for k := range s.all() {
		dst = append(dst, k)
	}
	return dst
}

func (s *keySet) reset() { *s = keySet{} }

// search returns the index of k in the sorted array a, or -1. It guesses
// positions by interpolation, which takes a few probes on uniform keys,
// and falls back to bisection if the guesses do not converge.
func search(a []uint64, k uint64) int {
	lo, hi := 0, len(a)-1
	for probes := 0; lo <= hi; probes++ {
		if k < a[lo] || k > a[hi] {
			return -1
		}
		mid := lo + (hi-lo)/2
		if probes < 6 && a[hi] > a[lo] {
			f := float64(k-a[lo]) / float64(a[hi]-a[lo])
			mid = lo + int(f*float64(hi-lo))
			mid = min(max(mid, lo), hi)
		}
		switch {
		case a[mid] == k:
			return mid
		case a[mid] < k:
			lo = mid + 1
		default:
			hi = mid - 1
		}
	}
	return -1
}

// doneVal is a doneReq in 32 bits a field: requests count far fewer than
// 4 billion tokens. A request whose numbers do not fit (a damaged line)
// is kept whole in doneIndex.wide instead. In the sorted segments it is
// packed further (doneCodec).
type doneVal struct {
	counted    [6]uint32 // the Tokens fields, in order
	out, total uint32
	lab        uint32
	day        int32
}

func packDone(d doneReq) (doneVal, bool) {
	v := doneVal{lab: d.lab, day: d.day}
	c := d.counted
	for i, n := range [...]int64{c.Input, c.Output, c.CacheRead, c.CacheWrite5m, c.CacheWrite1h, c.WebSearch, d.out, d.total} {
		if n < 0 || n > math.MaxUint32 {
			return doneVal{}, false
		}
		switch i {
		case 6:
			v.out = uint32(n)
		case 7:
			v.total = uint32(n)
		default:
			v.counted[i] = uint32(n)
		}
	}
	return v, true
}

func (v doneVal) unpack() doneReq {
	c := &v.counted
	return doneReq{
		counted: Tokens{Input: int64(c[0]), Output: int64(c[1]), CacheRead: int64(c[2]),
			CacheWrite5m: int64(c[3]), CacheWrite1h: int64(c[4]), WebSearch: int64(c[5])},
		out: int64(v.out), total: int64(v.total), lab: v.lab, day: v.day,
	}
}

// doneVarints is how many varints a packed doneVal is.
const doneVarints = 10

// doneCodec packs a doneVal as ten varints: the counts, out, total and
// the labels' index unsigned, the day zig-zag (a day before 1970 is
// negative).
type doneCodec struct{}

func (doneCodec) append(dst []byte, v doneVal) []byte {
	for _, n := range v.counted {
		dst = binary.AppendUvarint(dst, uint64(n))
	}
	dst = binary.AppendUvarint(dst, uint64(v.out))
	dst = binary.AppendUvarint(dst, uint64(v.total))
	dst = binary.AppendUvarint(dst, uint64(v.lab))
	return binary.AppendVarint(dst, int64(v.day))
}

func (doneCodec) read(b []byte) (doneVal, int) {
	var v doneVal
	var u [doneVarints - 1]uint64
	i := 0
	for k := range u {
		n, w := binary.Uvarint(b[i:])
		if w <= 0 {
			panic(errPackedDone) // packed by this goroutine: cannot be damaged
		}
		u[k], i = n, i+w
	}
	day, w := binary.Varint(b[i:])
	if w <= 0 {
		panic(errPackedDone)
	}
	for k := range v.counted {
		v.counted[k] = uint32(u[k])
	}
	v.out, v.total, v.lab, v.day = uint32(u[6]), uint32(u[7]), uint32(u[8]), int32(day)
	return v, i + w
}

// size counts the bytes of ten varints: ten bytes without the
// continuation bit, found a word at a time (the merge of the recent
// requests into the sorted ones sizes every value it copies).
func (doneCodec) size(b []byte) int {
	ends, i := 0, 0
	for ; i+8 <= len(b); i += 8 {
		m := ^binary.LittleEndian.Uint64(b[i:]) & 0x8080808080808080 // the last bytes of varints
		if n := bits.OnesCount64(m); ends+n < doneVarints {
			ends += n
			continue
		}
		for ; ends < doneVarints-1; ends++ {
			m &= m - 1
		}
		return i + bits.TrailingZeros64(m)>>3 + 1
	}
	for ; i < len(b); i++ {
		if b[i] < 0x80 {
			if ends++; ends == doneVarints {
				return i + 1
			}
		}
	}
	panic(errPackedDone)
}

var errPackedDone = errors.New("session: damaged packed request")

// doneIndex maps the keys of emitted requests to what they keep, at about
// 30 bytes a request, laid out as keySet is.
type doneIndex struct {
	sorted segments[doneVal, doneCodec]
	// recent holds requests not in sorted; over new values of requests
	// in sorted (segments are never changed in place). A merge writes
	// both into sorted.
	recent map[uint64]doneVal
	over   map[uint64]doneVal
	// wide holds the requests whose numbers do not fit doneVal; it is
	// looked up first, so a request that moved there is found there.
	wide map[uint64]doneReq
	// filter holds every key once one is put (none in a frozen view).
	filter keyFilter
}

func (x *doneIndex) get(k uint64) (doneReq, bool) {
	if x.filter.ready() && !x.filter.mayHave(k) {
		return doneReq{}, false
	}
	if d, ok := x.wide[k]; ok {
		return d, true
	}
	if v, ok := x.over[k]; ok {
		return v.unpack(), true
	}
	if v, ok := x.recent[k]; ok {
		return v.unpack(), true
	}
	if v, ok := x.sorted.get(k); ok {
		return v.unpack(), true
	}
	return doneReq{}, false
}

func (x *doneIndex) put(k uint64, d doneReq) {
	// A request is most often put once, when it is emitted: the filter
	// then says it is new, and it is looked for nowhere else.
	fresh := x.filter.ready() && !x.filter.mayHave(k)
	if !x.filter.ready() || x.filter.add(k) {
		defer x.filter.build(x.len(), x.keys)
	}
	v, ok := packDone(d)
	if !ok || !fresh && x.isWide(k) {
		if x.wide == nil {
			x.wide = make(map[uint64]doneReq)
		}
		x.wide[k] = d
		return
	}
	if !fresh && x.isSorted(k) {
		if x.over == nil {
			x.over = make(map[uint64]doneVal)
		}
		x.over[k] = v
	} else {
		if x.recent == nil {
			x.recent = make(map[uint64]doneVal)
		}
		x.recent[k] = v
	}
	if len(x.recent)+len(x.over) >= mergeAt(x.sorted.len()) {
		x.mergeRecent()
	}
}

func (x *doneIndex) isWide(k uint64) bool {
	_, ok := x.wide[k]
	return ok
}

// isSorted reports whether k is in the sorted segments and not recent.
func (x *doneIndex) isSorted(k uint64) bool {
	if _, ok := x.recent[k]; ok {
		return false
	}
	return x.sorted.has(k)
}

// mergeRecent merges the recent requests and new values into the sorted
// ones.
func (x *doneIndex) mergeRecent() {
	var over func(uint64) (doneVal, bool)
	if len(x.over) > 0 { // else no key is looked up there (most merges)
		over = func(k uint64) (doneVal, bool) {
			v, ok := x.over[k]
			return v, ok
		}
	}
	x.sorted.merge(slices.Sorted(maps.Keys(x.recent)), func(k uint64) doneVal { return x.recent[k] }, over)
	clear(x.recent)
	clear(x.over)
}

func (x *doneIndex) len() int { return x.sorted.len() + len(x.recent) + len(x.wide) }

// keys yields every key, those of wide requests maybe twice.
func (x *doneIndex) keys(yield func(uint64) bool) {
	for k := range x.wide {
		if !yield(k) {
			return
		}
	}
	for k := range x.recent {
		if !yield(k) {
			return
		}
	}
	for k := range x.sorted.keys() {
		if !yield(k) {
			return
		}
	}
}

// each calls fn for every request, once, in no particular order.
func (x *doneIndex) each(fn func(k uint64, d doneReq)) {
	for k, d := range x.wide {
		fn(k, d)
	}
	for k, v := range x.recent {
		if _, ok := x.wide[k]; !ok {
			fn(k, v.unpack())
		}
	}
	for k, v := range x.sorted.all() {
		if _, ok := x.wide[k]; !ok {
			if nv, ok := x.over[k]; ok {
				v = nv
			}
			fn(k, v.unpack())
		}
	}
}

// states yields every request as a DoneRequest, in no particular order.
func (x *doneIndex) states() iter.Seq[DoneRequest] {
	return func(yield func(DoneRequest) bool) {
		stopped := false
		x.each(func(k uint64, d doneReq) {
			stopped = stopped || !yield(doneRequestState(k, d))
		})
	}
}

func (x *doneIndex) reset() { *x = doneIndex{} }
