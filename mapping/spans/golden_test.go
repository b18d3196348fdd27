package spans_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/testonly/testbackend"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/spans"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/transcript"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/spans")

// goldenCases are real sessions chosen for what they hold. Each golden is
// every span of the session's trace(s) after running the whole tree, the
// way a one-shot run does (dedup is global across files).
var goldenCases = []struct {
	name    string
	tree    string
	session string
	cfg     spans.Config
	why     string
}{
	{"subagents_new_layout", "mlevison", "5c7c599a-4cb2-4fa9-9a3d-aa114d92e31d", spans.Config{},
		"a subagent in <session>/subagents/agent-*.jsonl with .meta.json (toolUseId), under its Agent tool span; tool errors"},
	{"subagents_legacy_layout", "aistrad", "94f5baf4-c8a7-4bf9-8f19-65e4996532f4", spans.Config{},
		"a subagent in <project>/agent-*.jsonl beside the session, warmup agents, tool errors"},
	{"compaction_tool_error_api_error", "aistrad", "19722b8a-e1b0-467d-9bc0-4a199bfdafd7", spans.Config{},
		"a compact_boundary, tool results with is_error, a <synthetic> invalid_request API error"},
	{"interrupted_request", "mlevison", "4802d08f-8b9e-463d-bb93-710c5f965845", spans.Config{},
		"a request interrupted by the user ([Request interrupted by user])"},
	{"synthetic_rate_limit", "aistrad", "62b3787a-4b11-4804-a474-77d0db602887", spans.Config{},
		"<synthetic> rate-limit notices as failed chat spans, warmup subagents"},
	{"turn_granularity", "aistrad", "19722b8a-e1b0-467d-9bc0-4a199bfdafd7", spans.Config{Granularity: spans.GranularityTurn},
		"--traces.granularity=turn: one trace per turn, linked to the session span"},
	{"capture_all", "mlevison", "4802d08f-8b9e-463d-bb93-710c5f965845",
		spans.Config{Capture: spans.Capture{Prompts: true, Responses: true, Tools: true, Thinking: true}, CaptureMaxBytes: 80},
		"--traces.capture=prompts,responses,tools,thinking --traces.capture-max-bytes=80"},
}

func TestGoldenSessions(t *testing.T) {
	corpus := testbackend.CorpusDir(t)
	golden := filepath.Join(testbackend.RepoRoot(t), "testdata", "spans")
	trees := map[string]*treeLines{}
	for _, c := range goldenCases {
		t.Run(c.name, func(t *testing.T) {
			tree := trees[c.tree]
			if tree == nil {
				tree = readTree(t, filepath.Join(corpus, c.tree))
				trees[c.tree] = tree
			}
			capture := c.cfg.Capture
			dopts := transcript.Options{
				KeepText:     capture.Prompts || capture.Responses,
				KeepThinking: capture.Thinking,
				KeepToolIO:   capture.Tools,
				MaxKeepBytes: c.cfg.CaptureMaxBytes,
			}
			var got []spans.Span
			cfg := c.cfg
			cfg.Price = defaultPrice() // the embedded price table, as the daemon passes it
			tree.run(dopts, cfg, nil, func(s spans.Span) {
				if v, ok := s.Attr(spans.AttrConversationID); ok && v.Str == c.session {
					got = append(got, s)
				}
			})
			if len(got) == 0 {
				t.Fatalf("no spans of session %s in %s", c.session, c.tree)
			}
			data := renderGolden(c.tree, c.session, c.why, got)
			path := filepath.Join(golden, c.name+".golden.json")
			if *update {
				if err := os.MkdirAll(golden, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, data, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./mapping/spans -run TestGoldenSessions -update)", err)
			}
			if !bytes.Equal(want, data) {
				diffGolden(t, want, data)
			}
		})
	}
}

type goldenFile struct {
	Tree    string       `json:"tree"`
	Session string       `json:"session"`
	Why     string       `json:"why"`
	Count   int          `json:"span_count"`
	Spans   []goldenSpan `json:"spans"`
}

type goldenSpan struct {
	Name          string         `json:"name"`
	Kind          string         `json:"kind"`
	Parent        string         `json:"parent,omitempty"` // the parent's name, for reading
	TraceID       string         `json:"trace_id"`
	SpanID        string         `json:"span_id"`
	ParentSpanID  string         `json:"parent_span_id,omitempty"`
	Start         string         `json:"start"`
	End           string         `json:"end"`
	Status        string         `json:"status,omitempty"`
	StatusMessage string         `json:"status_message,omitempty"`
	Attrs         map[string]any `json:"attrs"`
	Events        []goldenEvent  `json:"events,omitempty"`
	Links         []string       `json:"links,omitempty"`
}

type goldenEvent struct {
	Name  string         `json:"name"`
	Time  string         `json:"time"`
	Attrs map[string]any `json:"attrs,omitempty"`
}

func attrMap(attrs []spans.Attr) map[string]any {
	if len(attrs) == 0 {
		return nil
	}
	m := make(map[string]any, len(attrs))
	for _, a := range attrs {
		m[a.Key] = a.Value.Any()
	}
	return m
}

func ts(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// renderGolden writes spans as stable JSON: sorted by start, then name,
// then span id; attributes as sorted maps; times RFC 3339 UTC; ids hex.
func renderGolden(tree, sessionID, why string, in []spans.Span) []byte {
	names := map[spans.SpanID]string{}
	for _, s := range in {
		names[s.SpanID] = s.Name
	}
	out := make([]goldenSpan, 0, len(in))
	sorted := append([]spans.Span(nil), in...)
	sort.SliceStable(sorted, func(i, j int) bool {
		a, b := sorted[i], sorted[j]
		if !a.Start.Equal(b.Start) {
			return a.Start.Before(b.Start)
		}
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		return a.SpanID.String() < b.SpanID.String()
	})
	for _, s := range sorted {
		g := goldenSpan{
			Name:    s.Name,
			Kind:    s.Kind.String(),
			TraceID: s.TraceID.String(),
			SpanID:  s.SpanID.String(),
			Start:   ts(s.Start),
			End:     ts(s.End),
			Attrs:   attrMap(s.Attrs),
		}
		if !s.ParentSpanID.IsZero() {
			g.ParentSpanID = s.ParentSpanID.String()
			g.Parent = names[s.ParentSpanID]
			if g.Parent == "" {
				g.Parent = "(missing)"
			}
		}
		if s.Status != spans.StatusUnset {
			g.Status, g.StatusMessage = s.Status.String(), s.StatusMessage
		}
		for _, e := range s.Events {
			g.Events = append(g.Events, goldenEvent{Name: e.Name, Time: ts(e.Time), Attrs: attrMap(e.Attrs)})
		}
		for _, l := range s.Links {
			g.Links = append(g.Links, l.TraceID.String()+"/"+l.SpanID.String())
		}
		out = append(out, g)
	}
	data, err := json.MarshalIndent(goldenFile{Tree: tree, Session: sessionID, Why: why, Count: len(out), Spans: out}, "", "  ")
	if err != nil {
		panic(err)
	}
	return append(data, '\n')
}

// diffGolden reports the first differing line.
func diffGolden(t *testing.T, want, got []byte) {
	t.Helper()
	wl, gl := bytes.Split(want, []byte("\n")), bytes.Split(got, []byte("\n"))
	for i := 0; i < len(wl) || i < len(gl); i++ {
		var w, g []byte
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if !bytes.Equal(w, g) {
			t.Fatalf("golden differs at line %d (run with -update to accept):\nwant: %s\ngot:  %s", i+1, w, g)
		}
	}
}
