// Command claude-transcript-exporter turns Claude Code's local session
// transcripts into Prometheus metrics and OpenTelemetry traces. This file
// is wiring only: flags → config → daemon.Run.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"regexp"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/common/promslog"
	"github.com/prometheus/common/version"
	"github.com/prometheus/exporter-toolkit/web/kingpinflag"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/checkpoint"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/daemon"
)

const name = "claude-transcript-exporter"

func main() {
	if os.Getenv("GOGC") == "" {
		// Most of the heap is the dedup index, which holds no pointers
		// and costs the collector little: collecting at half the default
		// growth trades ~8 % CPU in a backfill for ~15 % less peak memory
		// (GOGC in the environment still decides).
		debug.SetGCPercent(50)
	}
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	versionFromBuildInfo(debug.ReadBuildInfo())
	cfg := daemon.NewConfig()
	var claudeDirSet bool
	home, _ := os.UserHomeDir()
	defaults := daemon.DefaultClaudeDirs(os.Getenv, home)

	app := kingpin.New(name, "Prometheus metrics and OpenTelemetry traces from Claude Code transcripts (read-only). "+
		"Serves http://127.0.0.1:9812/metrics; every metric is described in docs/metrics.md. "+
		"Health: claude_transcript_exporter_unknown_records_total{type} and unknown_fields_total count transcript record types and fields "+
		"this version does not know (read and skipped, no count is lost); they stay near 0 until Claude Code adds new ones.")
	app.Version(version.Print(name))
	app.HelpFlag.Short('h')
	app.Flag("claude.dir", "Claude config dir to read (repeatable). Default: $CLAUDE_CONFIG_DIR (comma-separated) or ~/.claude, plus ~/.config/claude when it exists.").
		Default(defaults...).IsSetByUser(&claudeDirSet).StringsVar(&cfg.ClaudeDirs)
	webFlags := kingpinflag.AddFlags(app, cfg.WebListenAddresses[0])
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
	durationFlag(app, "tail.rescan-interval", "How often the Claude dirs are walked for new and changed files when notifications do not cover them all (--tail.poll-only, watch limit reached, transcripts in unwatched dirs): then how soon new files are found.", &cfg.RescanInterval)
	durationFlag(app, "tail.watched-rescan-interval", "How often the Claude dirs are walked while notifications cover every transcript (the safety net; lost notifications ask for a walk at once). Never shorter than --tail.rescan-interval.", &cfg.WatchedRescanInterval)
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
	capture := app.Flag("traces.capture", "Content to put on spans, comma-separated subset of prompts,responses,tools,thinking. Default: none (no text leaves the machine).").String()
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
	logCfg := &promslog.Config{}
	logFlags(app, logCfg)

	if _, err := app.Parse(args); err != nil {
		fmt.Fprintf(os.Stderr, "%s: error: %s\n", name, err)
		return 2
	}
	cfg.ClaudeDirsDefault = !claudeDirSet
	cfg.ClaudeDirsOrigin = "the default ~/.claude"
	if os.Getenv("CLAUDE_CONFIG_DIR") != "" {
		cfg.ClaudeDirsOrigin = "from $CLAUDE_CONFIG_DIR"
	}
	cfg.WebListenAddresses = *webFlags.WebListenAddresses
	cfg.WebConfigFile = *webFlags.WebConfigFile
	cfg.WebSystemdSocket = *webFlags.WebSystemdSocket
	if *capture != "" {
		for _, k := range strings.Split(*capture, ",") {
			if k = strings.TrimSpace(k); k != "" {
				cfg.Traces.Capture = append(cfg.Traces.Capture, k)
			}
		}
	}
	logCfg.Writer = os.Stderr
	logger := promslog.New(logCfg)
	if err := cfg.Validate(); err != nil {
		fmt.Fprintf(os.Stderr, "%s: error: %s\n", name, err)
		return 2
	}
	logger.Info("starting", "version", version.Info(), "claude_dirs", strings.Join(cfg.ClaudeDirs, ","))
	if cfg.Oneshot {
		if ignored := oneshotIgnores(flagsSet(app, args)); len(ignored) > 0 {
			logger.Warn("--oneshot keeps no state and serves nothing: these flags do nothing with it", "flags", strings.Join(ignored, ","))
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := daemon.Run(ctx, cfg, logger, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "%s: error: %s\n", name, err)
		var start *daemon.StartError
		if errors.As(err, &start) {
			return 2
		}
		return 1
	}
	return 0
}

// pseudoVersion matches a Go pseudo-version's time and revision
// (v0.0.0-20261125193000-abcdef123456).
var pseudoVersion = regexp.MustCompile(`-(?:0\.)?(\d{14})-([0-9a-f]{12})(?:\+incompatible)?$`)

// versionFromBuildInfo fills the version, revision and build date that
// make build sets with -ldflags from the module's build information when
// they are empty (go build, go install ...@latest): the module version,
// and the VCS revision and time Go records. A build with no version at
// all (go build in a clone) is "devel": build_info never has an empty
// version label, which Thanos receive refuses.
func versionFromBuildInfo(bi *debug.BuildInfo, ok bool) {
	defer func() {
		if version.Version == "" {
			version.Version = "devel"
		}
	}()
	if !ok || bi == nil {
		return
	}
	if version.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		version.Version = bi.Main.Version
		// go install ...@<commit> gives a pseudo-version that holds the
		// commit's time and revision, and no vcs.* settings.
		if m := pseudoVersion.FindStringSubmatch(bi.Main.Version); m != nil {
			if t, err := time.Parse("20060102150405", m[1]); err == nil && version.BuildDate == "" {
				version.BuildDate = t.Format(time.RFC3339)
			}
			if version.Revision == "" {
				version.Revision = m[2]
			}
		}
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			if version.Revision == "" {
				version.Revision = s.Value
				if len(version.Revision) > 12 {
					version.Revision = version.Revision[:12]
				}
			}
		case "vcs.time":
			if version.BuildDate == "" {
				version.BuildDate = s.Value
			}
		case "vcs.modified":
			if s.Value == "true" && version.Revision != "" && !strings.HasSuffix(version.Revision, "-dirty") {
				version.Revision += "-dirty"
			}
		}
	}
}

// flagsSet returns the names of the flags given on the command line.
func flagsSet(app *kingpin.Application, args []string) []string {
	ctx, err := app.ParseContext(args)
	if err != nil {
		return nil
	}
	var out []string
	for _, el := range ctx.Elements {
		if f, ok := el.Clause.(*kingpin.FlagClause); ok {
			out = append(out, f.Model().Name)
		}
	}
	return out
}

// oneshotIgnores returns the flags among set that a one-shot run does not
// use: it neither reads nor writes the state file (a one-shot counts
// everything from the transcripts), keeps no spool, and serves no HTTP.
func oneshotIgnores(set []string) []string {
	var out []string
	for _, n := range set {
		if strings.HasPrefix(n, "state.") || strings.HasPrefix(n, "web.") || strings.HasPrefix(n, "otlp.spool-") ||
			n == "sessions.active-window" || n == "claude.files-interval" {
			if !slices.Contains(out, "--"+n) {
				out = append(out, "--"+n)
			}
		}
	}
	return out
}
