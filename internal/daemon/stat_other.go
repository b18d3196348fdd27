//go:build !unix

package daemon

import "os"

// fileID is a file's identity; where there is no inode, os.SameFile
// decides from the whole FileInfo.
type fileID struct{ fi os.FileInfo }

func idOf(fi os.FileInfo) fileID { return fileID{fi: fi} }

// same reports whether two stats are of the same file (os.SameFile).
func (a fileID) same(b fileID) bool { return a.fi == nil || b.fi == nil || os.SameFile(a.fi, b.fi) }

// openWriteNonBlocking opens a file that is not a regular file for
// writing.
func openWriteNonBlocking(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_WRONLY, 0)
}
