package testbackend

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The backends the tests run are built from Go modules by the scripts under
// tools/ and cached by version; these variables name prebuilt binaries
// instead (the Makefile and .ci/run set them after building once).
const (
	// OtelcolBinEnv names the OpenTelemetry Collector binary
	// (tools/otelcol/build.sh).
	OtelcolBinEnv = "CTE_OTELCOL_BIN"
	// PrometheusBinEnv names the Prometheus 3 server binary
	// (tools/prometheus/build.sh).
	PrometheusBinEnv = "CTE_PROMETHEUS_BIN"
	// PromtoolBinEnv names the promtool binary (tools/prometheus/build.sh).
	PromtoolBinEnv = "CTE_PROMTOOL_BIN"
	// JaegerBinEnv names the Jaeger v2 binary (tools/jaeger/build.sh).
	JaegerBinEnv = "CTE_JAEGER_BIN"

	// backendBuildTimeout bounds a cold build of one backend.
	backendBuildTimeout = 20 * time.Minute
)

// CollectorBinary returns the OpenTelemetry Collector binary: $CTE_OTELCOL_BIN,
// else the one tools/otelcol/build.sh builds or finds in its cache.
func CollectorBinary(t testing.TB) string {
	t.Helper()
	return backendBinary(t, OtelcolBinEnv, "otelcol", "")
}

// PrometheusBinary returns the Prometheus server binary: $CTE_PROMETHEUS_BIN,
// else the one tools/prometheus/build.sh builds or finds in its cache.
func PrometheusBinary(t testing.TB) string {
	t.Helper()
	return backendBinary(t, PrometheusBinEnv, "prometheus", "prometheus")
}

// PromtoolBinary returns the promtool binary: $CTE_PROMTOOL_BIN, else the
// one tools/prometheus/build.sh builds or finds in its cache.
func PromtoolBinary(t testing.TB) string {
	t.Helper()
	return backendBinary(t, PromtoolBinEnv, "prometheus", "promtool")
}

// JaegerBinary returns the Jaeger v2 binary: $CTE_JAEGER_BIN, else the one
// tools/jaeger/build.sh builds or finds in its cache.
func JaegerBinary(t testing.TB) string {
	t.Helper()
	return backendBinary(t, JaegerBinEnv, "jaeger", "")
}

// backendBinary returns $env when set (it must exist), else runs
// tools/<tool>/build.sh and takes the last line it prints: the binary, or,
// when name is not empty, the folder holding the binary called name. A
// missing or failing build fails the test with the script's output; it is
// never a skip.
func backendBinary(t testing.TB, env, tool, name string) string {
	t.Helper()
	if bin := os.Getenv(env); bin != "" {
		if _, err := os.Stat(bin); err != nil {
			t.Fatalf("%s=%s: %v (unset it to build the backend with tools/%s/build.sh)", env, bin, err, tool)
		}
		return bin
	}
	script := filepath.Join(RepoRoot(t), "tools", tool, "build.sh")
	t.Logf("%s is not set: running %s (instant when cached; a cold build takes minutes)", env, script)
	ctx, cancel := context.WithTimeout(context.Background(), backendBuildTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", script)
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("build %s with %s: %v\n%s%s", tool, script, err, stderr.String(), stdout.String())
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	bin := strings.TrimSpace(lines[len(lines)-1])
	if name != "" {
		bin = filepath.Join(bin, name)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s printed %q: %v\n%s", script, bin, err, stderr.String())
	}
	t.Logf("%s binary %s (%v)", tool, bin, time.Since(start).Round(time.Millisecond))
	return bin
}
