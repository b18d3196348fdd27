package daemon

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/exporter/otlp"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/discover"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/planusage"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/safefile"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/metrics"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/session"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/transcript"
	"github.com/prometheus/exporter-toolkit/web"
)

// Config is everything the daemon needs. NewConfig gives the defaults;
// Validate names the flag of the first bad value.
type Config struct {
	// ClaudeDirs are the Claude config dirs to read (--claude.dir).
	ClaudeDirs []string
	// ClaudeDirsDefault says ClaudeDirs are the defaults, not given by the
	// user: a default dir that does not exist yet is waited for (Claude
	// Code creates it on first use) instead of being an error.
	ClaudeDirsDefault bool
	// ClaudeDirsOrigin says where default ClaudeDirs come from
	// ("from $CLAUDE_CONFIG_DIR", "the default ~/.claude"), for messages.
	ClaudeDirsOrigin string

	WebListenAddresses []string // --web.listen-address
	WebConfigFile      string   // --web.config.file
	WebSystemdSocket   bool     // --web.systemd-socket: serve on the sockets systemd passes
	WebEnablePprof     bool     // --web.enable-pprof: serve /debug/pprof/ (off: no profiling endpoints)
	TelemetryPath      string   // --web.telemetry-path

	// Now is the clock (nil: time.Now). Tests inject one: the plan-limit
	// series (the active block) are computed with it at scrape time.
	Now func() time.Time
	// Oneshot reads every file once, prints the exposition to Stdout,
	// exports spans, and returns (--oneshot).
	Oneshot bool
	// OneshotMetricsFile receives the one-shot exposition instead of
	// Stdout (--oneshot.metrics-file), e.g. to keep stdout pure OTLP JSON
	// with --traces.exporter=stdout.
	OneshotMetricsFile string
	// OneshotHistoryFile receives every counter as OpenMetrics samples
	// with timestamps (--oneshot.history-file), at the edges of every
	// OneshotHistoryStep a series moved in during the last
	// OneshotHistoryRecent (--oneshot.history-recent) and of every UTC day
	// it moved in before, with the job and instance labels a scrape
	// would add (--oneshot.history-job, --oneshot.history-instance).
	OneshotHistoryFile     string
	OneshotHistoryStep     time.Duration
	OneshotHistoryRecent   time.Duration
	OneshotHistoryJob      string
	OneshotHistoryInstance string
	// OneshotHistoryEnd ends the history before the end of the read
	// (--oneshot.history-end); zero: at the end of the read.
	OneshotHistoryEnd time.Time

	MaxLineBytes int // --tail.max-line-bytes
	// GroupBytes is how much the backfill reads between two settles
	// (--tail.backfill-group-bytes): memory holds one group's open state.
	GroupBytes     int
	RescanInterval time.Duration // --tail.rescan-interval
	// WatchedRescanInterval is the rescan period while notifications
	// cover every transcript (--tail.watched-rescan-interval); never
	// shorter than RescanInterval.
	WatchedRescanInterval time.Duration
	PollOnly              bool          // --tail.poll-only
	PollInterval          time.Duration // --tail.poll-interval
	// Settle is how long a request whose lines carry no stop reason waits
	// for another line before it is counted (--tail.settle); a line with a
	// stop reason counts its request at once.
	Settle time.Duration

	ProjectLabel string // --metrics.project-label
	// AttributionLimit bounds the skill and plugin names that keep a
	// label value of their own (--metrics.attribution-limit).
	AttributionLimit int
	PricingFile      string        // --pricing.file
	ActiveWindow     time.Duration // --sessions.active-window
	IdleTimeout      time.Duration // --sessions.idle-timeout
	// FilesInterval is how often tasks, todos, prompt history, live
	// sessions and jobs are read again (--claude.files-interval).
	FilesInterval time.Duration
	// PIDCheck says a live session file counts only while its pid runs
	// (--claude.pid-check); off in a container that cannot see Claude
	// Code's processes.
	PIDCheck bool

	ShutdownTimeout time.Duration // --shutdown.timeout

	StateFile          string        // --state.file ("" disables durable state)
	StateFlushInterval time.Duration // --state.flush-interval
	StateReset         bool          // --state.reset

	Traces TracesConfig
	// Push configures the OTLP metrics push.
	Push PushConfig
	// Limits configures the plan limits' opt-in sources.
	Limits LimitsConfig

	// projectOf names a working dir's project on spans as the metrics'
	// mapper labels it (set by Run).
	projectOf func(cwd string) string
}

