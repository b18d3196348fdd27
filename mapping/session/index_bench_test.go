package session

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkDoneIndexPut emits 100,000 requests into a done index, as the
// backfill does: new keys, merged into the sorted part as they pile up.
func BenchmarkDoneIndexPut(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	keys := make([]uint64, 100_000)
	for i := range keys {
		keys[i] = r.Uint64()
	}
	d := doneReq{counted: Tokens{Input: 12, Output: 345, CacheRead: 6789}, out: 345, total: 7146, lab: 3, day: 20000}
	b.ReportAllocs()
	for b.Loop() {
		var x doneIndex
		for _, k := range keys {
			x.put(k, d)
		}
	}
}
