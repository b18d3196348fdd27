//go:build unix

package safefile

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// Lock takes an exclusive advisory lock (flock) on the file at path,
// creating it, and writes the holder's pid into it. It fails at once with
// ErrLocked when another process holds it. The lock lasts until release is
// called or the process ends (a crash frees it: nothing stale is left).
func Lock(path string) (release func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		defer f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			holder := ""
			if b, rerr := os.ReadFile(path); rerr == nil {
				if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); perr == nil {
					holder = fmt.Sprintf(" (pid %d)", pid)
				}
			}
			return nil, fmt.Errorf("%s: %w%s", path, ErrLocked, holder)
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return func() { f.Close() }, nil
}
