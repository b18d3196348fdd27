package prom

import (
	"math"
	"slices"
	"strings"
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
// from HTTP). Its values can be saved and restored (State), so that a
// restart continues every counter where it stopped.
type Metrics struct {
	tokens, requests, cost, unpriced, toolCalls, compactions *vec
	webSearches, attrTokens, attrCost, cacheMisses           *vec
	cacheMissTokens, activeTime                              *vec
	linesOfCode, editDecisions, commits, pullRequests        *vec
	subagents, warmups, sessions, turns, apiErrors           *vec
	toolDuration, preTokens                                  *vec
	// tokenTypes are the values of the type label of tokens and
	// attrTokens, in the order of metrics.TokenCounts.
	tokenTypes []string
	// byName holds every vec above in the order of their names (the
	// exposition's order, Format).
	byName                  []*vec
	lastActivity, limitHits *vec
	plan                    *planLimits
	activeDesc              *prometheus.Desc
	activeWindow            time.Duration
	now                     func() time.Time
	mu                      sync.Mutex
	activity                map[string]activity
	// gone holds the projects of sessions reported already out of the
	// window since the last collection: it reports them at 0 once, as it
	// does a project whose sessions left the window.
	gone map[string]struct{}
	// since is the start of the window at the last collection (or at
	// start): a time before it is out of the window now too.
	since time.Time
	hist  *History
	// ex is the exemplar of the request being observed (set by the
	// mapper, from the pipeline goroutine only), at its time.
	ex   *exemplar
	unit time.Time
}

// Exemplar label names (OpenMetrics; what Grafana's exemplar links and
// Prometheus' exemplar storage expect).
const (
	ExemplarTraceID = "trace_id"
	ExemplarSpanID  = "span_id"
)

type activity struct {
	project string
	t       time.Time
}

// activitySlack is how far before the window's start at the last
// collection a session's time must be for Activity not to hold it: the
// collection decides for the sessions held, so the slack only keeps the
// gauge right when the wall clock steps back (by less than it).
const activitySlack = time.Hour

// ActivityWindowDefault is the default --sessions.active-window.
const ActivityWindowDefault = 5 * time.Minute

func name(n string) string { return Namespace + "_" + n }

// NewMetrics creates the usage metrics and registers them on reg. now is
// the clock for the active-sessions gauge.
func NewMetrics(reg prometheus.Registerer, activeWindow time.Duration, now func() time.Time) *Metrics {
	if activeWindow <= 0 {
		activeWindow = ActivityWindowDefault
	}
	c, g := prometheus.CounterValue, prometheus.GaugeValue
	m := &Metrics{
		tokenTypes: metrics.TokenTypes(),
		tokens: newVec(name("tokens_total"),
			"Tokens used by API requests, by model, type (input, output, cache_read, cache_write_5m, cache_write_1h) and spender (main, subagent:<agent type>, warmup, compaction, internal; unknown for counts restored from before spender was recorded). One request counts once however many lines and files it appears in.",
			c, nil, "model", "type", "project", "spender"),
		requests: newVec(name("requests_total"),
			"API requests (distinct message ids), by model and stop reason (none when the transcript did not record one).",
			c, nil, "model", "stop_reason", "project"),
		cost: newVec(name("cost_usd_total"),
			"Estimated cost in USD at list prices (embedded dated price table or --pricing.file), by model and spender (as tokens_total).",
			c, nil, "model", "project", "spender"),
		attrTokens: newVec(name("attributed_tokens_total"),
			"Tokens of API requests by the skill (attributionSkill), plugin (attributionPlugin), MCP server (attributionMcpServer), effort and speed they were made with (none when absent; skill, plugin and MCP server names past --metrics.attribution-limit are other), and type.",
			c, nil, "skill", "plugin", "mcp_server", "effort", "speed", "type", "project"),
		attrCost: newVec(name("attributed_cost_usd_total"),
			"Estimated cost in USD by skill, plugin, MCP server, effort and speed (as attributed_tokens_total).",
			c, nil, "skill", "plugin", "mcp_server", "effort", "speed", "project"),
		cacheMisses: newVec(name("cache_misses_total"),
			"API requests whose prompt cache missed, by the reason the API gave (message.diagnostics.cache_miss_reason.type) and model; one request counts once.",
			c, nil, "reason", "model", "project"),
		cacheMissTokens: newVec(name("cache_miss_input_tokens_total"),
			"Input tokens that prompt-cache misses re-billed (cache_missed_input_tokens), by reason and model.",
			c, nil, "reason", "model", "project"),
		unpriced: newVec(name("exporter_unpriced_tokens_total"),
			"Tokens of models missing from the price table (not in cost_usd_total).", c, nil, "model"),
		webSearches: newVec(name("web_search_requests_total"),
			"Web searches the API ran for requests (usage.server_tool_use.web_search_requests), by model; one request counts once. Priced at $10 per 1,000 in cost_usd_total.",
			c, nil, "model", "project"),
		toolCalls: newVec(name("tool_calls_total"),
			"Tool calls by tool and outcome (ok, error, unanswered).", c, nil, "tool", "outcome", "project"),
		toolDuration: newVec(name("tool_duration_seconds"), "Time from tool_use to tool_result.", c,
			[]float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800}, "tool"),
		compactions: newVec(name("compactions_total"),
			"Conversation compactions by trigger (auto, manual).", c, nil, "trigger", "project"),
		preTokens: newVec(name("compaction_pre_tokens"), "Context size in tokens when a compaction happened.", c,
			[]float64{10e3, 25e3, 50e3, 75e3, 100e3, 125e3, 150e3, 175e3, 200e3, 300e3, 500e3, 1e6}, "trigger"),
		subagents: newVec(name("subagents_total"),
			"Subagent runs by agent type (warmup agents excluded).", c, nil, "agent_type", "project"),
		warmups: newVec(name("warmup_agents_total"),
			"Warmup subagents (their tokens are in tokens_total).", c, nil, "project"),
		sessions: newVec(name("sessions_total"),
			"Sessions seen (main transcripts with at least one message).", c, nil, "project"),
		linesOfCode: newVec(name("lines_of_code_total"),
			"Lines edit tools (Edit, MultiEdit, Write, NotebookEdit) added or removed, from their results' patches (a created file's lines count as added), by tool and language (from the file extension).",
			c, nil, "type", "tool", "language", "project"),
		editDecisions: newVec(name("code_edit_decisions_total"),
			"Edit tool calls the user accepted or rejected (a rejection is the result Claude Code writes when the user refuses the call), by tool and language.",
			c, nil, "tool", "decision", "language", "project"),
		commits: newVec(name("commits_total"),
			"git commits run by successful shell (Bash) calls (not --dry-run).", c, nil, "project"),
		pullRequests: newVec(name("pull_requests_total"),
			"Pull requests: created by a successful gh pr create shell call (source gh_pr_create), or linked to a session by a pr-link record, once per pull request (source pr_link).",
			c, nil, "source", "project"),
		activeTime: newVec(name("active_time_seconds_total"),
			"Active time by type: cli is Claude working on a turn (Claude Code's turn_duration where it wrote one, else the turn's work records with each silence counted up to 60 s), user the time from a turn's last work to the next prompt, capped at 5 minutes.",
			c, nil, "type", "project"),
		turns: newVec(name("turns_total"),
			"Human prompts (turns); commands, tool results, meta and compact summaries excluded.", c, nil, "project"),
		apiErrors: newVec(name("api_errors_total"),
			"API errors, limit notices and retries, by kind.", c, nil, "kind", "project"),
		lastActivity: newVec(name("last_activity_timestamp_seconds"),
			"Unix time of the newest transcript record seen.", g, nil, "project"),
		activeDesc: prometheus.NewDesc(name("sessions_active"),
			"Sessions with a record within the active window (--sessions.active-window).", []string{"project"}, nil),
		limitHits: newVec(name("limit_hits_total"),
			"Notices Claude Code wrote when a plan limit stopped it, once each, by window (session: the 5-hour limit, weekly, weekly_<model> for a model's own weekly limit, monthly_spend, unknown for a wording not known); transient rate-limit retries excluded.",
			c, nil, "window"),
		plan:         newPlanLimits(),
		activeWindow: activeWindow,
		now:          now,
		activity:     map[string]activity{},
		gone:         map[string]struct{}{},
		since:        now().Add(-activeWindow - activitySlack),
	}
	// Saved before spender was recorded: such counts cannot be split.
	m.tokens.added, m.cost.added = "unknown", "unknown"
	m.byName = m.vecs()
	slices.SortFunc(m.byName, func(a, b *vec) int { return strings.Compare(a.name, b.name) })
	for _, v := range m.byName {
		reg.MustRegister(v)
	}
	reg.MustRegister(activeCollector{m}, planCollector{m})
	return m
}

