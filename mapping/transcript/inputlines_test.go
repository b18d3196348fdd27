package transcript

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestDecodeEditInputLines: the lines an edit tool's input adds and
// removes, by the documented rule (InputLines), with no text kept.
func TestDecodeEditInputLines(t *testing.T) {
	tu := func(name, input string) string {
		return `{"type":"assistant","message":{"id":"m","content":[{"type":"tool_use","id":"t","name":"` + name + `","input":` + input + `}]}}`
	}
	cases := []struct {
		name, line string
		want       InputLines
	}{
		{"edit of one line", tu("Edit", `{"file_path":"/r/a.go","old_string":"a := 1","new_string":"a := 2"}`), InputLines{true, 1, 1}},
		{"unchanged leading and trailing lines are context", tu("Edit", `{"old_string":"a\nb\nc\nd","new_string":"a\nB\nB2\nc\nd"}`), InputLines{true, 2, 1}},
		{"a common line in the middle is context", tu("Edit", `{"old_string":"x\nkeep\ny","new_string":"X\nkeep\nY\nZ"}`), InputLines{true, 3, 2}},
		{"lines moved: the longest common subsequence stays", tu("Edit", `{"old_string":"a\nb\nc","new_string":"c\na\nb"}`), InputLines{true, 1, 1}},
		{"insertion after an anchor", tu("Edit", `{"old_string":"func f() {\n","new_string":"func f() {\n\tlog()\n\tdefer done()\n"}`), InputLines{true, 2, 0}},
		{"deletion", tu("Edit", `{"old_string":"a\nb\nc\n","new_string":""}`), InputLines{true, 0, 3}},
		{"keys in any order", tu("Edit", `{"new_string":"a\nb","replace_all":false,"old_string":"a","file_path":"/r/x.py"}`), InputLines{true, 1, 0}},
		{"replace_all counts one replacement", tu("Edit", `{"old_string":"foo","new_string":"bar","replace_all":true}`), InputLines{true, 1, 1}},
		{"identical texts change nothing", tu("Edit", `{"old_string":"a\nb","new_string":"a\nb"}`), InputLines{true, 0, 0}},
		{"a final newline adds no line", tu("Edit", `{"old_string":"a\n","new_string":"a"}`), InputLines{true, 0, 0}},
		{"escaped text compares unescaped", tu("Edit", `{"old_string":"say \"hi\"\n\u0041\n\\n","new_string":"say \u0022hi\u0022\nA\n\\n\nnew"}`), InputLines{true, 1, 0}},
		{"escaped backslash before n is not a newline", tu("Edit", `{"old_string":"a\\nb","new_string":"a\\nc"}`), InputLines{true, 1, 1}},
		{"\\u000a is a newline", tu("Edit", `{"old_string":"a\u000ab","new_string":"a\nc"}`), InputLines{true, 1, 1}},
		{"only old_string", tu("Edit", `{"old_string":"a\nb"}`), InputLines{true, 0, 2}},
		{"strings of another type are no text", tu("Edit", `{"old_string":5,"new_string":"a"}`), InputLines{true, 1, 0}},
		{"a repeated key counts its last value", tu("Edit", `{"old_string":"a\nb\nc","new_string":"z","old_string":"q"}`), InputLines{true, 1, 1}},
		{"edit without texts", tu("Edit", `{"file_path":"/r/a.go"}`), InputLines{}},
		{"multiedit sums its edits", tu("MultiEdit", `{"file_path":"/r/a.ts","edits":[{"old_string":"a","new_string":"b\nc"},{"old_string":"x\ny\nz","new_string":"x\nz","replace_all":true},7,{"new_string":"n"}]}`), InputLines{true, 3, 2}},
		{"multiedit without edits array", tu("MultiEdit", `{"edits":{"old_string":"a"}}`), InputLines{}},
		{"multiedit with no edits", tu("MultiEdit", `{"edits":[]}`), InputLines{Has: true}},
		{"write adds its content", tu("Write", `{"file_path":"/r/n.md","content":"# T\n\ntext\n"}`), InputLines{true, 3, 0}},
		{"write of nothing", tu("Write", `{"content":""}`), InputLines{Has: true}},
		{"write content not a string", tu("Write", `{"content":["a\nb"]}`), InputLines{}},
		{"old_string of a write is not read", tu("Write", `{"old_string":"a","content":"b"}`), InputLines{true, 1, 0}},
		{"content of an edit is not read", tu("Edit", `{"content":"a\nb"}`), InputLines{}},
		{"notebook edits keep their own count", tu("NotebookEdit", `{"new_source":"a\nb","old_string":"x","new_string":"y"}`), InputLines{}},
		{"other tools count nothing", tu("Read", `{"old_string":"a","new_string":"b","content":"c"}`), InputLines{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := decodeOK(t, Options{}, tc.line)
			u := r.Message.ToolUses[0]
			if u.InputLines != tc.want {
				t.Errorf("input lines %+v; want %+v", u.InputLines, tc.want)
			}
			if u.Input != "" {
				t.Errorf("input text kept: %q", u.Input)
			}
		})
	}
}

