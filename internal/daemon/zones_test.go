package daemon

import (
	"fmt"
	"testing"
	"time"
)

func TestZoneCacheResolvesLikeLoadLocation(t *testing.T) {
	var c zoneCache
	for _, name := range []string{"Europe/Paris", "Asia/Shanghai", "UTC", "Europe/Paris", "No/Such_Zone", "No/Such_Zone", ""} {
		got, gotErr := c.load(name)
		want, wantErr := time.LoadLocation(name)
		if (gotErr == nil) != (wantErr == nil) {
			t.Fatalf("%q: error %v, LoadLocation's %v", name, gotErr, wantErr)
		}
		if wantErr == nil && got.String() != want.String() {
			t.Fatalf("%q: %v, LoadLocation's %v", name, got, want)
		}
	}
}

func TestZoneCacheStaysBounded(t *testing.T) {
	var c zoneCache
	for i := 0; i < 10*maxCachedZones; i++ {
		_, _ = c.load(fmt.Sprintf("No/Zone_%d", i))
		if len(c.zones) > maxCachedZones {
			t.Fatalf("%d zones cached, at most %d", len(c.zones), maxCachedZones)
		}
	}
	if loc, err := c.load("Europe/Paris"); err != nil || loc.String() != "Europe/Paris" {
		t.Fatalf("after eviction: %v, %v", loc, err)
	}
}
