package prom

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	versioncollector "github.com/prometheus/client_golang/prometheus/collectors/version"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/metrics"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/transcript"
)

// Namespace of every metric. Never claude_code_: that is Claude Code's own
// telemetry, which users may scrape into the same Prometheus.
const Namespace = "claude_transcript"

// Metrics holds the usage metrics. It implements metrics.Observer and is
// safe for concurrent use (observations come from the pipeline, scrapes
// from HTTP).
type Metrics struct {
	tokens        *prometheus.CounterVec
	requests      *prometheus.CounterVec
	cost          *prometheus.CounterVec
	unpriced      *prometheus.CounterVec
	toolCalls     *prometheus.CounterVec
	toolDuration  *prometheus.HistogramVec
	compactions   *prometheus.CounterVec
	preTokens     *prometheus.HistogramVec
	subagents     *prometheus.CounterVec
	warmups       *prometheus.CounterVec
	sessions      *prometheus.CounterVec
	turns         *prometheus.CounterVec
	apiErrors     *prometheus.CounterVec
	lastActivity  *prometheus.GaugeVec
	activeDesc    *prometheus.Desc
	activeWindow  time.Duration
	now           func() time.Time
	mu            sync.Mutex
	activity      map[string]activity
	lastActivityV map[string]float64
}

type activity struct {
	project string
	t       time.Time
}

// ActivityWindowDefault is the default --sessions.active-window.
const ActivityWindowDefault = 5 * time.Minute

// NewMetrics creates the usage metrics and registers them on reg. now is
// the clock for the active-sessions gauge.
func NewMetrics(reg prometheus.Registerer, activeWindow time.Duration, now func() time.Time) *Metrics {
	if activeWindow <= 0 {
		activeWindow = ActivityWindowDefault
	}
	m := &Metrics{
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "tokens_total",
			Help: "Tokens used by API requests, by model and type (input, output, cache_read, cache_write_5m, cache_write_1h). One request counts once however many lines and files it appears in.",
		}, []string{"model", "type", "project"}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "requests_total",
			Help: "API requests (distinct message ids), by model and stop reason (none when the transcript did not record one).",
		}, []string{"model", "stop_reason", "project"}),
		cost: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "cost_usd_total",
			Help: "Estimated cost in USD at list prices (embedded dated price table or --pricing.file).",
		}, []string{"model", "project"}),
		unpriced: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "exporter_unpriced_tokens_total",
			Help: "Tokens of models missing from the price table (not in cost_usd_total).",
		}, []string{"model"}),
		toolCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "tool_calls_total",
			Help: "Tool calls by tool and outcome (ok, error, unanswered).",
		}, []string{"tool", "outcome", "project"}),
		toolDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: Namespace, Name: "tool_duration_seconds",
			Help:    "Time from tool_use to tool_result.",
			Buckets: []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800},
		}, []string{"tool"}),
		compactions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "compactions_total",
			Help: "Conversation compactions by trigger (auto, manual).",
		}, []string{"trigger", "project"}),
		preTokens: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: Namespace, Name: "compaction_pre_tokens",
			Help:    "Context size in tokens when a compaction happened.",
			Buckets: []float64{10e3, 25e3, 50e3, 75e3, 100e3, 125e3, 150e3, 175e3, 200e3, 300e3, 500e3, 1e6},
		}, []string{"trigger"}),
		subagents: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "subagents_total",
			Help: "Subagent runs by agent type (warmup agents excluded).",
		}, []string{"agent_type", "project"}),
		warmups: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "warmup_agents_total",
			Help: "Warmup subagents (their tokens are in tokens_total).",
		}, []string{"project"}),
		sessions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "sessions_total",
			Help: "Sessions seen (main transcripts with at least one message).",
		}, []string{"project"}),
		turns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "turns_total",
			Help: "Human prompts (turns); commands, tool results, meta and compact summaries excluded.",
		}, []string{"project"}),
		apiErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "api_errors_total",
			Help: "API errors, limit notices and retries, by kind.",
		}, []string{"kind", "project"}),
		lastActivity: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: Namespace, Name: "last_activity_timestamp_seconds",
			Help: "Unix time of the newest transcript record seen.",
		}, []string{"project"}),
		activeDesc: prometheus.NewDesc(Namespace+"_sessions_active",
			"Sessions with a record within the active window (--sessions.active-window).", []string{"project"}, nil),
		activeWindow:  activeWindow,
		now:           now,
		activity:      map[string]activity{},
		lastActivityV: map[string]float64{},
	}
	reg.MustRegister(m.tokens, m.requests, m.cost, m.unpriced, m.toolCalls, m.toolDuration, m.compactions,
		m.preTokens, m.subagents, m.warmups, m.sessions, m.turns, m.apiErrors, m.lastActivity, activeCollector{m})
	return m
}

