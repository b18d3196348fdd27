//go:build !unix

package discover

import (
	"io/fs"
	"os"
)

// openDir opens a directory to list and stat its entries.
func openDir(dir string) (*os.File, error) { return os.Open(dir) }

// statAt stats the entry e of the directory dir without following a
// symlink, and returns it without its Path. ok is false when it is
// neither a regular file nor a FIFO, socket or device (File.Irregular). Device and inode are not known on this
// platform: FileInfo carries none.
func statAt(_ *os.File, _ string, e fs.DirEntry) (f File, ok bool, err error) {
	fi, err := e.Info()
	if err != nil {
		return File{}, false, err
	}
	if fi.Mode()&irregular != 0 {
		return File{ModTime: fi.ModTime(), Irregular: true}, true, nil
	}
	if !fi.Mode().IsRegular() {
		return File{}, false, nil
	}
	return File{Size: fi.Size(), ModTime: fi.ModTime()}, true, nil
}
