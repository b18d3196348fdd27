//go:build unix

package daemon

import (
	"os"
	"syscall"
)

// fileID is a file's identity: its inode xor a hash of its device, in 8
// bytes where the pair took 16 (100,000 files: 0.8 MB). On one device it
// tells every two inodes apart (a xor with one value is a bijection), and
// a file moved to another device is told apart too unless the two inodes
// differ by exactly the xor of the devices' hashes. It replaces the whole
// os.FileInfo (over 200 bytes with its syscall.Stat_t) in the file table.
type fileID struct{ h uint64 }

func idOf(fi os.FileInfo) fileID {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}
	}
	return fileID{h: uint64(st.Ino) ^ mix64(uint64(st.Dev))} //nolint:unconvert // int32 on some platforms
}

// mix64 is MurmurHash3's fmix64.
func mix64(h uint64) uint64 {
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}

// same reports whether two stats are of the same file (os.SameFile).
func (a fileID) same(b fileID) bool { return a == b }

// openWriteNonBlocking opens a file that is not a regular file for
// writing without waiting for a reader (a pipe).
func openWriteNonBlocking(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0)
}