var _ metrics.Observer = (*Metrics)(nil)

// AddTokens implements metrics.Observer.
func (m *Metrics) AddTokens(model, typ, project string, n int64) {
	m.tokens.WithLabelValues(model, typ, project).Add(float64(n))
}

// AddRequest implements metrics.Observer.
func (m *Metrics) AddRequest(model, stop, project string) {
	m.requests.WithLabelValues(model, stop, project).Inc()
}

// AddCost implements metrics.Observer.
func (m *Metrics) AddCost(model, project string, usd float64) {
	m.cost.WithLabelValues(model, project).Add(usd)
}

// AddUnpricedTokens implements metrics.Observer.
func (m *Metrics) AddUnpricedTokens(model string, n int64) {
	m.unpriced.WithLabelValues(model).Add(float64(n))
}

// AddToolCall implements metrics.Observer.
func (m *Metrics) AddToolCall(tool, outcome, project string) {
	m.toolCalls.WithLabelValues(tool, outcome, project).Inc()
}

// ObserveToolDuration implements metrics.Observer.
func (m *Metrics) ObserveToolDuration(tool string, s float64) {
	m.toolDuration.WithLabelValues(tool).Observe(s)
}

// AddCompaction implements metrics.Observer.
func (m *Metrics) AddCompaction(trigger, project string) {
	m.compactions.WithLabelValues(trigger, project).Inc()
}

// ObserveCompactionPreTokens implements metrics.Observer.
func (m *Metrics) ObserveCompactionPreTokens(trigger string, n float64) {
	m.preTokens.WithLabelValues(trigger).Observe(n)
}

// AddSubagent implements metrics.Observer.
func (m *Metrics) AddSubagent(agentType, project string) {
	m.subagents.WithLabelValues(agentType, project).Inc()
}

// AddWarmupAgent implements metrics.Observer.
func (m *Metrics) AddWarmupAgent(project string) { m.warmups.WithLabelValues(project).Inc() }

// AddSession implements metrics.Observer.
func (m *Metrics) AddSession(project string) { m.sessions.WithLabelValues(project).Inc() }

// AddTurn implements metrics.Observer.
func (m *Metrics) AddTurn(project string) { m.turns.WithLabelValues(project).Inc() }

// AddAPIError implements metrics.Observer.
func (m *Metrics) AddAPIError(kind, project string) { m.apiErrors.WithLabelValues(kind, project).Inc() }

// Activity implements metrics.Observer.
func (m *Metrics) Activity(sessionID, project string, t time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if a, ok := m.activity[sessionID]; !ok || t.After(a.t) {
		m.activity[sessionID] = activity{project: project, t: t}
	}
	sec := float64(t.UnixNano()) / 1e9
	if sec > m.lastActivityV[project] {
		m.lastActivityV[project] = sec
		m.lastActivity.WithLabelValues(project).Set(sec)
	}
}

// activeCollector computes the active-sessions gauge at scrape time and
// forgets sessions that left the window, so its memory stays bounded.
type activeCollector struct{ m *Metrics }

func (c activeCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.m.activeDesc }

func (c activeCollector) Collect(ch chan<- prometheus.Metric) {
	m := c.m
	now := m.now()
	counts := map[string]float64{}
	m.mu.Lock()
	for id, a := range m.activity {
		if now.Sub(a.t) <= m.activeWindow {
			counts[a.project]++
		} else {
			delete(m.activity, id)
		}
		if _, ok := counts[a.project]; !ok {
			counts[a.project] = 0
		}
	}
	m.mu.Unlock()
	for p, n := range counts {
		ch <- prometheus.MustNewConstMetric(m.activeDesc, prometheus.GaugeValue, n, p)
	}
}

