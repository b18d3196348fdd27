//go:build !linux

package daemon

// releaseCodePages does nothing where there is no /proc/self/maps.
func releaseCodePages() int64 { return 0 }
