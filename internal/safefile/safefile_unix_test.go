//go:build unix

package safefile

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestOpenRefusesWhatIsNotARegularFileWithoutBlocking(t *testing.T) {
	dir := t.TempDir()
	regular := filepath.Join(dir, "a.jsonl")
	if err := os.WriteFile(regular, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo.jsonl")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "sock.jsonl")
	if fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0); err == nil {
		if err := syscall.Bind(fd, &syscall.SockaddrUnix{Name: sock}); err != nil {
			t.Fatal(err)
		}
		defer syscall.Close(fd)
	}
	tests := []struct {
		name string
		path string
		want error  // nil: opens
		kind string // in the message
	}{
		{"regular file", regular, nil, ""},
		{"fifo without a writer", fifo, ErrNotRegular, "fifo"},
		{"character device", "/dev/null", ErrNotRegular, "device"},
		{"socket", sock, ErrNotRegular, "socket"},
		{"directory", dir, ErrNotRegular, "directory"},
		{"missing", filepath.Join(dir, "nope"), fs.ErrNotExist, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			done := make(chan error, 1)
			go func() {
				f, _, err := Open(tt.path)
				if f != nil {
					f.Close()
				}
				// OpenFile refuses the same paths the same way.
				g, _, gerr := OpenFile(tt.path)
				if g != nil {
					g.Close()
				}
				if (err == nil) != (gerr == nil) || err != nil && err.Error() != gerr.Error() {
					t.Errorf("Open(%s) = %v but OpenFile = %v", tt.path, err, gerr)
				}
				done <- err
			}()
			select {
			case err := <-done:
				if (tt.want == nil) != (err == nil) || (tt.want != nil && !errors.Is(err, tt.want)) {
					t.Fatalf("Open(%s) = %v, want %v", tt.path, err, tt.want)
				}
				if tt.kind != "" && !strings.Contains(err.Error(), tt.kind) {
					t.Errorf("error %q does not say %s", err, tt.kind)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("Open(%s) blocked", tt.path)
			}
		})
	}
}

func TestReadFileStopsAtItsCap(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small")
	if err := os.WriteFile(small, []byte("0123456789"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		path string
		max  int64
		want error
	}{
		{"under the cap", small, 100, nil},
		{"exactly the cap", small, 10, nil},
		{"over the cap", small, 9, ErrTooLarge},
		{"an endless device is refused before reading", "/dev/zero", 1 << 20, ErrNotRegular},
		// Regular, with a size of 0 in its stat and more to read.
		{"a file longer than its stat says is read whole", "/proc/self/mounts", 1 << 20, nil},
		{"a file longer than its stat says stops at the cap", "/proc/self/mounts", 10, ErrTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := ReadFile(tt.path, tt.max)
			if (tt.want == nil) != (err == nil) || (tt.want != nil && !errors.Is(err, tt.want)) {
				t.Fatalf("ReadFile = %d bytes, %v; want %v", len(b), err, tt.want)
			}
			if tt.want != nil {
				return
			}
			want := "0123456789"
			if tt.path != small {
				w, err := os.ReadFile(tt.path)
				if err != nil {
					t.Skipf("%s: %v", tt.path, err)
				}
				want = string(w)
			}
			if string(b) != want {
				t.Errorf("read %q, want %q", b, want)
			}
		})
	}
}

func TestOpenFileReadsAndStatsAsAnOSFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.jsonl")
	content := []byte(strings.Repeat("{\"type\":\"user\"}\n", 1000))
	if err := os.WriteFile(path, content, 0o640); err != nil {
		t.Fatal(err)
	}
	f, fi, err := OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Name() != want.Name() || fi.Size() != want.Size() || fi.Mode() != want.Mode() ||
		!fi.ModTime().Equal(want.ModTime()) || fi.IsDir() {
		t.Errorf("FileInfo %s %d %v %v, want %s %d %v %v", fi.Name(), fi.Size(), fi.Mode(), fi.ModTime(),
			want.Name(), want.Size(), want.Mode(), want.ModTime())
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); !ok {
		t.Errorf("Sys() is %T, want *syscall.Stat_t", fi.Sys())
	} else if ws := want.Sys().(*syscall.Stat_t); st.Ino != ws.Ino || st.Dev != ws.Dev {
		t.Errorf("Sys() is file %d on %d, want %d on %d", st.Ino, st.Dev, ws.Ino, ws.Dev)
	}
	tests := []struct {
		name    string
		off     int64
		n       int
		wantN   int
		wantErr error
	}{
		{"inside", 17, 100, 100, nil},
		{"to the end exactly", int64(len(content)) - 50, 50, 50, nil},
		{"past the end", int64(len(content)) - 50, 80, 50, io.EOF},
		{"at the end", int64(len(content)), 10, 0, io.EOF},
		{"larger than one read", 0, len(content), len(content), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := make([]byte, tt.n)
			n, err := f.ReadAt(p, tt.off)
			if n != tt.wantN || !errors.Is(err, tt.wantErr) && !(err == nil && tt.wantErr == nil) {
				t.Fatalf("ReadAt(%d bytes at %d) = %d, %v; want %d, %v", tt.n, tt.off, n, err, tt.wantN, tt.wantErr)
			}
			if string(p[:n]) != string(content[tt.off:tt.off+int64(n)]) {
				t.Errorf("read the wrong bytes")
			}
		})
	}
	if _, err := f.ReadAt(make([]byte, 1), -1); err == nil {
		t.Error("ReadAt at a negative offset did not fail")
	}
	if f.Name() != path {
		t.Errorf("Name() = %q", f.Name())
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); !errors.Is(err, os.ErrClosed) {
		t.Errorf("second Close = %v, want os.ErrClosed", err)
	}
}
