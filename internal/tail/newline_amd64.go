package tail

// newlineASCII returns the index of the first '\n' in p (-1 when there is
// none) and how many bytes at the start of p before it (of all of p when
// there is none) are sure to be ASCII: every one of them is, and all of
// them when none is above 0x7f (else the count may stop at the start of
// the 64- or 16-byte block of the first that is). Lines hands it on, so that
// the decoder need not look at those bytes again to check their UTF-8: a
// second pass over every byte read (a build that skipped the check took
// 0.952x the wall of the 1 GB one-shot, 12 paired rounds). In
// assembly: SSE2 compares 64 bytes at a time for both.
//
//go:noescape
func newlineASCII(p []byte) (nl, ascii int)
