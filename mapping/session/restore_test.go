package session

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/transcript"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/testonly/testbackend"
)

type srcLine struct {
	src  Source
	line []byte
}

func treeLines(t *testing.T, dir string) []srcLine {
	return treeLinesBy(t, dir, func(rel string) string { return rel })
}

// treeLinesBy is treeLines with the files in the order of key(path
// relative to projects/).
func treeLinesBy(t *testing.T, dir string, key func(rel string) string) []srcLine {
	projects := filepath.Join(dir, "projects")
	if _, err := os.Stat(projects); errors.Is(err, fs.ErrNotExist) {
		return nil // a config dir with no transcripts (tasks or todos only)
	}
	var files []string
	err := filepath.WalkDir(projects, func(p string, de fs.DirEntry, err error) error {
		if err == nil && !de.IsDir() && IsTranscriptName(de.Name()) {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		t.Fatalf("read tree %s: %v", dir, err)
	}
	rel := func(p string) string { r, _ := filepath.Rel(projects, p); return key(filepath.ToSlash(r)) }
	sort.Slice(files, func(i, j int) bool { return rel(files[i]) < rel(files[j]) })
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

// TestRestoredStateContinuesExactly splits a real tree's lines (and the
// synthetic edits and subagent-edits trees') at several points, saves
// the state (through JSON, as the checkpoint does) into a fresh assembler
// and goes on: the totals equal one uninterrupted run.
func TestRestoredStateContinuesExactly(t *testing.T) {
	root := testbackend.CorpusDir(t)
	edits := filepath.Join(testbackend.RepoRoot(t), "testdata", "synthetic", "edits")
	subEdits := filepath.Join(testbackend.RepoRoot(t), "testdata", "synthetic", "subagent-edits")
	for _, tree := range []string{filepath.Join(root, "aistrad"), filepath.Join(root, "eduardodmb"), filepath.Join(root, "spotter"), edits, subEdits} {
		lines := treeLines(t, tree)
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
				"edits":       {straight.edits, split.edits},
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

// TestRestoresVersion1State reads a state saved by the version-1 layout
// (string ids; made by commit 383a2de from the first half of the spotter
// tree), then reads the whole tree again: the totals equal one
// uninterrupted run, so an upgrade neither recounts nor loses anything.
func TestRestoresVersion1State(t *testing.T) {
	// The state was made from the original tree, whose project folders
	// sorted in this order; the anonymized folders sort differently, so
	// the files are put back in the original order.
	order := map[string]string{"4d5611e5-": "0", "258c7280-": "1", "short.": "2", "tool_heavy.": "3"}
	lines := treeLinesBy(t, filepath.Join(testbackend.CorpusDir(t), "spotter"), func(rel string) string {
		_, rest, _ := strings.Cut(rel, "/")
		for prefix, rank := range order {
			if strings.HasPrefix(rest, prefix) {
				return rank + rest
			}
		}
		t.Fatalf("file %s is not one the version-1 state was made from", rel)
		return ""
	})
	if len(lines) < 1000 {
		t.Fatalf("read only %d lines of the spotter tree", len(lines))
	}
	now := time.Unix(0, 0)
	straight := newTally()
	a := New(Config{}, straight)
	feed(a, lines, now)
	a.Flush(now, true)

	f, err := os.Open(filepath.Join("testdata", "state-v1-spotter-half.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var st State
	if err := json.NewDecoder(zr).Decode(&st); err != nil {
		t.Fatal(err)
	}
	if st.Version != 1 || len(st.Done) == 0 || len(st.Seen) == 0 {
		t.Fatalf("not a version-1 state: version %d, %d done tools, %d seen keys", st.Version, len(st.Done), len(st.Seen))
	}
	split := newTally()
	// The first half's units, as the run that saved the state counted
	// them.
	first := New(Config{}, split)
	feed(first, lines[:len(lines)*5/10], now)
	first.Flush(now.Add(time.Minute), false)

	second := New(Config{}, split)
	if err := second.Restore(st, now); err != nil {
		t.Fatal(err)
	}
	// Every line again, as when files are read again from the start
	// (replaced, truncated): what the state holds counts once.
	feed(second, lines, now)
	second.Flush(now, true)
	if !reflect.DeepEqual(straight.tokens, split.tokens) || !reflect.DeepEqual(straight.requests, split.requests) ||
		!reflect.DeepEqual(straight.tools, split.tools) || straight.sessions != split.sessions || straight.turnUnits != split.turnUnits {
		t.Errorf("restored from version 1: totals differ:\n straight %v %v %v\n restored %v %v %v",
			straight.tokens, straight.requests, straight.tools, split.tokens, split.requests, split.tools)
	}
	// The migrated state saves as version 2 and restores to the same.
	again := New(Config{}, newTally())
	if err := again.Restore(second.State(), now); err != nil {
		t.Fatal(err)
	}
	if got, want := again.done.len(), second.done.len(); got != want {
		t.Errorf("version 2 round trip: %d done requests, want %d", got, want)
	}
}
