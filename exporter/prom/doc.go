// Package prom defines every Prometheus metric of the exporter, once, on an
// injected registry: the usage metrics (Metrics implements
// mapping/metrics.Observer) and the exporter's own health metrics (Self),
// with build_info. It never touches the default registry.
package prom
