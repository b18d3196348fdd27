package transcript

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/testonly/testbackend"
)

// TestInputLinesMatchPatches measures the input rule (InputLines) where
// the truth is known: on main-thread edits whose result holds both the
// input and a structuredPatch (or a created file's content), how often the
// input gives exactly the patch's added and removed lines. It logs the
// rate per tree and kind of call (go test ./mapping/transcript -run
// TestInputLinesMatchPatches -v; CTE_SHARED_DIR adds the original trees).
//
// Checked: a created file's content lines always equal the input's; on a
// tree whose patch lines keep their +/-/space prefixes, at least 95% of
// Edit calls without replace_all match (the rule is a line diff: a
// mismatch is a file whose last line has no newline, or a diff that
// aligns differently within the file). The anonymized corpus filled its
// patch lines without prefixes: its Edit rates are logged, not checked.
// Write over an existing file and replace_all cannot match (the old file,
// the number of replacements are not in the transcript): logged.
func TestInputLinesMatchPatches(t *testing.T) {
	for _, tree := range testbackend.AllCorpusTrees(t) {
		name := filepath.Base(filepath.Dir(tree)) + "-" + filepath.Base(tree)
		t.Run(name, func(t *testing.T) {
			m := measureInputLines(t, tree)
			var kinds []string
			for _, k := range []string{"Edit", "Edit replace_all", "MultiEdit", "Write create", "Write update"} {
				if c := m.calls[k]; c > 0 {
					kinds = append(kinds, fmt.Sprintf("%s %d/%d (%.1f%%)", k, m.match[k], c, 100*float64(m.match[k])/float64(c)))
				}
			}
			wellFormed := m.patchLines > 0 && m.prefixed == m.patchLines
			t.Logf("%s: %s; patch lines with a +/-/space prefix: %d of %d", name, strings.Join(kinds, ", "), m.prefixed, m.patchLines)
			if m.match["Write create"] != m.calls["Write create"] {
				t.Errorf("created files: the input's content lines differ from the result's in %d of %d calls",
					m.calls["Write create"]-m.match["Write create"], m.calls["Write create"])
			}
			if c := m.calls["Edit"]; wellFormed && c > 0 && float64(m.match["Edit"]) < 0.95*float64(c) {
				t.Errorf("Edit: the input rule gives the patch's numbers in %d of %d calls, below 95%%", m.match["Edit"], c)
			}
		})
	}
}

type inputLinesMeasure struct {
	calls, match         map[string]int
	patchLines, prefixed int
}

// measureInputLines pairs the main-thread Edit, MultiEdit and Write calls
// of a tree with their successful results.
func measureInputLines(t *testing.T, tree string) inputLinesMeasure {
	m := inputLinesMeasure{calls: map[string]int{}, match: map[string]int{}}
	type use struct {
		kind  string
		lines InputLines
	}
	dec := NewDecoder(Options{})
	var r Record
	err := filepath.WalkDir(tree, func(p string, de fs.DirEntry, err error) error {
		if err != nil || de.IsDir() || !strings.HasSuffix(p, ".jsonl") ||
			strings.Contains(filepath.ToSlash(p), "/subagents/") || strings.HasPrefix(de.Name(), "agent-") {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		uses := map[string]use{}
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(make([]byte, 0, 1<<20), DefaultMaxLineBytes)
		for sc.Scan() {
			if dec.Decode(sc.Bytes(), &r) != nil || r.IsSidechain {
				continue
			}
			for _, u := range r.Message.ToolUses {
				if u.Name == "Edit" || u.Name == "MultiEdit" || u.Name == "Write" {
					uses[u.ID] = use{kind: u.Name + replaceAll(t, sc.Bytes(), u.ID), lines: u.InputLines}
				}
			}
			if len(r.Message.ToolResults) != 1 || !r.Rare().Edit.Has {
				continue
			}
			res := r.Message.ToolResults[0]
			u, ok := uses[res.ToolUseID]
			if !ok || res.IsError || res.Rejected {
				continue
			}
			kind := u.kind
			if u.kind == "Write" {
				kind = "Write update"
				if r.Rare().Edit.Created {
					kind = "Write create"
				}
			}
			m.calls[kind]++
			if u.lines.Has && u.lines.Added == r.Rare().Edit.Added && u.lines.Removed == r.Rare().Edit.Removed {
				m.match[kind]++
			}
			if !r.Rare().Edit.Created {
				n, prefixed := patchPrefixes(t, sc.Bytes())
				m.patchLines += n
				m.prefixed += prefixed
			}
		}
		return sc.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// replaceAll is " replace_all" when the line's call id asks to replace
// every occurrence.
func replaceAll(t *testing.T, line []byte, id string) string {
	var rec struct {
		Message struct {
			Content []struct {
				ID    string `json:"id"`
				Input struct {
					ReplaceAll bool `json:"replace_all"`
				} `json:"input"`
			} `json:"content"`
		} `json:"message"`
	}
	if err := json.Unmarshal(line, &rec); err != nil {
		t.Fatalf("a line the decoder read is not JSON: %v", err)
	}
	for _, b := range rec.Message.Content {
		if b.ID == id && b.Input.ReplaceAll {
			return " replace_all"
		}
	}
	return ""
}

// patchPrefixes counts a result's patch lines and those starting with +,
// - or a space.
func patchPrefixes(t *testing.T, line []byte) (n, prefixed int) {
	var rec struct {
		ToolUseResult struct {
			StructuredPatch []struct {
				Lines []string `json:"lines"`
			} `json:"structuredPatch"`
		} `json:"toolUseResult"`
	}
	if err := json.Unmarshal(line, &rec); err != nil {
		t.Fatalf("a line the decoder read is not JSON: %v", err)
	}
	for _, h := range rec.ToolUseResult.StructuredPatch {
		for _, l := range h.Lines {
			n++
			if l != "" && strings.ContainsRune("+- \\", rune(l[0])) {
				prefixed++
			}
		}
	}
	return n, prefixed
}
