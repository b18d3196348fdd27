package spans_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/spans"
)

// kindOf names a span's kind for reports: session, turn, chat, tool,
// agent, compaction.
func kindOf(s *spans.Span) string {
	name := s.Name
	switch {
	case strings.HasPrefix(name, "session"):
		return "session"
	case strings.HasPrefix(name, "invoke_agent claude-code"):
		return "turn"
	case strings.HasPrefix(name, "chat"):
		return "chat"
	case strings.HasPrefix(name, "execute_tool"):
		return "tool"
	case strings.HasPrefix(name, "invoke_agent"):
		return "agent"
	}
	return strings.SplitN(name, " ", 2)[0]
}

// TestEverySpanSitsInsideItsParent checks, on every corpus tree at both
// granularities, what a trace view shows: no span starts before or ends
// after its parent, and none has a zero or negative duration.
func TestEverySpanSitsInsideItsParent(t *testing.T) {
	for _, dir := range corpusTrees(t) {
		for _, g := range []spans.Granularity{spans.GranularitySession, spans.GranularityTurn} {
			name := filepath.Base(dir) + map[spans.Granularity]string{spans.GranularitySession: "/session", spans.GranularityTurn: "/turn"}[g]
			t.Run(name, func(t *testing.T) {
				all, _ := treeSpans(t, dir, spans.Config{Granularity: g})
				checkNesting(t, all)
			})
		}
	}
}

// TestSessionFileGoneStillFormsATree removes, from copies of the corpus
// trees with subagent files, every main session file that has a
// subagents/ directory (what cleanupPeriodDays or a partial backup
// leaves): the subagents' spans must still form well-formed trees, every
// parent present in its trace and every span inside its parent.
func TestSessionFileGoneStillFormsATree(t *testing.T) {
	for _, src := range corpusTrees(t) {
		mains, _ := filepath.Glob(filepath.Join(src, "projects", "*", "*", "subagents"))
		if len(mains) == 0 {
			continue
		}
		t.Run(filepath.Base(src), func(t *testing.T) {
			dir := t.TempDir()
			if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
				t.Fatal(err)
			}
			removed := 0
			for _, sub := range mains {
				rel, _ := filepath.Rel(src, filepath.Dir(sub))
				if err := os.Remove(filepath.Join(dir, rel+".jsonl")); err == nil {
					removed++
				}
			}
			if removed == 0 {
				t.Fatal("no main session file removed")
			}
			for _, g := range []spans.Granularity{spans.GranularitySession, spans.GranularityTurn} {
				x := newIssued()
				all, st := treeSpans(t, dir, spans.Config{Granularity: g}, x)
				checkTree(t, all, x, g, st)
				if len(all) == 0 {
					t.Fatal("no spans")
				}
				checkNesting(t, all)
			}
			t.Logf("%d main session files removed", removed)
		})
	}
}

// checkNesting fails for a span outside its parent's time range or of no
// positive duration, with counts by parent and child kind.
func checkNesting(t *testing.T, all []spans.Span) {
	t.Helper()
	byKey := map[spanKey]*spans.Span{}
	for i := range all {
		byKey[spanKey{all[i].TraceID, all[i].SpanID}] = &all[i]
	}
	bad := map[string]int{}
	var first []string
	for i := range all {
		s := &all[i]
		if !s.End.After(s.Start) {
			bad["zero:"+kindOf(s)]++
		}
		p := byKey[spanKey{s.TraceID, s.ParentSpanID}]
		if p == nil {
			continue
		}
		if s.Start.Before(p.Start) || s.End.After(p.End) {
			k := kindOf(p) + ">" + kindOf(s)
			bad[k]++
			if len(first) < 3 {
				first = append(first, fmt.Sprintf("%s %s [%s..%s] outside %s [%s..%s]", s.Name, s.SpanID, s.Start.Format("15:04:05.000"), s.End.Format("15:04:05.000"),
					p.Name, p.Start.Format("15:04:05.000"), p.End.Format("15:04:05.000")))
			}
		}
	}
	if len(bad) > 0 {
		keys := make([]string, 0, len(bad))
		for k := range bad {
			keys = append(keys, fmt.Sprintf("%s=%d", k, bad[k]))
		}
		sort.Strings(keys)
		t.Errorf("%d spans: %s\n%s", len(all), strings.Join(keys, " "), strings.Join(first, "\n"))
	}
}
