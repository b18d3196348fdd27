// Package otlp sends span data (mapping/spans) to an OTLP receiver and
// tells the caller what the receiver acknowledged.
//
// Its one job is delivery: an Exporter sends one batch synchronously (the
// OpenTelemetry SDK's otlptracegrpc exporter, configured by the standard
// OTEL_EXPORTER_OTLP_* variables and the --otlp.* flags, or OTLP JSON
// lines on a writer for piping and debugging); a Queue in front of it
// batches spans, retries failed batches with exponential backoff without
// ever dropping them while running, and drains on Close. With a Spool
// (the daemon), spans that cannot be sent go to disk and the caller never
// blocks; without one (one-shot runs), Enqueue applies backpressure when
// the queue is full. See design.md for the delivery guarantees.
//
// Import rule: mapping/spans, the OpenTelemetry SDK and exporters, gRPC
// status codes and the standard library. Self-metrics go through the
// Observer interface: this package does not import exporter/prom.
package otlp
