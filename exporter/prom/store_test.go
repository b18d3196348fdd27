package prom

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestSeriesLookupsAddToTheirOwnSeries checks a vec's cache of recent
// lookups against a plain sum per label values: the same strings again,
// equal strings at other addresses, and label values that share a cache
// entry must each reach their own series, never another's.
func TestSeriesLookupsAddToTheirOwnSeries(t *testing.T) {
	models := []string{"claude-opus-4-5", "claude-sonnet-4-5", "claude-haiku-4-5", ""}
	types := []string{"input", "output", "cache_read", "cache_write_5m", "cache_write_1h"}
	projects := []string{"a", "b", "web-app", "web-apq"}
	var combos [][]string
	for _, m := range models {
		for _, ty := range types {
			for _, p := range projects {
				combos = append(combos, []string{m, ty, p})
			}
		}
	}
	// Two combinations that share an entry, to prove the test reaches one.
	shared := false
	for i := range combos {
		for j := i + 1; j < len(combos) && !shared; j++ {
			shared = recentSlot(combos[i]) == recentSlot(combos[j])
		}
	}
	if !shared {
		t.Fatal("no two label sets share a cache entry; the test proves nothing about collisions")
	}
	// fresh copies a string to a new address.
	fresh := func(s string) string { return strings.Clone(s) }
	for _, tc := range []struct {
		name string
		pick func(r *rand.Rand) []string
	}{
		{"the same strings over and over", func(r *rand.Rand) []string { return combos[r.IntN(len(combos))] }},
		{"equal strings at new addresses", func(r *rand.Rand) []string {
			c := combos[r.IntN(len(combos))]
			return []string{fresh(c[0]), fresh(c[1]), fresh(c[2])}
		}},
		{"runs of one set then another", func(r *rand.Rand) []string { return combos[(r.IntN(4)*7)%len(combos)] }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := newVec("x_total", "x", prometheus.CounterValue, nil, "model", "type", "project")
			r := rand.New(rand.NewPCG(1, 2))
			want := map[string]float64{}
			for range 20000 {
				lv := tc.pick(r)
				x := float64(r.IntN(100))
				v.add(x, lv...)
				want[key(lv)] += x
			}
			if len(v.m) != len(want) {
				t.Errorf("%d series, want %d", len(v.m), len(want))
			}
			for k, w := range want {
				if got := v.m[k]; got == nil || got.value != w {
					t.Errorf("series %q = %v, want %v", k, got, w)
				}
			}
		})
	}
}
