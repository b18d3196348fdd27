package tail

// newlineASCII returns the index of the first '\n' in p (-1 when there is
// none) and how many bytes at the start of p before it (of all of p when
// there is none) are sure to be ASCII: every one of them is, though some
// bytes after them may be too (the count stops at the start of the block
// of the first byte at or above 0x80). Lines hands the count on, so that
// the decoder need not look at those bytes again to check their UTF-8: a
// second pass over every byte read, 4 % of the 1 GB one-shot's time. In
// assembly: SSE2 compares 64 bytes at a time for both.
//
//go:noescape
func newlineASCII(p []byte) (nl, ascii int)

// newlineASCIIExact says newlineASCII counts every byte of an ASCII line.
const newlineASCIIExact = true
