package deploy

import (
	"slices"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/daemon"
)

// backfillWindow is how far back the exporter sends spans by default
// (--traces.since): Tempo must keep and find traces that old.
const backfillWindow = daemon.DefaultTracesSince

// Tempo and Jaeger do not run on this machine (no package on the
// registries here), so their configs are checked structurally: they parse,
// and the keys the stack depends on are present with the values it needs.
// Not checked: that Tempo 2.10 / Jaeger 2.15 accept every key (unknown keys
// fail their startup), which only running the pinned images can show.

func TestTempoConfig(t *testing.T) {
	var cfg struct {
		Server struct {
			HTTPListenPort int   `yaml:"http_listen_port"`
			GRPCMaxRecv    int64 `yaml:"grpc_server_max_recv_msg_size"`
			GRPCMaxSend    int64 `yaml:"grpc_server_max_send_msg_size"`
		} `yaml:"server"`
		Distributor struct {
			Receivers struct {
				OTLP struct {
					Protocols struct {
						GRPC *struct {
							Endpoint string `yaml:"endpoint"`
						} `yaml:"grpc"`
					} `yaml:"protocols"`
				} `yaml:"otlp"`
			} `yaml:"receivers"`
		} `yaml:"distributor"`
		Storage struct {
			Trace struct {
				Backend string            `yaml:"backend"`
				WAL     map[string]string `yaml:"wal"`
				Local   map[string]string `yaml:"local"`
			} `yaml:"trace"`
		} `yaml:"storage"`
		QueryFrontend struct {
			Search map[string]string `yaml:"search"`
		} `yaml:"query_frontend"`
		Compactor struct {
			Compaction map[string]string `yaml:"compaction"`
		} `yaml:"compactor"`
		Overrides struct {
			Defaults struct {
				Ingestion struct {
					RateLimitBytes int64 `yaml:"rate_limit_bytes"`
					BurstSizeBytes int64 `yaml:"burst_size_bytes"`
				} `yaml:"ingestion"`
				Global struct {
					MaxBytesPerTrace int64 `yaml:"max_bytes_per_trace"`
				} `yaml:"global"`
			} `yaml:"defaults"`
		} `yaml:"overrides"`
	}
	readYAML(t, "deploy/tempo/tempo.yaml", &cfg)
	if cfg.Server.HTTPListenPort != 3200 {
		t.Errorf("server.http_listen_port = %d, want 3200 (Grafana data source and healthcheck)", cfg.Server.HTTPListenPort)
	}
	if g := cfg.Distributor.Receivers.OTLP.Protocols.GRPC; g == nil || g.Endpoint != "0.0.0.0:4317" {
		t.Errorf("distributor otlp grpc receiver = %+v, want endpoint 0.0.0.0:4317", g)
	}
	if cfg.Storage.Trace.Backend != "local" || cfg.Storage.Trace.WAL["path"] == "" || cfg.Storage.Trace.Local["path"] == "" {
		t.Errorf("storage.trace = %+v, want local backend with wal and local paths", cfg.Storage.Trace)
	}
	for _, p := range []string{cfg.Storage.Trace.WAL["path"], cfg.Storage.Trace.Local["path"]} {
		if len(p) < len("/var/tempo/") || p[:len("/var/tempo/")] != "/var/tempo/" {
			t.Errorf("storage path %s is outside /var/tempo (the volume in docker-compose.yml)", p)
		}
	}
	// Tempo's defaults are 5 MB per trace and 15 MB/s; one long Claude Code
	// session is one trace.
	const minTrace, minRate = 50_000_000, 50_000_000
	if got := cfg.Overrides.Defaults.Global.MaxBytesPerTrace; got < minTrace {
		t.Errorf("overrides.defaults.global.max_bytes_per_trace = %d, want >= %d", got, minTrace)
	}
	if got := cfg.Overrides.Defaults.Ingestion.RateLimitBytes; got < minRate {
		t.Errorf("overrides.defaults.ingestion.rate_limit_bytes = %d, want >= %d", got, minRate)
	}
	if in := cfg.Overrides.Defaults.Ingestion; in.BurstSizeBytes < in.RateLimitBytes {
		t.Errorf("ingestion burst %d below rate %d", in.BurstSizeBytes, in.RateLimitBytes)
	}
	if cfg.Server.GRPCMaxRecv < 64<<20 || cfg.Server.GRPCMaxSend < 64<<20 {
		t.Errorf("server gRPC message limits %d/%d: large traces need >= 64 MiB", cfg.Server.GRPCMaxRecv, cfg.Server.GRPCMaxSend)
	}

	// Backfilled sessions must be searchable and kept (measured on Tempo
	// 2.10 with default settings: 0 of 22 backfilled sessions found by tag
	// search; with these three, 22 of 22 at once).
	window := backfillWindow
	backfill := []struct {
		key, value string
		min        time.Duration // the value must be at least this, or
		zero       bool          // 0s (no limit)
		why        string
	}{
		{"storage.trace.wal.ingestion_time_range_slack", cfg.Storage.Trace.WAL["ingestion_time_range_slack"], window, false,
			"older span times are replaced by the ingestion time and the block is skipped by search"},
		{"query_frontend.search.query_ingesters_until", cfg.QueryFrontend.Search["query_ingesters_until"], window, false,
			"traces still in the ingester are not searched for times before it"},
		{"query_frontend.search.query_backend_after", cfg.QueryFrontend.Search["query_backend_after"], 0, true,
			"recent flushed blocks are not searched"},
		{"query_frontend.search.max_duration", cfg.QueryFrontend.Search["max_duration"], 0, true,
			"a search over a week is refused"},
		{"compactor.compaction.block_retention", cfg.Compactor.Compaction["block_retention"], 2 * window, false,
			"a backfilled week is deleted soon after it arrives"},
	}
	for _, b := range backfill {
		if b.value == "" {
			t.Errorf("%s is not set: %s", b.key, b.why)
			continue
		}
		d, err := model.ParseDuration(b.value)
		if err != nil {
			t.Errorf("%s = %q: %v", b.key, b.value, err)
			continue
		}
		switch got := time.Duration(d); {
		case b.zero && got != 0:
			t.Errorf("%s = %s, want 0s: %s", b.key, b.value, b.why)
		case !b.zero && got < b.min:
			t.Errorf("%s = %s, want >= %v: %s", b.key, b.value, b.min, b.why)
		}
	}
}

