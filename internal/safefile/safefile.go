// Package safefile opens and reads the files the exporter is pointed at
// without letting the file system hang or bloat it: only regular files are
// read, they are opened without blocking (a FIFO with no writer, a device
// or a socket at a transcript's path or named by a flag returns an error at
// once instead of blocking open or read), and whole-file reads stop at a
// size cap instead of growing without bound (/dev/zero, a runaway file).
// Lock keeps two exporters off one state file or spool.
package safefile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// ErrNotRegular is returned for a path that is not a regular file (a FIFO,
// a device, a socket, a directory).
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge is returned by ReadFile for a file larger than its cap.
var ErrTooLarge = errors.New("file too large")

// ErrLocked is returned by Lock when another process holds the lock.
var ErrLocked = errors.New("in use by another exporter")

// Open opens path for reading if it is a regular file. It never blocks on a
// FIFO: the open is non-blocking where the platform allows it, and the open
// handle's mode is checked before anything is read. The FileInfo is the
// handle's (fstat), so it describes the file that was opened.
func Open(path string) (*os.File, fs.FileInfo, error) {
	f, err := openNonBlocking(path)
	if err != nil {
		return nil, nil, openFailed(path, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, nil, notRegular(path, st.Mode())
	}
	return f, st, nil
}

// openFailed is the error of an open of path that failed with err. Some
// kinds cannot even be opened (a socket: ENXIO); it says what it is. A
// missing file is just missing (a subagent without its .meta.json, most of
// the time): no second lookup.
func openFailed(path string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if st, serr := os.Stat(path); serr == nil && !st.Mode().IsRegular() {
		return notRegular(path, st.Mode())
	}
	return err
}

// notRegular is the error for a path whose file has mode m, not regular.
func notRegular(path string, m fs.FileMode) error {
	return fmt.Errorf("%s: %w (%s)", path, ErrNotRegular, Kind(m))
}

// ReadFile reads a whole regular file of at most maxBytes bytes.
func ReadFile(path string, maxBytes int64) ([]byte, error) {
	f, st, err := OpenFile(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st.Size() > maxBytes {
		return nil, fmt.Errorf("%s: %w: %d bytes, the limit is %d", path, ErrTooLarge, st.Size(), maxBytes)
	}
	// Read to the end, which is most often the size the stat gave (one
	// byte more is asked for to see it); the file can grow under us,
	// but never past the cap.
	b := make([]byte, st.Size()+1)
	n := 0
	for {
		if n == len(b) {
			if int64(n) > maxBytes {
				return nil, fmt.Errorf("%s: %w: more than %d bytes", path, ErrTooLarge, maxBytes)
			}
			b = append(b, make([]byte, min(int64(len(b)), maxBytes+1-int64(n)))...)
		}
		m, err := f.ReadAt(b[n:], int64(n))
		n += m
		if errors.Is(err, io.EOF) {
			return b[:n], nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// Kind names a file mode's type for messages and metric labels: fifo,
// device, socket, directory, symlink, irregular or regular.
func Kind(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "regular"
	case m&fs.ModeNamedPipe != 0:
		return "fifo"
	case m&(fs.ModeDevice|fs.ModeCharDevice) != 0:
		return "device"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m.IsDir():
		return "directory"
	case m&fs.ModeSymlink != 0:
		return "symlink"
	}
	return "irregular"
}
