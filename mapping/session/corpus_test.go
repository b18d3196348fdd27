package session

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/testonly/indepcount"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/transcript"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/testonly/testbackend"
)

// tally is a Sink that sums units the way the metrics do.
type tally struct {
	tokens      map[string]map[string]int64
	requests    map[string]int64
	byStop      map[string]int64
	tools       map[string]map[string]int64
	compactions map[string]int64
	preTokens   int64
	sessions    int
	turns       int
	subagents   map[string]int64
	warmups     int
	apiErrors   map[string]int64
	turnUnits   int
	// edits: per tool, "+"/"-" lines, "input+"/"input-" lines of its
	// input, "reject" calls; "commit", "pr"
	// (created and not linked before) and "pr-link" counts.
	edits map[string]int64
}

func newTally() *tally {
	return &tally{
		tokens: map[string]map[string]int64{}, requests: map[string]int64{}, byStop: map[string]int64{},
		tools: map[string]map[string]int64{}, compactions: map[string]int64{}, subagents: map[string]int64{},
		apiErrors: map[string]int64{}, edits: map[string]int64{},
	}
}

func (t *tally) addTokens(model string, tk Tokens) {
	m := t.tokens[model]
	if m == nil {
		m = map[string]int64{}
		t.tokens[model] = m
	}
	m["input"] += tk.Input
	m["output"] += tk.Output
	m["cache_read"] += tk.CacheRead
	m["cache_write_5m"] += tk.CacheWrite5m
	m["cache_write_1h"] += tk.CacheWrite1h
}

func (t *tally) Session(s *Session) {
	if !s.Ended {
		t.sessions++
	}
}
func (t *tally) Turn(*Turn) { t.turnUnits++ }
func (t *tally) Request(r *Request) {
	t.requests[r.Model]++
	stop := r.StopReason
	if stop == "" {
		stop = "none"
	}
	t.byStop[stop]++
	t.addTokens(r.Model, r.Tokens)
}
func (t *tally) RequestUpdate(u *RequestUpdate) { t.addTokens(u.Model, u.Delta) }
func (t *tally) ToolCall(c *ToolCall) {
	m := t.tools[c.Name]
	if m == nil {
		m = map[string]int64{}
		t.tools[c.Name] = m
	}
	m[string(c.Outcome)]++
	t.edits[c.Name+"|+"] += c.Edit.Added
	t.edits[c.Name+"|-"] += c.Edit.Removed
	if c.InputLines.Has {
		t.edits[c.Name+"|input+"] += c.InputLines.Added
		t.edits[c.Name+"|input-"] += c.InputLines.Removed
	}
	if c.Rejected {
		t.edits[c.Name+"|reject"]++
	}
	if c.Outcome == OutcomeOK && c.Shell&transcript.ShellCommit != 0 {
		t.edits["commit"]++
	}
	if c.Outcome == OutcomeOK && c.Shell&transcript.ShellPRCreate != 0 && !c.PRSeenBefore {
		t.edits["pr"]++
	}
}
func (t *tally) Subagent(s *Subagent) {
	if s.Warmup {
		t.warmups++
		return
	}
	t.subagents[s.AgentType]++
}
func (t *tally) Compaction(c *Compaction) { t.compactions[c.Trigger]++; t.preTokens += c.PreTokens }
func (t *tally) APIError(e *APIError)     { t.apiErrors[e.Kind]++ }
func (t *tally) PullRequest(*PullRequest) { t.edits["pr-link"]++ }

// corpusName names a corpus tree in subtest names: its folder, and
// "real/" before the trees of the optional extra corpus.
func corpusName(dir string) string {
	if filepath.Base(filepath.Dir(dir)) == "real" {
		return "real/" + filepath.Base(dir)
	}
	return filepath.Base(dir)
}

// assembleTree runs the decoder and assembler over a Claude dir in path
// order, the way a one-shot run does.
func assembleTree(t *testing.T, dir string) *tally {
	tl := newTally()
	asm := New(Config{}, tl)
	now := time.Unix(0, 0)
	feed(asm, treeLines(t, dir), now)
	asm.Flush(now, true)
	return tl
}

// TestAssemblerMatchesIndependentCountOnCorpus is the core exactness
// check: on every real tree, tokens by model and type, requests by model
// and stop reason, tool calls by tool and outcome, and compactions equal
// the independent count.
func TestAssemblerMatchesIndependentCountOnCorpus(t *testing.T) {
	for _, dir := range testbackend.AllCorpusTrees(t) {
		t.Run(corpusName(dir), func(t *testing.T) {
			want, err := indepcount.Count(dir)
			if err != nil {
				t.Fatal(err)
			}
			got := assembleTree(t, dir)
			for model, types := range want.Tokens {
				for typ, n := range types {
					if got.tokens[model][typ] != n {
						t.Errorf("tokens{model=%q,type=%s} = %d, independent count %d", model, typ, got.tokens[model][typ], n)
					}
				}
			}
			for model := range got.tokens {
				if _, ok := want.Tokens[model]; !ok {
					t.Errorf("tokens for model %q not in the independent count", model)
				}
			}
			for model, n := range want.Requests {
				if got.requests[model] != n {
					t.Errorf("requests{model=%q} = %d, want %d", model, got.requests[model], n)
				}
			}
			if len(got.requests) != len(want.Requests) {
				t.Errorf("request models %v, want %v", got.requests, want.Requests)
			}
			for stop, n := range want.RequestsByStop {
				if got.byStop[stop] != n {
					t.Errorf("requests{stop_reason=%q} = %d, want %d", stop, got.byStop[stop], n)
				}
			}
			for tool, outs := range want.ToolCalls {
				for out, n := range outs {
					if got.tools[tool][out] != n {
						t.Errorf("tool_calls{tool=%q,outcome=%s} = %d, want %d", tool, out, got.tools[tool][out], n)
					}
				}
			}
			var gotCalls, wantCalls int64
			for _, outs := range got.tools {
				for _, n := range outs {
					gotCalls += n
				}
			}
			for _, outs := range want.ToolCalls {
				for _, n := range outs {
					wantCalls += n
				}
			}
			if gotCalls != wantCalls {
				t.Errorf("tool calls %d, want %d", gotCalls, wantCalls)
			}
			for trig, n := range want.Compactions {
				if got.compactions[trig] != n {
					t.Errorf("compactions{trigger=%q} = %d, want %d", trig, got.compactions[trig], n)
				}
			}
			if got.preTokens != want.CompactionPreTokens {
				t.Errorf("compaction pre-tokens %d, want %d", got.preTokens, want.CompactionPreTokens)
			}
			t.Logf("sessions=%d turns=%d subagents=%v warmups=%d api_errors=%v", got.sessions, got.turns+got.turnUnits, got.subagents, got.warmups, got.apiErrors)
		})
	}
}