// LimitsConfig configures the opt-in poll of the plan's usage endpoint.
type LimitsConfig struct {
	// UsageAPI polls Anthropic's OAuth usage endpoint with the user's
	// Claude Code login (--limits.usage-api); off by default.
	UsageAPI bool
	// UsageAPIInterval is the time between polls, at least a minute
	// (--limits.usage-api.interval).
	UsageAPIInterval time.Duration
	// UsageAPIURL is the endpoint's base URL (--limits.usage-api.url):
	// https, or http to a loopback address only (the token must not
	// cross a network in clear).
	UsageAPIURL string
}

// TracesConfig configures span export.
type TracesConfig struct {
	// Exporter is otlp, stdout, none, or auto (otlp when an endpoint is
	// configured by flag or OTEL_EXPORTER_OTLP_*ENDPOINT, else none).
	Exporter        string   // --traces.exporter
	Capture         []string // --traces.capture (prompts,responses,tools,thinking)
	CaptureMaxBytes int      // --traces.capture-max-bytes
	Granularity     string   // --traces.granularity (session|turn)
	// Identifying puts the git branch on spans and host.name on their
	// resource (--traces.identifying-attributes); off by default.
	Identifying bool
	// Since is the backfill window of spans (--traces.since): the spans of
	// a session none of whose files was modified in the last Since are not
	// exported (its metrics still count); 0 exports all history.
	Since     time.Duration
	Endpoint  string // --otlp.endpoint
	Insecure  bool   // --otlp.insecure
	Headers   string // --otlp.headers (k=v,k2=v2)
	BatchSize int    // --otlp.batch-size
	Timeout   time.Duration
	// SpoolDir holds spans the receiver has not taken yet, so that an
	// outage never stalls the pipeline (--otlp.spool-dir). Empty: spool/
	// next to the state file; no spool without a state file.
	SpoolDir string
	// SpoolMaxBytes caps the spool (--otlp.spool-max-bytes; 0: no cap):
	// past it the oldest spans are dropped.
	SpoolMaxBytes int64
}

// Caps on the files flags name: they are read whole, so a runaway file
// (or /dev/zero, refused anyway as not regular) cannot grow memory.
const (
	MaxWebConfigBytes = 1 << 20
	MaxPricingBytes   = 4 << 20
)

// DefaultSpoolMaxBytes is the default --otlp.spool-max-bytes: days of an
// outage for a busy user (a span takes a few hundred bytes on disk).
const DefaultSpoolMaxBytes = 1 << 30

// MinSpoolMaxBytes is the smallest cap: a few segments.
const MinSpoolMaxBytes = 1 << 20

// DefaultListenAddress is the default --web.listen-address: loopback
// only, because /metrics shows spend and project names. The compose stack,
// a container or a team Prometheus pass their own address.
const DefaultListenAddress = "127.0.0.1:9812"

// DefaultListenAddress6 is also served by default where the host has IPv6
// loopback: localhost resolves to ::1 first on many systems.
const DefaultListenAddress6 = "[::1]:9812"

// DefaultTracesSince is the default --traces.since: a week of sessions,
// which deploy/tempo/tempo.yaml is set to find and keep.
const DefaultTracesSince = 7 * 24 * time.Hour

