//go:build unix

package discover

import (
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// openDir opens a directory to list and stat its entries. Unlike
// os.Open, it neither registers the descriptor with the poller nor
// switches it to non-blocking mode (a directory is never polled), which
// saves an epoll_ctl per directory and fcntl calls when its descriptor is
// used for fstatat.
func openDir(dir string) (*os.File, error) {
	for {
		fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return nil, &fs.PathError{Op: "open", Path: dir, Err: err}
		}
		return os.NewFile(uintptr(fd), dir), nil
	}
}

// statAt stats the entry e of the directory dir, open as d, without
// following a symlink, and returns it without its Path. Statting by name
// relative to the open directory spares the kernel a walk of the whole
// path per file. ok is false when the entry is neither a regular file
// nor a FIFO, socket or device (File.Irregular) any more.
func statAt(d *os.File, dir string, e fs.DirEntry) (f File, ok bool, err error) {
	var st unix.Stat_t
	if err := unix.Fstatat(int(d.Fd()), e.Name(), &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return File{}, false, &fs.PathError{Op: "fstatat", Path: filepath.Join(dir, e.Name()), Err: err}
	}
	f = File{
		ModTime: time.Unix(int64(st.Mtim.Sec), int64(st.Mtim.Nsec)), //nolint:unconvert // int32 on some platforms
		Dev:     uint64(st.Dev),                                     //nolint:unconvert // int32 on some platforms
		Ino:     uint64(st.Ino),                                     //nolint:unconvert // int32 on some platforms
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		f.Size = st.Size
	case unix.S_IFIFO, unix.S_IFSOCK, unix.S_IFCHR, unix.S_IFBLK:
		f.Irregular = true
	default:
		return File{}, false, nil
	}
	return f, true, nil
}