// TestDiffLinesEqualsReferenceDiff: on random texts, the decoder's count
// equals a plain line diff of the unescaped texts (encoding/json, split
// at newlines, full LCS table), and its line count the reference's.
func TestDiffLinesEqualsReferenceDiff(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 20))
	pieces := []string{"a", "b", "c", "", "  x", "\t", "\"q\"", "é", "\\", "\u2028", "\r", "n", "\\\\n", "u000a", "longer line of text"}
	text := func() string {
		var sb strings.Builder
		for n := rng.IntN(12); n > 0; n-- {
			sb.WriteString(pieces[rng.IntN(len(pieces))])
			if rng.IntN(3) > 0 {
				sb.WriteByte('\n')
			}
		}
		return sb.String()
	}
	d := NewDecoder(Options{})
	for i := 0; i < 20000; i++ {
		old, new := text(), text()
		if rng.IntN(4) == 0 {
			new = old + text()
		}
		rawOld, rawNew := rawJSON(t, old, rng.IntN(2) == 0), rawJSON(t, new, rng.IntN(2) == 0)
		budget := MaxDiffCells
		added, removed := d.diffLines(rawOld, rawNew, &budget)
		wantAdded, wantRemoved := referenceDiff(old, new)
		if added != wantAdded || removed != wantRemoved {
			t.Fatalf("%q → %q: +%d -%d; reference +%d -%d", old, new, added, removed, wantAdded, wantRemoved)
		}
		if got, want := countLines(rawOld), int64(len(referenceLines(old))); got != want {
			t.Fatalf("lines of %q (raw %q): %d; reference %d", old, rawOld, got, want)
		}
		if hashes, over := d.diff.lineHashes(nil, rawOld, MaxDiffLines); over || int64(len(hashes)) != countLines(rawOld) {
			t.Fatalf("%q: %d line hashes (over %v), %d lines", rawOld, len(hashes), over, countLines(rawOld))
		}
	}
}

// TestDiffLinesBounds: past MaxDiffLines or MaxDiffCells every line of
// what is left counts, undiffed; within them the diff is exact.
func TestDiffLinesBounds(t *testing.T) {
	lines := func(prefix string, n int) string {
		var sb strings.Builder
		for i := 0; i < n; i++ {
			sb.WriteString(prefix)
			sb.WriteString(strings.Repeat("x", i%7))
			sb.WriteString(`\n`)
		}
		return sb.String()
	}
	d := NewDecoder(Options{})
	cases := []struct {
		name           string
		old, new       string
		added, removed int64
	}{
		{"common lines are dropped before the cell bound", lines("k", 30000) + lines("a", 2), lines("k", 30000) + lines("b", 3), 3, 2},
		{"at the cell bound: exact", "z\\n" + lines("a", 1023), lines("a", 1023) + "z\\n", 1, 1},
		{"past the cell bound: all lines left", "z\\n" + lines("a", 1024), lines("a", 1024) + "z\\n", 1025, 1025},
		{"past the line bound: all lines", lines("a", MaxDiffLines/2), lines("a", MaxDiffLines/2) + "z", MaxDiffLines/2 + 1, MaxDiffLines / 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			budget := MaxDiffCells
			added, removed := d.diffLines([]byte(tc.old), []byte(tc.new), &budget)
			if added != tc.added || removed != tc.removed {
				t.Errorf("+%d -%d; want +%d -%d", added, removed, tc.added, tc.removed)
			}
			if cap(d.diff.old) > keepScratch || cap(d.diff.row) > keepScratch {
				t.Errorf("scratch kept after a large diff: %d hashes, %d row", cap(d.diff.old), cap(d.diff.row))
			}
		})
	}
}

