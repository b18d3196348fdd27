package daemon

import (
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/exporter/prom"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/discover"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/session"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/transcript"
)

// TestStreamedFilesComeInReadingOrder: the one-shot's files, read as the
// walk finds them, come in the order a full scan gives (sync, then
// sorted: path order with legacy agents after their directory), legacy
// agents at every depth included, and are counted, not kept; a reader
// that stops early gets no more and does not hang the walk.
func TestStreamedFilesComeInReadingOrder(t *testing.T) {
	const s1, s2 = "00000000-0000-4000-8000-000000000001", "00000000-0000-4000-8000-000000000002"
	rels := []string{
		"-p/" + s1 + ".jsonl", "-p/" + s1 + "/subagents/agent-a1.jsonl", "-p/" + s2 + ".jsonl",
		"-p/agent-0b.jsonl", "-p/agent-0a.jsonl", "-p/agent-acompact-e1.jsonl",
		"-p-q/" + s1 + ".jsonl", "-p-q/agent-ff.jsonl", "-p0/agent-01.jsonl", "-p0/" + s2 + ".jsonl",
		"-p0/deeper/agent-02.jsonl", "-p0/deeper/" + s1 + ".jsonl", "-z/" + s2 + ".jsonl",
		"agent-top.jsonl", s1 + ".jsonl",
	}
	for i := range 300 { // more than a hand-over's batch, over many projects
		rels = append(rels, "-many"+string(rune('a'+i%26))+"/"+s1[:len(s1)-3]+string(rune('0'+i/100))+string(rune('0'+i/10%10))+string(rune('0'+i%10))+".jsonl")
	}
	root := t.TempDir()
	for _, rel := range rels {
		p := filepath.Join(root, "projects", filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("{}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := &Config{ClaudeDirs: []string{root}, Oneshot: true}
	readerFor := func() *reader {
		return newReader(cfg, slog.New(slog.DiscardHandler), prom.NewSelf(prometheus.NewRegistry()), nil, transcript.Options{}, time.Now)
	}
	newWatcher := func() *discover.Watcher {
		w, err := discover.New(discover.Config{Roots: cfg.ClaudeDirs, Match: session.IsTranscriptName, PollOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	pathsOf := func(files []*fileState) []string {
		var out []string
		for _, f := range files {
			out = append(out, f.path())
		}
		return out
	}

	full := readerFor()
	sorted, err := full.scanAll(newWatcher(), nil)
	if err != nil || len(sorted) != len(rels) {
		t.Fatalf("scan: %d files, %v; want %d", len(sorted), err, len(rels))
	}
	want := pathsOf(sorted)

	rd := readerFor()
	got := pathsOf(slices.Collect(rd.streamFiles(newWatcher(), slog.New(slog.DiscardHandler))))
	if !slices.Equal(got, want) {
		t.Errorf("streamed order:\n got %q\nwant %q", got, want)
	}
	// A one-shot keeps no table: the files are counted.
	if len(rd.files) != 0 || rd.streamed != len(rels) {
		t.Errorf("after the stream: %d table entries, %d counted; want 0 and %d", len(rd.files), rd.streamed, len(rels))
	}

	rd = readerFor()
	var first []string
	for f := range rd.streamFiles(newWatcher(), slog.New(slog.DiscardHandler)) {
		if first = append(first, f.path()); len(first) == 3 {
			break
		}
	}
	if !slices.Equal(first, want[:3]) {
		t.Errorf("stopped after 3: %q, want %q", first, want[:3])
	}
}

// scanTable fills rd's table from one scan of cfg's roots and returns
// its files in reading order.
func scanTable(cfg *Config, rd *reader) ([]*fileState, error) {
	w, err := discover.New(discover.Config{Roots: cfg.ClaudeDirs, Match: session.IsTranscriptName, PollOnly: true})
	if err != nil {
		return nil, err
	}
	defer w.Close()
	return rd.scanAll(w, nil)
}
