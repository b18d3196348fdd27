package deploy

import (
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/testonly/testbackend"
)

// Rule files and their promtool unit tests (repository-relative globs).
const (
	ruleFilesGlob  = "deploy/prometheus/rules/*.yml"
	ruleTestsGlob  = "deploy/prometheus/tests/*.yml"
	promConfigPath = "deploy/prometheus/prometheus.yml"
)

// ruleFile is the shape of a Prometheus rule file.
type ruleFile struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []rule `yaml:"rules"`
	} `yaml:"groups"`
}

type rule struct {
	Record      string            `yaml:"record"`
	Alert       string            `yaml:"alert"`
	Expr        string            `yaml:"expr"`
	For         string            `yaml:"for"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

// loadRules returns every rule of every rule file, keyed by file.
func loadRules(t *testing.T) map[string][]rule {
	t.Helper()
	out := map[string][]rule{}
	for _, f := range globRepo(t, ruleFilesGlob) {
		var rf ruleFile
		readYAML(t, f, &rf)
		for _, g := range rf.Groups {
			out[f] = append(out[f], g.Rules...)
		}
	}
	return out
}

func TestPromtoolCheckConfig(t *testing.T) {
	promtool := testbackend.PromtoolBinary(t)
	out := runTool(t, nil, promtool, "check", "config", promConfigPath)
	// The config loads the rule files by glob: make sure it found them all.
	if want := len(globRepo(t, ruleFilesGlob)); !strings.Contains(out, "SUCCESS: "+strconv.Itoa(want)+" rule files found") {
		t.Errorf("promtool check config did not load the %d rule files:\n%s", want, out)
	}
}

func TestPromtoolCheckRules(t *testing.T) {
	promtool := testbackend.PromtoolBinary(t)
	runTool(t, nil, promtool, append([]string{"check", "rules"}, globRepo(t, ruleFilesGlob)...)...)
}

func TestPromtoolTestRules(t *testing.T) {
	promtool := testbackend.PromtoolBinary(t)
	out := runTool(t, nil, promtool, append([]string{"test", "rules"}, globRepo(t, ruleTestsGlob)...)...)
	if !strings.Contains(out, "SUCCESS") || strings.Contains(out, "FAILED") {
		t.Errorf("promtool test rules:\n%s", out)
	}
}

// ruleTestFile is the shape of a promtool unit test file.
type ruleTestFile struct {
	RuleFiles      []string `yaml:"rule_files"`
	GroupEvalOrder []string `yaml:"group_eval_order"`
	Tests          []struct {
		Name          string `yaml:"name"`
		AlertRuleTest []struct {
			EvalTime  string `yaml:"eval_time"`
			AlertName string `yaml:"alertname"`
			ExpAlerts []struct {
				ExpLabels      map[string]string `yaml:"exp_labels"`
				ExpAnnotations map[string]string `yaml:"exp_annotations"`
			} `yaml:"exp_alerts"`
		} `yaml:"alert_rule_test"`
	} `yaml:"tests"`
}

// TestEveryAlertTestedBothWays checks that the promtool tests cover every
// alert with at least one case where it fires and one where it stays quiet,
// and that the firing cases pin the rendered annotations.
func TestEveryAlertTestedBothWays(t *testing.T) {
	fires := map[string]int{}
	quiet := map[string]int{}
	for _, f := range globRepo(t, ruleTestsGlob) {
		var tf ruleTestFile
		readYAML(t, f, &tf)
		for _, tc := range tf.Tests {
			for _, at := range tc.AlertRuleTest {
				if len(at.ExpAlerts) == 0 {
					quiet[at.AlertName]++
					continue
				}
				fires[at.AlertName]++
				for _, ea := range at.ExpAlerts {
					if ea.ExpAnnotations["summary"] == "" {
						t.Errorf("%s: test %q: firing case of %s does not pin its annotations", f, tc.Name, at.AlertName)
					}
				}
			}
		}
	}
	var alerts []string
	for _, rules := range loadRules(t) {
		for _, r := range rules {
			if r.Alert != "" {
				alerts = append(alerts, r.Alert)
			}
		}
	}
	sort.Strings(alerts)
	if len(alerts) < 10 {
		t.Fatalf("only %d alerts found: %v", len(alerts), alerts)
	}
	for _, a := range alerts {
		if fires[a] == 0 {
			t.Errorf("alert %s has no promtool test where it fires", a)
		}
		if quiet[a] == 0 {
			t.Errorf("alert %s has no promtool test where it stays quiet", a)
		}
		delete(fires, a)
		delete(quiet, a)
	}
	for a := range fires {
		t.Errorf("promtool tests name alert %s, which no rule file defines", a)
	}
	for a := range quiet {
		t.Errorf("promtool tests name alert %s, which no rule file defines", a)
	}
}

// noThresholdAlerts fire on any occurrence or on a state, so they have no
// number to tune.
var noThresholdAlerts = []string{
	"ClaudeUsageLimitHit",                   // any limit event
	"ClaudePlanLimitHit",                    // any limit notice
	"ClaudeTranscriptExporterDown",          // target down / missing
	"ClaudeTranscriptExporterExportFailing", // failures and nothing delivered
	"ClaudeTranscriptExporterBackfillStuck", // backfill_done == 0 for 30m
}

var thresholdRef = regexp.MustCompile(`claude_transcript_threshold:[a-z0-9_]+:[a-z0-9_]+`)

// TestAlertsAnnotatedAndThresholdDriven checks every alert's annotations
// and labels, and that every threshold it compares against is a recording
// rule of the thresholds file (one number to change), never a literal.
func TestAlertsAnnotatedAndThresholdDriven(t *testing.T) {
	records := map[string]bool{}
	for _, rules := range loadRules(t) {
		for _, r := range rules {
			if r.Record != "" {
				if records[r.Record] {
					t.Errorf("recording rule %s defined twice", r.Record)
				}
				records[r.Record] = true
				if strings.HasPrefix(r.Record, "claude_transcript_threshold:") && !strings.HasPrefix(strings.TrimSpace(r.Expr), "vector(") {
					t.Errorf("threshold %s = %q, want vector(<number>)", r.Record, r.Expr)
				}
			}
		}
	}
	used := map[string]bool{}
	for file, rules := range loadRules(t) {
		for _, r := range rules {
			if r.Alert == "" {
				continue
			}
			for _, k := range []string{"summary", "description", "runbook"} {
				if strings.TrimSpace(r.Annotations[k]) == "" {
					t.Errorf("%s: alert %s has no %s annotation", file, r.Alert, k)
				}
			}
			if sev := r.Labels["severity"]; !slices.Contains([]string{"info", "warning", "critical"}, sev) {
				t.Errorf("%s: alert %s severity %q, want info, warning or critical", file, r.Alert, sev)
			}
			refs := thresholdRef.FindAllString(r.Expr, -1)
			for _, ref := range refs {
				used[ref] = true
				if !records[ref] {
					t.Errorf("%s: alert %s uses %s, which no recording rule defines", file, r.Alert, ref)
				}
			}
			if len(refs) == 0 && !slices.Contains(noThresholdAlerts, r.Alert) {
				t.Errorf("%s: alert %s compares against no claude_transcript_threshold:* rule", file, r.Alert)
			}
		}
	}
	for rec := range records {
		if strings.HasPrefix(rec, "claude_transcript_threshold:") && !used[rec] {
			t.Errorf("threshold %s is used by no alert", rec)
		}
	}
}
