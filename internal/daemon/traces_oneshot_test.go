package daemon_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/daemon"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/testonly/testbackend"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/spans"
)

// tracesTrees are the real trees that have transcripts.
func tracesTrees(t *testing.T) []string {
	var out []string
	for _, d := range testbackend.CorpusTrees(t) {
		if len(tracesGlob(t, filepath.Join(d, "projects", "*"))) > 0 {
			out = append(out, d)
		}
	}
	return out
}

func tracesGlob(t *testing.T, pattern string) []string {
	m, err := filepath.Glob(pattern)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// tracesOneshotStdout runs a one-shot pass in process with
// --traces.exporter=stdout and splits its output into the spans (OTLP-JSON
// lines, first) and the metrics exposition (after them).
func tracesOneshotStdout(t *testing.T, dir string, edit func(*daemon.Config)) ([]testbackend.Span, map[string]*dto.MetricFamily) {
	t.Helper()
	cfg := daemon.NewConfig()
	cfg.ClaudeDirs = []string{dir}
	cfg.Oneshot = true
	cfg.Traces.Exporter = "stdout"
	cfg.Traces.Since = 0 // the corpus is older than the default window
	if edit != nil {
		edit(&cfg)
	}
	var out bytes.Buffer
	if err := daemon.Run(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), &out); err != nil {
		t.Fatalf("one-shot %s: %v", dir, err)
	}
	var jsonLines, expo bytes.Buffer
	for _, line := range bytes.SplitAfter(out.Bytes(), []byte("\n")) {
		if bytes.HasPrefix(line, []byte("{")) {
			if expo.Len() > 0 {
				t.Fatal("span line after the exposition began")
			}
			jsonLines.Write(line)
		} else {
			expo.Write(line)
		}
	}
	got, err := testbackend.ParseSpans(jsonLines.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(&expo)
	if err != nil {
		t.Fatalf("exposition: %v", err)
	}
	return got, mfs
}

// tracesMetricSum sums a metric's samples whose labels include want.
func tracesMetricSum(mfs map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	mf := mfs[name]
	if mf == nil {
		return 0
	}
	var sum float64
outer:
	for _, m := range mf.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if have[k] != v {
				continue outer
			}
		}
		switch {
		case m.GetCounter() != nil:
			sum += m.GetCounter().GetValue()
		case m.GetGauge() != nil:
			sum += m.GetGauge().GetValue()
		}
	}
	return sum
}

// tracesCheckTree checks what a receiver (or stdout) got: ids, parents in
// the same trace, kinds, tools under chat spans, subagents under their
// tool call, and the conversation id on every span.
func tracesCheckTree(t *testing.T, got []testbackend.Span, turnTraces bool) {
	t.Helper()
	type key struct{ trace, span string }
	by := map[key]*testbackend.Span{}
	for i := range got {
		s := &got[i]
		k := key{s.TraceID, s.SpanID}
		if _, dup := by[k]; dup {
			t.Errorf("span %s twice", s.SpanID)
		}
		by[k] = s
		if len(s.TraceID) != 32 || len(s.SpanID) != 16 {
			t.Errorf("ids %q %q", s.TraceID, s.SpanID)
		}
	}
	for i := range got {
		s := &got[i]
		if s.Attrs[spans.AttrConversationID] == nil {
			t.Errorf("%s: no %s", s.Name, spans.AttrConversationID)
		}
		if s.End.Before(s.Start) {
			t.Errorf("%s: ends before it starts", s.Name)
		}
		if s.Attrs[spans.AttrSessionID] != s.Attrs[spans.AttrConversationID] {
			t.Errorf("%s: session.id %v beside conversation id %v", s.Name, s.Attrs[spans.AttrSessionID], s.Attrs[spans.AttrConversationID])
		}
		if s.Attrs[spans.AttrOperationName] == nil {
			t.Errorf("%s: no %s", s.Name, spans.AttrOperationName)
		}
		if !s.End.After(s.Start) {
			t.Errorf("%s %s: duration %v, want positive", s.Name, s.SpanID, s.End.Sub(s.Start))
		}
		if s.ParentSpanID == "" {
			if !tracesIsRoot(s) && !(turnTraces && tracesIsTurn(s)) {
				t.Errorf("%s %s: root span", s.Name, s.SpanID)
			}
			continue
		}
		p := by[key{s.TraceID, s.ParentSpanID}]
		if p == nil {
			t.Errorf("%s %s: parent %s not in trace %s", s.Name, s.SpanID, s.ParentSpanID, s.TraceID)
			continue
		}
		if s.Start.Before(p.Start) || s.End.After(p.End) {
			t.Errorf("%s %s [%v..%v] outside its parent %s [%v..%v]", s.Name, s.SpanID, s.Start, s.End, p.Name, p.Start, p.End)
		}
		switch op := s.Attrs[spans.AttrOperationName]; {
		case op == spans.OperationChat:
			if s.Kind != testbackend.SpanKindClient && s.Name != spans.SpanCompaction {
				t.Errorf("%s: kind %d", s.Name, s.Kind)
			}
		case op == spans.OperationTool:
			// Beside the chat span that asked for it, linked to it.
			if len(s.Links) != 1 {
				t.Errorf("%s: %d links, want one to its chat span", s.Name, len(s.Links))
			} else if chat := by[key{s.Links[0].TraceID, s.Links[0].SpanID}]; chat == nil || !strings.HasPrefix(chat.Name, "chat") || chat.ParentSpanID != s.ParentSpanID {
				t.Errorf("%s: link %+v, want a chat span beside it", s.Name, s.Links[0])
			}
			if s.Attrs[spans.AttrToolOutcome] == "error" && s.StatusCode != testbackend.StatusError {
				t.Errorf("%s: tool error without error status", s.Name)
			}
		case op == spans.OperationAgent && !tracesIsRoot(s) && !tracesIsTurn(s):
			if !strings.HasPrefix(p.Name, "execute_tool ") && !tracesIsRoot(p) {
				t.Errorf("%s: parent %s, want its tool call or the session", s.Name, p.Name)
			}
		}
	}
}

