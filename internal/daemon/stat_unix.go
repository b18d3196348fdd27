//go:build unix

package daemon

import (
	"os"
	"syscall"
	"unsafe"
)

// fileID is a file's identity: its inode xor its device spread by an odd
// multiplier, in 8 bytes where the pair took 16 (100,000 files: 0.8 MB).
// On one device it tells every two inodes apart (a xor with one value is
// a bijection), and a file moved to another device is told apart too
// unless the two inodes differ by exactly the xor of the devices' spread
// values. It replaces the whole os.FileInfo (over 200 bytes with its
// syscall.Stat_t) in the file table.
type fileID struct{ h uint64 }

// With it a file table entry fits the 96-byte size class (files.go): this
// fails to compile if the entry grows past it.
var _ [96 - unsafe.Sizeof(fileState{})]struct{}

func idOf(fi os.FileInfo) fileID {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}
	}
	// 2⁶⁴/φ, odd: multiplying by it is a bijection that spreads the
	// device's few bits over the word.
	const spread = 0x9E3779B97F4A7C15
	return fileID{h: uint64(st.Ino) ^ uint64(st.Dev)*spread} //nolint:unconvert // int32 on some platforms
}

// same reports whether two stats are of the same file (os.SameFile).
func (a fileID) same(b fileID) bool { return a == b }

// openWriteNonBlocking opens a file that is not a regular file for
// writing without waiting for a reader (a pipe).
func openWriteNonBlocking(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0)
}
