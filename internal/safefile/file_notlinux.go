//go:build !linux

package safefile

import (
	"io/fs"
	"os"
)

// File is a regular file open for reading at offsets (see the linux
// version); here it is an *os.File.
type File struct{ *os.File }

// OpenFile is Open returning a File.
func OpenFile(path string) (*File, fs.FileInfo, error) {
	f, st, err := Open(path)
	if err != nil {
		return nil, nil, err
	}
	return &File{f}, st, nil
}
