package indepcount

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/testonly/testbackend"
)

// TestInputDiff: the input rule of lines_of_code_total, case by case.
func TestInputDiff(t *testing.T) {
	many := func(prefix string, n int) string {
		var sb strings.Builder
		for i := 0; i < n; i++ {
			sb.WriteString(prefix + strings.Repeat("x", i%5) + "\n")
		}
		return sb.String()
	}
	cases := []struct {
		name           string
		tool           string
		input          map[string]any
		added, removed int64
	}{
		{"one line changed", "Edit", map[string]any{"old_string": "a", "new_string": "b"}, 1, 1},
		{"context lines are not changes", "Edit", map[string]any{"old_string": "a\nb\nc", "new_string": "a\nx\ny\nc"}, 2, 1},
		{"a common line in the middle", "Edit", map[string]any{"old_string": "x\nk\ny", "new_string": "X\nk\nY\nZ"}, 3, 2},
		{"replace_all counts once", "Edit", map[string]any{"old_string": "a", "new_string": "b", "replace_all": true}, 1, 1},
		{"deletion", "Edit", map[string]any{"old_string": "a\nb\n", "new_string": ""}, 0, 2},
		{"a final newline is no line", "Edit", map[string]any{"old_string": "a\n", "new_string": "a"}, 0, 0},
		{"texts of another type are empty", "Edit", map[string]any{"old_string": 3.0, "new_string": "a\nb"}, 2, 0},
		{"multiedit sums", "MultiEdit", map[string]any{"edits": []any{
			map[string]any{"old_string": "a", "new_string": "b\nc"}, "x", map[string]any{"old_string": "p\nq"}}}, 2, 3},
		{"multiedit edits not a list", "MultiEdit", map[string]any{"edits": map[string]any{"old_string": "a"}}, 0, 0},
		{"write adds every line", "Write", map[string]any{"content": "a\n\nb\n"}, 3, 0},
		{"notebook edit is counted elsewhere", "NotebookEdit", map[string]any{"new_source": "a", "old_string": "b"}, 0, 0},
		{"past the pairs bound every line left counts", "Edit", map[string]any{"old_string": "z\n" + many("a", 1024), "new_string": many("a", 1024) + "z\n"}, 1025, 1025},
		{"at the pairs bound the diff is exact", "Edit", map[string]any{"old_string": "z\n" + many("a", 1023), "new_string": many("a", 1023) + "z\n"}, 1, 1},
		{"a multiedit's edits share the pairs bound", "MultiEdit", map[string]any{"edits": []any{
			map[string]any{"old_string": "z\n" + many("a", 1023), "new_string": many("a", 1023) + "z\n"},
			map[string]any{"old_string": "x\ny\nz", "new_string": "x2\ny\nz2"}}}, 1 + 3, 1 + 3},
		{"what one edit used is gone for the next", "MultiEdit", map[string]any{"edits": []any{
			map[string]any{"old_string": "x\ny\nz", "new_string": "x2\ny\nz2"},
			map[string]any{"old_string": "z\n" + many("a", 1023), "new_string": many("a", 1023) + "z\n"}}}, 2 + 1024, 2 + 1024},
		{"past the lines bound every line counts", "Edit", map[string]any{"old_string": many("a", 40000), "new_string": many("a", 30000)}, 30000, 40000},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			added, removed := inputDiff(tc.tool, tc.input)
			if added != tc.added || removed != tc.removed {
				t.Errorf("+%d -%d; want +%d -%d", added, removed, tc.added, tc.removed)
			}
		})
	}
}

// TestCountSubagentEditsTree: the synthetic subagent-edits tree, whose
// subagent results carry no toolUseResult, counts the lines worked out by
// hand in its README row.
func TestCountSubagentEditsTree(t *testing.T) {
	got, err := Count(filepath.Join(testbackend.RepoRoot(t), "testdata", "synthetic", "subagent-edits"))
	if err != nil {
		t.Fatal(err)
	}
	wantLines := map[string]int64{
		// Subagent: +3 -1 (context kept), +1 -1 (replace_all once), +2 -1
		// (its patch, not its input).
		"added|Edit|go": 6, "removed|Edit|go": 3,
		"added|Edit|python": 0, "removed|Edit|python": 2,
		"added|MultiEdit|go": 3, "removed|MultiEdit|go": 2,
		"added|Write|markdown": 7, "removed|Write|markdown": 0,
		// Main thread: its patch.
		"added|Edit|markdown": 2, "removed|Edit|markdown": 0,
	}
	if !reflect.DeepEqual(got.LinesOfCode, wantLines) {
		t.Errorf("lines of code %v\n want %v", got.LinesOfCode, wantLines)
	}
	wantDecisions := map[string]int64{
		"Edit|accept|go": 3, "Edit|accept|python": 1, "Edit|accept|markdown": 1, "Edit|reject|makefile": 1,
		"MultiEdit|accept|go": 1, "Write|accept|markdown": 1,
	}
	if !reflect.DeepEqual(got.EditDecisions, wantDecisions) {
		t.Errorf("edit decisions %v\n want %v", got.EditDecisions, wantDecisions)
	}
}
