// Package spans turns session units (mapping/session) into span data: one
// trace per session (or per turn), with deterministic trace and span ids
// derived from transcript ids and attributes named after the OpenTelemetry
// GenAI semantic conventions.
//
// Its one job is the mapping. A Builder implements session.Sink and hands
// every span to an emit callback as soon as the span is complete; it holds
// no finished span back, so memory does not grow with the session. Spans
// are plain values (no OpenTelemetry SDK types): exporter/otlp converts
// them for the wire.
//
// Import rule: the standard library, mapping/session, mapping/transcript
// and mapping/metrics (model-name normalisation and the project basename,
// shared with the metrics; prices come in through Config) only — no os,
// net, clock, Prometheus client or
// OpenTelemetry SDK. Time is what the units carry. See design.md for the
// id scheme, the span tree and the known limitations.
package spans
