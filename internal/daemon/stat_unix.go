//go:build unix

package daemon

import (
	"os"
	"syscall"
)

// fileID is a file's identity: device and inode. It replaces the whole
// os.FileInfo (over 200 bytes with its syscall.Stat_t) in the file table.
type fileID struct{ dev, ino uint64 }

func idOf(fi os.FileInfo) fileID {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}
	}
	return fileID{dev: uint64(st.Dev), ino: uint64(st.Ino)} //nolint:unconvert // int32 on some platforms
}

// same reports whether two stats are of the same file (os.SameFile).
func (a fileID) same(b fileID) bool { return a == b }

// openWriteNonBlocking opens a file that is not a regular file for
// writing without waiting for a reader (a pipe).
func openWriteNonBlocking(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0)
}
