//go:build !unix

package discover

import "io/fs"

// fileID is not known here: FileInfo carries no inode on this platform.
func fileID(fs.FileInfo) (dev, ino uint64) { return 0, 0 }
