// Package tail reads transcript files line by line from a byte offset:
// complete '\n'-terminated lines only (a half-written last line waits for
// its newline), lines of any length up to a cap without buffering what is
// over it. It also holds the checks that tell a file followed from an
// offset from one replaced or rewritten under the same path: its
// Fingerprint (the hash of its first bytes) and EndsLine (the offset still
// ends a line). It imports nothing from mapping or exporter.
package tail
