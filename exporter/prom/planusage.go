package prom

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/planusage"
)

// PlanUsage holds the metrics of the opt-in plan usage poll
// (--limits.usage-api): the last good answer's windows, served while it
// is current (planusage.Snapshot.Current), and the poll's health. Safe for
// concurrent use.
type PlanUsage struct {
	// Errors counts episodes: a poll failing for a reason the poll
	// before did not fail for (one log line each).
	Errors *prometheus.CounterVec
	// Requests counts every request sent, by result (ok or a reason).
	Requests    *prometheus.CounterVec
	LastSuccess prometheus.Gauge

	util, reset, estimate, info             *prometheus.Desc
	extraEnabled, extraUsed, extraLimit, xu *prometheus.Desc

	now    func() time.Time
	maxAge time.Duration
	mu     sync.Mutex
	snap   planusage.Snapshot
}

// NewPlanUsage creates the plan usage metrics and registers them on reg.
// An answer is served for maxAge after it came (planusage.MaxAge).
func NewPlanUsage(reg prometheus.Registerer, now func() time.Time, maxAge time.Duration) *PlanUsage {
	ns, sub := Namespace, "exporter"
	p := &PlanUsage{
		Errors: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "plan_usage_errors_total",
			Help: "Plan usage polls (--limits.usage-api) that gave no answer, by reason (no_login, api_key_user, credentials, expired, unauthorized, forbidden, rate_limited, server_error, unexpected_status, network, malformed, shape); once per episode: a reason counts when the poll before did not fail for it, and is logged once then."},
			[]string{"reason"}),
		Requests: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "plan_usage_requests_total",
			Help: "Requests sent to the plan usage endpoint, by result (ok, or the reason it failed); at most one per --limits.usage-api.interval."},
			[]string{"result"}),
		LastSuccess: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "plan_usage_last_success_timestamp_seconds",
			Help: "Unix time of the last good answer of the plan usage endpoint (0: none yet)."}),
		util: prometheus.NewDesc(name("plan_utilization_ratio"),
			"The plan's utilisation of each usage window (five_hour, seven_day, seven_day_opus, seven_day_sonnet, others as the endpoint names them), 0-1 (past 1 when over), from Anthropic's OAuth usage endpoint (opt-in: --limits.usage-api). No sample when the answer says null, the window has reset since, or the last answer is older than the poll's max age.",
			[]string{"window"}, nil),
		reset: prometheus.NewDesc(name("plan_reset_timestamp_seconds"),
			"Unix time each usage window resets, from the usage endpoint (as plan_utilization_ratio).", []string{"window"}, nil),
		estimate: prometheus.NewDesc(name("plan_window_tokens_estimate"),
			"The five-hour window's size in tokens, measured: the active block's tokens (all types) divided by the five-hour utilisation, at the answer's time. Only while the utilisation is at least 5 % and the block (when its end is known) and the window end within an hour of each other. Usage of the plan on other machines or claude.ai lowers it.",
			nil, nil),
		info: prometheus.NewDesc(name("plan_info"),
			"1, with the plan as Claude Code's login names it: subscription_type (pro, max, ...), rate_limit_tier.",
			[]string{"subscription_type", "rate_limit_tier"}, nil),
		extraEnabled: prometheus.NewDesc(name("plan_extra_usage_enabled"),
			"1 when extra usage (paid beyond the plan) is enabled, from the usage endpoint's extra_usage.", nil, nil),
		extraUsed: prometheus.NewDesc(name("plan_extra_usage_used_credits"),
			"Extra usage credits spent this month (extra_usage.used_credits, in the endpoint's unit: cents of the currency as status-line tools read it).", nil, nil),
		extraLimit: prometheus.NewDesc(name("plan_extra_usage_monthly_limit_credits"),
			"The monthly cap of extra usage credits (extra_usage.monthly_limit, unit as used_credits).", nil, nil),
		xu: prometheus.NewDesc(name("plan_extra_usage_utilization_ratio"),
			"The extra usage credits spent against their monthly cap, 0-1 (extra_usage.utilization / 100).", nil, nil),
		now:    now,
		maxAge: maxAge,
	}
	// Served at 0 from the start, so that increase() sees the first one.
	p.Requests.WithLabelValues("ok")
	for _, r := range planusage.Reasons {
		p.Errors.WithLabelValues(r)
		if !planusage.Local(r) {
			p.Requests.WithLabelValues(r)
		}
	}
	reg.MustRegister(p.Errors, p.Requests, p.LastSuccess, p)
	return p
}

// Set replaces the last good answer.
func (p *PlanUsage) Set(s planusage.Snapshot) {
	p.mu.Lock()
	p.snap = s
	p.mu.Unlock()
}

// Describe implements prometheus.Collector.
func (p *PlanUsage) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{p.util, p.reset, p.estimate, p.info, p.extraEnabled, p.extraUsed, p.extraLimit, p.xu} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (p *PlanUsage) Collect(ch chan<- prometheus.Metric) {
	p.mu.Lock()
	s := p.snap.Current(p.now(), p.maxAge)
	p.mu.Unlock()
	if s.At.IsZero() {
		return
	}
	g := prometheus.GaugeValue
	ch <- prometheus.MustNewConstMetric(p.info, g, 1, s.Plan.SubscriptionType, s.Plan.RateLimitTier)
	for _, w := range s.Usage.Windows {
		if w.HasUtilization {
			ch <- prometheus.MustNewConstMetric(p.util, g, w.Utilization/100, w.Name)
		}
		if !w.ResetsAt.IsZero() {
			ch <- prometheus.MustNewConstMetric(p.reset, g, float64(w.ResetsAt.UnixMilli())/1000, w.Name)
		}
	}
	if s.HasEstimate {
		ch <- prometheus.MustNewConstMetric(p.estimate, g, s.Estimate)
	}
	if e := s.Usage.Extra; e.Present {
		enabled := 0.0
		if e.Enabled {
			enabled = 1
		}
		ch <- prometheus.MustNewConstMetric(p.extraEnabled, g, enabled)
		if e.UsedCredits != nil {
			ch <- prometheus.MustNewConstMetric(p.extraUsed, g, *e.UsedCredits)
		}
		if e.MonthlyLimit != nil {
			ch <- prometheus.MustNewConstMetric(p.extraLimit, g, *e.MonthlyLimit)
		}
		if e.Utilization != nil {
			ch <- prometheus.MustNewConstMetric(p.xu, g, *e.Utilization/100)
		}
	}
}
