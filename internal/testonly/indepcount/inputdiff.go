package indepcount

import "strings"

// The documented bounds of an input diff (docs/metrics.md, lines_of_code_total):
// a pair of texts of more than 65,536 lines together counts all their
// lines; after the common first and last lines are dropped, the rests are
// diffed while one call compares at most 1,048,576 line pairs in all (a
// MultiEdit's edits in order), and counted whole past that.
const (
	diffLinesBound = 65536
	diffPairsBound = 1 << 20
)

// inputDiff is what an edit tool's input adds and removes: an Edit the
// line diff of old_string to new_string (once, whatever replace_all
// says), a MultiEdit the sum of its edits' diffs, a Write every line of
// its content added.
func inputDiff(tool string, input map[string]any) (added, removed int64) {
	pairsLeft := diffPairsBound
	switch tool {
	case "Edit":
		return lineDiff(str(input["old_string"]), str(input["new_string"]), &pairsLeft)
	case "MultiEdit":
		list, _ := input["edits"].([]any)
		for _, e := range list {
			edit, ok := e.(map[string]any)
			if !ok {
				continue
			}
			a, r := lineDiff(str(edit["old_string"]), str(edit["new_string"]), &pairsLeft)
			added += a
			removed += r
		}
		return added, removed
	case "Write":
		return lineCount(str(input["content"])), 0
	}
	return 0, 0
}

// lineDiff counts the lines a diff of old to new shows added and removed:
// each side's lines not in their longest common subsequence. The pairs of
// lines it compares come off pairsLeft.
func lineDiff(old, new string, pairsLeft *int) (added, removed int64) {
	a, b := splitLines(old), splitLines(new)
	if len(a)+len(b) > diffLinesBound {
		return int64(len(b)), int64(len(a))
	}
	for len(a) > 0 && len(b) > 0 && a[0] == b[0] {
		a, b = a[1:], b[1:]
	}
	for len(a) > 0 && len(b) > 0 && a[len(a)-1] == b[len(b)-1] {
		a, b = a[:len(a)-1], b[:len(b)-1]
	}
	if len(a)*len(b) > *pairsLeft {
		return int64(len(b)), int64(len(a))
	}
	*pairsLeft -= len(a) * len(b)
	// prev[j] is the LCS of the lines of a read so far and b[:j].
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for i := range a {
		for j := range b {
			if a[i] == b[j] {
				cur[j+1] = prev[j] + 1
			} else {
				cur[j+1] = max(prev[j+1], cur[j])
			}
		}
		prev, cur = cur, prev
	}
	common := prev[len(b)]
	return int64(len(b) - common), int64(len(a) - common)
}

// splitLines is a text's lines: split at newlines, a last line without
// one counting, none for "".
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}
