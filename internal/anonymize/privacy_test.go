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

	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/testbackend"
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
