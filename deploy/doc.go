// Package deploy holds the deployment kit of claude-transcript-exporter and
// the tests that prove it; it has no non-test code.
//
// The kit: docker-compose.yml at the repository root (exporter, OpenTelemetry
// Collector, Tempo, Jaeger v2, Prometheus, Grafana) with the exporter image in
// Dockerfile; Prometheus scrape config, threshold recording rules, alert
// rules and their promtool unit tests in prometheus/; provisioned Grafana
// data sources and dashboards in grafana/; collector, Tempo and Jaeger
// configs; a systemd user unit and a launchd agent.
//
// The tests run the real tools where this machine has them: promtool (check
// config, check rules, test rules), a real Prometheus that scrapes the
// exporter running over the real transcript corpus and evaluates every PromQL
// expression of the dashboards and rules, the test OpenTelemetry Collector
// (validate), systemd-analyze verify, and compose-go for docker-compose.yml.
// Grafana, Tempo and Jaeger do not run here: their configs are checked
// structurally. A missing tool fails the test with an install hint; nothing
// is skipped.
//
// Import rule: tests only; they may import internal/testonly/testbackend and nothing
// of the exporter itself (the exporter is exercised as a built binary).
package deploy
