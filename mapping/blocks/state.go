package blocks

import (
	"fmt"
	"sort"
)

// State is a Tracker's durable state: a restart continues the blocks
// where they stood, since transcripts already read are not read again.
type State struct {
	Buckets       []Bucket
	Folded        int64
	FoldedUntil   int64
	Hist          Histogram
	ObservedUntil int64
	Late          int64
}

// State returns the tracker's state.
func (t *Tracker) State() State {
	st := State{Folded: t.folded, FoldedUntil: t.foldedUntil, Hist: t.hist.clone(), ObservedUntil: t.observedUntil, Late: t.late}
	st.Buckets = make([]Bucket, 0, len(t.buckets))
	for _, b := range t.buckets {
		st.Buckets = append(st.Buckets, *b)
	}
	sort.Slice(st.Buckets, func(i, j int) bool { return st.Buckets[i].Hour < st.Buckets[j].Hour })
	return st
}

// Restore replaces the tracker's state by st (from State). A state whose
// histogram has another layout than the tracker's bounds is an error.
func (t *Tracker) Restore(st State) error {
	h := st.Hist
	if h.Counts == nil && h.Count == 0 {
		h.Counts = make([]uint64, len(t.bounds)+1)
	}
	if len(h.Counts) != len(t.bounds)+1 {
		return fmt.Errorf("restore blocks: %d histogram buckets, want %d", len(h.Counts), len(t.bounds)+1)
	}
	t.buckets = make(map[int64]*Bucket, len(st.Buckets))
	for i := range st.Buckets {
		b := st.Buckets[i]
		if b.Entries < 0 {
			return fmt.Errorf("restore blocks: hour %d has %d entries", b.Hour, b.Entries)
		}
		t.buckets[b.Hour] = &b
	}
	t.folded, t.foldedUntil, t.hist, t.observedUntil, t.late = st.Folded, st.FoldedUntil, h.clone(), st.ObservedUntil, st.Late
	return nil
}
