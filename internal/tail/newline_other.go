//go:build !amd64

package tail

import "bytes"

// newlineASCII returns the index of the first '\n' in p (-1 when there is
// none) and how many bytes at the start of p are sure to be ASCII: none
// here (the decoder checks every byte).
func newlineASCII(p []byte) (nl, ascii int) { return bytes.IndexByte(p, '\n'), 0 }
