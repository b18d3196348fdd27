package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/testonly/testbackend"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/claudedir"
)

// anonymizeCLI runs the real claude-transcript-anonymize command.
func anonymizeCLI(t *testing.T, args ...string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "claude-transcript-anonymize")
	build := exec.Command("go", "build", "-o", bin, "./cmd/claude-transcript-anonymize")
	build.Dir = testbackend.RepoRoot(t)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("claude-transcript-anonymize %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// counters is a oneshot exposition as sample -> value: every family the
// exporter serves, usage and its own, without its timings and build info.
// With the project label dropped (mergeProjects), samples that differ only
// by project are listed apart but unnamed, so that two trees whose
// projects are named differently compare equal when their projects hold
// the same counts; custom skill names, which the copy replaces, are
// compared so too.
func counters(t *testing.T, dir string, mergeProjects bool) []string {
	t.Helper()
	label := "none"
	if mergeProjects {
		label = "basename"
	}
	mfs := parseExposition(t, oneshot(t, "--claude.dir="+dir, "--metrics.project-label="+label))
	var out []string
	for name, mf := range mfs {
		if strings.Contains(name, "build_info") || strings.Contains(name, "duration_seconds") || strings.Contains(name, "state_file_age") {
			continue
		}
		// It fills the parentheses of limit notices, which name the
		// user's time zone: a reset time is read from the text each tree
		// holds (the hits and their windows still compare).
		if strings.Contains(name, "limit_reset_timestamp") {
			continue
		}
		for _, m := range mf.GetMetric() {
			var ls []string
			for _, lp := range m.GetLabel() {
				v := lp.GetValue()
				if lp.GetName() == "project" && mergeProjects {
					v = "P"
				}
				// Custom skill names are replaced through the key
				// (built-in ones, none and other stay): compared by
				// their counts, like projects.
				if lp.GetName() == "skill" && v != "none" && v != "other" && !claudedir.IsBuiltinCommand(v) {
					v = "S"
				}
				ls = append(ls, lp.GetName()+"="+v)
			}
			v := value(m)
			if h := m.GetHistogram(); h != nil {
				v = float64(h.GetSampleCount())*1e9 + h.GetSampleSum()
			}
			// Float sums depend on the order files are read in, which
			// renamed project folders change: compare to 12 digits.
			out = append(out, fmt.Sprintf("%s{%s} %.12g", name, strings.Join(ls, ","), roundSig(v)))
		}
	}
	sort.Strings(out)
	return out
}

func roundSig(v float64) float64 {
	if v == 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return v
	}
	p := math.Pow(10, 11-math.Floor(math.Log10(math.Abs(v))))
	return math.Round(v*p) / p
}

// spanTree runs a oneshot with spans to stdout and returns every span as
// "trace span parent name start end", sorted.
func spanTree(t *testing.T, dir string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// No project in span names: anonymizing fills project names, which
	// the root span's name carries by default.
	cmd := exec.CommandContext(ctx, binary(t), "--oneshot", "--log.level=warn", "--claude.dir="+dir, "--metrics.project-label=none",
		"--traces.exporter=stdout", "--traces.since=0", "--oneshot.metrics-file="+filepath.Join(t.TempDir(), "metrics.prom"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("oneshot spans of %s: %v\n%s", dir, err, stderr.String())
	}
	type span struct {
		TraceID, SpanID, ParentSpanID, Name string
		StartTimeUnixNano, EndTimeUnixNano  string
	}
	var out []string
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(nil, 1<<30)
	for sc.Scan() {
		var req struct {
			ResourceSpans []struct {
				ScopeSpans []struct{ Spans []span }
			}
		}
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
			t.Fatalf("span output: %v", err)
		}
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					out = append(out, strings.Join([]string{s.TraceID, s.SpanID, s.ParentSpanID, s.Name, s.StartTimeUnixNano, s.EndTimeUnixNano}, " "))
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

func sameLines(t *testing.T, what string, got, want []string) {
	t.Helper()
	if len(got) == 0 {
		t.Errorf("%s: nothing to compare", what)
	}
	gs, ws := map[string]int{}, map[string]int{}
	for _, l := range got {
		gs[l]++
	}
	for _, l := range want {
		ws[l]++
	}
	var diff []string
	for l, n := range ws {
		if gs[l] != n {
			diff = append(diff, fmt.Sprintf("  want %dx %s (got %d)", n, l, gs[l]))
		}
	}
	for l, n := range gs {
		if ws[l] == 0 {
			diff = append(diff, fmt.Sprintf("  got %dx %s (want 0)", n, l))
		}
	}
	sort.Strings(diff)
	if len(diff) > 20 {
		diff = append(diff[:20], fmt.Sprintf("  ... %d more", len(diff)-20))
	}
	if len(diff) > 0 {
		t.Errorf("%s differ:\n%s", what, strings.Join(diff, "\n"))
	}
}

// TestAnonymizedCorpusCountsLikeItsSource checks that anonymizing loses
// nothing the exporter counts: every family it serves (tokens, requests,
// cost, tool calls, lines of code and edit decisions by language, commits,
// pull requests, compactions, subagents by spender, sessions, slash
// commands, todos, tasks, decode errors, ...), without the project label
// and per project (projects compared by their counts, as their names are
// filled), and every span of every trace (ids, parents, names, times). It compares each in-repo tree with a copy of it
// anonymized again by the real command with a random key, and, where the
// original corpus is present (the optional extra corpus), with the
// original tree it was made from.
func TestAnonymizedCorpusCountsLikeItsSource(t *testing.T) {
	real, haveReal := testbackend.SharedCorpus(t)
	if !haveReal {
		t.Logf("no original corpus at %s: comparing with fresh anonymized copies only (set %s to compare with the originals)", real, testbackend.SharedDirEnv)
	}
	for _, tree := range testbackend.CorpusTrees(t) {
		name := filepath.Base(tree)
		t.Run(name, func(t *testing.T) {
			if _, err := os.Stat(filepath.Join(tree, "projects")); err != nil {
				t.Logf("%s holds no transcripts (%v): nothing the exporter counts", name, err)
				return
			}
			again := filepath.Join(t.TempDir(), name)
			anonymizeCLI(t, "--from="+tree, "--to="+again)
			sources := map[string]string{"a fresh anonymized copy": again}
			if haveReal {
				orig := filepath.Join(real, name)
				if _, err := os.Stat(orig); err != nil {
					t.Fatalf("the original of %s is missing from %s: %v", name, real, err)
				}
				sources["the original"] = orig
			}
			for _, merge := range []bool{false, true} {
				want := counters(t, tree, merge)
				for what, dir := range sources {
					sameLines(t, fmt.Sprintf("counters (per project: %v) of %s", merge, what), counters(t, dir, merge), want)
				}
			}
			want := spanTree(t, tree)
			for what, dir := range sources {
				sameLines(t, "spans of "+what, spanTree(t, dir), want)
			}
		})
	}
}
