//go:build !amd64

package transcript

// countLines counts the lines of a JSON string's raw text: its unescaped
// text split at newlines (\n, \u000a), a last line without one counting;
// "" has none (see countLinesWords).
func countLines(raw []byte) int64 { return countLinesWords(raw) }
