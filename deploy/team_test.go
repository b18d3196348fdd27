package deploy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/testonly/testbackend"
)

// TestTeamCollectorConfigValidates runs `otelcol-custom validate` on the
// team collector's config (metrics to Prometheus' OTLP receiver, spans to
// Tempo).
func TestTeamCollectorConfigValidates(t *testing.T) {
	runTool(t, nil, testbackend.CollectorBinary(t), "validate", "--config="+repoPath(t, "deploy/team/otel-collector.yaml"))
}

// TestTeamPrometheusConfigChecks runs `promtool check config` on the team
// Prometheus' config, with the rules it mounts beside it.
func TestTeamPrometheusConfigChecks(t *testing.T) {
	dir := t.TempDir()
	b, err := os.ReadFile(repoPath(t, "deploy/team/prometheus.yml"))
	if err != nil {
		t.Fatal(err)
	}
	rules := repoPath(t, "deploy/prometheus/rules")
	cfg := strings.Replace(string(b), "/etc/prometheus/rules/*.yml", filepath.Join(rules, "*.yml"), 1)
	path := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	out := runTool(t, nil, testbackend.PromtoolBinary(t), "check", "config", path)
	if !strings.Contains(out, "SUCCESS") {
		t.Errorf("promtool check config:\n%s", out)
	}
}