// NewConfig returns the defaults. ClaudeDirs is left empty: DefaultClaudeDirs
// fills it from the environment.
func NewConfig() Config {
	return Config{
		WebListenAddresses:     []string{DefaultListenAddress},
		TelemetryPath:          "/metrics",
		MaxLineBytes:           transcript.DefaultMaxLineBytes,
		GroupBytes:             DefaultGroupBytes,
		RescanInterval:         discover.DefaultRescanInterval,
		WatchedRescanInterval:  discover.DefaultWatchedRescanInterval,
		PollInterval:           time.Second,
		Settle:                 session.DefaultSettle,
		ProjectLabel:           string(metrics.ProjectBasename),
		AttributionLimit:       metrics.DefaultMaxAttribution,
		ActiveWindow:           5 * time.Minute,
		FilesInterval:          10 * time.Second,
		OneshotHistoryStep:     time.Hour,
		OneshotHistoryRecent:   48 * time.Hour,
		OneshotHistoryJob:      "claude-transcript-exporter",
		OneshotHistoryInstance: "exporter:9812",
		IdleTimeout:            30 * time.Minute,
		ShutdownTimeout:        10 * time.Second,
		StateFlushInterval:     10 * time.Second,
		Push:                   PushConfig{Exporter: "auto", Identity: otlp.Identity{Attributes: map[string]string{}}},
		Traces: TracesConfig{
			Exporter:        "auto",
			CaptureMaxBytes: 4096,
			Granularity:     "session",
			Since:           DefaultTracesSince,
			BatchSize:       512,
			Timeout:         10 * time.Second,
			SpoolMaxBytes:   DefaultSpoolMaxBytes,
		},
		Limits: LimitsConfig{UsageAPIInterval: planusage.MinInterval, UsageAPIURL: planusage.DefaultURL},
	}
}

// DefaultClaudeDirs returns the Claude config dirs Claude Code itself
// uses: $CLAUDE_CONFIG_DIR (a comma-separated list) or ~/.claude, plus
// ~/.config/claude when it exists.
func DefaultClaudeDirs(getenv func(string) string, home string) []string {
	if v := getenv("CLAUDE_CONFIG_DIR"); v != "" {
		var dirs []string
		for _, d := range strings.Split(v, ",") {
			if d = strings.TrimSpace(d); d != "" {
				dirs = append(dirs, d)
			}
		}
		if len(dirs) > 0 {
			return dirs
		}
	}
	dirs := []string{filepath.Join(home, ".claude")}
	if st, err := os.Stat(filepath.Join(home, ".config", "claude")); err == nil && st.IsDir() {
		dirs = append(dirs, filepath.Join(home, ".config", "claude"))
	}
	return dirs
}

// Capture kinds for --traces.capture.
const (
	CapturePrompts   = "prompts"
	CaptureResponses = "responses"
	CaptureTools     = "tools"
	CaptureThinking  = "thinking"
)

// Captures reports which content kinds are captured.
func (t TracesConfig) Captures(kind string) bool {
	for _, c := range t.Capture {
		if c == kind {
			return true
		}
	}
	return false
}

