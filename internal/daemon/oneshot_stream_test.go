package daemon

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/exporter/prom"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/discover"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/metrics"
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
	// A one-shot keeps no table: the files are counted, and their
	// directories are not kept either.
	if len(rd.files) != 0 || rd.streamed != len(rels) || len(rd.dirs) != 0 {
		t.Errorf("after the stream: %d table entries, %d counted, %d directories kept; want 0, %d and 0", len(rd.files), rd.streamed, len(rd.dirs), len(rels))
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

// TestStreamedSubagentsLeaveNothingBehind: a one-shot streams each file
// once, so what the reader holds for a subagent file while it is read (its
// directory's entry, its .meta.json) goes once it is read: 50,000 sessions
// with a subagent each kept 17 MB of them to the end. The meta still names
// the subagent's type in the counters.
func TestStreamedSubagentsLeaveNothingBehind(t *testing.T) {
	root := t.TempDir()
	const n = 40
	for i := range n {
		sid := fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i)
		proj := filepath.Join(root, "projects", fmt.Sprintf("-p%d", i%3))
		sub := filepath.Join(proj, sid, "subagents")
		if err := os.MkdirAll(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		ts := fmt.Sprintf("2026-10-01T10:%02d:00.000Z", i)
		main := fmt.Sprintf(`{"type":"user","uuid":"u%d","sessionId":"%s","timestamp":"%s","message":{"role":"user","content":"go"}}`+"\n", i, sid, ts)
		agent := fmt.Sprintf(`{"type":"assistant","uuid":"a%d","isSidechain":true,"agentId":"a%d","sessionId":"%s","timestamp":"%s",`+
			`"message":{"id":"msg_sub%d","model":"claude-haiku-4-5","role":"assistant","stop_reason":"end_turn","content":[{"type":"text","text":"ok"}],`+
			`"usage":{"input_tokens":1,"output_tokens":2}}}`+"\n", i, i, sid, ts, i)
		for p, b := range map[string]string{
			filepath.Join(proj, sid+".jsonl"):                         main,
			filepath.Join(sub, fmt.Sprintf("agent-a%d.jsonl", i)):     agent,
			filepath.Join(sub, fmt.Sprintf("agent-a%d.meta.json", i)): `{"agentType":"Plan"}`,
			filepath.Join(proj, fmt.Sprintf("agent-b%d.jsonl", i)):    "", // a legacy agent, empty: never read
		} {
			if err := os.WriteFile(p, []byte(b), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	cfg := NewConfig()
	cfg.ClaudeDirs, cfg.Oneshot = []string{root}, true
	reg := prometheus.NewRegistry()
	usage := prom.NewMetrics(reg, time.Minute, time.Now)
	asm := session.New(session.Config{}, metrics.NewMapper(metrics.Config{Project: metrics.ProjectBasename}, usage))
	rd := newReader(&cfg, slog.New(slog.DiscardHandler), prom.NewSelf(reg), asm, transcript.Options{MaxLineBytes: cfg.MaxLineBytes}, time.Now)
	w, err := discover.New(discover.Config{Roots: cfg.ClaudeDirs, Match: session.IsTranscriptName, PollOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := rd.readSeq(rd.streamFiles(w, slog.New(slog.DiscardHandler)), true); got != 2*n {
		t.Fatalf("%d files read, want %d", got, 2*n)
	}
	asm.Flush(time.Now(), true)
	if rd.streamed != 3*n || len(rd.files) != 0 || len(rd.dirs) != 0 || len(rd.metas) != 0 {
		t.Errorf("after the read: %d streamed, %d table entries, %d directories, %d metas; want %d, 0, 0, 0",
			rd.streamed, len(rd.files), len(rd.dirs), len(rd.metas), 3*n)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var plan float64
	for _, mf := range mfs {
		if mf.GetName() != "claude_transcript_subagents_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "agent_type" && l.GetValue() == "Plan" {
					plan += m.GetCounter().GetValue()
				}
			}
		}
	}
	if plan != n {
		t.Errorf("claude_transcript_subagents_total{agent_type=\"Plan\"} = %v, want %d (from the .meta.json files)", plan, n)
	}
}
