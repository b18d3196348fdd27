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
	"strings"
	"syscall"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/common/promslog"
	"github.com/prometheus/common/version"

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
	home, _ := os.UserHomeDir()
	defaults := daemon.DefaultClaudeDirs(os.Getenv, home)

	app, fl := newApp(&cfg, home, defaults)

	if _, err := app.Parse(args); err != nil {
		fmt.Fprintf(os.Stderr, "%s: error: %s\n", name, err)
		return 2
	}
	cfg.ClaudeDirsDefault = !fl.claudeDirSet
	cfg.ClaudeDirsOrigin = "the default ~/.claude"
	if os.Getenv("CLAUDE_CONFIG_DIR") != "" {
		cfg.ClaudeDirsOrigin = "from $CLAUDE_CONFIG_DIR"
	}
	cfg.WebListenAddresses = *fl.web.WebListenAddresses
	cfg.WebConfigFile = *fl.web.WebConfigFile
	cfg.WebSystemdSocket = *fl.web.WebSystemdSocket
	if *fl.capture != "" {
		for _, k := range strings.Split(*fl.capture, ",") {
			if k = strings.TrimSpace(k); k != "" {
				cfg.Traces.Capture = append(cfg.Traces.Capture, k)
			}
		}
	}
	fl.log.Writer = os.Stderr
	logger := promslog.New(fl.log)
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
