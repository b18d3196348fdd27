//go:build unix

package e2e

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/testonly/testbackend"
)

// runOneshotMetricsFile runs a oneshot over one corpus tree writing the
// exposition to target, with a time limit, and returns its error and stderr.
func runOneshotMetricsFile(t *testing.T, target string) (error, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary(t), "--oneshot", "--log.level=warn", "--traces.exporter=none",
		"--claude.dir="+filepath.Join(testbackend.CorpusDir(t), "danielhward"), "--oneshot.metrics-file="+target)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("oneshot with --oneshot.metrics-file=%s hung", target)
	}
	return err, stderr.String()
}

// TestOneshotMetricsFileNeverReplacesWhatItNames: a device or a pipe is
// written in place, a link keeps pointing at its file, a pipe nobody reads
// is a clear error and not a hang, a regular file is replaced whole.
func TestOneshotMetricsFileNeverReplacesWhatItNames(t *testing.T) {
	dir := t.TempDir()

	t.Run("device", func(t *testing.T) {
		dev := "/dev/null"
		if os.Geteuid() == 0 {
			// As root, renaming over /dev/null would succeed: use a
			// device node of our own (the null device, 1:3).
			dev = filepath.Join(dir, "null")
			if err := syscall.Mknod(dev, syscall.S_IFCHR|0o666, 1<<8|3); err != nil {
				t.Fatalf("mknod: %v", err)
			}
		}
		if err, stderr := runOneshotMetricsFile(t, dev); err != nil {
			t.Fatalf("writing to %s: %v\n%s", dev, err, stderr)
		}
		fi, err := os.Stat(dev)
		if err != nil || fi.Mode()&os.ModeDevice == 0 {
			t.Fatalf("%s is no longer a device: %v %v", dev, fi.Mode(), err)
		}
	})

	t.Run("pipe with a reader", func(t *testing.T) {
		fifo := filepath.Join(dir, "fifo")
		if err := syscall.Mkfifo(fifo, 0o644); err != nil {
			t.Fatal(err)
		}
		got := make(chan string, 1)
		go func() {
			f, err := os.Open(fifo) // blocks until the writer opens
			if err != nil {
				got <- err.Error()
				return
			}
			b, _ := io.ReadAll(f)
			f.Close()
			got <- string(b)
		}()
		// The reader must have the pipe open before the non-blocking
		// writer opens it.
		time.Sleep(200 * time.Millisecond)
		if err, stderr := runOneshotMetricsFile(t, fifo); err != nil {
			t.Fatalf("writing to a pipe: %v\n%s", err, stderr)
		}
		select {
		case text := <-got:
			if !strings.Contains(text, "claude_transcript_tokens_total") {
				t.Errorf("the reader got no exposition: %.200q", text)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("the exporter never opened the pipe")
			if w, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil { // release the reader
				w.Close()
			}
		}
		if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
			t.Errorf("the pipe was replaced: %v %v", fi.Mode(), err)
		}
	})

	t.Run("pipe nobody reads", func(t *testing.T) {
		fifo := filepath.Join(dir, "lonely")
		if err := syscall.Mkfifo(fifo, 0o644); err != nil {
			t.Fatal(err)
		}
		err, stderr := runOneshotMetricsFile(t, fifo)
		if err == nil || !strings.Contains(stderr, "--oneshot.metrics-file") {
			t.Errorf("no clear error for a pipe with no reader: %v\n%s", err, stderr)
		}
		if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
			t.Errorf("the pipe was replaced: %v %v", fi.Mode(), err)
		}
	})

	t.Run("link to a file", func(t *testing.T) {
		file, link := filepath.Join(dir, "real.prom"), filepath.Join(dir, "link.prom")
		if err := os.WriteFile(file, []byte("old\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(file, link); err != nil {
			t.Fatal(err)
		}
		if err, stderr := runOneshotMetricsFile(t, link); err != nil {
			t.Fatalf("writing through a link: %v\n%s", err, stderr)
		}
		if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Errorf("the link was replaced: %v %v", fi.Mode(), err)
		}
		if b, _ := os.ReadFile(file); !bytes.Contains(b, []byte("claude_transcript_tokens_total")) {
			t.Errorf("the linked file was not written: %.100q", b)
		}
	})

	t.Run("directory", func(t *testing.T) {
		if err, stderr := runOneshotMetricsFile(t, dir); err == nil || !strings.Contains(stderr, "is a directory") {
			t.Errorf("a directory: %v\n%s", err, stderr)
		}
	})
}
