//go:build unix

package safefile

import (
	"os"
	"syscall"
)

// openNonBlocking opens read-only with O_NONBLOCK, so that opening a FIFO
// without a writer returns at once. For a regular file the flag changes
// nothing.
func openNonBlocking(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}
