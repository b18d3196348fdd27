package deploy

import (
	"fmt"
	"strings"
	"testing"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/testonly/testbackend"
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

const langfuseBridgePath = "deploy/langfuse/otel-collector.yaml"

// TestLangfuseBridgeValidates runs `otelcol-custom validate` on the
// Langfuse bridge of docs/traces.md (Langfuse takes OTLP over HTTP only), with its
// environment unset (the defaults) and set as docs/traces.md says.
func TestLangfuseBridgeValidates(t *testing.T) {
	bin := testbackend.CollectorBinary(t)
	for _, env := range [][]string{
		{"LANGFUSE_HOST=", "LANGFUSE_AUTH="},
		{"LANGFUSE_HOST=https://us.cloud.langfuse.com", "LANGFUSE_AUTH=cGstbGYteDpzay1sZi15"},
	} {
		runTool(t, env, bin, "validate", "--config="+repoPath(t, langfuseBridgePath))
	}
}

// TestLangfuseBridgeShape: OTLP gRPC in on the loopback, OTLP/HTTP out to
// Langfuse's OTLP path with basic auth.
func TestLangfuseBridgeShape(t *testing.T) {
	var cfg struct {
		Receivers map[string]struct {
			Protocols map[string]map[string]any `yaml:"protocols"`
		} `yaml:"receivers"`
		Exporters map[string]struct {
			Endpoint string            `yaml:"endpoint"`
			Headers  map[string]string `yaml:"headers"`
		} `yaml:"exporters"`
		Service struct {
			Pipelines map[string]struct {
				Receivers []string `yaml:"receivers"`
				Exporters []string `yaml:"exporters"`
			} `yaml:"pipelines"`
		} `yaml:"service"`
	}
	readYAML(t, langfuseBridgePath, &cfg)
	grpc := cfg.Receivers["otlp"].Protocols["grpc"]
	if grpc == nil || !strings.HasPrefix(fmt.Sprint(grpc["endpoint"]), "127.0.0.1:") {
		t.Errorf("otlp receiver grpc = %v, want a loopback endpoint", grpc)
	}
	if len(cfg.Receivers["otlp"].Protocols) != 1 {
		t.Errorf("receiver protocols %v, want grpc only (what the exporter sends)", cfg.Receivers["otlp"].Protocols)
	}
	tr := cfg.Service.Pipelines["traces"]
	if len(tr.Exporters) != 1 || !strings.HasPrefix(tr.Exporters[0], "otlphttp") {
		t.Fatalf("traces exporters %v, want one otlphttp exporter", tr.Exporters)
	}
	exp := cfg.Exporters[tr.Exporters[0]]
	if !strings.HasSuffix(exp.Endpoint, "/api/public/otel") || !strings.HasPrefix(exp.Headers["Authorization"], "Basic ${env:") {
		t.Errorf("exporter endpoint %q headers %v, want <host>/api/public/otel and basic auth from the environment", exp.Endpoint, exp.Headers)
	}
}
