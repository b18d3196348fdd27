package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	promBridge "go.opentelemetry.io/contrib/bridges/prometheus"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/version"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/exporter/otlp"
)

// PushConfig configures the OTLP metrics push (--metrics.push.*).
type PushConfig struct {
	// Exporter is otlp, none, or auto: otlp when a metrics endpoint is
	// configured (--metrics.push.endpoint, OTEL_EXPORTER_OTLP_METRICS_ENDPOINT)
	// or OTEL_METRICS_EXPORTER is otlp, else none.
	Exporter string        // --metrics.push
	Endpoint string        // --metrics.push.endpoint
	Insecure bool          // --metrics.push.insecure
	Headers  string        // --metrics.push.headers
	Interval time.Duration // --metrics.push.interval (0: OTEL_METRIC_EXPORT_INTERVAL, else 60s)
	// Identity is what the pushed resource says about the machine.
	Identity otlp.Identity
}

// Environment variables of the metrics push.
const (
	envMetricsEndpoint = "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"
	envMetricsExporter = "OTEL_METRICS_EXPORTER"
	envExportInterval  = "OTEL_METRIC_EXPORT_INTERVAL"
)

// DefaultPushInterval is the push interval without flag or environment.
const DefaultPushInterval = time.Minute

// pushKind resolves --metrics.push auto.
func pushKind(pc PushConfig, getenv func(string) string) string {
	if pc.Exporter != "auto" && pc.Exporter != "" {
		return pc.Exporter
	}
	if getenv(envSDKDisabled) == "true" {
		return "none"
	}
	if pc.Endpoint != "" || getenv(envMetricsEndpoint) != "" || strings.EqualFold(getenv(envMetricsExporter), "otlp") {
		return "otlp"
	}
	return "none"
}

// pushInterval is --metrics.push.interval, else OTEL_METRIC_EXPORT_INTERVAL
// (milliseconds), else DefaultPushInterval.
func pushInterval(pc PushConfig, getenv func(string) string) (time.Duration, error) {
	if pc.Interval > 0 {
		return pc.Interval, nil
	}
	if s := getenv(envExportInterval); s != "" {
		ms, err := strconv.ParseInt(s, 10, 64)
		if err != nil || ms < 1000 {
			return 0, fmt.Errorf("%s=%q: want milliseconds, at least 1000", envExportInterval, s)
		}
		return time.Duration(ms) * time.Millisecond, nil
	}
	return DefaultPushInterval, nil
}

// pushStage pushes every series of the registry over OTLP.
type pushStage struct {
	mp       *sdkmetric.MeterProvider
	endpoint string
}

// newPush starts the OTLP metrics push of reg's series (nil when push is
// off). It pushes what /metrics serves, cumulative, every interval, and
// once more when closed. The usage counters are restored from the state
// file at start, so a restart never pushes a reset.
func newPush(ctx context.Context, cfg *Config, reg prometheus.Gatherer, logger *slog.Logger, getenv func(string) string) (*pushStage, error) {
	pc := cfg.Push
	if pushKind(pc, getenv) != "otlp" {
		return nil, nil
	}
	interval, err := pushInterval(pc, getenv)
	if err != nil {
		return nil, &StartError{fmt.Errorf("--metrics.push.interval: %w", err)}
	}
	v := version.Version
	if v == "" {
		v = "dev"
	}
	res, err := otlp.NewMetricsResource(ctx, v, pc.Identity)
	if err != nil {
		if res == nil {
			return nil, fmt.Errorf("--metrics.push: %w", err)
		}
		logger.Warn("resource attributes incomplete", "err", err)
	}
	var opts []otlpmetricgrpc.Option
	endpoint := pc.Endpoint
	if endpoint != "" {
		if strings.Contains(endpoint, "://") {
			opts = append(opts, otlpmetricgrpc.WithEndpointURL(endpoint))
		} else {
			opts = append(opts, otlpmetricgrpc.WithEndpoint(endpoint))
		}
	} else if endpoint = getenv(envMetricsEndpoint); endpoint == "" {
		if endpoint = getenv(envEndpoint); endpoint == "" {
			endpoint = defaultEndpoint
		}
	}
	if pc.Insecure {
		opts = append(opts, otlpmetricgrpc.WithInsecure())
	}
	if pc.Headers != "" {
		h, err := ParseHeaders(pc.Headers)
		if err != nil {
			return nil, &StartError{fmt.Errorf("--metrics.push.headers: %w", err)}
		}
		opts = append(opts, otlpmetricgrpc.WithHeaders(h))
	}
	exp, err := otlpmetricgrpc.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("--metrics.push.endpoint: %w", err)
	}
	reader := sdkmetric.NewPeriodicReader(exp, sdkmetric.WithInterval(interval),
		sdkmetric.WithProducer(exemplarIDs{promBridge.NewMetricProducer(promBridge.WithGatherer(reg))}))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader), sdkmetric.WithResource(res))
	logger.Info("pushing metrics over OTLP", "endpoint", endpoint, "interval", interval,
		"service.instance.id", otlp.InstanceID(), "identifying", pc.Identity.Host)
	return &pushStage{mp: mp, endpoint: endpoint}, nil
}

// close pushes once more and stops, waiting at most timeout.
func (p *pushStage) close(timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := p.mp.ForceFlush(ctx); err != nil {
		_ = p.mp.Shutdown(ctx)
		return fmt.Errorf("push metrics to %s: %w", p.endpoint, err)
	}
	return p.mp.Shutdown(ctx)
}
