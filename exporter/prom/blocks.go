package prom

import (
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/blocks"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/metrics"
)

// BlockTokenBounds are the upper bounds of the finished blocks' histogram
// (total tokens; cache reads make most of a block's tokens).
var BlockTokenBounds = []float64{1e4, 5e4, 1e5, 2.5e5, 5e5, 1e6, 2.5e6, 5e6, 1e7, 2.5e7, 5e7, 1e8, 2.5e8, 5e8, 1e9}

// planLimits holds the 5-hour blocks and the last limit hit of each
// window. Its series are computed at scrape time with the exporter's
// clock: a block ends on time without a new line.
type planLimits struct {
	mu      sync.Mutex
	tracker *blocks.Tracker
	last    map[string]LimitHitState
	// settle: the history is read, finished blocks go to the histogram
	// (BlocksReady).
	settle bool

	start, end, tokens, cost, burn, projTokens, projCost *prometheus.Desc
	started, finished, reset, hitTokens, late            *prometheus.Desc
}

// LimitHitState is the last limit hit of a window: when, and the reset
// its notice named (zero: none).
type LimitHitState struct {
	Window string
	At     time.Time
	Reset  time.Time
}

// BlocksState is the durable state of the plan-limit series.
type BlocksState struct {
	Tracker blocks.State
	Hits    []LimitHitState
}

func newPlanLimits() *planLimits {
	d := func(n, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name(n), help, labels, nil)
	}
	return &planLimits{
		tracker: blocks.NewTracker(BlockTokenBounds, 0),
		last:    map[string]LimitHitState{},
		start: d("block_start_timestamp_seconds",
			"Start of the active 5-hour block, as ccusage blocks computes it (first request after the previous block, floored to the UTC hour); no sample when no block is active."),
		end: d("block_end_timestamp_seconds",
			"End of the active 5-hour block (start + 5h); no sample when no block is active."),
		tokens: d("block_tokens",
			"Tokens of the active block so far, over all models, by type (input, output, cache_read, cache_write_5m, cache_write_1h).", "type"),
		cost: d("block_cost_usd",
			"Estimated cost in USD of the active block so far (as cost_usd_total)."),
		burn: d("block_burn_rate_tokens_per_minute",
			"Tokens (all types) of the active block per minute from its first request to its last (ccusage's burn rate); no sample while they are at the same instant."),
		projTokens: d("block_projected_tokens",
			"Tokens the active block reaches at its end if it goes on at its burn rate (ccusage's projection, unrounded)."),
		projCost: d("block_projected_cost_usd",
			"Cost in USD the active block reaches at its end at its burn rate (ccusage's projection, unrounded)."),
		started: d("blocks_total",
			"5-hour blocks started, history included."),
		finished: d("finished_block_tokens",
			"Total tokens (all types) of each finished 5-hour block, history included, observed once when first seen finished: a user's usual block and its percentiles (histogram_quantile(0.9, sum by (le) (claude_transcript_finished_block_tokens_bucket)))."),
		reset: d("limit_reset_timestamp_seconds",
			"When the limit of the window's last limit hit resets, as its notice says (the Unix time after |, or its wall time and zone); no sample when it did not say.", "window"),
		hitTokens: d("limit_hit_block_tokens",
			"Total tokens of the block in which the window's last limit hit happened: the level at which this user was last cut off.", "window"),
		late: d("exporter_block_usage_late_total",
			"Usage older than the blocks' folded history (more than 400 days of hourly activity back), not placed in a block."),
	}
}

// AddBlockUsage implements metrics.BlockObserver.
func (m *Metrics) AddBlockUsage(at time.Time, entry bool, t blocks.Tokens, usd float64) {
	p := m.plan
	p.mu.Lock()
	p.tracker.Add(at, entry, t, usd)
	p.mu.Unlock()
}

// AddLimitHit implements metrics.BlockObserver. The last hit of a window
// is the latest by its line's time, whatever the order lines are read.
func (m *Metrics) AddLimitHit(window string, at, reset time.Time) {
	m.limitHits.add(1, window)
	p := m.plan
	p.mu.Lock()
	if l, ok := p.last[window]; !ok || !at.Before(l.At) {
		p.last[window] = LimitHitState{Window: window, At: at, Reset: reset}
	}
	p.mu.Unlock()
}

// BlocksReady says the history is read: from now on each scrape observes
// the blocks finished by then in finished_block_tokens, once each (a
// block observed before the history is whole would be observed in part).
func (m *Metrics) BlocksReady() {
	p := m.plan
	p.mu.Lock()
	p.settle = true
	p.mu.Unlock()
}

