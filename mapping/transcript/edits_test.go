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
		{"created file without content", res(`"ok"`, `{"type":"create","filePath":"/r/n.py"}`), EditResult{Has: true, Created: true}, false},
		{"created file whose content is not a string", res(`"ok"`, `{"type":"create","content":{"a":"b\nc"}}`), EditResult{Has: true, Created: true}, false},
		{"type not a string", res(`"ok"`, `{"type":["create"],"content":"a\n","structuredPatch":[]}`), EditResult{Has: true}, false},
		{"hunks not objects", res(`"ok"`, `{"structuredPatch":["+a",7,null,[["+b"]]]}`), EditResult{Has: true}, false},
		{"lines not an array", res(`"ok"`, `{"structuredPatch":[{"lines":"+a\n-b"},{"lines":null}]}`), EditResult{Has: true}, false},
		{"empty line strings", res(`"ok"`, `{"structuredPatch":[{"lines":["","+","-"," "]}]}`), EditResult{Has: true, Added: 1, Removed: 1}, false},
		{"escaped plus is not a plus", res(`"ok"`, `{"structuredPatch":[{"lines":["\u002ba","\"+b"]}]}`), EditResult{Has: true}, false},
		{"rejected", res(`"The user doesn't want to proceed with this tool use. The tool use was rejected."`, `"User rejected tool use"`), EditResult{}, true},
		{"rejected in a text block", res(`[{"type":"text","text":"The user doesn't want to proceed with this tool use."}]`, `"x"`), EditResult{}, true},
		{"marker deep in the text is not a rejection", res(`"`+strings.Repeat("x", 300)+`The user doesn't want to proceed with this tool use"`, `"x"`), EditResult{}, false},
	}
	for _, tc := range results {
		t.Run(tc.name, func(t *testing.T) {
			r := decodeOK(t, Options{}, tc.line)
			if r.Rare().Edit != tc.edit || r.Message.ToolResults[0].Rejected != tc.rejected {
				t.Errorf("edit %+v rejected %v; want %+v %v", r.Rare().Edit, r.Message.ToolResults[0].Rejected, tc.edit, tc.rejected)
			}
		})
	}
	r := decodeOK(t, Options{}, `{"type":"pr-link","sessionId":"s","prNumber":55,"prUrl":"https://github.com/o/r/pull/55","prRepository":"o/r","timestamp":"2026-09-13T10:00:00.000Z"}`)
	if r.Kind != KindPRLink || r.Rare().PRNumber != 55 || r.Rare().PRURL != "https://github.com/o/r/pull/55" || r.Rare().PRRepo != "o/r" || r.UnknownFields != 0 {
		t.Errorf("pr-link: %+v", r)
	}
}

// TestDecodeHugePatchCountsWithoutKeepingIt: a patch of 200,000 lines is
// counted while scanning, with no more allocations than a patch of two.
func TestDecodeHugePatchCountsWithoutKeepingIt(t *testing.T) {
	line := func(n int) []byte {
		var b strings.Builder
		b.WriteString(`{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"ok"}]},"toolUseResult":{"filePath":"/r/a.go","structuredPatch":[{"lines":[`)
		for i := 0; i < n; i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString([]string{`"+added line"`, `"-removed line"`, `" context"`}[i%3])
		}
		b.WriteString(`]}]}}`)
		return []byte(b.String())
	}
	small, huge := line(2), line(200_000)
	dec := NewDecoder(Options{})
	var r Record
	if err := dec.Decode(huge, &r); err != nil {
		t.Fatal(err)
	}
	if want := (EditResult{Has: true, Added: 66_667, Removed: 66_667}); r.Rare().Edit != want {
		t.Fatalf("edit %+v, want %+v", r.Rare().Edit, want)
	}
	allocs := func(b []byte) float64 {
		return testing.AllocsPerRun(20, func() { _ = dec.Decode(b, &r) })
	}
	if a, b := allocs(small), allocs(huge); b > a {
		t.Errorf("allocations: %v for a huge patch, %v for a small one", b, a)
	}
}

// TestPullRequestURLIn: the pull request gh pr create printed, found in a
// shell call's output as written in the JSON line.
func TestPullRequestURLIn(t *testing.T) {
	cases := []struct{ out, want string }{
		{`https://github.com/o/r/pull/7`, "https://github.com/o/r/pull/7"},
		{`Creating pull request for x into main in o/r\n\nhttps://github.com/o/r/pull/12\n`, "https://github.com/o/r/pull/12"},
		{`https://github.com/o/r/pull/12/files`, "https://github.com/o/r/pull/12"},
		{`see https://github.com/o/r/pull/1 and https://ghe.example.com/a/b/pull/99`, "https://ghe.example.com/a/b/pull/99"},
		{`https://github.com/o/r/pull/1 then /pull/ and github.com/o/r/pull/5`, "https://github.com/o/r/pull/1"},
		{`http://git.local/o/r/pull/3`, "http://git.local/o/r/pull/3"},
		{`https://github.com/o/r/pull/`, ""},
		{`https://github.com/o/r/pulls`, ""},
		{`no url here`, ""},
		{``, ""},
		{`\"https://github.com/o/r/pull/4\"`, "https://github.com/o/r/pull/4"},
		{`https://x y/pull/4`, ""},
		{`https://` + strings.Repeat("a", 600) + `/pull/4`, ""},
	}
	for _, tc := range cases {
		if got := string(PullRequestURLIn([]byte(tc.out))); got != tc.want {
			t.Errorf("PullRequestURLIn(%q) = %q, want %q", tc.out, got, tc.want)
		}
	}
	line := `{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"x"}]},"toolUseResult":{"stdout":"Warning: 2 uncommitted changes\nhttps://github.com/o/r/pull/31","stderr":"","interrupted":false}}`
	if r := decodeOK(t, Options{}, line); r.Rare().OutputPRURL != "https://github.com/o/r/pull/31" {
		t.Errorf("OutputPRURL = %q", r.Rare().OutputPRURL)
	}
	for _, tur := range []string{`{"stdout":7}`, `{"stdout":null}`, `{"stderr":"https://github.com/o/r/pull/31"}`, `"https://github.com/o/r/pull/31"`} {
		line := `{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"x"}]},"toolUseResult":` + tur + `}`
		if r := decodeOK(t, Options{}, line); r.Rare().OutputPRURL != "" {
			t.Errorf("%s: OutputPRURL = %q", tur, r.Rare().OutputPRURL)
		}
	}
}
