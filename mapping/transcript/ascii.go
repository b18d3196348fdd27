package transcript

import "encoding/binary"

// asciiRunWords is asciiRun in Go, for the platforms without an assembly
// one: 32 bytes at a time, so at least len(p) rounded down to 32 when
// there is no byte at or above 0x80, and otherwise no more than the index
// of the first.
func asciiRunWords(p []byte) int {
	n := 0
	for len(p)-n >= 32 && (binary.LittleEndian.Uint64(p[n:])|binary.LittleEndian.Uint64(p[n+8:])|
		binary.LittleEndian.Uint64(p[n+16:])|binary.LittleEndian.Uint64(p[n+24:]))&hiBits == 0 {
		n += 32
	}
	return n
}
