package daemon_test

import (
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/exporter/prom"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/testonly/testbackend"
)

// describer is a prometheus.Registerer that keeps the name of every
// descriptor the collectors registered on it describe, samples or not.
type describer struct{ names map[string]bool }

var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

func (d *describer) Register(c prometheus.Collector) error {
	ch := make(chan *prometheus.Desc)
	go func() { c.Describe(ch); close(ch) }()
	for desc := range ch {
		m := fqName.FindStringSubmatch(desc.String())
		if m == nil {
			panic("descriptor without a name: " + desc.String())
		}
		d.names[m[1]] = true
	}
	return nil
}

func (d *describer) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		_ = d.Register(c)
	}
}

func (d *describer) Unregister(prometheus.Collector) bool { return false }

// describedFamilies is every metric family the exporter's constructors
// register, whether or not an input gives it a sample. A constructor added
// to daemon.Run must be added here: TestEveryServedFamilyIsDescribed fails
// naming the family until it is.
func describedFamilies() map[string]bool {
	d := &describer{names: map[string]bool{}}
	prom.NewMetrics(d, time.Minute, time.Now)
	prom.NewSelf(d)
	prom.NewClaudeDir(d)
	prom.NewPlanUsage(d, time.Now, time.Minute)
	return d.names
}

// documentedFamilies reads the "## `family`" headings of docs/metrics.md.
func documentedFamilies(t *testing.T) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testbackend.RepoRoot(t), "docs", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^#{2,3} `([a-z0-9_]+)`").FindAllStringSubmatch(string(b), -1) {
		out[m[1]] = true
	}
	if len(out) == 0 {
		t.Fatal("docs/metrics.md has no \"## `family`\" heading")
	}
	return out
}

func TestEveryMetricFamilyIsDocumented(t *testing.T) {
	docs := documentedFamilies(t)
	for _, f := range slices.Sorted(maps.Keys(describedFamilies())) {
		if !docs[f] {
			t.Errorf("metric family %s is served but docs/metrics.md has no \"## `%s`\" section: add one (labels, counting rule)", f, f)
		}
	}
}

func TestNoDocumentedFamilyIsGone(t *testing.T) {
	served := describedFamilies()
	for _, f := range slices.Sorted(maps.Keys(documentedFamilies(t))) {
		if !served[f] {
			t.Errorf("docs/metrics.md documents %s, which the exporter no longer serves: remove or rename its section", f)
		}
	}
}

// TestEveryServedFamilyIsDescribed runs one-shots over the corpus and the
// synthetic trees and checks that every claude_transcript_ family they
// print is one describedFamilies knows, so that a collector registered in
// daemon.Run and missing from describedFamilies cannot escape the docs check.
func TestEveryServedFamilyIsDescribed(t *testing.T) {
	described := describedFamilies()
	trees := append(testbackend.CorpusTrees(t), testbackend.SyntheticTrees(t)...)
	seen := 0
	for _, dir := range trees {
		_, mfs := tracesOneshotStdout(t, dir, nil)
		for name := range mfs {
			if !strings.HasPrefix(name, prom.Namespace+"_") {
				continue
			}
			seen++
			if !described[name] {
				t.Errorf("%s: family %s is served but describedFamilies (metrics_docs_test.go) does not register its collector: add the constructor there", filepath.Base(dir), name)
			}
		}
	}
	if seen == 0 {
		t.Fatal("the one-shots served no claude_transcript_ family")
	}
}

// TestSpansNameProjectsAsTheMetricsDo reads trees whose working dirs share
// basenames: every project a span names is a project label of the
// metrics (on some series), hashed labels included.
func TestSpansNameProjectsAsTheMetricsDo(t *testing.T) {
	hashed := 0
	for _, tree := range []string{"eduardodmb", "aistrad"} {
		spans, mfs := tracesOneshotStdout(t, filepath.Join(testbackend.CorpusDir(t), tree), nil)
		labels := map[string]bool{}
		for _, mf := range mfs {
			for _, m := range mf.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "project" {
						labels[l.GetValue()] = true
					}
				}
			}
		}
		for _, s := range spans {
			p, ok := s.Attrs["claude_code.project"].(string)
			if !ok {
				continue
			}
			if strings.Contains(p, "~") {
				hashed++
			}
			if !labels[p] {
				t.Errorf("%s: span %q names project %q, which no series has as its project label", tree, s.Name, p)
			}
		}
	}
	if hashed == 0 {
		t.Error("no span named a second working dir of a basename (basename~hash): the trees no longer hold one")
	}
}