// Validate checks the config and names the flag of the first bad value.
func (c *Config) Validate() error {
	if len(c.ClaudeDirs) == 0 {
		return errors.New("--claude.dir: no Claude config dir given")
	}
	for _, d := range c.ClaudeDirs {
		if err := c.checkClaudeDir(d); err != nil {
			return err
		}
	}
	if !c.Oneshot && len(c.WebListenAddresses) == 0 {
		return errors.New("--web.listen-address: at least one address is needed")
	}
	if !strings.HasPrefix(c.TelemetryPath, "/") {
		return fmt.Errorf("--web.telemetry-path: %q must start with /", c.TelemetryPath)
	}
	if c.OneshotMetricsFile != "" && !c.Oneshot {
		return errors.New("--oneshot.metrics-file: only with --oneshot")
	}
	if c.Traces.Timeout <= 0 {
		return fmt.Errorf("--otlp.timeout: %s must be positive", c.Traces.Timeout)
	}
	if c.MaxLineBytes < 1024 || c.MaxLineBytes > 1<<30 {
		return fmt.Errorf("--tail.max-line-bytes: %d is outside 1KiB..1GiB", c.MaxLineBytes)
	}
	if c.GroupBytes < 1 {
		return fmt.Errorf("--tail.backfill-group-bytes: %d must be positive", c.GroupBytes)
	}
	if c.RescanInterval < 100*time.Millisecond {
		return fmt.Errorf("--tail.rescan-interval: %s is below 100ms", c.RescanInterval)
	}
	if c.WatchedRescanInterval < 100*time.Millisecond {
		return fmt.Errorf("--tail.watched-rescan-interval: %s is below 100ms", c.WatchedRescanInterval)
	}
	if c.PollInterval < 10*time.Millisecond {
		return fmt.Errorf("--tail.poll-interval: %s is below 10ms", c.PollInterval)
	}
	if c.Settle < 10*time.Millisecond || c.Settle > 24*time.Hour {
		return fmt.Errorf("--tail.settle: %s is outside 10ms..24h", c.Settle)
	}
	if c.Push.Interval != 0 && c.Push.Interval < time.Second {
		return fmt.Errorf("--metrics.push.interval: %v, want at least 1s", c.Push.Interval)
	}
	for k := range c.Push.Identity.Attributes {
		if k == "" || strings.ContainsAny(k, " \t=,") {
			return fmt.Errorf("--identity.attribute: key %q: want a non-empty name without spaces, '=' or ','", k)
		}
	}
	if c.Push.Headers != "" {
		if _, err := ParseHeaders(c.Push.Headers); err != nil {
			return fmt.Errorf("--metrics.push.headers: %w", err)
		}
	}
	if c.AttributionLimit < 1 || c.AttributionLimit > metrics.DefaultMaxValues {
		return fmt.Errorf("--metrics.attribution-limit: %d, want 1 to %d", c.AttributionLimit, metrics.DefaultMaxValues)
	}
	if _, err := metrics.ParseProjectLabel(c.ProjectLabel); err != nil {
		return fmt.Errorf("--metrics.project-label: %w", err)
	}
	if c.WebConfigFile != "" {
		// Read through safefile first: the toolkit would block on a FIFO
		// and read /dev/zero forever.
		if _, err := safefile.ReadFile(c.WebConfigFile, MaxWebConfigBytes); err != nil {
			return fmt.Errorf("--web.config.file: %w", err)
		}
		if err := web.Validate(c.WebConfigFile); err != nil {
			return fmt.Errorf("--web.config.file: %s: %w", c.WebConfigFile, err)
		}
	}
	if c.StateFile != "" {
		if st, err := os.Stat(c.StateFile); err == nil && !st.Mode().IsRegular() {
			return fmt.Errorf("--state.file: %s: %w (%s)", c.StateFile, safefile.ErrNotRegular, safefile.Kind(st.Mode()))
		}
	}
	if c.PricingFile != "" {
		b, err := safefile.ReadFile(c.PricingFile, MaxPricingBytes)
		if err != nil {
			return fmt.Errorf("--pricing.file: %w", err)
		}
		if _, err := metrics.LoadPricingFile(b); err != nil {
			return fmt.Errorf("--pricing.file: %s: %w", c.PricingFile, err)
		}
	}
	if c.OneshotHistoryFile != "" && !c.Oneshot {
		return fmt.Errorf("--oneshot.history-file: needs --oneshot")
	}
	if c.OneshotHistoryFile != "" {
		// Checked now, not after the read: a directory, or a file in
		// a directory that does not exist, can never be written.
		if fi, err := os.Stat(c.OneshotHistoryFile); err == nil && fi.IsDir() {
			return fmt.Errorf("--oneshot.history-file: %s is a directory", c.OneshotHistoryFile)
		}
		if fi, err := os.Stat(filepath.Dir(c.OneshotHistoryFile)); err != nil || !fi.IsDir() {
			return fmt.Errorf("--oneshot.history-file: no directory %s to write it in", filepath.Dir(c.OneshotHistoryFile))
		}
	}
	if c.OneshotHistoryStep < time.Minute || 24*time.Hour%c.OneshotHistoryStep != 0 && c.OneshotHistoryStep%(24*time.Hour) != 0 {
		return fmt.Errorf("--oneshot.history-step: %s, want at least 1m and a divisor or a multiple of 24h (so that days begin on a sample)", c.OneshotHistoryStep)
	}
	if c.OneshotHistoryRecent < 0 {
		return fmt.Errorf("--oneshot.history-recent: %s, want 0 or more", c.OneshotHistoryRecent)
	}
	if !c.OneshotHistoryEnd.IsZero() && c.OneshotHistoryEnd.UnixMilli()%c.OneshotHistoryStep.Milliseconds() != 0 {
		return fmt.Errorf("--oneshot.history-end: %s is not a multiple of --oneshot.history-step (%s) in UTC", c.OneshotHistoryEnd.Format(time.RFC3339), c.OneshotHistoryStep)
	}
	if c.OneshotHistoryFile != "" && (c.OneshotHistoryJob == "" || c.OneshotHistoryInstance == "") {
		return fmt.Errorf("--oneshot.history-job and --oneshot.history-instance must not be empty: they are the labels a scrape adds")
	}
	if c.FilesInterval < 100*time.Millisecond {
		return fmt.Errorf("--claude.files-interval: %s is below 100ms", c.FilesInterval)
	}
	if c.ActiveWindow <= 0 {
		return fmt.Errorf("--sessions.active-window: %s must be positive", c.ActiveWindow)
	}
	if c.IdleTimeout < time.Second {
		return fmt.Errorf("--sessions.idle-timeout: %s is below 1s", c.IdleTimeout)
	}
	if c.StateFlushInterval < 100*time.Millisecond {
		return fmt.Errorf("--state.flush-interval: %s is below 100ms", c.StateFlushInterval)
	}
	if c.StateFile != "" {
		if st, err := os.Stat(c.StateFile); err == nil && st.IsDir() {
			return fmt.Errorf("--state.file: %s is a directory", c.StateFile)
		}
	}
	if c.ShutdownTimeout <= 0 {
		return fmt.Errorf("--shutdown.timeout: %s must be positive", c.ShutdownTimeout)
	}
	if err := c.Limits.validate(); err != nil {
		return err
	}
	t := c.Traces
	switch t.Exporter {
	case "auto", "otlp", "stdout", "none":
	default:
		return fmt.Errorf("--traces.exporter: unknown exporter %q (want otlp, stdout, none or auto)", t.Exporter)
	}
	for _, k := range t.Capture {
		switch k {
		case CapturePrompts, CaptureResponses, CaptureTools, CaptureThinking:
		default:
			return fmt.Errorf("--traces.capture: unknown kind %q (want prompts, responses, tools, thinking)", k)
		}
	}
	if t.CaptureMaxBytes < 1 {
		return fmt.Errorf("--traces.capture-max-bytes: %d must be positive", t.CaptureMaxBytes)
	}
	switch t.Granularity {
	case "session", "turn":
	default:
		return fmt.Errorf("--traces.granularity: unknown granularity %q (want session or turn)", t.Granularity)
	}
	if t.Since < 0 {
		return fmt.Errorf("--traces.since: %s must not be negative (0: all history)", t.Since)
	}
	if t.Headers != "" {
		if _, err := ParseHeaders(t.Headers); err != nil {
			return fmt.Errorf("--otlp.headers: %w", err)
		}
	}
	if t.BatchSize < 1 {
		return fmt.Errorf("--otlp.batch-size: %d must be positive", t.BatchSize)
	}
	if t.SpoolMaxBytes != 0 && t.SpoolMaxBytes < MinSpoolMaxBytes {
		return fmt.Errorf("--otlp.spool-max-bytes: %d is below 1MiB (0: no cap)", t.SpoolMaxBytes)
	}
	if t.SpoolDir != "" {
		if st, err := os.Stat(t.SpoolDir); err == nil && !st.IsDir() {
			return fmt.Errorf("--otlp.spool-dir: %s is not a directory", t.SpoolDir)
		}
	}
	return nil
}