// tracesIsRoot and tracesIsTurn tell the root and turn spans by the
// attributes only they carry.
func tracesIsRoot(s *testbackend.Span) bool { return s.Attrs[spans.AttrSessionTurns] != nil }
func tracesIsTurn(s *testbackend.Span) bool { return s.Attrs[spans.AttrTurnRequests] != nil }

// TestOneshotStdoutSpansOnEveryTree runs the real pipeline over every
// real tree and checks the tree, that the receiver-side count matches,
// and that output tokens on chat spans add up to the Prometheus counter
// of the same run.
func TestOneshotStdoutSpansOnEveryTree(t *testing.T) {
	for _, dir := range tracesTrees(t) {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			got, mfs := tracesOneshotStdout(t, dir, nil)
			tracesCheckTree(t, got, false)
			var out int64
			var chats int
			for _, s := range got {
				// Requests: chat spans with a response id (a failed request
				// and a compaction have none).
				if s.Attrs[spans.AttrOperationName] == spans.OperationChat && s.Attrs[spans.AttrResponseID] != nil {
					chats++
					out += s.Attrs[spans.AttrUsageOutputTokens].(int64)
				}
			}
			counter := tracesMetricSum(mfs, "claude_transcript_tokens_total", map[string]string{"type": "output"})
			if float64(out) != counter {
				t.Errorf("output tokens on chat spans %d, claude_transcript_tokens_total{type=output} %v", out, counter)
			}
			requests := tracesMetricSum(mfs, "claude_transcript_requests_total", nil)
			if float64(chats) != requests {
				t.Errorf("%d chat spans, %v requests counted", chats, requests)
			}
			exported := tracesMetricSum(mfs, "claude_transcript_exporter_spans_exported_total", nil)
			pending := tracesMetricSum(mfs, "claude_transcript_exporter_spans_pending", nil)
			if exported != float64(len(got)) || pending != 0 {
				t.Errorf("spans_exported_total %v, pending %v; %d spans written", exported, pending, len(got))
			}
			t.Logf("%d spans, %d chat spans, %d output tokens", len(got), chats, out)
		})
	}
}

func TestOneshotTurnGranularity(t *testing.T) {
	dir := filepath.Join(testbackend.CorpusDir(t), "aistrad")
	got, _ := tracesOneshotStdout(t, dir, func(c *daemon.Config) { c.Traces.Granularity = "turn" })
	tracesCheckTree(t, got, true)
	traces := map[string]bool{}
	for _, s := range got {
		traces[s.TraceID] = true
	}
	sessions, _ := tracesOneshotStdout(t, dir, nil)
	sessTraces := map[string]bool{}
	for _, s := range sessions {
		sessTraces[s.TraceID] = true
	}
	if len(got) != len(sessions) || len(traces) <= len(sessTraces) {
		t.Errorf("turn granularity: %d spans in %d traces; session: %d spans in %d traces", len(got), len(traces), len(sessions), len(sessTraces))
	}
}

