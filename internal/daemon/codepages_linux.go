package daemon

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// releaseCodePages lets go of the resident pages of the binary's code and
// read-only data (MADV_DONTNEED on its read-only mappings) and returns how
// many bytes it advised. They are the file's pages, clean, in the page
// cache: whatever runs next faults its own pages back in, and the rest
// (start-up, flag parsing, the stages' construction, a backfill's code)
// stops counting against the process. The kernel maps a file's pages
// around each fault, so nearly all of the 18.5 MB of text and rodata was
// resident: RssFile 15.5 MiB for a daemon with nothing to read, 16.4 to
// 17.2 MiB on the 100000+sub bench tree, where the soft limit keeps the
// Go memory at 48 MiB and the resident size was 62.6 to 65.8 MiB at its
// peak. After a release before the backfill, RssFile 14.1 MiB and the
// peak 61.6 to 62.8 MiB (same tree, alternated runs).
//
// The data and bss mappings are written to and are not touched; nor is
// a mapping of a binary replaced on disk (its path then ends in
// " (deleted)").
func releaseCodePages() int64 {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return 0
	}
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return 0
	}
	defer f.Close()
	var advised int64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// address perms offset dev inode path
		fs := strings.Fields(sc.Text())
		if len(fs) != 6 || fs[5] != exe || (fs[1] != "r-xp" && fs[1] != "r--p") {
			continue
		}
		lo, hi, ok := strings.Cut(fs[0], "-")
		if !ok {
			continue
		}
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || end <= start {
			continue
		}
		if _, _, errno := syscall.Syscall(syscall.SYS_MADVISE, uintptr(start), uintptr(end-start), syscall.MADV_DONTNEED); errno == 0 {
			advised += int64(end - start)
		}
	}
	return advised
}
