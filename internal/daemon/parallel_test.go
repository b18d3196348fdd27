package daemon

import "testing"

func TestRecycledBatchesFollowTheWindowUpToACap(t *testing.T) {
	for _, tc := range []struct{ workers, want int }{{0, 3}, {1, 3}, {2, 6}, {3, 8}, {16, 8}} {
		if got := recycledBatches(tc.workers); got != tc.want {
			t.Errorf("recycledBatches(%d) = %d, want %d", tc.workers, got, tc.want)
		}
	}
}
