package spans_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/testonly/testbackend"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/session"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/spans"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/transcript"
)

// treeFile is one transcript file of a Claude dir, classified the way the
// daemon does (internal/daemon/files.go), .meta.json included.
type treeFile struct {
	path string
	src  session.Source
}

// treeFiles lists the transcript files under dir/projects in path order,
// the order a one-shot run reads them.
func treeFiles(tb testing.TB, dir string) []treeFile {
	tb.Helper()
	projects := filepath.Join(dir, "projects")
	var files []treeFile
	err := filepath.WalkDir(projects, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if de.IsDir() || !session.IsTranscriptName(de.Name()) || !de.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(projects, p)
		if err != nil {
			return err
		}
		f := treeFile{path: p, src: session.ClassifySource(rel)}
		if mp := session.MetaPath(p); mp != "" {
			if b, err := os.ReadFile(mp); err == nil {
				var m struct {
					AgentType   string `json:"agentType"`
					Description string `json:"description"`
					ToolUseID   string `json:"toolUseId"`
				}
				if json.Unmarshal(b, &m) == nil {
					f.src.AgentType, f.src.Description, f.src.ToolUseID = m.AgentType, m.Description, m.ToolUseID
				}
			}
		}
		files = append(files, f)
		return nil
	})
	if err != nil {
		tb.Fatalf("walk %s: %v", projects, err)
	}
	sort.Slice(files, func(i, j int) bool { return files[i].path < files[j].path })
	return files
}

// treeLines is a tree read into memory: per file, its lines.
type treeLines struct {
	files []treeFile
	lines [][][]byte
	bytes int64
}

func readTree(tb testing.TB, dir string) *treeLines {
	tb.Helper()
	t := &treeLines{files: treeFiles(tb, dir)}
	for _, f := range t.files {
		data, err := os.ReadFile(f.path)
		if err != nil {
			tb.Fatal(err)
		}
		t.bytes += int64(len(data))
		var lines [][]byte
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(make([]byte, 1<<20), transcript.DefaultMaxLineBytes)
		for sc.Scan() {
			lines = append(lines, append([]byte(nil), sc.Bytes()...))
		}
		t.lines = append(t.lines, lines)
	}
	return t
}

// run feeds the tree through decoder, assembler and builder the way a
// one-shot run does, and returns the builder (for its stats).
func (t *treeLines) run(dopts transcript.Options, cfg spans.Config, sinks []session.Sink, emit func(spans.Span)) *spans.Builder {
	b := spans.NewBuilder(cfg, emit)
	all := append([]session.Sink{b}, sinks...)
	asm := session.New(session.Config{}, session.Fanout(all))
	dec := transcript.NewDecoder(dopts)
	var rec transcript.Record
	now := time.Unix(0, 0)
	for i := range t.files {
		src := t.files[i].src
		for _, line := range t.lines[i] {
			if transcript.IsBlank(line) {
				continue
			}
			if dec.Decode(line, &rec) == nil {
				asm.Add(&src, &rec, now)
			}
		}
	}
	asm.Flush(now, true)
	return b
}

// treeSpans returns every span of a tree.
func treeSpans(tb testing.TB, dir string, cfg spans.Config, sinks ...session.Sink) ([]spans.Span, spans.Stats) {
	tb.Helper()
	var out []spans.Span
	b := readTree(tb, dir).run(transcript.Options{}, cfg, sinks, func(s spans.Span) { out = append(out, s) })
	return out, b.Stats()
}

// corpusTrees returns the real trees that have a projects/ dir.
func corpusTrees(tb testing.TB) []string {
	var out []string
	for _, d := range testbackend.CorpusTrees(tb) {
		if st, err := os.Stat(filepath.Join(d, "projects")); err == nil && st.IsDir() {
			out = append(out, d)
		}
	}
	return out
}
