// Package otlp sends span data (mapping/spans) to an OTLP receiver and
// tells the caller what the receiver acknowledged.
//
// Its one job is delivery: an Exporter sends one batch synchronously (the
// OpenTelemetry SDK's otlptracegrpc exporter, configured by the standard
// OTEL_EXPORTER_OTLP_* variables and the --otlp.* flags, or OTLP JSON
// lines on a writer for piping and debugging); a Queue in front of it
// batches spans, retries failed batches with exponential backoff without
// ever dropping them while running, applies backpressure when full, and
// drains on Close. See design.md for the delivery guarantees.
//
// Import rule: mapping/spans, the OpenTelemetry SDK and exporters, gRPC
// status codes and the standard library. Self-metrics go through the
// Observer interface: this package does not import exporter/prom.
package otlp
