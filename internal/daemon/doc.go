// Package daemon builds and wires every stage of the exporter and owns the
// shutdown order. Run reads as the pipeline, top to bottom:
// discover → tail → decode → assemble → {spans → OTLP, observations →
// Prometheus}. It is the only package that touches files, the network and
// the clock on the pipeline's behalf; mapping/* stays pure.
package daemon
