//go:build unix

package discover

import (
	"io/fs"
	"syscall"
)

// fileID returns the device and inode of a file from its stat info.
func fileID(fi fs.FileInfo) (dev, ino uint64) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0
	}
	return uint64(st.Dev), uint64(st.Ino) //nolint:unconvert // int32 on some platforms
}
