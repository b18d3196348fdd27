//go:build unix

package safefile

import (
	"errors"
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
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := ReadFile(tt.path, tt.max)
			if (tt.want == nil) != (err == nil) || (tt.want != nil && !errors.Is(err, tt.want)) {
				t.Fatalf("ReadFile = %d bytes, %v; want %v", len(b), err, tt.want)
			}
			if tt.want == nil && string(b) != "0123456789" {
				t.Errorf("read %q", b)
			}
		})
	}
}
