package prom

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/claudedir"
)

// ClaudeDir holds the metrics of the Claude dir's files beside the
// transcripts: gauges of what it holds now (tasks, todos, running
// sessions, jobs) and counters of prompt history. It is the
// claudedir.Observer, as Metrics is the transcripts' metrics.Observer.
// Safe for concurrent use.
type ClaudeDir struct {
	prompts       *prometheus.CounterVec
	slashCommands *prometheus.CounterVec
	errors        *prometheus.CounterVec

	tasks, todos, live, stale, jobs *prometheus.Desc

	mu  sync.Mutex
	inv claudedir.Inventory
}

// NewClaudeDir creates the Claude dir metrics and registers them on reg.
func NewClaudeDir(reg prometheus.Registerer) *ClaudeDir {
	c := &ClaudeDir{
		prompts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: name("prompts_total"),
			Help: "Prompts the user typed (history.jsonl and per-project .history.jsonl lines that are not slash commands), by project. Never their text."},
			[]string{"project"}),
		slashCommands: prometheus.NewCounterVec(prometheus.CounterOpts{Name: name("slash_commands_total"),
			Help: "Slash commands the user typed (prompt history), by command: a built-in command's name, or other for custom, plugin and unknown commands."},
			[]string{"command"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Subsystem: "exporter", Name: "claude_dir_errors_total",
			Help: "Claude dir files (task, todos, live_session, job_state, job_timeline) and history lines skipped, by file kind and reason (malformed, shape, too_large, too_long, not_regular, unreadable). A file counts once per change."},
			[]string{"file", "reason"}),
		tasks: prometheus.NewDesc(name("tasks"),
			"Tasks in tasks/<session>/*.json now, by status (pending, in_progress, completed, ...).", []string{"status"}, nil),
		todos: prometheus.NewDesc(name("todos"),
			"Todos in todos/*.json now, by status (pending, in_progress, completed, ...).", []string{"status"}, nil),
		live: prometheus.NewDesc(name("sessions_running"),
			"Claude Code sessions running now (sessions/<pid>.json whose process is alive), by entrypoint, kind and status.",
			[]string{"entrypoint", "kind", "status"}, nil),
		stale: prometheus.NewDesc(name("session_files_stale"),
			"sessions/<pid>.json files whose process is gone (Claude Code ended without removing them).", nil, nil),
		jobs: prometheus.NewDesc(name("jobs"),
			"Background jobs in jobs/<id>/ now, by state (state.json, or the timeline's last event; unknown when neither says).",
			[]string{"state"}, nil),
		inv: claudedir.NewInventory(),
	}
	reg.MustRegister(c.prompts, c.slashCommands, c.errors, c)
	return c
}

var _ claudedir.Observer = (*ClaudeDir)(nil)

// SetInventory implements claudedir.Observer: it replaces the gauges'
// values.
func (c *ClaudeDir) SetInventory(inv claudedir.Inventory) {
	c.mu.Lock()
	c.inv = inv
	c.mu.Unlock()
}

// AddPrompts implements claudedir.Observer.
func (c *ClaudeDir) AddPrompts(project string, n int64) {
	c.prompts.WithLabelValues(project).Add(float64(n))
}

// AddSlashCommands implements claudedir.Observer.
func (c *ClaudeDir) AddSlashCommands(command string, n int64) {
	c.slashCommands.WithLabelValues(command).Add(float64(n))
}

// AddFileErrors implements claudedir.Observer.
func (c *ClaudeDir) AddFileErrors(file, reason string, n int64) {
	c.errors.WithLabelValues(file, reason).Add(float64(n))
}

// Describe implements prometheus.Collector.
func (c *ClaudeDir) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.tasks
	ch <- c.todos
	ch <- c.live
	ch <- c.stale
	ch <- c.jobs
}

// Collect implements prometheus.Collector.
func (c *ClaudeDir) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	statuses(ch, c.tasks, c.inv.Tasks)
	statuses(ch, c.todos, c.inv.Todos)
	for k, n := range c.inv.Live {
		ch <- prometheus.MustNewConstMetric(c.live, prometheus.GaugeValue, float64(n), k.Entrypoint, k.Kind, k.Status)
	}
	ch <- prometheus.MustNewConstMetric(c.stale, prometheus.GaugeValue, float64(c.inv.Stale))
	for s, n := range c.inv.Jobs {
		ch <- prometheus.MustNewConstMetric(c.jobs, prometheus.GaugeValue, float64(n), s)
	}
}

// knownStatuses are always served (0 when none), so that a graph of open
// tasks falls to zero instead of ending.
var knownStatuses = [...]string{"pending", "in_progress", "completed"}

func statuses(ch chan<- prometheus.Metric, d *prometheus.Desc, by map[string]int) {
	for _, s := range knownStatuses {
		if _, ok := by[s]; !ok {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, 0, s)
		}
	}
	for s, n := range by {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(n), s)
	}
}
