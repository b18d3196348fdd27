package main

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/alecthomas/units"
	"github.com/prometheus/common/model"
	"github.com/prometheus/common/promslog"
	promslogflag "github.com/prometheus/common/promslog/flag"
	"github.com/prometheus/common/version"
	"github.com/prometheus/exporter-toolkit/web"
	"github.com/prometheus/exporter-toolkit/web/kingpinflag"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/checkpoint"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/daemon"
)

// namedValue is a kingpin.Value whose parse errors name the flag, so that
// a bad value fails at start with "--flag.name: reason".
type namedValue struct {
	name string
	set  func(string) error
	str  func() string
}

func (v *namedValue) Set(s string) error {
	if err := v.set(s); err != nil {
		return fmt.Errorf("--%s: %w", v.name, err)
	}
	return nil
}

func (v *namedValue) String() string { return v.str() }

func durationFlag(app *kingpin.Application, name, help string, p *time.Duration) {
	app.Flag(name, help).Default(showDuration(*p)).SetValue(&namedValue{
		name: name,
		set: func(s string) error {
			d, err := time.ParseDuration(s)
			if err != nil {
				// Days and weeks too (7d, 2w), as Prometheus writes them.
				md, merr := model.ParseDuration(s)
				if merr != nil {
					return fmt.Errorf("%q is not a duration (e.g. 10s, 5m, 7d)", s)
				}
				d = time.Duration(md)
			}
			*p = d
			return nil
		},
		str: func() string { return showDuration(*p) },
	})
}

// showDuration writes a whole number of days in days (7d, not
// Prometheus's 1w), as docs/configuration.md and --help's texts do.
func showDuration(d time.Duration) string {
	if d > 0 && d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	}
	return model.Duration(d).String()
}

func intFlag(app *kingpin.Application, name, help string, p *int) {
	app.Flag(name, help).Default(strconv.Itoa(*p)).SetValue(&namedValue{
		name: name,
		set: func(s string) error {
			n, err := strconv.Atoi(s)
			if err != nil {
				return fmt.Errorf("%q is not a whole number", s)
			}
			*p = n
			return nil
		},
		str: func() string { return strconv.Itoa(*p) },
	})
}

func enumFlag(app *kingpin.Application, name, help string, p *string, values ...string) {
	app.Flag(name, help).Default(*p).SetValue(&namedValue{
		name: name,
		set: func(s string) error {
			if !slices.Contains(values, s) {
				return fmt.Errorf("%q is not one of %s", s, strings.Join(values, ", "))
			}
			*p = s
			return nil
		},
		str: func() string { return *p },
	})
}

// bytesFlag takes a size: a whole number of bytes or one with a unit
// (512MiB, 1GiB; KB, MB and GB are read as powers of 1024 too).
func bytesFlag(app *kingpin.Application, name, help string, p *int64) {
	app.Flag(name, help).Default(units.Base2Bytes(*p).String()).SetValue(&namedValue{
		name: name,
		set: func(s string) error {
			if n, err := strconv.ParseInt(s, 10, 64); err == nil {
				*p = n
				return nil
			}
			n, err := units.ParseBase2Bytes(s)
			if err != nil {
				return fmt.Errorf("%q is not a size (e.g. 1073741824, 512MiB, 1GiB)", s)
			}
			*p = int64(n)
			return nil
		},
		str: func() string { return units.Base2Bytes(*p).String() },
	})
}

// timeFlag parses an RFC 3339 time or Unix seconds.
func timeFlag(app *kingpin.Application, name, help string, p *time.Time) {
	app.Flag(name, help).SetValue(&namedValue{
		name: name,
		set: func(s string) error {
			if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
				*p = t.UTC()
				return nil
			}
			if f, err := strconv.ParseFloat(s, 64); err == nil && f > 0 && f < 1e11 {
				*p = time.UnixMilli(int64(f * 1000)).UTC()
				return nil
			}
			return fmt.Errorf("%q is neither an RFC 3339 time (2026-11-01T00:00:00Z) nor Unix seconds", s)
		},
		str: func() string {
			if p.IsZero() {
				return ""
			}
			return p.Format(time.RFC3339)
		},
	})
}

