//go:build !amd64

package tail

// newlineASCIIExact says newlineASCII counts every byte of an ASCII line.
const newlineASCIIExact = false
