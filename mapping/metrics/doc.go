// Package metrics maps session units to metric observations with bounded
// label sets: model, type, tool, outcome, trigger, agent_type, kind and
// project (basename, path or none); never session ids. It also holds the
// embedded, dated price table behind the cost counter.
//
// It is pure: no files, network or clock (prices.json is embedded at
// build time; a --pricing.file is read by the daemon and parsed here).
package metrics
