package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	_ "time/tzdata" // limit notices name IANA zones: resolve them on machines without a zone database

	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/exporter/prom"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/checkpoint"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/discover"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/planusage"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/safefile"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/limits"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/metrics"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/session"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/transcript"
)

// Run builds every stage and runs the pipeline until ctx is done (or, with
// Oneshot, until every file has been read once):
//
//	discover → tail → decode → assemble → {spans → OTLP, observations → Prometheus}
//
// Stdout receives the exposition of a one-shot run.
func Run(ctx context.Context, cfg Config, logger *slog.Logger, stdout io.Writer) error {
	if err := cfg.Validate(); err != nil {
		return &StartError{err}
	}
	now := time.Now
	if cfg.Now != nil {
		now = cfg.Now
	}
	if !cfg.Oneshot && cfg.StateFile != "" {
		// One exporter per state file (and so per spool beside it): two
		// would overwrite each other's counters.
		release, why, err := lockState(cfg.StateFile)
		if err != nil {
			return err
		}
		if release == nil {
			logger.Warn("state file not locked: a second exporter on it would not be refused", "file", cfg.StateFile, "reason", why)
		} else {
			defer release()
		}
	}
	for _, d := range cfg.ClaudeDirs {
		if _, err := os.Stat(d); err != nil {
			logger.Warn("claude dir not found; waiting for it to appear", "dir", d)
		}
	}

	// Metrics: injected registries, never the default one. reg has every
	// family; regs.own every family but the usage series, which /metrics
	// writes itself (exposition.go). Every collector but those is
	// registered in both.
	regs := newRegistries()
	reg := regs.all
	if !cfg.Oneshot {
		regs.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	usage := prom.NewMetrics(reg, cfg.ActiveWindow, now)
	usage.RegisterUnwritten(regs.own)
	self := prom.NewSelf(regs)
	prices, pricesFrom := metrics.DefaultPrices(), "builtin"
	if cfg.PricingFile != "" {
		b, err := safefile.ReadFile(cfg.PricingFile, MaxPricingBytes)
		if err != nil {
			return fmt.Errorf("--pricing.file: %w", err)
		}
		f, err := metrics.LoadPricingFile(b)
		if err != nil {
			return fmt.Errorf("--pricing.file: %w", err)
		}
		prices, pricesFrom = f.Prices, f.Source
		if f.Source == "builtin+litellm" {
			logger.Info("--pricing.file is LiteLLM's price file: it prices the models the embedded table lacks",
				"file", cfg.PricingFile, "entries", f.LiteLLM, "skipped_not_token_priced", f.Skipped)
		}
		if prices.Version < 2 {
			logger.Warn("--pricing.file is in the version 1 format: no dates, no fast, regional or long-context prices (see docs/pricing.md)", "file", cfg.PricingFile)
		}
	}
	self.PricingInfo.WithLabelValues(prices.AsOf, pricesFrom, strconv.Itoa(prices.Version)).Set(1)
	projectLabel, _ := metrics.ParseProjectLabel(cfg.ProjectLabel)
	// Spans name projects as the metrics do; the mapper is made after the
	// traces (its exemplars name their spans) and before any record.
	var mapper *metrics.Mapper
	cfg.projectOf = func(cwd string) string { return mapper.Project(cwd) }

	// Traces.
	traces, err := newTraces(ctx, &cfg, prices, logger.With("component", "traces"), self, stdout)
	if err != nil {
		return err
	}
	mcfg := metrics.Config{Project: projectLabel, Prices: prices, MaxAttribution: cfg.AttributionLimit,
		LimitZones: limits.Zones{Load: (&zoneCache{}).load, Local: time.Local}}
	if traces != nil {
		// tokens_total and cost_usd_total name the request spans sent.
		mcfg.Exemplar = traces.exemplar
	}
	mapper = metrics.NewMapper(mcfg, usage)
	claudeFiles := newFilesStage(&cfg, regs, mapper)
	// The plan's usage endpoint, opt-in. Its window size estimate reads
	// the active five-hour block from the usage metrics (BlockSource, and
	// BlockEnder for the alignment check).
	var planBlocks planusage.BlockSource = usage
	plan := newPlanUsage(&cfg, regs, logger.With("component", "planusage"), now, planBlocks)
	// Spans first: the metrics name a request's span once it is sent.
	var sinks []session.Sink
	if traces != nil {
		sinks = append(sinks, traces.sink)
	}
	sinks = append(sinks, mapper)

	// Decode and assemble.
	decOpts := transcript.Options{
		MaxLineBytes: cfg.MaxLineBytes,
		KeepText:     cfg.Traces.Captures(CapturePrompts) || cfg.Traces.Captures(CaptureResponses),
		KeepThinking: cfg.Traces.Captures(CaptureThinking),
		KeepToolIO:   cfg.Traces.Captures(CaptureTools),
		MaxKeepBytes: cfg.Traces.CaptureMaxBytes,
	}
	sinkQ := newSinkQueue(session.Fanout(sinks))
	asm := session.New(session.Config{Settle: cfg.Settle, IdleTimeout: cfg.IdleTimeout}, sinkQ)
	rd := newReader(&cfg, logger.With("component", "reader"), self, asm, decOpts, now)
	rd.sinks = sinkQ
	stats := &statsPublisher{self: self}

	if traces != nil {
		traces.window.begin(cfg.Traces.Since, now())
		rd.window = traces.window
	}

	if cfg.Oneshot {
		limit := startOneshotLimit(os.Getenv, logger.With("component", "runtime"))
		defer limit.stop()
		return runOneshot(ctx, oneshotRun{cfg: &cfg, logger: logger, stdout: stdout, now: now, reg: reg, own: regs.own, usage: usage,
			self: self, traces: traces, claudeFiles: claudeFiles, plan: plan, asm: asm, rd: rd, stats: stats})
	}

	// Bind the web listeners now: a busy address fails at start, before
	// the state is loaded and the history read.
	listeners, err := listen(&cfg)
	if err != nil {
		return err
	}
	// A small history's daemon stays near 64 MiB resident (memlimit.go).
	limit := startSoftLimit(os.Getenv, logger.With("component", "runtime"))
	defer limit.stop()

	// Durable state: counters, dedup state and file watermarks from the
	// last run, so that nothing is counted twice and nothing is lost.
	st := &stateKeeper{cfg: &cfg, mapper: mapper, log: logger.With("component", "state"), self: self, limit: limit}
	st.since(now())
	if cfg.StateFile != "" {
		if cfg.StateReset {
			if err := checkpoint.Remove(cfg.StateFile); err != nil {
				return err
			}
			logger.Info("state reset", "file", cfg.StateFile)
		}
		saved, err := checkpoint.Load(cfg.StateFile)
		if errors.Is(err, fs.ErrPermission) {
			return &StartError{err} // the user's to fix: exit 2
		} else if err != nil {
			return err
		}
		if saved != nil {
			err := restoreState(saved, usage, asm, mapper, traces, rd, now())
			saved.Close()
			if err != nil {
				return fmt.Errorf("restore state file %s: %w (start with %s to discard it)", cfg.StateFile, err, checkpoint.ResetFlag)
			}
			st.since(saved.WrittenAt)
			if !slices.Equal(saved.Roots, cfg.ClaudeDirs) {
				logger.Warn("state file was written for other claude dirs; its counters carry on", "file", cfg.StateFile,
					"saved", strings.Join(saved.Roots, ","), "now", strings.Join(cfg.ClaudeDirs, ","))
			}
			logger.Info("state restored", "file", cfg.StateFile, "files", len(saved.Files), "written_at", saved.WrittenAt)
		}
	}

	// Metrics push: the same series as /metrics, over OTLP, from the
	// restored counters on (a push before the restore would look like a
	// counter reset).
	// Both serve the usage series only once the backfill is done.
	var ready atomic.Bool
	push, err := newPush(ctx, &cfg, readyGatherer{reg, &ready}, logger.With("component", "push"), os.Getenv)
	if err != nil {
		return err
	}

	// Serve.
	srv, srvErr := serve(&cfg, logger.With("component", "web"), regs, usage, &ready, listeners)
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()

	// Discover: fsnotify on directories as a hint, the rescan as truth.
	watcher, err := discover.New(discover.Config{
		Roots:                 cfg.ClaudeDirs,
		Match:                 session.IsTranscriptName,
		RescanInterval:        cfg.RescanInterval,
		WatchedRescanInterval: cfg.WatchedRescanInterval,
		PollOnly:              cfg.PollOnly,
		Logger:                logger.With("component", "discover"),
		Now:                   now,
	})
	if err != nil {
		return fmt.Errorf("watch claude dirs: %w", err)
	}
	defer watcher.Close()
	fl := &follower{cfg: &cfg, log: logger.With("component", "follow"), rd: rd, w: watcher, asm: asm,
		usage: usage, traces: traces, stats: stats, keep: st}

	// Backfill: every file present at start, then ready.
	// What was on disk at start is complete: settle it as the read goes
	// on and at its end (a request being streamed right now may be
	// counted before its last line; it then grows by the difference).
	start := now()
	// The code that built the stages has run: its pages need not stay
	// resident (codepages_linux.go). Again once the backfill's has run.
	releaseCodePages()
	rd.between = func(reading string) { asm.FlushHistory(now(), reading) }
	limit.backfill(true)
	fl.rescan()
	rd.between = nil
	asm.FlushRead(now())
	limit.backfill(false)
	if traces != nil {
		traces.window.end()
	}
	claudeFiles.refresh(now(), false)
	stats.publish(asm.Stats())
	self.BackfillDone.Set(1)
	self.BackfillSeconds.Set(now().Sub(start).Seconds())
	rd.live = true
	usage.BlocksReady()
	ready.Store(true)
	logger.Info("backfill done", "files", len(rd.files), "lines", rd.linesN, "seconds", now().Sub(start).Seconds())
	// The backfill's garbage (decode batches, settled history) is not
	// collected by an idle daemon for minutes: collect it now and return
	// the pages, before the first snapshot adds its own (a large snapshot
	// returns its garbage after its write: stateKeeper.save).
	debug.FreeOSMemory()
	releaseCodePages()
	st.save(usage, asm, rd, traces, now(), true)
	fl.nextFlush = now().Add(cfg.StateFlushInterval)
	// The plan's usage poll runs beside the pipeline (a request may take
	// seconds), from the end of the backfill on.
	planCtx, stopPlan := context.WithCancel(ctx)
	planDone := runPlanUsage(planCtx, plan)
	defer func() { stopPlan(); <-planDone }()

	// Follow until told to stop.
	// The tick drives settling, idle timeouts, polling and state writes;
	// fsnotify hints and rescan requests wake the loop on their own.
	tick := time.NewTicker(min(cfg.PollInterval, time.Second))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			logger.Info("shutting down")
			asm.Flush(now(), false)
			if traces != nil {
				if err := traces.close(context.Background(), cfg.ShutdownTimeout); err != nil {
					logger.Warn("span flush at shutdown incomplete", "err", err)
				}
			}
			st.wait()
			st.save(usage, asm, rd, traces, now(), true)
			if push != nil {
				if err := push.close(cfg.ShutdownTimeout); err != nil {
					logger.Warn("metrics push at shutdown incomplete", "err", err)
				}
			}
			return nil
		case err := <-srvErr:
			return err
		case ev := <-watcher.Events():
			fl.hint(ev)
		case <-watcher.RescanNeeded():
			fl.rescan()
		case <-tick.C:
		}
		fl.Step(now())
		claudeFiles.refresh(now(), false)
	}
}

// statsPublisher moves the assembler's cumulative stats into counters.
type statsPublisher struct {
	self *prom.Self
	last session.Stats
}

func (p *statsPublisher) publish(st session.Stats) {
	p.self.DuplicateLines.Add(float64(st.DuplicateRequestLines - p.last.DuplicateRequestLines))
	p.self.ClampedTimes.Add(float64(st.ClampedTimes - p.last.ClampedTimes))
	p.self.AssistantWithoutID.Add(float64(st.NoMessageID - p.last.NoMessageID))
	p.self.OrphanToolResults.Set(float64(st.OrphanToolResults))
	p.last = st
}