// ActiveBlockTokens returns the total tokens (all types) of the block
// active at now; ok is false when none is.
func (m *Metrics) ActiveBlockTokens(now time.Time) (tokens int64, ok bool) {
	b, ok := m.activeBlock(now)
	return b.Tokens.Total(), ok
}

// ActiveBlockEnd is when the active five-hour block ends (ok false when
// none is active), for the plan usage poller's alignment check.
func (m *Metrics) ActiveBlockEnd(now time.Time) (end time.Time, ok bool) {
	b, ok := m.activeBlock(now)
	return b.End, ok
}

func (m *Metrics) activeBlock(now time.Time) (blocks.Block, bool) {
	p := m.plan
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.tracker.Active(now)
}

// BlocksState returns the plan-limit state.
func (m *Metrics) BlocksState() BlocksState {
	p := m.plan
	p.mu.Lock()
	defer p.mu.Unlock()
	st := BlocksState{Tracker: p.tracker.State()}
	for _, h := range p.last {
		st.Hits = append(st.Hits, h)
	}
	sort.Slice(st.Hits, func(i, j int) bool { return st.Hits[i].Window < st.Hits[j].Window })
	return st
}

// RestoreBlocks sets the plan-limit state saved by BlocksState, once at
// start.
func (m *Metrics) RestoreBlocks(st BlocksState) error {
	p := m.plan
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.tracker.Restore(st.Tracker); err != nil {
		return err
	}
	for _, h := range st.Hits {
		p.last[h.Window] = h
	}
	return nil
}

type planCollector struct{ m *Metrics }

func (c planCollector) Describe(ch chan<- *prometheus.Desc) {
	p := c.m.plan
	for _, d := range []*prometheus.Desc{p.start, p.end, p.tokens, p.cost, p.burn, p.projTokens, p.projCost,
		p.started, p.finished, p.reset, p.hitTokens, p.late} {
		ch <- d
	}
}

func (c planCollector) Collect(ch chan<- prometheus.Metric) {
	p, now := c.m.plan, c.m.now()
	g, ctr := prometheus.GaugeValue, prometheus.CounterValue
	p.mu.Lock()
	var s blocks.Summary
	if p.settle {
		s = p.tracker.SettleAndSummarize(now)
	} else {
		s = p.tracker.Summary(now)
	}
	late := p.tracker.Late()
	type hit struct {
		window string
		reset  time.Time
		tokens int64
		ok     bool
	}
	hits := make([]hit, 0, len(p.last))
	for w, h := range p.last {
		b, ok := blocks.Find(s.Blocks, h.At)
		hits = append(hits, hit{w, h.Reset, b.Tokens.Total(), ok})
	}
	p.mu.Unlock()

	ch <- prometheus.MustNewConstMetric(p.started, ctr, float64(s.Started))
	ch <- prometheus.MustNewConstMetric(p.late, ctr, float64(late))
	cum := make(map[float64]uint64, len(BlockTokenBounds))
	var n uint64
	for i, ub := range BlockTokenBounds {
		n += s.Finished.Counts[i]
		cum[ub] = n
	}
	ch <- prometheus.MustNewConstHistogram(p.finished, s.Finished.Count, s.Finished.Sum, cum)
	for _, h := range hits {
		if !h.reset.IsZero() {
			ch <- prometheus.MustNewConstMetric(p.reset, g, unix(h.reset), h.window)
		}
		if h.ok {
			ch <- prometheus.MustNewConstMetric(p.hitTokens, g, float64(h.tokens), h.window)
		}
	}
	b := s.Active
	if b == nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(p.start, g, unix(b.Start))
	ch <- prometheus.MustNewConstMetric(p.end, g, unix(b.End))
	for _, tt := range [...]struct {
		typ string
		n   int64
	}{{metrics.TypeInput, b.Tokens.Input}, {metrics.TypeOutput, b.Tokens.Output}, {metrics.TypeCacheRead, b.Tokens.CacheRead},
		{metrics.TypeCacheWrite5m, b.Tokens.CacheWrite5m}, {metrics.TypeCacheWrite1h, b.Tokens.CacheWrite1h}} {
		ch <- prometheus.MustNewConstMetric(p.tokens, g, float64(tt.n), tt.typ)
	}
	ch <- prometheus.MustNewConstMetric(p.cost, g, b.CostUSD)
	if rate, _, ok := b.BurnRate(); ok {
		ch <- prometheus.MustNewConstMetric(p.burn, g, rate)
	}
	if tok, usd, ok := b.Projection(now); ok {
		ch <- prometheus.MustNewConstMetric(p.projTokens, g, tok)
		ch <- prometheus.MustNewConstMetric(p.projCost, g, usd)
	}
}

func unix(t time.Time) float64 { return float64(t.UnixMilli()) / 1e3 }