// logFlags adds promslog's --log.level and --log.format, with errors that
// name the flag and its values (promslog's own say "unrecognized log
// level verbose").
func logFlags(app *kingpin.Application, cfg *promslog.Config) {
	cfg.Level, cfg.Format = promslog.NewLevel(), promslog.NewFormat()
	app.Flag(promslogflag.LevelFlagName, promslogflag.LevelFlagHelp).Default("info").HintOptions(promslog.LevelFlagOptions...).
		SetValue(&namedValue{name: promslogflag.LevelFlagName, str: cfg.Level.String, set: func(s string) error {
			if cfg.Level.Set(s) != nil {
				return fmt.Errorf("%q is not one of %s", s, strings.Join(promslog.LevelFlagOptions, ", "))
			}
			return nil
		}})
	app.Flag(promslogflag.FormatFlagName, promslogflag.FormatFlagHelp).Default("logfmt").HintOptions(promslog.FormatFlagOptions...).
		SetValue(&namedValue{name: promslogflag.FormatFlagName, str: cfg.Format.String, set: func(s string) error {
			if cfg.Format.Set(s) != nil {
				return fmt.Errorf("%q is not one of %s", s, strings.Join(promslog.FormatFlagOptions, ", "))
			}
			return nil
		}})
}

// cliFlags are what the flags give beside the config, read after parsing.
type cliFlags struct {
	claudeDirSet bool
	web          *web.FlagConfig
	capture      *string
	log          *promslog.Config
}

