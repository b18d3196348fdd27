package deploy

import (
	"strings"
	"testing"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/testbackend"
)

const collectorConfigPath = "deploy/otel-collector/config.yaml"

// TestCollectorConfigValidates runs `otelcol-custom validate` on the compose
// stack's collector config. The test collector must include every component
// the config uses (otlp receiver; memory_limiter and batch processors; otlp
// exporter; health_check extension): see tools/otelcol/builder-config.yaml.
func TestCollectorConfigValidates(t *testing.T) {
	bin := testbackend.CollectorBinary(t)
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
