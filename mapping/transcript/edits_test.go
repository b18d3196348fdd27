package transcript

import (
	"strings"
	"testing"
)

// TestDecodeEditFacts: what edit tools, shell calls, rejections and
// pr-link records say, read without keeping any path or text.
func TestDecodeEditFacts(t *testing.T) {
	tu := func(name, input string) string {
		return `{"type":"assistant","message":{"id":"m","content":[{"type":"tool_use","id":"t","name":"` + name + `","input":` + input + `}]}}`
	}
	uses := []struct {
		name, line string
		ext        string
		nb         int64
		shell      ShellFacts
	}{
		{"edit of a go file", tu("Edit", `{"file_path":"/home/u/repo/main.go","old_string":"a","new_string":"b"}`), "go", 0, 0},
		{"windows path", tu("Write", `{"file_path":"C:\\Users\\u\\App.TSX","content":"x"}`), "tsx", 0, 0},
		{"no extension", tu("Write", `{"file_path":"/repo/LICENSE"}`), "", 0, 0},
		{"dockerfile", tu("Edit", `{"file_path":"/repo/Dockerfile"}`), "dockerfile", 0, 0},
		{"path not a string", tu("Edit", `{"file_path":7}`), "", 0, 0},
		{"input not an object", tu("Edit", `"x"`), "", 0, 0},
		{"notebook insert", tu("NotebookEdit", `{"notebook_path":"/r/a.ipynb","new_source":"a\nb\nc","edit_mode":"insert"}`), "ipynb", 3, 0},
		{"notebook delete", tu("NotebookEdit", `{"edit_mode":"delete","notebook_path":"/r/a.ipynb","new_source":"a\nb"}`), "ipynb", 0, 0},
		{"bash commit", tu("Bash", `{"command":"git add -A && git commit -m \"x\"","description":"d"}`), "", 0, ShellCommit},
		{"bash pr", tu("Bash", `{"command":"gh pr create --fill"}`), "", 0, ShellPRCreate},
		{"bash other", tu("Bash", `{"command":"ls"}`), "", 0, 0},
		{"read is not an edit", tu("Read", `{"file_path":"/r/a.go"}`), "", 0, 0},
	}
	for _, tc := range uses {
		t.Run(tc.name, func(t *testing.T) {
			r := decodeOK(t, Options{}, tc.line)
			u := r.Message.ToolUses[0]
			if u.Ext != tc.ext || u.NotebookLines != tc.nb || u.Shell != tc.shell || u.Input != "" {
				t.Errorf("ext %q nb %d shell %b input %q; want %q %d %b", u.Ext, u.NotebookLines, u.Shell, u.Input, tc.ext, tc.nb, tc.shell)
			}
		})
	}
	res := func(content, tur string) string {
		return `{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":` + content + `}]},"toolUseResult":` + tur + `}`
	}
	results := []struct {
		name, line string
		edit       EditResult
		rejected   bool
	}{
		{"patch", res(`"ok"`, `{"filePath":"/r/a.go","structuredPatch":[{"oldStart":1,"oldLines":2,"newStart":1,"newLines":3,"lines":[" a","-b","+c","+d"]},{"lines":["-e","+f"," g"]}],"originalFile":"a\nb\n"}`),
			EditResult{Has: true, Added: 3, Removed: 2}, false},
		{"created file counts its content", res(`"ok"`, `{"type":"create","filePath":"/r/n.py","content":"a\nb\nc\n","structuredPatch":[]}`),
			EditResult{Has: true, Created: true, Added: 3}, false},
		{"created file without a final newline", res(`"ok"`, `{"content":"a\nb","type":"create"}`), EditResult{Has: true, Created: true, Added: 2}, false},
		{"created empty file", res(`"ok"`, `{"type":"create","content":""}`), EditResult{Has: true, Created: true}, false},
		{"escaped backslash before n is not a newline", res(`"ok"`, `{"type":"create","content":"a\\nb"}`), EditResult{Has: true, Created: true, Added: 1}, false},
		{"update uses the patch", res(`"ok"`, `{"type":"update","content":"x\ny\nz\n","structuredPatch":[{"lines":["+y"]}]}`), EditResult{Has: true, Added: 1}, false},
		{"patch not an array", res(`"ok"`, `{"structuredPatch":{"lines":["+a"]}}`), EditResult{}, false},
		{"lines not strings", res(`"ok"`, `{"structuredPatch":[{"lines":[1,null,{"+":1},"+a"]}]}`), EditResult{Has: true, Added: 1}, false},
		{"rejected", res(`"The user doesn't want to proceed with this tool use. The tool use was rejected."`, `"User rejected tool use"`), EditResult{}, true},
		{"rejected in a text block", res(`[{"type":"text","text":"The user doesn't want to proceed with this tool use."}]`, `"x"`), EditResult{}, true},
		{"marker deep in the text is not a rejection", res(`"`+strings.Repeat("x", 300)+`The user doesn't want to proceed with this tool use"`, `"x"`), EditResult{}, false},
	}
	for _, tc := range results {
		t.Run(tc.name, func(t *testing.T) {
			r := decodeOK(t, Options{}, tc.line)
			if r.Edit != tc.edit || r.Message.ToolResults[0].Rejected != tc.rejected {
				t.Errorf("edit %+v rejected %v; want %+v %v", r.Edit, r.Message.ToolResults[0].Rejected, tc.edit, tc.rejected)
			}
		})
	}
	r := decodeOK(t, Options{}, `{"type":"pr-link","sessionId":"s","prNumber":55,"prUrl":"https://github.com/o/r/pull/55","prRepository":"o/r","timestamp":"2026-09-13T10:00:00.000Z"}`)
	if r.Kind != KindPRLink || r.PRNumber != 55 || r.PRURL != "https://github.com/o/r/pull/55" || r.PRRepo != "o/r" || r.UnknownFields != 0 {
		t.Errorf("pr-link: %+v", r)
	}
}