// rawJSON is s as a JSON string's raw content; escapeAll writes every
// character that can be as \u escapes (a writer other than Claude Code).
func rawJSON(t *testing.T, s string, escapeAll bool) []byte {
	t.Helper()
	if escapeAll {
		var sb strings.Builder
		for _, r := range s {
			if r < 0x80 && r != '\n' {
				sb.WriteString(`\u00`)
				sb.WriteByte("0123456789abcdef"[r>>4])
				sb.WriteByte("0123456789abcdef"[r&15])
				continue
			}
			if r == '\n' && len(s)%2 == 0 {
				sb.WriteString(`\u000A`)
				continue
			}
			if r == '\n' {
				sb.WriteString(`\n`)
				continue
			}
			sb.WriteRune(r)
		}
		return []byte(sb.String())
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return b[1 : len(b)-1]
}

func referenceLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// referenceDiff is the rule on unescaped text with a full LCS table.
func referenceDiff(old, new string) (added, removed int64) {
	return referenceDiffLines(referenceLines(old), referenceLines(new))
}

func referenceDiffLines(a, b []string) (added, removed int64) {
	table := make([][]int, len(a)+1)
	for i := range table {
		table[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				table[i][j] = table[i+1][j+1] + 1
			} else {
				table[i][j] = max(table[i+1][j], table[i][j+1])
			}
		}
	}
	c := table[0][0]
	return int64(len(b) - c), int64(len(a) - c)
}

// referenceInputLines is the rule of InputLines on a tool_use input read
// by encoding/json (nil when it is not an object).
func referenceInputLines(name string, in map[string]any) InputLines {
	str := func(v any) (string, bool) { s, ok := v.(string); return s, ok }
	budget := MaxDiffCells
	diff := func(old, new string) (int64, int64) {
		a, b := referenceLines(old), referenceLines(new)
		if len(a)+len(b) > MaxDiffLines {
			return int64(len(b)), int64(len(a))
		}
		for len(a) > 0 && len(b) > 0 && a[0] == b[0] {
			a, b = a[1:], b[1:]
		}
		for len(a) > 0 && len(b) > 0 && a[len(a)-1] == b[len(b)-1] {
			a, b = a[:len(a)-1], b[:len(b)-1]
		}
		if len(a)*len(b) > budget {
			return int64(len(b)), int64(len(a))
		}
		budget -= len(a) * len(b)
		return referenceDiffLines(a, b)
	}
	switch name {
	case "Edit":
		old, okOld := str(in["old_string"])
		new, okNew := str(in["new_string"])
		if !okOld && !okNew {
			return InputLines{}
		}
		a, r := diff(old, new)
		return InputLines{Has: true, Added: a, Removed: r}
	case "MultiEdit":
		edits, ok := in["edits"].([]any)
		if !ok {
			return InputLines{}
		}
		l := InputLines{Has: true}
		for _, e := range edits {
			if m, ok := e.(map[string]any); ok {
				old, _ := str(m["old_string"])
				new, _ := str(m["new_string"])
				a, r := diff(old, new)
				l.Added += a
				l.Removed += r
			}
		}
		return l
	case "Write":
		if c, ok := str(in["content"]); ok {
			return InputLines{Has: true, Added: int64(len(referenceLines(c)))}
		}
	}
	return InputLines{}
}

// TestMultiEditSharesTheDiffBudget: a MultiEdit's edits compare at most
// MaxDiffCells line pairs together, in order; an edit past what is left
// counts all its lines left after trimming.
func TestMultiEditSharesTheDiffBudget(t *testing.T) {
	var a strings.Builder
	for i := 0; i < 1023; i++ {
		a.WriteString(`a` + strings.Repeat("x", i%7) + `\n`)
	}
	big := `{"old_string":"z\n` + a.String() + `","new_string":"` + a.String() + `z\n"}` // 1024×1024 pairs: +1 -1
	small := `{"old_string":"x\ny\nz","new_string":"x2\ny\nz2"}`                         // 3×3 pairs: +2 -2 diffed, +3 -3 not
	line := func(edits string) string {
		return `{"type":"assistant","message":{"id":"m","content":[{"type":"tool_use","id":"t","name":"MultiEdit","input":{"edits":[` + edits + `]}}]}}`
	}
	cases := []struct {
		name  string
		edits string
		want  InputLines
	}{
		{"small first: the big one no longer fits", small + "," + big, InputLines{true, 2 + 1024, 2 + 1024}},
		{"big first leaves nothing: the small one is counted whole", big + "," + small, InputLines{true, 4, 4}},
		{"each edit of its own call is diffed", small, InputLines{true, 2, 2}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := decodeOK(t, Options{}, line(tc.edits))
			if got := r.Message.ToolUses[0].InputLines; got != tc.want {
				t.Errorf("%+v; want %+v", got, tc.want)
			}
		})
	}
}
