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
	app := kingpin.New(name, "Prometheus metrics and OpenTelemetry traces from Claude Code transcripts (read-only), "+
		"served on http://"+daemon.DefaultListenAddress+"/metrics. Every flag in detail: docs/configuration.md; every metric: docs/metrics.md. "+
		"claude_transcript_exporter_unknown_records_total and unknown_fields_total count the record types and fields "+
		"this version does not know (read and skipped, no count is lost): near 0 until Claude Code adds new ones.")
	app.Version(version.Print(name))
	app.HelpFlag.Short('h')
	app.Flag("claude.dir", "Claude config dir (repeatable); default $CLAUDE_CONFIG_DIR or ~/.claude.").
		Default(defaults...).IsSetByUser(&fl.claudeDirSet).StringsVar(&cfg.ClaudeDirs)
	fl.web = kingpinflag.AddFlags(app, cfg.WebListenAddresses[0])
	app.Flag("web.telemetry-path", "Path under which to expose metrics.").Default(cfg.TelemetryPath).StringVar(&cfg.TelemetryPath)
	app.Flag("web.enable-pprof", "Serve Go runtime profiles under /debug/pprof/.").BoolVar(&cfg.WebEnablePprof)
	app.Flag("oneshot", "Read every transcript once, print the metrics to stdout and exit.").BoolVar(&cfg.Oneshot)
	app.Flag("oneshot.metrics-file", "With --oneshot, write the metrics to this file instead of stdout.").StringVar(&cfg.OneshotMetricsFile)
	app.Flag("oneshot.history-file", "With --oneshot, also write every counter's history (OpenMetrics) here.").StringVar(&cfg.OneshotHistoryFile)
	durationFlag(app, "oneshot.history-step", "The history's finest step (a divisor or multiple of 24h, at least 1m).", &cfg.OneshotHistoryStep)
	durationFlag(app, "oneshot.history-recent", "How much of the history's end has a sample every step (before: daily).", &cfg.OneshotHistoryRecent)
	timeFlag(app, "oneshot.history-end", "End the history here (RFC 3339 or Unix seconds), not at the read's end.", &cfg.OneshotHistoryEnd)
	app.Flag("oneshot.history-job", "The job label of the history's series.").Default(cfg.OneshotHistoryJob).StringVar(&cfg.OneshotHistoryJob)
	app.Flag("oneshot.history-instance", "The instance label of the history's series.").Default(cfg.OneshotHistoryInstance).StringVar(&cfg.OneshotHistoryInstance)
	intFlag(app, "tail.max-line-bytes", "Longest transcript line read; longer ones are counted and skipped.", &cfg.MaxLineBytes)
	intFlag(app, "tail.backfill-group-bytes", "History read between two settles in the backfill (bounds memory).", &cfg.GroupBytes)
	durationFlag(app, "tail.rescan-interval", "How often the Claude dirs are walked while notifications miss some transcripts.", &cfg.RescanInterval)
	durationFlag(app, "tail.watched-rescan-interval", "How often the Claude dirs are walked while notifications cover every transcript.", &cfg.WatchedRescanInterval)
	durationFlag(app, "tail.poll-interval", "How often known files are checked for new lines.", &cfg.PollInterval)
	durationFlag(app, "tail.settle", "How long a request without a stop reason waits for more lines.", &cfg.Settle)
	app.Flag("tail.poll-only", "No file system notifications (NFS, FUSE, Docker Desktop mounts).").BoolVar(&cfg.PollOnly)
	enumFlag(app, "metrics.project-label", "Project label: none, basename (of the working dir) or path.", &cfg.ProjectLabel, "none", "basename", "path")
	app.Flag("metrics.attribution-limit", "Skill, plugin and MCP server names with a label value of their own.").
		Default(strconv.Itoa(cfg.AttributionLimit)).IntVar(&cfg.AttributionLimit)
	app.Flag("pricing.file", "Price table replacing the embedded one, or LiteLLM's price file.").StringVar(&cfg.PricingFile)
	durationFlag(app, "claude.files-interval", "How often tasks, todos, sessions, jobs and prompt history are read.", &cfg.FilesInterval)
	app.Flag("claude.pid-check", "Count a sessions/<pid>.json as running only while its process exists.").Default("true").BoolVar(&cfg.PIDCheck)
	durationFlag(app, "sessions.active-window", "A session with a record this recent counts as active.", &cfg.ActiveWindow)
	durationFlag(app, "sessions.idle-timeout", "A session without records this long is closed.", &cfg.IdleTimeout)
	cfg.StateFile = checkpoint.DefaultPath(os.Getenv, home)
	app.Flag("state.file", "Durable state, so restarts neither recount nor lose anything; empty: none.").
		Default(cfg.StateFile).StringVar(&cfg.StateFile)
	durationFlag(app, "state.flush-interval", "How often the state file is written (also at shutdown).", &cfg.StateFlushInterval)
	app.Flag("state.reset", "Discard the state file at start and count everything again.").BoolVar(&cfg.StateReset)
	durationFlag(app, "shutdown.timeout", "How long shutdown may take to flush spans.", &cfg.ShutdownTimeout)
	enumFlag(app, "metrics.push", "Push every series over OTLP gRPC too: otlp, none or auto.", &cfg.Push.Exporter, "auto", "otlp", "none")
	app.Flag("metrics.push.endpoint", "OTLP gRPC endpoint for metrics (host:port or URL).").StringVar(&cfg.Push.Endpoint)
	app.Flag("metrics.push.insecure", "Push metrics without TLS.").BoolVar(&cfg.Push.Insecure)
	app.Flag("metrics.push.headers", "Headers of the metrics push, k=v,k2=v2.").StringVar(&cfg.Push.Headers)
	app.Flag("metrics.push.interval", "How often metrics are pushed (default: OTEL_METRIC_EXPORT_INTERVAL, else 1m).").DurationVar(&cfg.Push.Interval)
	app.Flag("identity.host", "Put host.name and user.name on pushed metrics.").BoolVar(&cfg.Push.Identity.Host)
	app.Flag("identity.attribute", "An extra resource attribute of pushed metrics, k=v (repeatable).").StringMapVar(&cfg.Push.Identity.Attributes)
	enumFlag(app, "traces.exporter", "Span exporter: otlp, stdout (OTLP JSON), none or auto.", &cfg.Traces.Exporter, "auto", "otlp", "stdout", "none")
	fl.capture = app.Flag("traces.capture", "Text to put on spans: prompts,responses,tools,thinking (default: none).").String()
	intFlag(app, "traces.capture-max-bytes", "Cap on each captured text.", &cfg.Traces.CaptureMaxBytes)
	app.Flag("traces.identifying-attributes", "Put the git branch and host.name on spans.").
		BoolVar(&cfg.Traces.Identifying)
	enumFlag(app, "traces.granularity", "One trace per session, or per turn.", &cfg.Traces.Granularity, "session", "turn")
	durationFlag(app, "traces.since", "Export the spans of sessions active this long before start (0: all).", &cfg.Traces.Since)
	app.Flag("otlp.endpoint", "OTLP gRPC endpoint for spans (host:port or URL).").StringVar(&cfg.Traces.Endpoint)
	app.Flag("otlp.insecure", "Use plaintext gRPC (no TLS).").BoolVar(&cfg.Traces.Insecure)
	durationFlag(app, "otlp.timeout", "Time limit of one export attempt.", &cfg.Traces.Timeout)
	intFlag(app, "otlp.batch-size", "Spans per export request.", &cfg.Traces.BatchSize)
	app.Flag("otlp.headers", "Extra gRPC headers, key=value,key2=value2.").StringVar(&cfg.Traces.Headers)
	app.Flag("otlp.spool-dir", "Where spans wait while the receiver is away (default: beside the state).").
		StringVar(&cfg.Traces.SpoolDir)
	bytesFlag(app, "otlp.spool-max-bytes", "Cap on the spool; past it the oldest spans are dropped (0: no cap).", &cfg.Traces.SpoolMaxBytes)
	app.Flag("limits.usage-api", "Poll the plan's usage from Anthropic with your Claude Code login's token.").BoolVar(&cfg.Limits.UsageAPI)
	durationFlag(app, "limits.usage-api.interval", "Time between two polls of the usage endpoint (at least 1m).", &cfg.Limits.UsageAPIInterval)
	app.Flag("limits.usage-api.url", "Base URL of the usage endpoint (https; http only to loopback).").Default(cfg.Limits.UsageAPIURL).StringVar(&cfg.Limits.UsageAPIURL)
	fl.log = &promslog.Config{}
	logFlags(app, fl.log)
	return app, fl
}
