package testbackend

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

const (
	// collectorStartTimeout bounds the wait for the gRPC port after a start.
	collectorStartTimeout = 30 * time.Second
)

// Collector is a running OpenTelemetry Collector started by StartCollector:
// an OTLP/gRPC receiver whose traces pipeline writes every export request to
// a file, read back by Spans.
type Collector struct {
	t        testing.TB
	bin      string
	dir      string
	endpoint string
	logPath  string

	// metricsTo are the OTLP/HTTP metrics endpoints the metrics pipeline
	// forwards to, each by its own exporter (none: no metrics pipeline).
	metricsTo []string

	mu   sync.Mutex
	proc *process // nil while stopped
	runs int      // number of starts; run i writes spans-<i>.jsonl
}

// StartCollector starts an OpenTelemetry Collector with an OTLP gRPC receiver
// on a free port of 127.0.0.1 and a file exporter (flush interval 100ms),
// and waits until the port accepts connections. The binary is
// $CTE_OTELCOL_BIN, else the one tools/otelcol/build.sh builds or finds in
// its cache (a cold build takes about two minutes). The collector's own
// telemetry is off, so several collectors can run at once. It is stopped
// when the test ends; if the test failed, the tail of its log is printed.
func StartCollector(t testing.TB) *Collector {
	t.Helper()
	return startCollector(t, nil)
}

// StartMetricsCollector is StartCollector with a metrics pipeline too:
// what the OTLP receiver gets is forwarded by the otlphttp exporter to
// metricsURL (e.g. Prometheus' /api/v1/otlp/v1/metrics), as a team's
// central collector does, and by one more otlphttp exporter to each of
// alsoTo (e.g. a Thanos receiver's /api/v1/otlp, to compare the two).
func StartMetricsCollector(t testing.TB, metricsURL string, alsoTo ...string) *Collector {
	t.Helper()
	return startCollector(t, append([]string{metricsURL}, alsoTo...))
}

func startCollector(t testing.TB, metricsTo []string) *Collector {
	t.Helper()
	bin := CollectorBinary(t)
	c := &Collector{
		t:         t,
		bin:       bin,
		dir:       t.TempDir(),
		endpoint:  fmt.Sprintf("127.0.0.1:%d", FreePort(t)),
		metricsTo: metricsTo,
	}
	c.logPath = filepath.Join(c.dir, "otelcol.log")
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("collector at %s\n%s", c.endpoint, logTail(c.logPath, logTailLines))
		}
		if err := c.stop(); err != nil {
			t.Errorf("collector: %v", err)
		}
	})
	if err := c.start(); err != nil {
		t.Fatalf("start collector: %v\n%s", err, logTail(c.logPath, logTailLines))
	}
	return c
}

// Endpoint returns the host:port of the OTLP gRPC receiver. It stays the
// same across Stop and Restart.
func (c *Collector) Endpoint() string { return c.endpoint }

// PID is the process id of the running collector (0 while stopped).
func (c *Collector) PID() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.proc == nil {
		return 0
	}
	return c.proc.cmd.Process.Pid
}

// LogPath returns the file that holds the collector's output (all runs).
func (c *Collector) LogPath() string { return c.logPath }

// Stop stops the collector (SIGTERM, which flushes the file exporter) and
// waits for it to exit; the receiver port is then closed. Spans received so
// far stay readable. Stopping a stopped collector does nothing.
func (c *Collector) Stop() {
	c.t.Helper()
	if err := c.stop(); err != nil {
		c.t.Fatalf("stop collector: %v", err)
	}
}

// Restart stops the collector if it runs and starts it again on the same
// endpoint, appending to the spans already received.
func (c *Collector) Restart() {
	c.t.Helper()
	if err := c.stop(); err != nil {
		c.t.Fatalf("restart collector: %v", err)
	}
	if err := c.start(); err != nil {
		c.t.Fatalf("restart collector: %v\n%s", err, logTail(c.logPath, logTailLines))
	}
}

func (c *Collector) stop() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.proc == nil {
		return nil
	}
	err := c.proc.stop()
	c.proc = nil
	return err
}