func (m *Metrics) vecs() []*vec {
	return []*vec{m.tokens, m.requests, m.cost, m.unpriced, m.webSearches, m.toolCalls, m.toolDuration, m.compactions,
		m.preTokens, m.subagents, m.warmups, m.sessions, m.turns, m.apiErrors, m.lastActivity,
		m.attrTokens, m.attrCost, m.cacheMisses, m.cacheMissTokens, m.activeTime,
		m.linesOfCode, m.editDecisions, m.commits, m.pullRequests, m.limitHits}
}

// State is the saved value of every usage series, by metric name.
type State map[string][]SeriesState

// State returns every usage series' value.
func (m *Metrics) State() State {
	st := State{}
	for _, v := range m.vecs() {
		st[v.name] = v.snapshot()
	}
	return st
}

// Restore sets the series saved in st. It is called once at start, before
// any observation.
func (m *Metrics) Restore(st State) error {
	for _, v := range m.vecs() {
		if err := v.restore(st[v.name]); err != nil {
			return err
		}
	}
	return nil
}

var _ metrics.Observer = (*Metrics)(nil)

var _ metrics.Exemplary = (*Metrics)(nil)

// Exemplar implements metrics.Exemplary: the tokens and cost that follow,
// until the zero Exemplar, carry e (tokens_total and cost_usd_total only).
func (m *Metrics) Exemplar(e metrics.Exemplar) {
	if e.TraceID == "" || e.SpanID == "" {
		m.ex = nil
		return
	}
	if !m.unit.IsZero() && (m.unit.Before(time.Unix(0, math.MinInt64)) || m.unit.After(time.Unix(0, math.MaxInt64))) {
		// A line's time out of UnixNano's range, 1677 to 2262 (a hostile
		// or broken timestamp): past year 9999 client_golang refused it,
		// failing every scrape for good (a later exemplar never replaces
		// it); the counts stay, without an exemplar.
		m.ex = nil
		return
	}
	m.ex = &exemplar{traceID: e.TraceID, spanID: e.SpanID, at: m.unit}
}