func TestJaegerConfig(t *testing.T) {
	var cfg struct {
		Service struct {
			Extensions []string `yaml:"extensions"`
			Pipelines  map[string]struct {
				Receivers []string `yaml:"receivers"`
				Exporters []string `yaml:"exporters"`
			} `yaml:"pipelines"`
		} `yaml:"service"`
		Extensions struct {
			Health *struct {
				HTTP struct {
					Endpoint string `yaml:"endpoint"`
				} `yaml:"http"`
			} `yaml:"healthcheckv2"`
			Storage struct {
				Backends map[string]map[string]any `yaml:"backends"`
			} `yaml:"jaeger_storage"`
			Query struct {
				Storage struct {
					Traces string `yaml:"traces"`
				} `yaml:"storage"`
				HTTP struct {
					Endpoint string `yaml:"endpoint"`
				} `yaml:"http"`
			} `yaml:"jaeger_query"`
		} `yaml:"extensions"`
		Receivers struct {
			OTLP struct {
				Protocols struct {
					GRPC *struct {
						Endpoint string `yaml:"endpoint"`
					} `yaml:"grpc"`
				} `yaml:"protocols"`
			} `yaml:"otlp"`
		} `yaml:"receivers"`
		Exporters struct {
			Storage struct {
				TraceStorage string `yaml:"trace_storage"`
			} `yaml:"jaeger_storage_exporter"`
		} `yaml:"exporters"`
	}
	readYAML(t, "deploy/jaeger/config.yaml", &cfg)
	for _, ext := range []string{"jaeger_storage", "jaeger_query", "healthcheckv2"} {
		if !slices.Contains(cfg.Service.Extensions, ext) {
			t.Errorf("service.extensions %v lacks %s", cfg.Service.Extensions, ext)
		}
	}
	tr := cfg.Service.Pipelines["traces"]
	if !slices.Contains(tr.Receivers, "otlp") || !slices.Contains(tr.Exporters, "jaeger_storage_exporter") {
		t.Errorf("traces pipeline = %+v, want otlp -> jaeger_storage_exporter", tr)
	}
	if g := cfg.Receivers.OTLP.Protocols.GRPC; g == nil || g.Endpoint != "0.0.0.0:4317" {
		t.Errorf("otlp grpc receiver = %+v, want endpoint 0.0.0.0:4317 (the collector sends there)", g)
	}
	store := cfg.Exporters.Storage.TraceStorage
	if store == "" || cfg.Extensions.Storage.Backends[store] == nil {
		t.Errorf("jaeger_storage_exporter.trace_storage %q is not a jaeger_storage backend %v", store, cfg.Extensions.Storage.Backends)
	}
	if cfg.Extensions.Query.Storage.Traces != store {
		t.Errorf("jaeger_query reads %q, the exporter writes %q", cfg.Extensions.Query.Storage.Traces, store)
	}
	if cfg.Extensions.Query.HTTP.Endpoint != "0.0.0.0:16686" {
		t.Errorf("jaeger_query http endpoint = %q, want 0.0.0.0:16686 (UI and Grafana data source)", cfg.Extensions.Query.HTTP.Endpoint)
	}
	if cfg.Extensions.Health == nil || cfg.Extensions.Health.HTTP.Endpoint != "0.0.0.0:13133" {
		t.Errorf("healthcheckv2 http endpoint missing or not 0.0.0.0:13133 (the compose healthcheck probes it)")
	}
}