func (l LimitsConfig) validate() error {
	if l.UsageAPIInterval < planusage.MinInterval {
		return fmt.Errorf("--limits.usage-api.interval: %s is below %s (the endpoint rate-limits eagerly)", l.UsageAPIInterval, planusage.MinInterval)
	}
	u, err := url.Parse(l.UsageAPIURL)
	if err != nil || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("--limits.usage-api.url: %q is not a base URL (https://host[:port][/path])", l.UsageAPIURL)
	}
	switch u.Scheme {
	case "https":
	case "http":
		ip := net.ParseIP(u.Hostname())
		if u.Hostname() != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return fmt.Errorf("--limits.usage-api.url: %s: http only to a loopback address (the login's token would cross the network in clear); use https", l.UsageAPIURL)
		}
	default:
		return fmt.Errorf("--limits.usage-api.url: %s: want https", l.UsageAPIURL)
	}
	return nil

}

// checkClaudeDir checks that d is a Claude config dir: a directory holding
// projects/, where Claude Code writes its transcripts. A default dir (not
// given by the user) that is missing or has no projects/ yet is waited
// for by the daemon (Claude Code creates both on first use); a one-shot
// reads only what is on disk now, so for it that is a mistake too.
func (c *Config) checkClaudeDir(d string) error {
	from := "--claude.dir"
	if c.ClaudeDirsDefault {
		from = c.ClaudeDirsOrigin
		if from == "" {
			from = "the default Claude config dir"
		}
	}
	st, err := os.Stat(d)
	if errors.Is(err, fs.ErrNotExist) {
		if c.ClaudeDirsDefault && !c.Oneshot {
			return nil
		}
		if c.ClaudeDirsDefault {
			return fmt.Errorf("--claude.dir: %s (%s) does not exist, and --oneshot reads only what is on disk: "+
				"name your Claude config dir (the one holding projects/) with --claude.dir or CLAUDE_CONFIG_DIR", d, from)
		}
		return fmt.Errorf("--claude.dir: %s does not exist: name your Claude config dir (the one holding projects/, e.g. ~/.claude)", d)
	}
	if err != nil {
		return fmt.Errorf("--claude.dir: %w", err)
	}
	if !st.IsDir() {
		return fmt.Errorf("--claude.dir: %s is not a directory", d)
	}
	f, err := os.Open(d)
	if err != nil {
		return fmt.Errorf("--claude.dir: %w", err)
	}
	f.Close()
	for _, e := range claudeDirEntries() {
		if _, err := os.Stat(filepath.Join(d, e)); err == nil {
			return nil
		} else if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("--claude.dir: %w", err)
		}
	}
	if c.ClaudeDirsDefault && !c.Oneshot {
		return nil // Claude Code creates projects/ with its first session
	}
	hint := ""
	if st, err := os.Stat(filepath.Join(d, ".claude", "projects")); err == nil && st.IsDir() {
		hint = fmt.Sprintf(" (%s has one: did you mean it?)", filepath.Join(d, ".claude"))
	}
	return fmt.Errorf("--claude.dir: %s (%s) has no projects/ directory, where Claude Code writes its transcripts, nor any other file it reads (%s): "+
		"name the Claude config dir itself, the one holding projects/ (e.g. ~/.claude)%s", d, from, strings.Join(claudeDirEntries()[1:], ", "), hint)
}

// claudeDirEntries are what a Claude config dir holds that the exporter
// reads; a dir with none of them is not one.
func claudeDirEntries() []string {
	return []string{"projects", "history.jsonl", "tasks", "todos", "sessions", "jobs"}
}

// ParseHeaders parses k=v,k2=v2 (the OTEL_EXPORTER_OTLP_HEADERS format).
func ParseHeaders(s string) (map[string]string, error) {
	h := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		kv = strings.TrimSpace(kv)
		if kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("header %q is not key=value", kv)
		}
		h[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return h, nil
}
