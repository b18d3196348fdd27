package session

// keyFilter answers "certainly not present" for most index keys that are
// not in a keySet or doneIndex, with one bit test where a lookup in the
// index probes a map of recent keys and then interpolates in a sorted
// segment (two or three cache misses each). Nearly every lookup the
// assembler makes is of a new id, so nearly every lookup is answered
// here: a new tool call is looked up among the finished ones, a new
// request among the counted ones.
//
// It is a one-hash Bloom filter: a bit per slot, chosen by the key's top
// bits (keys are well-mixed hashes, idKey), with 8 to 16 slots a key. At
// 8 slots a key an absent key finds its bit set about one time in nine,
// and is then looked up in the index as before, so the filter only ever
// saves work: it never says a present key is absent. It costs one to two
// bytes a key beside the index's ~8 (keySet) or ~28 (doneIndex).
//
// The zero keyFilter holds nothing and must not be asked (ready reports
// whether it can be); a filter grows by doubling when its keys pass an
// eighth of its slots, rebuilt from every key of its index.
type keyFilter struct {
	bits  []uint64
	shift uint // 64 - log2(slots)
	set   int  // slots set
}

// minFilterSlots is the smallest filter: 64 Ki slots, 8 KiB.
const minFilterSlots = 1 << 16

func (f *keyFilter) ready() bool { return f.bits != nil }

// mayHave reports whether k may have been added: false is certain.
func (f *keyFilter) mayHave(k uint64) bool {
	i := k >> f.shift
	return f.bits[i>>6]&(1<<(i&63)) != 0
}

// add notes k. It reports whether more than an eighth of the slots are
// set, when the filter should be built anew (build) from all its index's
// keys: there are then more keys than that too, so it doubles at least.
// (Counting set slots, not adds, a key added again never fills it.)
func (f *keyFilter) add(k uint64) (full bool) {
	i := k >> f.shift
	w, bit := &f.bits[i>>6], uint64(1)<<(i&63)
	if *w&bit == 0 {
		*w |= bit
		f.set++
	}
	return f.set > len(f.bits)*64/8
}

// build makes a filter of 8 to 16 slots for each of n keys and adds the
// keys all yields (n of them, or fewer: n sizes it).
func (f *keyFilter) build(n int, all func(yield func(uint64) bool)) {
	slots := minFilterSlots
	for slots < 8*n {
		slots <<= 1
	}
	shift := uint(64)
	for s := slots; s > 1; s >>= 1 {
		shift--
	}
	*f = keyFilter{bits: make([]uint64, slots/64), shift: shift}
	for k := range all {
		f.add(k)
	}
}