// exemplarOf is the current exemplar with the value x, or nil (none
// set, or nothing added).
func (m *Metrics) exemplarOf(x float64) *exemplar {
	if m.ex == nil || x == 0 {
		return nil
	}
	e := *m.ex
	e.value = x
	return &e
}

// AddRequestTokens implements metrics.Observer: what AddTokens and
// AddAttributedTokens count for each type, with the five series of each
// family looked up together.
func (m *Metrics) AddRequestTokens(model, project, spender string, a metrics.Attributes, n metrics.TokenCounts) {
	var xs [len(n)]float64
	var exs [len(n)]*exemplar
	for i, c := range n {
		xs[i] = float64(c)
		exs[i] = m.exemplarOf(xs[i])
	}
	m.tokens.addTypes(1, m.tokenTypes, xs[:], exs[:], []string{model, "", project, spender})
	m.attrTokens.addTypes(5, m.tokenTypes, xs[:], nil, []string{a.Skill, a.Plugin, a.MCPServer, a.Effort, a.Speed, "", project})
}

// AddTokens counts n tokens of one type (the mapper counts a request's
// five at once, AddRequestTokens).
func (m *Metrics) AddTokens(model, typ, project, spender string, n int64) {
	m.tokens.addEx(float64(n), m.exemplarOf(float64(n)), model, typ, project, spender)
}

// AddAttributedTokens counts n tokens of one type by attributes (see
// AddTokens).
func (m *Metrics) AddAttributedTokens(a metrics.Attributes, typ, project string, n int64) {
	m.attrTokens.add(float64(n), a.Skill, a.Plugin, a.MCPServer, a.Effort, a.Speed, typ, project)
}

// AddAttributedCost implements metrics.Observer.
func (m *Metrics) AddAttributedCost(a metrics.Attributes, project string, usd float64) {
	m.attrCost.add(usd, a.Skill, a.Plugin, a.MCPServer, a.Effort, a.Speed, project)
}

// AddLinesOfCode implements metrics.Observer.
func (m *Metrics) AddLinesOfCode(typ, tool, language, project string, n int64) {
	m.linesOfCode.add(float64(n), typ, tool, language, project)
}

// AddEditDecision implements metrics.Observer.
func (m *Metrics) AddEditDecision(tool, decision, language, project string) {
	m.editDecisions.add(1, tool, decision, language, project)
}

// AddCommit implements metrics.Observer.
func (m *Metrics) AddCommit(project string) { m.commits.add(1, project) }

// AddPullRequest implements metrics.Observer.
func (m *Metrics) AddPullRequest(source, project string) { m.pullRequests.add(1, source, project) }

