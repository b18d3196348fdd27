// Package testbackend starts the real backends that the end-to-end tests of
// claude-transcript-exporter run against, on free loopback ports: Prometheus
// 3 (and promtool), an OpenTelemetry Collector acting as OTLP receiver that
// writes what it receives to a file, and Jaeger v2 with in-memory storage,
// queried through the HTTP API its UI calls, and a Thanos receive hashring
// with query in front (StartThanosHashring). All of them are built from Go
// modules by the scripts under tools/ (tools/backends.sh runs them all) and
// cached by version; $CTE_PROMETHEUS_BIN, $CTE_PROMTOOL_BIN,
// $CTE_OTELCOL_BIN, $CTE_JAEGER_BIN and $CTE_THANOS_BIN name prebuilt
// binaries instead.
//
// It is used ONLY by tests: every entry point takes a testing.TB, registers
// its own cleanup and fails the test (never skips it) when a backend is
// missing. Nothing here is imported by the daemon.
//
// It also locates the repository and its test data:
//
//   - RepoRoot: the directory holding go.mod, found by walking up from the
//     working directory.
//   - CorpusDir and CorpusTrees: RepoRoot/testdata/corpus, the anonymized
//     real corpus the repository carries, and its subfolders, each a Claude
//     configuration directory.
//   - SharedCorpus and AllCorpusTrees: the original, not anonymized, trees
//     in $CTE_SHARED_DIR/corpus/real or ../shared/corpus/real, an optional
//     extra that exactness checks add when it is there.
//
// `make test` builds the backends (once) and runs every test; .ci/run does
// the same on a bare Debian machine.
package testbackend
