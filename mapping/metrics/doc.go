// Package metrics maps session units to metric observations with bounded
// label sets: model, type, tool, outcome, trigger, agent_type, kind and
// project (basename, path or none); never session ids. It also holds the
// embedded, dated price table behind the cost counter (Claude models and
// the gateway models Claude Code users run), the normalisation of model
// names for the price lookup, and the reading of LiteLLM's
// model_prices_and_context_window.json as a table under the embedded one.
//
// It is pure: no files, network or clock (prices.json is embedded at
// build time; a --pricing.file is read by the daemon and parsed here).
package metrics