func (c *Collector) start() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.proc != nil {
		return fmt.Errorf("already running")
	}
	c.runs++
	cfg := collectorConfig(c.endpoint, c.spansPath(c.runs), c.metricsTo)
	cfgPath := filepath.Join(c.dir, fmt.Sprintf("config-%d.yaml", c.runs))
	if err := os.WriteFile(cfgPath, cfg, 0o644); err != nil {
		return err
	}
	proc, err := startProcess("otelcol", c.bin, []string{"--config=" + cfgPath}, c.logPath)
	if err != nil {
		return err
	}
	if err := waitListening(proc, c.endpoint, collectorStartTimeout); err != nil {
		if stopErr := proc.stop(); stopErr != nil {
			err = fmt.Errorf("%w; %v", err, stopErr)
		}
		return fmt.Errorf("%w\nconfig:\n%s", err, cfg)
	}
	c.proc = proc
	return nil
}

// spansPath is the file the run-th start of the collector writes.
func (c *Collector) spansPath(run int) string {
	return filepath.Join(c.dir, fmt.Sprintf("spans-%d.jsonl", run))
}

// collectorConfig renders the collector configuration (JSON, which is YAML).
func collectorConfig(endpoint, spansPath string, metricsTo []string) []byte {
	pipelines := map[string]any{
		"traces": map[string]any{
			"receivers": []string{"otlp"},
			"exporters": []string{"file"},
		},
	}
	exporters := map[string]any{
		"file": map[string]any{"path": spansPath, "flush_interval": "100ms"},
	}
	if len(metricsTo) > 0 {
		var names []string
		for i, to := range metricsTo {
			name := "otlphttp/metrics"
			if i > 0 {
				name = fmt.Sprintf("otlphttp/metrics%d", i)
			}
			exporters[name] = map[string]any{"metrics_endpoint": to}
			names = append(names, name)
		}
		pipelines["metrics"] = map[string]any{
			"receivers": []string{"otlp"},
			"exporters": names,
		}
	}
	cfg := map[string]any{
		"receivers": map[string]any{
			"otlp": map[string]any{
				"protocols": map[string]any{
					"grpc": map[string]any{"endpoint": endpoint},
				},
			},
		},
		"exporters": exporters,
		"service": map[string]any{
			"telemetry": map[string]any{
				// No own metrics: nothing binds the default :8888.
				"metrics": map[string]any{"level": "none"},
			},
			"pipelines": pipelines,
		},
	}
	data, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		panic(err) // plain maps and slices of strings always marshal
	}
	return data
}

// waitListening waits until addr accepts TCP connections or proc exits.
func waitListening(proc *process, addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		if done, err := proc.exited(); done {
			return fmt.Errorf("%s exited before listening on %s: %v", proc.name, addr, err)
		}
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			conn.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not listening on %s after %v: %w", proc.name, addr, timeout, err)
		}
		time.Sleep(pollInterval)
	}
}

// Spans returns every span the collector has written so far, across
// restarts, in the order received.
func (c *Collector) Spans() ([]Span, error) {
	c.mu.Lock()
	runs := c.runs
	c.mu.Unlock()
	var spans []Span
	for run := 1; run <= runs; run++ {
		data, err := os.ReadFile(c.spansPath(run))
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read spans: %w", err)
		}
		got, err := ParseSpans(data)
		if err != nil {
			return nil, fmt.Errorf("read spans from %s: %w", c.spansPath(run), err)
		}
		spans = append(spans, got...)
	}
	return spans, nil
}

// WaitForSpans polls Spans until at least n spans have arrived and returns
// them all. When ctx ends first it returns the spans seen so far and an
// error.
func (c *Collector) WaitForSpans(ctx context.Context, n int) ([]Span, error) {
	for {
		spans, err := c.Spans()
		if err == nil && len(spans) >= n {
			return spans, nil
		}
		select {
		case <-ctx.Done():
			if err == nil {
				err = fmt.Errorf("got %d spans", len(spans))
			}
			return spans, fmt.Errorf("wait for %d spans: %w: %v", n, ctx.Err(), err)
		case <-time.After(pollInterval / 2):
		}
	}
}
