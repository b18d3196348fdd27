package transcript

// asciiRun returns how many bytes at the start of p are ASCII, counting
// 16 at a time: the index of the first byte at or above 0x80, or at least
// len(p) rounded down to 16 when there is none (the caller goes on from
// there). In assembly: SSE2 compares 64 bytes in a few instructions.
//
//go:noescape
func asciiRun(p []byte) int
