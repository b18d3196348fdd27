package session

import (
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/testonly/testbackend"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/transcript"
)

// spendLog sums output tokens by spender and counts subagents by type.
type spendLog struct {
	unitLog
	out    map[string]int64
	agents map[string]int
}

func newSpendLog() *spendLog { return &spendLog{out: map[string]int64{}, agents: map[string]int{}} }

func (l *spendLog) Request(r *Request) { l.out[r.Spender] += r.Tokens.Output }
func (l *spendLog) RequestUpdate(u *RequestUpdate) {
	l.out[u.Spender] += u.Delta.Output
}
func (l *spendLog) Subagent(s *Subagent) { l.agents[s.AgentType]++ }

// sidechainsTree is the synthetic tree of sidechains inside a session
// file and of forks copying their parent's history
// (testdata/synthetic/sidechains, README there).
func sidechainsTree(t *testing.T) string {
	return filepath.Join(testbackend.RepoRoot(t), "testdata", "synthetic", "sidechains")
}

// readGrouped feeds a tree's files in the given order, each file a
// backfill group (FlushHistory after it), then ends the history as the
// daemon does (FlushRead) and flushes finally.
func readGrouped(t *testing.T, lines []srcLine, sink Sink) {
	asm := New(Config{IdleTimeout: 30 * time.Minute}, sink)
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	dec := transcript.NewDecoder(transcript.Options{})
	var rec transcript.Record
	for i := range lines {
		if i > 0 && lines[i].src.Rel != lines[i-1].src.Rel {
			asm.FlushHistory(now, "")
		}
		if dec.Decode(lines[i].line, &rec) == nil {
			asm.Add(&lines[i].src, &rec, now)
		}
	}
	asm.FlushRead(now)
	asm.Flush(now, true)
}

// TestSidechainsInsideTheSessionFileAreSubagents: Claude Code up to 2.0
// wrote a Task's subagent into the session file (isSidechain lines after
// the call, before its result). Each sidechain is its call's subagent,
// typed by the call (general-purpose when it names none), parallel calls'
// interleaved sidechains included; one no call waits for is unknown.
func TestSidechainsInsideTheSessionFileAreSubagents(t *testing.T) {
	l := newSpendLog()
	readGrouped(t, treeLines(t, sidechainsTree(t)), l)
	wantOut := map[string]int64{
		SpenderMain: 40 + 50 + 70 + 80, SpenderCompaction: 400, SpenderInternal: 30,
		"subagent:general-purpose": 120, "subagent:Explore": 200, "subagent:Plan": 300, "subagent:unknown": 9,
	}
	if !reflect.DeepEqual(l.out, wantOut) {
		t.Errorf("output by spender %v, want %v", l.out, wantOut)
	}
	wantAgents := map[string]int{"general-purpose": 1, "Explore": 1, "Plan": 1, "unknown": 1, "compact": 1, "aside_question": 1}
	if !reflect.DeepEqual(l.agents, wantAgents) {
		t.Errorf("subagents %v, want %v", l.agents, wantAgents)
	}
}

// TestForkCopiesCountForTheParentInAnyOrder reads the sidechains tree
// (a side-question fork filed under another session copies that session's
// requests) and the real trees in path order and with every fork file
// first, each file a backfill group: tokens by spender are the same. (A
// subagent file read before its session's is another matter: its type
// comes from the session's Task call; the daemon reads sessions first.)
func TestForkCopiesCountForTheParentInAnyOrder(t *testing.T) {
	trees := append([]string{sidechainsTree(t)}, testbackend.AllCorpusTrees(t)...)
	orders := map[string]func(rel string) string{
		"path":        func(rel string) string { return rel },
		"forks first": func(rel string) string { return forksFirst(rel) },
	}
	names := make([]string, 0, len(orders))
	for n := range orders {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, dir := range trees {
		t.Run(corpusName(dir), func(t *testing.T) {
			var first map[string]int64
			for _, n := range names {
				l := newSpendLog()
				readGrouped(t, treeLinesBy(t, dir, orders[n]), l)
				if first == nil {
					first = l.out
					continue
				}
				if !reflect.DeepEqual(l.out, first) {
					t.Errorf("order %q: output by spender %v, order %q: %v", n, l.out, names[0], first)
				}
			}
		})
	}
}

// forksFirst sorts fork files (compaction, side questions, prompt
// suggestions) before everything else.
func forksFirst(rel string) string {
	base := filepath.Base(rel)
	for _, p := range []string{"agent-acompact-", "agent-aside_question-", "agent-aprompt_suggestion-"} {
		if strings.HasPrefix(base, p) {
			return "0" + rel
		}
	}
	return "1" + rel
}
