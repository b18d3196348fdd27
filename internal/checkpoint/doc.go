// Package checkpoint reads and writes the exporter's durable state: per
// file its identity (a fingerprint of its first bytes) and watermarks, and
// the opaque payloads the daemon stores beside them (counter totals and the
// assembler's dedup state). Writes are atomic: temp file, fsync, rename,
// fsync of the directory. A state file that cannot be read is an error
// naming the file and the flag that resets it, never a silent reset.
//
// It imports nothing from mapping or exporter.
package checkpoint
