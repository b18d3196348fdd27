//go:build !amd64

package transcript

// asciiRun returns how many bytes at the start of p are ASCII (see
// asciiRunWords).
func asciiRun(p []byte) int { return asciiRunWords(p) }