// AddActiveTime implements metrics.Observer.
func (m *Metrics) AddActiveTime(typ, project string, seconds float64) {
	m.activeTime.add(seconds, typ, project)
}

// AddCacheMiss implements metrics.Observer.
func (m *Metrics) AddCacheMiss(reason, model, project string, missed int64) {
	m.cacheMisses.add(1, reason, model, project)
	m.cacheMissTokens.add(float64(missed), reason, model, project)
}

// AddRequest implements metrics.Observer.
func (m *Metrics) AddRequest(model, stop, project string) { m.requests.add(1, model, stop, project) }

// AddCost implements metrics.Observer.
func (m *Metrics) AddCost(model, project, spender string, usd float64) {
	m.cost.addEx(usd, m.exemplarOf(usd), model, project, spender)
}

// AddUnpricedTokens implements metrics.Observer.
func (m *Metrics) AddUnpricedTokens(model string, n int64) { m.unpriced.add(float64(n), model) }

// AddWebSearches implements metrics.Observer.
func (m *Metrics) AddWebSearches(model, project string, n int64) {
	m.webSearches.add(float64(n), model, project)
}

// AddToolCall implements metrics.Observer.
func (m *Metrics) AddToolCall(tool, outcome, project string) {
	m.toolCalls.add(1, tool, outcome, project)
}

// ObserveToolDuration implements metrics.Observer.
func (m *Metrics) ObserveToolDuration(tool string, s float64) { m.toolDuration.observe(s, tool) }

// AddCompaction implements metrics.Observer.
func (m *Metrics) AddCompaction(trigger, project string) { m.compactions.add(1, trigger, project) }

// ObserveCompactionPreTokens implements metrics.Observer.
func (m *Metrics) ObserveCompactionPreTokens(trigger string, n float64) {
	m.preTokens.observe(n, trigger)
}

// AddSubagent implements metrics.Observer.
func (m *Metrics) AddSubagent(agentType, project string) { m.subagents.add(1, agentType, project) }

// AddWarmupAgent implements metrics.Observer.
func (m *Metrics) AddWarmupAgent(project string) { m.warmups.add(1, project) }

// AddSession implements metrics.Observer.
func (m *Metrics) AddSession(project string) { m.sessions.add(1, project) }

// AddTurn implements metrics.Observer.
func (m *Metrics) AddTurn(project string) { m.turns.add(1, project) }

// AddAPIError implements metrics.Observer.
func (m *Metrics) AddAPIError(kind, project string) { m.apiErrors.add(1, kind, project) }

// Activity implements metrics.Observer.
func (m *Metrics) Activity(sessionID, project string, t time.Time) {
	m.mu.Lock()
	// A session whose time is out of the window (before its start at the
	// last collection less an hour, so out of it now too, even if the
	// clock stepped back a little) is not held when it is not already:
	// the gauge's next collection would drop it (a backfill held every
	// session of the history until then, 9 MB at 100,000); only its
	// project is, for the 0 that collection reports. For a session held,
	// the later report wins, at equal times too: a session closed and
	// opened again may have learnt its project (working directory) since.
	a, held := m.activity[sessionID]
	switch {
	case held:
		if !t.Before(a.t) {
			m.activity[sessionID] = activity{project: project, t: t}
		}
	case t.Before(m.since):
		m.gone[project] = struct{}{}
	default:
		m.activity[sessionID] = activity{project: project, t: t}
	}
	m.mu.Unlock()
	m.lastActivity.setMax(float64(t.UnixNano())/1e9, project)
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
			m.gone[a.project] = struct{}{}
		}
	}
	for p := range m.gone {
		if _, ok := counts[p]; !ok {
			counts[p] = 0
		}
	}
	clear(m.gone)
	m.since = now.Add(-m.activeWindow - activitySlack)
	m.mu.Unlock()
	for p, n := range counts {
		ch <- prometheus.MustNewConstMetric(m.activeDesc, prometheus.GaugeValue, n, p)
	}
}

