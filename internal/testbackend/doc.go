// Package testbackend starts the real backends that the end-to-end tests of
// claude-transcript-exporter run against, on free loopback ports: a
// Prometheus server (the Debian "prometheus" package, found on PATH) and an
// OpenTelemetry Collector acting as OTLP receiver (built from Go modules by
// tools/otelcol/build.sh, or taken from $CTE_OTELCOL_BIN).
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
// Run .ci/run on a bare machine to install Prometheus, build the collector
// and run the tests.
package testbackend
