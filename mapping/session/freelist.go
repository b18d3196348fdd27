package session

// maxFree bounds the states a freeList keeps for reuse.
const maxFree = 256

// freeList keeps states that nothing references any more, so that a
// backfill refills them instead of allocating one per request or tool call
// (those were two fifths of a one-shot backfill's garbage). A state is
// cleared whole when it comes back, slices included: a state snapshot may
// share them.
type freeList[T any] struct {
	items []*T
}

// get returns a cleared state: a kept one when there is one.
func (l *freeList[T]) get() *T {
	n := len(l.items)
	if n == 0 {
		return new(T)
	}
	v := l.items[n-1]
	l.items[n-1] = nil
	l.items = l.items[:n-1]
	return v
}

// put clears v and keeps it, up to maxFree states.
func (l *freeList[T]) put(v *T) {
	var zero T
	*v = zero
	if len(l.items) < maxFree {
		l.items = append(l.items, v)
	}
}
