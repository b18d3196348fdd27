package daemon

import (
	"sync"
	"time"
)

// maxCachedZones bounds the zone cache: zone names come from transcript
// text, so a hostile file could name any number of them.
const maxCachedZones = 64

// zoneCache resolves IANA zone names with time.LoadLocation, once per
// name: LoadLocation reads and unpacks the zone database on every call,
// and every usage-limit notice names a zone (a backfill meets thousands).
type zoneCache struct {
	mu    sync.Mutex
	zones map[string]zoneResult
}

type zoneResult struct {
	loc *time.Location
	err error
}

// load is a limits.Zones.Load.
func (c *zoneCache) load(name string) (*time.Location, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r, ok := c.zones[name]; ok {
		return r.loc, r.err
	}
	loc, err := time.LoadLocation(name)
	if c.zones == nil || len(c.zones) >= maxCachedZones {
		c.zones = make(map[string]zoneResult)
	}
	c.zones[name] = zoneResult{loc, err}
	return loc, err
}
