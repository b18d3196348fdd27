// Package transcript decodes one line of a Claude Code transcript (JSONL)
// into a typed Record.
//
// It is pure: bytes in, records out; no files, network or clock. It is
// tolerant: unknown record types and fields are kept or counted, never
// errors; a line that cannot be used gets a Reason and the caller skips
// it. It is fast: a hand-written scanner reads only the keys the exporter
// needs and skips payloads it does not (tool output, file-history
// snapshots, thinking text) with memchr-speed string skips, so large
// lines cost little and allocate nothing for what they skip. What a line
// repeats from the lines before it is not read again: the run of fields
// every line of a session holds (cwd, sessionId, version, gitBranch, ...)
// and the usage object the lines of one response share are taken from the
// line that last held the same bytes (run.go, usageOnce); the same bytes
// decode to the same values, so every line decodes as it would alone.
//
// Import rule: standard library only.
package transcript