// Self holds the exporter's own health metrics.
type Self struct {
	FilesWatched       prometheus.Gauge
	LinesRead          prometheus.Counter
	BytesRead          prometheus.Counter
	DecodeErrors       *prometheus.CounterVec
	UnknownRecords     *prometheus.CounterVec
	UnknownFields      prometheus.Counter
	SpansExported      prometheus.Counter
	SpansFailed        prometheus.Counter
	SpansPending       prometheus.Gauge
	LastExport         prometheus.Gauge
	TailLag            prometheus.Histogram
	BackfillDone       prometheus.Gauge
	BackfillSeconds    prometheus.Gauge
	StateFileAge       prometheus.Gauge
	DuplicateLines     prometheus.Counter
	OrphanToolResults  prometheus.Gauge
	ClampedTimes       prometheus.Counter
	AssistantWithoutID prometheus.Counter
}

// NewSelf creates the self-metrics and registers them, with build_info.
func NewSelf(reg prometheus.Registerer) *Self {
	ns, sub := Namespace, "exporter"
	s := &Self{
		FilesWatched: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "files_watched",
			Help: "Transcript files currently followed."}),
		LinesRead: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "lines_read_total",
			Help: "Transcript lines read."}),
		BytesRead: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "bytes_read_total",
			Help: "Transcript bytes read."}),
		DecodeErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "decode_errors_total",
			Help: "Lines skipped, by reason (invalid_json, invalid_utf8, not_object, too_long, truncated)."}, []string{"reason"}),
		UnknownRecords: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "unknown_records_total",
			Help: "Records of types this exporter does not know (read and ignored)."}, []string{"type"}),
		UnknownFields: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "unknown_fields_total",
			Help: "Top-level fields this exporter does not know (read and ignored)."}),
		SpansExported: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "spans_exported_total",
			Help: "Spans acknowledged by the OTLP receiver."}),
		SpansFailed: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "spans_failed_total",
			Help: "Span export attempts that failed (the spans are retried)."}),
		SpansPending: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "spans_pending",
			Help: "Spans built and not yet acknowledged."}),
		LastExport: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "last_export_timestamp_seconds",
			Help: "Unix time of the last successful span export (0: never)."}),
		TailLag: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Subsystem: sub, Name: "tail_lag_seconds",
			Help:    "Seconds between a file change and the processing of its new lines.",
			Buckets: []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}}),
		BackfillDone: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "backfill_done",
			Help: "1 once every file present at start has been read."}),
		BackfillSeconds: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "backfill_duration_seconds",
			Help: "How long reading the files present at start took."}),
		StateFileAge: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "state_file_age_seconds",
			Help: "Seconds since the state file was last written (0 when state is disabled)."}),
		DuplicateLines: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "duplicate_request_lines_total",
			Help: "Assistant lines of a request already seen (streamed lines, copies across files): deduplicated."}),
		OrphanToolResults: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "orphan_tool_results",
			Help: "Tool results whose tool_use was never seen."}),
		ClampedTimes: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "clamped_times_total",
			Help: "Spans whose transcript end time came before their start (clamped)."}),
		AssistantWithoutID: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "assistant_lines_without_id_total",
			Help: "Assistant lines without message.id (not counted as requests)."}),
	}
	reg.MustRegister(s.FilesWatched, s.LinesRead, s.BytesRead, s.DecodeErrors, s.UnknownRecords, s.UnknownFields,
		s.SpansExported, s.SpansFailed, s.SpansPending, s.LastExport, s.TailLag, s.BackfillDone, s.BackfillSeconds,
		s.StateFileAge, s.DuplicateLines, s.OrphanToolResults, s.ClampedTimes, s.AssistantWithoutID,
		versioncollector.NewCollector(Namespace+"_exporter"))
	for _, r := range transcript.Reasons() {
		s.DecodeErrors.WithLabelValues(string(r))
	}
	return s
}