// tracesIDs lists trace/span/parent/name of every span, sorted.
func tracesIDs(got []testbackend.Span) []string {
	out := make([]string, len(got))
	for i, s := range got {
		out[i] = s.TraceID + "/" + s.SpanID + "/" + s.ParentSpanID + "/" + s.Name
	}
	sort.Strings(out)
	return out
}

func TestOneshotSameSpanIDsTwice(t *testing.T) {
	dir := filepath.Join(testbackend.CorpusDir(t), "eduardodmb")
	a, _ := tracesOneshotStdout(t, dir, nil)
	b, _ := tracesOneshotStdout(t, dir, nil)
	ia, ib := tracesIDs(a), tracesIDs(b)
	if strings.Join(ia, "\n") != strings.Join(ib, "\n") {
		t.Errorf("two runs gave different ids (%d and %d spans)", len(ia), len(ib))
	}
}

func TestOneshotCaptureOffByDefault(t *testing.T) {
	dir := filepath.Join(testbackend.CorpusDir(t), "mlevison")
	content := []string{spans.AttrInputMessages, spans.AttrOutputMessages, spans.AttrToolCallArguments, spans.AttrToolCallResult,
		spans.AttrSessionTitle, spans.AttrGitBranch}
	got, _ := tracesOneshotStdout(t, dir, nil)
	for _, s := range got {
		for _, k := range content {
			if _, ok := s.Attrs[k]; ok {
				t.Fatalf("%s on %s without --traces.capture", k, s.Name)
			}
		}
	}
	got, _ = tracesOneshotStdout(t, dir, func(c *daemon.Config) {
		c.Traces.Capture = []string{daemon.CapturePrompts, daemon.CaptureTools}
		c.Traces.CaptureMaxBytes = 100
	})
	seen := map[string]bool{}
	for _, s := range got {
		for _, k := range content {
			if v, ok := s.Attrs[k].(string); ok {
				seen[k] = true
				if k == spans.AttrInputMessages || k == spans.AttrOutputMessages {
					// The GenAI conventions' structure; the cap is on each text.
					var msgs []struct {
						Role  string `json:"role"`
						Parts []struct {
							Type    string `json:"type"`
							Content string `json:"content"`
						} `json:"parts"`
					}
					if err := json.Unmarshal([]byte(v), &msgs); err != nil || len(msgs) != 1 || msgs[0].Role == "" || len(msgs[0].Parts) == 0 {
						t.Fatalf("%s: %q is not a list of messages with parts (%v)", k, v, err)
					}
					v = msgs[0].Parts[0].Content
				}
				if len(v) > 100 {
					t.Errorf("%s: %d bytes, cap 100", k, len(v))
				}
			}
		}
	}
	if !seen[spans.AttrInputMessages] || !seen[spans.AttrToolCallArguments] || !seen[spans.AttrToolCallResult] || seen[spans.AttrOutputMessages] {
		t.Errorf("captured %v, want prompts and tools only", seen)
	}
}

// tracesCanonical renders every span whole (ids, times, attributes,
// events, links, status), sorted, to compare two runs.
func tracesCanonical(got []testbackend.Span) []string {
	out := make([]string, len(got))
	for i, s := range got {
		out[i] = fmt.Sprintf("%+v", s)
	}
	sort.Strings(out)
	return out
}

// TestOneshotSpansDoNotDependOnBackfillGroups reads every real tree with
// a pause after every file (--tail.backfill-group-bytes=1) and in groups
// of the default size (one or a few per tree) and wants the same spans,
// whole. A pause that closed a session a later file of its project goes
// on with (a resumed session, a legacy agent-*.jsonl, a fork's request
// still waiting) sent its span twice or without that file's part.
func TestOneshotSpansDoNotDependOnBackfillGroups(t *testing.T) {
	for _, dir := range tracesTrees(t) {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			want, _ := tracesOneshotStdout(t, dir, nil)
			got, _ := tracesOneshotStdout(t, dir, func(c *daemon.Config) { c.GroupBytes = 1 })
			w, g := tracesCanonical(want), tracesCanonical(got)
			if strings.Join(w, "\n") == strings.Join(g, "\n") {
				return
			}
			t.Errorf("a group a file: %d spans, in default groups: %d", len(g), len(w))
			seen := map[string]bool{}
			for _, s := range w {
				seen[s] = true
			}
			shown := 0
			for _, s := range g {
				if !seen[s] && shown < 3 {
					t.Errorf("only with a group a file: %.300s", s)
					shown++
				}
			}
		})
	}
}
