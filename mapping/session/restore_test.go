package session

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/transcript"
)

type srcLine struct {
	src  Source
	line []byte
}

func treeLines(t *testing.T, dir string) []srcLine {
	projects := filepath.Join(dir, "projects")
	var files []string
	_ = filepath.WalkDir(projects, func(p string, de fs.DirEntry, err error) error {
		if err == nil && !de.IsDir() && IsTranscriptName(de.Name()) {
			files = append(files, p)
		}
		return nil
	})
	sort.Strings(files)
	var out []srcLine
	for _, p := range files {
		rel, _ := filepath.Rel(projects, p)
		src := ClassifySource(rel)
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReaderSize(f, 1<<20)
		for {
			line, err := br.ReadBytes('\n')
			line = bytes.TrimSuffix(line, []byte("\n"))
			if len(line) > 0 {
				out = append(out, srcLine{src, line})
			}
			if err != nil {
				break
			}
		}
		f.Close()
	}
	return out
}

func feed(asm *Assembler, lines []srcLine, now time.Time) {
	dec := transcript.NewDecoder(transcript.Options{})
	var rec transcript.Record
	for i := range lines {
		if dec.Decode(lines[i].line, &rec) == nil {
			asm.Add(&lines[i].src, &rec, now)
		}
	}
}

// TestRestoredStateContinuesExactly splits a real tree's lines at several
// points, saves the state (through JSON, as the checkpoint does) into a
// fresh assembler and goes on: the totals equal one uninterrupted run.
func TestRestoredStateContinuesExactly(t *testing.T) {
	root := filepath.Join(sharedDir(t), "corpus", "real")
	for _, tree := range []string{"aistrad", "eduardodmb", "spotter"} {
		lines := treeLines(t, filepath.Join(root, tree))
		now := time.Unix(0, 0)
		straight := newTally()
		a := New(Config{}, straight)
		feed(a, lines, now)
		a.Flush(now, true)

		for _, frac := range []int{1, 3, 5, 7, 9} {
			cut := len(lines) * frac / 10
			split := newTally()
			first := New(Config{}, split)
			feed(first, lines[:cut], now)
			first.Flush(now.Add(time.Minute), false) // a live flush settles requests
			b, err := json.Marshal(first.State())
			if err != nil {
				t.Fatal(err)
			}
			var st State
			if err := json.Unmarshal(b, &st); err != nil {
				t.Fatal(err)
			}
			second := New(Config{}, split)
			if err := second.Restore(st, now); err != nil {
				t.Fatal(err)
			}
			feed(second, lines[cut:], now)
			second.Flush(now, true)
			for name, pair := range map[string][2]any{
				"tokens":      {straight.tokens, split.tokens},
				"requests":    {straight.requests, split.requests},
				"tools":       {straight.tools, split.tools},
				"compactions": {straight.compactions, split.compactions},
				"subagents":   {straight.subagents, split.subagents},
				"api errors":  {straight.apiErrors, split.apiErrors},
			} {
				if !reflect.DeepEqual(pair[0], pair[1]) {
					t.Errorf("%s cut at %d/10: %s differ:\n straight %v\n restored %v", tree, frac, name, pair[0], pair[1])
				}
			}
			if straight.sessions != split.sessions || straight.turnUnits != split.turnUnits || straight.warmups != split.warmups {
				t.Errorf("%s cut at %d/10: sessions %d/%d turns %d/%d warmups %d/%d", tree, frac,
					straight.sessions, split.sessions, straight.turnUnits, split.turnUnits, straight.warmups, split.warmups)
			}
		}
	}
}
