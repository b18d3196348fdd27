//go:build !unix

package safefile

import "os"

// openNonBlocking is a plain open where the platform has no O_NONBLOCK;
// Open still refuses anything that is not a regular file before reading.
func openNonBlocking(path string) (*os.File, error) {
	return os.Open(path)
}
