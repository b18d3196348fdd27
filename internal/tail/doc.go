// Package tail reads transcript files line by line from a byte offset:
// complete '\n'-terminated lines only (a half-written last line waits for
// its newline), lines of any length up to a cap without buffering what is
// over it. It imports nothing from mapping or exporter.
package tail
