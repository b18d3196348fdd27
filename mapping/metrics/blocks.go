package metrics

import (
	"time"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/blocks"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/limits"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/session"
)

// BlockObserver receives what the plan-limit series are made of: usage
// entries for the 5-hour blocks (mapping/blocks) and limit hits
// (mapping/limits). exporter/prom implements it with Observer.
type BlockObserver interface {
	// AddBlockUsage adds usage at time at: a new usage entry (entry true:
	// a request at its first line's time, or a line Claude Code wrote
	// itself, with no tokens) or the growth of a request counted before
	// (entry false).
	AddBlockUsage(at time.Time, entry bool, t blocks.Tokens, usd float64)
	// AddLimitHit counts a limit notice of a window, written at at, that
	// says the limit resets at reset (zero when it does not say).
	AddLimitHit(window string, at, reset time.Time)
}

// blockTokens converts a request's tokens.
func blockTokens(t session.Tokens) blocks.Tokens {
	return blocks.Tokens{Input: t.Input, Output: t.Output, CacheRead: t.CacheRead,
		CacheWrite5m: t.CacheWrite5m, CacheWrite1h: t.CacheWrite1h}
}

// requestBlockUsage adds a request (its advisor inferences included) to
// the blocks at the time of the line whose usage counts, as ccusage
// places its entry.
func (m *Mapper) requestBlockUsage(r *session.Request, usd float64) {
	tok := blockTokens(r.Tokens)
	for _, adv := range r.Advisor {
		tok = tok.Add(blockTokens(adv.Tokens))
	}
	m.obs.AddBlockUsage(firstKnown(r.UsageAt, r.End, r.Start), true, tok, usd)
}

// apiErrorBlockUsage handles a <synthetic> line or an api_error record:
// a synthetic line with usage is a usage entry of no tokens, as ccusage
// counts it (it can start or extend a block), except when its
// usage.speed is null, as Claude Code 2.1.x writes it, which ccusage
// rejects; a limit notice is a limit hit. Retries (api_error records)
// are neither.
func (m *Mapper) apiErrorBlockUsage(e *session.APIError) {
	if e.Kind == session.KindRetry {
		return
	}
	if e.UsageEntry {
		m.obs.AddBlockUsage(e.Time, true, blocks.Tokens{}, 0)
	}
	n, ok := limits.Parse(e.Head, e.Kind, e.Time, m.cfg.LimitZones)
	if !ok || n.Warning {
		return
	}
	m.obs.AddLimitHit(m.bound("window", n.Window), e.Time, n.Reset)
}
