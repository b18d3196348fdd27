package deploy

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/testbackend"
)

const collectorConfigPath = "deploy/otel-collector/config.yaml"

// collectorBinary returns the test collector: $CTE_OTELCOL_BIN, else the
// binary tools/otelcol/build.sh builds or finds in its cache (it prints the
// path last). It is the same binary internal/testbackend starts.
func collectorBinary(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv(testbackend.OtelcolBinEnv); bin != "" {
		if _, err := os.Stat(bin); err != nil {
			t.Fatalf("%s=%s: %v", testbackend.OtelcolBinEnv, bin, err)
		}
		return bin
	}
	script := repoPath(t, "tools/otelcol/build.sh")
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", script)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("build the test collector with %s (or set %s): %v\n%s%s",
			script, testbackend.OtelcolBinEnv, err, stderr.String(), stdout.String())
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// TestCollectorConfigValidates runs `otelcol-custom validate` on the compose
// stack's collector config. The test collector must include every component
// the config uses (otlp receiver; memory_limiter and batch processors; otlp
// exporter; health_check extension): see tools/otelcol/builder-config.yaml.
func TestCollectorConfigValidates(t *testing.T) {
	bin := collectorBinary(t)
	runTool(t, nil, bin, "validate", "--config="+repoPath(t, collectorConfigPath))
}

// TestCollectorConfigFansOut checks the pipeline shape the stack relies on.
func TestCollectorConfigFansOut(t *testing.T) {
	var cfg struct {
		Receivers map[string]struct {
			Protocols map[string]map[string]any `yaml:"protocols"`
		} `yaml:"receivers"`
		Service struct {
			Extensions []string `yaml:"extensions"`
			Pipelines  map[string]struct {
				Receivers  []string `yaml:"receivers"`
				Processors []string `yaml:"processors"`
				Exporters  []string `yaml:"exporters"`
			} `yaml:"pipelines"`
		} `yaml:"service"`
	}
	readYAML(t, collectorConfigPath, &cfg)
	grpc := cfg.Receivers["otlp"].Protocols["grpc"]
	if grpc == nil || grpc["endpoint"] != "0.0.0.0:4317" {
		t.Errorf("otlp receiver grpc = %v, want endpoint 0.0.0.0:4317", grpc)
	}
	tr, ok := cfg.Service.Pipelines["traces"]
	if !ok {
		t.Fatal("no traces pipeline")
	}
	if len(tr.Exporters) != 2 || !strings.HasPrefix(tr.Exporters[0], "otlp") || !strings.HasPrefix(tr.Exporters[1], "otlp") {
		t.Errorf("traces exporters = %v, want two otlp exporters (Tempo and Jaeger)", tr.Exporters)
	}
	if len(tr.Processors) == 0 || tr.Processors[0] != "memory_limiter" {
		t.Errorf("traces processors = %v, want memory_limiter first", tr.Processors)
	}
	if len(cfg.Service.Extensions) == 0 || cfg.Service.Extensions[0] != "health_check" {
		t.Errorf("extensions = %v, want health_check (the compose healthcheck probes it)", cfg.Service.Extensions)
	}
}
