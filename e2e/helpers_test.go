package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/testonly/testbackend"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// binary builds the exporter once per test run.
func binary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "cte-e2e-bin")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "claude-transcript-exporter")
		cmd := exec.Command("go", "build", "-o", binPath, "./cmd/claude-transcript-exporter")
		cmd.Dir = testbackend.RepoRoot(t)
		out, err := cmd.CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// oneshot runs the binary with --oneshot and returns stdout.
func oneshot(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary(t), append([]string{"--oneshot", "--traces.exporter=none", "--log.level=warn"}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("oneshot %v: %v\nstderr:\n%s", args, err, stderr.String())
	}
	return stdout.String()
}

func parseExposition(t *testing.T, text string) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("parse exposition: %v", err)
	}
	return mfs
}

func labelsOf(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, lp := range m.GetLabel() {
		out[lp.GetName()] = lp.GetValue()
	}
	return out
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Untyped != nil:
		return m.Untyped.GetValue()
	}
	return 0
}

// sumBy sums a family's samples grouped by the given labels (other
// labels, such as project, are summed over).
func sumBy(mfs map[string]*dto.MetricFamily, name string, by ...string) map[string]float64 {
	out := map[string]float64{}
	mf := mfs[name]
	if mf == nil {
		return out
	}
	for _, m := range mf.GetMetric() {
		l := labelsOf(m)
		var key []string
		for _, b := range by {
			key = append(key, l[b])
		}
		out[strings.Join(key, "|")] += value(m)
	}
	return out
}

// startServe runs the binary as a daemon on a free port and waits until
// it is ready.
func startServe(t *testing.T, args ...string) (addr string, stop func() string) {
	t.Helper()
	port := testbackend.FreePort(t)
	addr = fmt.Sprintf("127.0.0.1:%d", port)
	var stderr syncBuffer
	base := []string{"--web.listen-address=" + addr, "--traces.exporter=none"}
	if !slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--state.file=") }) {
		base = append(base, "--state.file="+filepath.Join(t.TempDir(), "state"))
	}
	cmd := exec.Command(binary(t), append(base, args...)...)
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	stopped := false
	stop = func() string {
		if !stopped {
			stopped = true
			_ = cmd.Process.Signal(os.Interrupt)
			select {
			case <-done:
			case <-time.After(15 * time.Second):
				_ = cmd.Process.Kill()
				<-done
			}
		}
		return stderr.String()
	}
	t.Cleanup(func() { stop() })
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		select {
		case <-done:
			t.Fatalf("exporter exited early:\n%s", stderr.String())
		default:
		}
		resp, err := http.Get("http://" + addr + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return addr, stop
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("exporter not ready in time:\n%s", stderr.String())
	return "", nil
}

func scrape(t *testing.T, addr string) string {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// stableExposition drops the lines that change from run to run or build to
// build (durations, build info), keeping a golden comparable.
func stableExposition(text string) string {
	var keep []string
	for _, line := range strings.Split(text, "\n") {
		if strings.Contains(line, "claude_transcript_exporter_build_info") ||
			strings.Contains(line, "claude_transcript_exporter_backfill_duration_seconds") {
			continue
		}
		keep = append(keep, line)
	}
	return strings.Join(keep, "\n")
}

// waitFor polls cond until it holds or 30 s pass. Settling requests take
// session.DefaultSettle after their last line.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("condition not met in 30s")
}

// promAfterBackfill starts a real Prometheus scraping addr and returns
// once a scrape shows the exporter's backfill done (the first scrape may
// come before; on a loaded machine that takes a while), with a context
// for the queries that follow.
func promAfterBackfill(t *testing.T, addr string) (*testbackend.Prometheus, context.Context) {
	t.Helper()
	prom := testbackend.StartPrometheus(t, testbackend.PromOptions{Targets: []string{addr}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	if err := prom.WaitForTargetsUp(ctx); err != nil {
		t.Fatal(err)
	}
	for {
		if v, err := prom.QueryValue(ctx, `max(claude_transcript_exporter_backfill_done)`); err == nil && v == 1 {
			return prom, ctx
		}
		select {
		case <-ctx.Done():
			t.Fatal("no scrape showed the backfill done")
		case <-time.After(200 * time.Millisecond):
		}
	}
}
