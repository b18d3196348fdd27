package anonymize

import (
	"bytes"
	"encoding/json"
	"index/suffixarray"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/testonly/testbackend"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/claudedir"
)

// personalStrings is the independent reader: with encoding/json, it
// collects from a Claude config dir every string a person wrote or that
// names their machine: prompts and responses, thinking, tool input and
// output, titles, summaries, todo and history text, working directories,
// paths (also where they are object keys) and git branches. Strings
// shorter than minLen, and bare tokens (ids, enums, tool names: no space
// and no slash), are left out: they are not text and cannot be searched
// for meaningfully, and so are strings without a letter or digit. Text
// that Claude Code writes itself (synthetic API errors) is left out too.
func personalStrings(t *testing.T, dir string, minLen int) map[string]string {
	t.Helper()
	out := map[string]string{} // string -> where it was found
	synthetic := map[string]bool{}
	token := regexp.MustCompile(`^[A-Za-z0-9_.:+<>@-]*$`)
	// A string without a letter or digit ("# =====", "---") says
	// nothing anyone could be found by; shell commands keep their
	// punctuation (fillShell), so such a string may be met again.
	wordless := regexp.MustCompile(`^[^\pL\pN]*$`)
	add := func(s, where string) {
		s = strings.TrimSpace(s)
		if len(s) >= minLen && !token.MatchString(s) && !wordless.MatchString(s) {
			out[s] = where
		}
	}
	var leaves func(v any, where string)
	leaves = func(v any, where string) {
		switch x := v.(type) {
		case string:
			add(x, where)
		case []any:
			for _, e := range x {
				leaves(e, where)
			}
		case map[string]any:
			for k, e := range x {
				if strings.ContainsAny(k, `/\`) {
					add(k, where+" key")
				}
				leaves(e, where)
			}
		}
	}
	record := func(r map[string]any, where string) {
		for _, k := range []string{"cwd", "gitBranch", "summary", "customTitle", "aiTitle", "display",
			"lastPrompt", "content", "activeForm", "subject", "description", "project", "toolUseResult", "snapshot"} {
			if v, ok := r[k]; ok {
				leaves(v, where+" "+k)
			}
		}
		if b, ok := r["gitBranch"].(string); ok && len(b) >= 6 && b != "master" && b != "HEAD" {
			out[b] = where + " gitBranch"
		}
		msg, _ := r["message"].(map[string]any)
		if msg == nil {
			return
		}
		if msg["model"] == "<synthetic>" || r["isApiErrorMessage"] == true {
			if c, ok := msg["content"].([]any); ok {
				for _, b := range c {
					if blk, ok := b.(map[string]any); ok {
						if text, ok := blk["text"].(string); ok {
							synthetic[strings.TrimSpace(text)] = true
						}
					}
				}
			}
			return
		}
		switch c := msg["content"].(type) {
		case string:
			add(c, where+" prompt")
		case []any:
			for _, b := range c {
				blk, _ := b.(map[string]any)
				for _, k := range []string{"text", "thinking", "input", "content"} {
					if v, ok := blk[k]; ok {
						leaves(v, where+" "+k)
					}
				}
			}
		}
	}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		docs := [][]byte{data}
		if strings.HasSuffix(p, ".jsonl") {
			docs = bytes.Split(data, []byte("\n"))
		}
		for i, doc := range docs {
			var v any
			if json.Unmarshal(doc, &v) != nil {
				continue
			}
			where := rel
			if len(docs) > 1 {
				where += ":" + itoa(i+1)
			}
			if r, ok := v.(map[string]any); ok {
				record(r, where)
				if d, ok := r["data"].(map[string]any); ok {
					if m, ok := d["message"].(map[string]any); ok {
						record(m, where+" progress")
					}
				}
			} else {
				leaves(v, where)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The same words as a synthetic notice are Claude Code's, wherever
	// they stand (a tool result "Prompt is too long").
	for s := range out {
		if synthetic[s] {
			delete(out, s)
		}
	}
	return out
}

func itoa(i int) string {
	b := []byte{}
	for ; i > 0 || len(b) == 0; i /= 10 {
		b = append([]byte{byte('0' + i%10)}, b...)
	}
	return string(b)
}

// slashCommand is a slash command's name, which the anonymizer keeps in
// command headers ("<command-name>/compact</command-name>").
var slashCommand = regexp.MustCompile(`^/[A-Za-z0-9_.:+-]+$`)

// keptWhole are texts the anonymizer keeps whole by design: markers
// Claude Code writes (see markers), slash command names and headers.
func keptWhole(s string) bool {
	for _, m := range markers {
		if s == m {
			return true
		}
	}
	return slashCommand.MatchString(s) || shellVocabulary(s) ||
		strings.HasPrefix(s, "<command-name>") && strings.HasSuffix(s, "</command-name>") && len(s) < 64
}

// shellVocabulary says every word of s is one a shell command keeps
// (shellWords, the runs of shellOptions, single characters): "git commit
// --dry-run" is kept whole by design.
func shellVocabulary(s string) bool {
	for _, w := range regexp.MustCompile(`[A-Za-z0-9]+`).FindAllString(s, -1) {
		if len(w) > 1 && !shellWords[w] && !optionRuns[w] {
			return false
		}
	}
	return true
}

// searchable is every string of a copy, decoded (keys and values), and the
// raw text of lines that are not JSON, joined by NUL bytes and indexed.
func searchable(t *testing.T, dir string) *suffixarray.Index {
	t.Helper()
	var buf bytes.Buffer
	var collect func(v any)
	collect = func(v any) {
		switch x := v.(type) {
		case string:
			buf.WriteString(x)
			buf.WriteByte(0)
		case []any:
			for _, e := range x {
				collect(e)
			}
		case map[string]any:
			for k, e := range x {
				buf.WriteString(k)
				buf.WriteByte(0)
				collect(e)
			}
		}
	}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		buf.WriteString(p[len(dir):]) // file and folder names too
		buf.WriteByte(0)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, doc := range bytes.Split(data, []byte("\n")) {
			var v any
			if json.Unmarshal(doc, &v) == nil {
				collect(v)
			} else {
				buf.Write(doc)
				buf.WriteByte(0)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return suffixarray.New(buf.Bytes())
}

// leaks returns the personal strings of src found in the anonymized copy dst.
func leaks(t *testing.T, src, dst string) (found []string, checked int) {
	t.Helper()
	personal := personalStrings(t, src, 8)
	idx := searchable(t, dst)
	for s, where := range personal {
		if keptWhole(s) {
			continue
		}
		checked++
		if len(idx.Lookup([]byte(s), 1)) > 0 {
			found = append(found, where+": "+s)
		}
	}
	sort.Strings(found)
	return found, checked
}

// TestNoPersonalTextSurvives anonymizes a tree full of made-up personal
// text (and, when the original corpus is here, every original tree) and
// searches the copy for every string the independent reader collected.
func TestNoPersonalTextSurvives(t *testing.T) {
	trees := []string{writePersonalTree(t)}
	if real, ok := testbackend.SharedCorpus(t); ok {
		for _, tree := range testbackend.AllCorpusTrees(t) {
			if strings.HasPrefix(tree, real) {
				trees = append(trees, tree)
			}
		}
	} else {
		t.Logf("no original corpus at %s: only the made-up tree is checked (set %s to check the real ones)", real, testbackend.SharedDirEnv)
	}
	for _, src := range trees {
		t.Run(filepath.Base(src), func(t *testing.T) {
			dst := filepath.Join(t.TempDir(), "copy")
			if _, err := Tree(src, dst, Options{Key: []byte("privacy test")}); err != nil {
				t.Fatal(err)
			}
			found, checked := leaks(t, src, dst)
			if checked == 0 {
				t.Fatalf("the reader found no personal text in %s", src)
			}
			for _, f := range found {
				t.Errorf("survived: %.200s", f)
			}
			t.Logf("%d personal strings searched, %d found", checked, len(found))
		})
	}
}

// TestWordsInIdsAndNamesAreReplacedAlike covers the personal words that
// are not text: subagent ids Claude Code builds from a prompt's words (in
// file names and agentId fields) and custom skill names. They must leave
// the copy, and each must become the same replacement in every file, so
// that a subagent's file still matches its parent's Task result; Claude
// Code's own ids (compaction and aside forks, random hex) and built-in
// commands stay.
func TestWordsInIdsAndNamesAreReplacedAlike(t *testing.T) {
	const (
		session = "0b9c6a52-1d7e-4a38-9f3e-2c1a8d7e5f10"
		fork    = "a20261125-payrollbonus-0123456789abcdef"
		compact = "acompact-3c44c3"
		aside   = "aside_question-5f3e2a1b"
	)
	dir := filepath.Join(t.TempDir(), "claude")
	project := filepath.Join(dir, "projects", "-home-alice-payroll")
	files := map[string]string{
		session + ".jsonl": `{"type":"assistant","uuid":"u1","sessionId":"` + session + `","attributionSkill":"payroll-report","message":{"id":"m1","role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Skill","input":{"skill":"payroll-report"}},{"type":"tool_use","id":"t2","name":"Task","input":{"subagent_type":"general-purpose","prompt":"payroll bonus"}}]}}
{"type":"user","uuid":"u2","sessionId":"` + session + `","message":{"role":"user","content":"<command-name>/payroll-report</command-name>\n<command-args>bonus</command-args>"},"toolUseResult":{"commandName":"payroll-report"}}
{"type":"user","uuid":"u3","sessionId":"` + session + `","message":{"role":"user","content":"<command-name>/compact</command-name>"},"toolUseResult":{"agentId":"` + fork + `","status":"completed"}}
`,
		session + "/subagents/agent-" + fork + ".jsonl":     `{"type":"user","uuid":"s1","sessionId":"` + session + `","agentId":"` + fork + `","isSidechain":true,"message":{"role":"user","content":"payroll bonus"}}` + "\n",
		session + "/subagents/agent-" + fork + ".meta.json": `{"agentType":"general-purpose"}`,
		session + "/subagents/agent-" + compact + ".jsonl":  `{"type":"user","uuid":"c1","sessionId":"` + session + `","agentId":"` + compact + `","isSidechain":true,"message":{"role":"user","content":"x"}}` + "\n",
		session + "/subagents/agent-" + aside + ".jsonl":    `{"type":"user","uuid":"q1","sessionId":"` + session + `","agentId":"` + aside + `","isSidechain":true,"message":{"role":"user","content":"x"}}` + "\n",
	}
	files["../../todos/"+session+"-agent-"+fork+".json"] = `[{"content":"x","status":"pending"}]`
	files["../../todos/"+session+"-agent-"+session+".json"] = `[]`
	for rel, content := range files {
		p := filepath.Join(project, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dst := filepath.Join(t.TempDir(), "copy")
	if _, err := Tree(dir, dst, Options{Key: []byte("privacy test")}); err != nil {
		t.Fatal(err)
	}
	var all bytes.Buffer
	agentFiles := map[string]bool{}
	err := filepath.WalkDir(dst, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		all.WriteString(p + "\n")
		if stem := agentFileStem([]byte(d.Name())); stem != nil {
			agentFiles[string(stem)] = true
		}
		data, err := os.ReadFile(p)
		all.Write(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"payroll", "bonus", "report"} {
		if strings.Contains(all.String(), w) {
			t.Errorf("%q survived in the copy:\n%s", w, all.String())
		}
	}
	for _, kept := range []string{compact, aside} {
		if !agentFiles[kept] || !strings.Contains(all.String(), `"agentId":"`+kept+`"`) {
			t.Errorf("Claude Code's own fork id %s was replaced: %v", kept, agentFiles)
		}
	}
	if !strings.Contains(all.String(), "<command-name>/compact</command-name>") {
		t.Errorf("the built-in /compact was replaced")
	}
	// The fork: one replacement, in its file names (its todos too) and
	// every agentId; a session's own todo file keeps its name.
	ids := regexp.MustCompile(`"agentId":"(a20261125-[A-Za-z0-9]+-0123456789abcdef)"`).FindAllStringSubmatch(all.String(), -1)
	if len(ids) != 2 || ids[0][1] != ids[1][1] || !agentFiles[ids[0][1]] || len(agentFiles) != 3 ||
		!strings.Contains(all.String(), session+"-agent-"+ids[0][1]+".json") || !strings.Contains(all.String(), session+"-agent-"+session+".json") {
		t.Errorf("the fork's id is not replaced alike in its files and fields (random parts kept): ids %v, files %v", ids, agentFiles)
	}
	// The skill: one replacement in attributionSkill, the Skill call,
	// the command header and commandName.
	names := regexp.MustCompile(`"(?:attributionSkill|skill|commandName)":"([^"]+)"|<command-name>/([^<]+)</command-name>`).FindAllStringSubmatch(all.String(), -1)
	seen := map[string]int{}
	for _, m := range names {
		seen[m[1]+m[2]]++
	}
	delete(seen, "compact")
	if len(seen) != 1 {
		t.Errorf("the custom skill has %d replacements, want 1: %v", len(seen), seen)
	}
	for n, count := range seen {
		if count != 4 || len(n) != len("payroll-report") || claudedir.IsBuiltinCommand(n) {
			t.Errorf("skill replaced as %q %d times, want 4 of the same shape", n, count)
		}
	}
}