// Self holds the exporter's own health metrics.
type Self struct {
	// PricingInfo is 1 for the price table in use: its date, where it
	// comes from (builtin or file) and its format version.
	PricingInfo        *prometheus.GaugeVec
	FilesWatched       prometheus.Gauge
	LinesRead          prometheus.Counter
	BytesRead          prometheus.Counter
	DecodeErrors       *prometheus.CounterVec
	UnknownRecords     *prometheus.CounterVec
	UnknownFields      prometheus.Counter
	InvalidUsage       *prometheus.CounterVec
	FilesSkipped       *prometheus.CounterVec
	SpansExported      prometheus.Counter
	SpansFailed        prometheus.Counter
	SpansPending       prometheus.Gauge
	SpoolSpans         prometheus.Gauge
	LastExport         prometheus.Gauge
	TailLag            prometheus.Histogram
	BackfillDone       prometheus.Gauge
	BackfillSeconds    prometheus.Gauge
	StateFileAge       prometheus.Gauge
	DuplicateLines     prometheus.Counter
	OrphanToolResults  prometheus.Gauge
	ClampedTimes       prometheus.Counter
	AssistantWithoutID prometheus.Counter
	SpansBeforeWindow  prometheus.Counter
	FilesReread        prometheus.Counter
	StateWriteFailures prometheus.Counter
	SpoolDropped       prometheus.Counter
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
		InvalidUsage: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "invalid_usage_total",
			Help: "Lines whose token usage was rejected and not counted, by reason (negative, too_large: over 100,000,000, not_integer)."}, []string{"reason"}),
		FilesSkipped: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "files_skipped_total",
			Help: "Paths matching a transcript name that were not read because they are not regular files, by kind (fifo, device, socket, directory, irregular); once per path."}, []string{"kind"}),
		SpansExported: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "spans_exported_total",
			Help: "Spans acknowledged by the OTLP receiver."}),
		SpansFailed: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "spans_failed_total",
			Help: "Spans of failed export attempts (kept and retried) and spans the receiver rejected."}),
		SpansPending: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "spans_pending",
			Help: "Spans built and not yet acknowledged."}),
		SpoolSpans: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "spool_spans",
			Help: "Spans waiting in the on-disk spool for the OTLP receiver (included in spans_pending)."}),
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
			Help: "Seconds since the state file was last written successfully or found current (0 when state is disabled)."}),
		DuplicateLines: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "duplicate_request_lines_total",
			Help: "Assistant lines of a request already seen (streamed lines, copies across files): deduplicated."}),
		OrphanToolResults: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "orphan_tool_results",
			Help: "Tool results whose tool_use was never seen."}),
		ClampedTimes: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "clamped_times_total",
			Help: "Spans whose transcript end time came before their start (clamped)."}),
		AssistantWithoutID: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "assistant_lines_without_id_total",
			Help: "Assistant lines without message.id (not counted as requests)."}),
		SpansBeforeWindow: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "spans_before_window_total",
			Help: "Spans not exported because their session had no activity within --traces.since before start (its metrics count)."}),
		FilesReread: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "files_reread_total",
			Help: "Times a followed file was read again from the start because it was replaced, truncated or rewritten in place (deduplicated: nothing counts twice)."}),
		StateWriteFailures: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "state_write_failures_total",
			Help: "State file writes that failed (the age keeps growing until one succeeds)."}),
		SpoolDropped: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "spool_dropped_spans_total",
			Help: "Spans dropped from the on-disk spool, oldest first, to keep it under --otlp.spool-max-bytes."}),
		PricingInfo: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "pricing_info",
			Help: "The price table in use: its as_of date, source (builtin; file for a --pricing.file in the exporter's format; builtin+litellm for LiteLLM's price file under the embedded table) and format version. Models it lacks count in unpriced_tokens_total."},
			[]string{"as_of", "source", "version"}),
	}
	reg.MustRegister(s.FilesWatched, s.LinesRead, s.BytesRead, s.DecodeErrors, s.UnknownRecords, s.UnknownFields, s.InvalidUsage, s.FilesSkipped,
		s.SpansExported, s.SpansFailed, s.SpansPending, s.SpoolSpans, s.LastExport, s.TailLag, s.BackfillDone, s.BackfillSeconds,
		s.StateFileAge, s.DuplicateLines, s.OrphanToolResults, s.ClampedTimes, s.AssistantWithoutID,
		s.SpansBeforeWindow, s.FilesReread, s.StateWriteFailures, s.SpoolDropped, s.PricingInfo, versioncollector.NewCollector(Namespace+"_exporter"))
	for _, r := range transcript.Reasons() {
		s.DecodeErrors.WithLabelValues(string(r))
	}
	for _, p := range transcript.UsageProblems() {
		s.InvalidUsage.WithLabelValues(string(p))
	}
	for _, k := range []string{"fifo", "device", "socket", "directory", "irregular"} {
		s.FilesSkipped.WithLabelValues(k)
	}
	return s
}