// newApp declares every flag of the exporter on cfg, with its defaults
// (the state file under home, the Claude dirs defaults).
func newApp(cfg *daemon.Config, home string, defaults []string) (*kingpin.Application, *cliFlags) {
	fl := &cliFlags{}
	app := kingpin.New(name, "Prometheus metrics and OpenTelemetry traces from Claude Code transcripts (read-only). "+
		"Serves http://127.0.0.1:9812/metrics; every metric is described in docs/metrics.md. "+
		"Health: claude_transcript_exporter_unknown_records_total{type} and unknown_fields_total count transcript record types and fields "+
		"this version does not know (read and skipped, no count is lost); they stay near 0 until Claude Code adds new ones.")
	app.Version(version.Print(name))
	app.HelpFlag.Short('h')
	app.Flag("claude.dir", "Claude config dir to read (repeatable). Default: $CLAUDE_CONFIG_DIR (comma-separated) or ~/.claude, plus ~/.config/claude when it exists.").
		Default(defaults...).IsSetByUser(&fl.claudeDirSet).StringsVar(&cfg.ClaudeDirs)
	fl.web = kingpinflag.AddFlags(app, cfg.WebListenAddresses[0])
	app.Flag("web.telemetry-path", "Path under which to expose metrics.").Default(cfg.TelemetryPath).StringVar(&cfg.TelemetryPath)
	app.Flag("web.enable-pprof", "Serve Go runtime profiles under /debug/pprof/ (and link them from the landing page).").BoolVar(&cfg.WebEnablePprof)
	app.Flag("oneshot", "Read every transcript once, export its spans, print the metrics exposition to stdout and exit.").BoolVar(&cfg.Oneshot)
	app.Flag("oneshot.metrics-file", "With --oneshot, write the exposition to this file instead of stdout (e.g. for node_exporter's textfile collector, or to keep stdout pure OTLP JSON with --traces.exporter=stdout).").StringVar(&cfg.OneshotMetricsFile)
	app.Flag("oneshot.history-file", "With --oneshot, also write every counter as OpenMetrics samples with timestamps, for promtool tsdb create-blocks-from openmetrics (see make backfill).").StringVar(&cfg.OneshotHistoryFile)
	durationFlag(app, "oneshot.history-step", "The history's finest cell (a divisor or a multiple of 24h, at least 1m): a series has a sample at both edges of every step it moved in during the recent window.", &cfg.OneshotHistoryStep)
	durationFlag(app, "oneshot.history-recent", "How long before the end of the history its cells are steps (from the UTC midnight before); before that, a series has samples only at the midnights around the days it moved in (increase(...[1d] anchored) stays exact). A large value: steps throughout.", &cfg.OneshotHistoryRecent)
	timeFlag(app, "oneshot.history-end", "End the history here (RFC 3339 or Unix seconds, a multiple of the step) instead of at the end of the read: "+
		"the time Prometheus first scraped the live exporter, so that history and live samples never overlap.", &cfg.OneshotHistoryEnd)
	app.Flag("oneshot.history-job", "The job label of the history's series: the job_name that scrapes the live exporter.").Default(cfg.OneshotHistoryJob).StringVar(&cfg.OneshotHistoryJob)
	app.Flag("oneshot.history-instance", "The instance label of the history's series: the target address Prometheus scrapes the live exporter at.").Default(cfg.OneshotHistoryInstance).StringVar(&cfg.OneshotHistoryInstance)
	intFlag(app, "tail.max-line-bytes", "Longest transcript line read; longer lines are counted as too_long and skipped.", &cfg.MaxLineBytes)
	intFlag(app, "tail.backfill-group-bytes", "How much history the backfill reads between two settles: memory holds the open state of one such group.", &cfg.GroupBytes)
	durationFlag(app, "tail.rescan-interval", "How often the Claude dirs are walked for new and changed files (the safety net for lost notifications; with --tail.poll-only, how soon new files are found).", &cfg.RescanInterval)
	durationFlag(app, "tail.poll-interval", "How often known files are checked for new lines.", &cfg.PollInterval)
	durationFlag(app, "tail.settle", "How long a request whose lines carry no stop reason waits for another line before it is counted; "+
		"a line with a stop reason counts its request at once.", &cfg.Settle)
	app.Flag("tail.poll-only", "Do not use file system notifications (NFS, FUSE, Docker Desktop mounts).").BoolVar(&cfg.PollOnly)
	enumFlag(app, "metrics.project-label", "Project label: none, basename (of the session's working directory) or path (full path).", &cfg.ProjectLabel, "none", "basename", "path")
	app.Flag("metrics.attribution-limit", "Skill, plugin and MCP server names that keep a label value of their own on the attributed_* series (the first seen; later names are other).").
		Default(strconv.Itoa(cfg.AttributionLimit)).IntVar(&cfg.AttributionLimit)
	app.Flag("pricing.file", "JSON price table replacing the embedded one (format: docs/pricing.md; a mistake exits 2 naming the field), or LiteLLM's model_prices_and_context_window.json as it is, added under the embedded table.").StringVar(&cfg.PricingFile)
	durationFlag(app, "claude.files-interval", "How often tasks/, todos/, sessions/, jobs/ and the prompt history are read again (only changed files are parsed).", &cfg.FilesInterval)
	app.Flag("claude.pid-check", "A sessions/<pid>.json file counts as running only while its process exists (turn off where the exporter cannot see Claude Code's processes: a container, Docker Desktop).").Default("true").BoolVar(&cfg.PIDCheck)
	durationFlag(app, "sessions.active-window", "A session with a record this recent counts as active.", &cfg.ActiveWindow)
	durationFlag(app, "sessions.idle-timeout", "A session without records this long is closed (its turn and root spans end).", &cfg.IdleTimeout)
	cfg.StateFile = checkpoint.DefaultPath(os.Getenv, home)
	app.Flag("state.file", "Durable state (offsets, counter totals, dedup state) so restarts neither recount nor lose anything. Empty disables it.").
		Default(cfg.StateFile).StringVar(&cfg.StateFile)
	durationFlag(app, "state.flush-interval", "How often the state file is written (also at shutdown).", &cfg.StateFlushInterval)
	app.Flag("state.reset", "Discard the state file at start and count everything again from the transcripts.").BoolVar(&cfg.StateReset)
	durationFlag(app, "shutdown.timeout", "How long shutdown may take to flush spans.", &cfg.ShutdownTimeout)
	enumFlag(app, "metrics.push", "Push every series over OTLP gRPC as well as serving /metrics: otlp, none, or auto (otlp when --metrics.push.endpoint, OTEL_EXPORTER_OTLP_METRICS_ENDPOINT or OTEL_METRICS_EXPORTER=otlp is set).", &cfg.Push.Exporter, "auto", "otlp", "none")
	app.Flag("metrics.push.endpoint", "OTLP gRPC endpoint for metrics (host:port or URL). Default: OTEL_EXPORTER_OTLP_METRICS_ENDPOINT / OTEL_EXPORTER_OTLP_ENDPOINT, else localhost:4317.").StringVar(&cfg.Push.Endpoint)
	app.Flag("metrics.push.insecure", "Push metrics without TLS.").BoolVar(&cfg.Push.Insecure)
	app.Flag("metrics.push.headers", "Headers of the metrics push, k=v,k2=v2 (default: OTEL_EXPORTER_OTLP_METRICS_HEADERS / OTEL_EXPORTER_OTLP_HEADERS).").StringVar(&cfg.Push.Headers)
	app.Flag("metrics.push.interval", "How often metrics are pushed (default: OTEL_METRIC_EXPORT_INTERVAL in ms, else 1m); once more at shutdown.").DurationVar(&cfg.Push.Interval)
	app.Flag("identity.host", "Put host.name and user.name on the resource of pushed metrics (off: only an opaque service.instance.id, stable per machine and user, tells machines apart).").BoolVar(&cfg.Push.Identity.Host)
	app.Flag("identity.attribute", "An extra resource attribute of pushed metrics, k=v (repeatable), e.g. team=core or an e-mail; OTEL_RESOURCE_ATTRIBUTES works too.").StringMapVar(&cfg.Push.Identity.Attributes)
	enumFlag(app, "traces.exporter", "Span exporter: otlp, stdout (OTLP JSON), none, or auto (otlp when an OTLP endpoint is configured, else none).", &cfg.Traces.Exporter, "auto", "otlp", "stdout", "none")
	fl.capture = app.Flag("traces.capture", "Content to put on spans, comma-separated subset of prompts,responses,tools,thinking. Default: none (no text leaves the machine).").String()
	intFlag(app, "traces.capture-max-bytes", "Cap on each captured text.", &cfg.Traces.CaptureMaxBytes)
	app.Flag("traces.identifying-attributes", "Put the git branch on spans and host.name on their resource (off: spans name the project as --metrics.project-label does, and neither the branch nor the host).").
		BoolVar(&cfg.Traces.Identifying)
	enumFlag(app, "traces.granularity", "One trace per session, or per turn (for very long sessions and trace-size limits).", &cfg.Traces.Granularity, "session", "turn")
	durationFlag(app, "traces.since", "Export the spans of sessions active in this window before start (7d, 30d; 0: all history); "+
		"everything after start is exported. Metrics always count all history.", &cfg.Traces.Since)
	app.Flag("otlp.endpoint", "OTLP gRPC endpoint (host:port or URL). Default: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT / OTEL_EXPORTER_OTLP_ENDPOINT.").StringVar(&cfg.Traces.Endpoint)
	app.Flag("otlp.insecure", "Use plaintext gRPC (no TLS).").BoolVar(&cfg.Traces.Insecure)
	durationFlag(app, "otlp.timeout", "Time limit of one export attempt.", &cfg.Traces.Timeout)
	intFlag(app, "otlp.batch-size", "Spans per export request.", &cfg.Traces.BatchSize)
	app.Flag("otlp.headers", "Extra gRPC headers, key=value,key2=value2 (adds to OTEL_EXPORTER_OTLP_HEADERS).").StringVar(&cfg.Traces.Headers)
	app.Flag("otlp.spool-dir", "Directory where spans wait on disk while the OTLP receiver is down or slow, so that metrics keep updating and no span is lost. Default: spool/ next to --state.file; without a state file there is no spool and an outage stalls reading once the in-memory queue is full. Not used with --oneshot.").
		StringVar(&cfg.Traces.SpoolDir)
	bytesFlag(app, "otlp.spool-max-bytes", "Cap on the spans waiting in the spool. Past it the oldest spans are dropped first (counted in claude_transcript_exporter_spool_dropped_spans_total, logged once); 0: no cap.", &cfg.Traces.SpoolMaxBytes)
	app.Flag("limits.usage-api", "Poll the plan's utilisation from Anthropic's OAuth usage endpoint (the one behind Claude Code's /usage; undocumented, may change) with your own Claude Code login (.credentials.json in the Claude dir, or the macOS Keychain): "+
		"sends that login's token to --limits.usage-api.url and nothing else. Off by default.").BoolVar(&cfg.Limits.UsageAPI)
	durationFlag(app, "limits.usage-api.interval", "Time between two polls of the usage endpoint (at least 1m; failures back off further).", &cfg.Limits.UsageAPIInterval)
	app.Flag("limits.usage-api.url", "Base URL of the usage endpoint (https; http only to a loopback address).").Default(cfg.Limits.UsageAPIURL).StringVar(&cfg.Limits.UsageAPIURL)
	fl.log = &promslog.Config{}
	logFlags(app, fl.log)
	return app, fl
}
