package daemon

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// rssFile reads the process's resident file-backed pages, in kB.
func rssFile(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatalf("no /proc/self/status: %v", err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "RssFile:"); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatalf("RssFile %q: %v", v, err)
			}
			return n
		}
	}
	t.Fatal("no RssFile in /proc/self/status")
	return 0
}

func TestReleasingCodePagesShrinksTheResidentFilePages(t *testing.T) {
	before := rssFile(t)
	advised := releaseCodePages()
	after := rssFile(t)
	if advised < 1<<20 {
		t.Fatalf("advised %d bytes of the binary's read-only mappings, want its text and rodata", advised)
	}
	if after >= before {
		t.Fatalf("RssFile %d kB before, %d kB after: nothing was let go", before, after)
	}
	t.Logf("advised %d MiB; RssFile %d -> %d kB", advised>>20, before, after)
}
