package daemon

import (
	"context"
	"log/slog"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/version"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/exporter/prom"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/planusage"
	mplan "github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/planusage"
)

// newPlanUsage builds the opt-in poll of the plan's usage endpoint
// (--limits.usage-api); nil when it is off, and then no plan series is
// registered. blocks gives the active five-hour block for the window's
// size in tokens; nil: no estimate.
func newPlanUsage(cfg *Config, reg prometheus.Registerer, logger *slog.Logger, now func() time.Time, blocks planusage.BlockSource) *planusage.Poller {
	if !cfg.Limits.UsageAPI {
		return nil
	}
	m := prom.NewPlanUsage(reg, now, mplan.MaxAge(cfg.Limits.UsageAPIInterval))
	return planusage.New(planusage.Config{
		URL:       cfg.Limits.UsageAPIURL,
		Interval:  cfg.Limits.UsageAPIInterval,
		Dirs:      cfg.ClaudeDirs,
		Getenv:    os.Getenv,
		Blocks:    blocks,
		Now:       now,
		Logger:    logger,
		UserAgent: "claude-transcript-exporter/" + version.Version,
	}, m)
}

// runPlanUsage polls until ctx is done; the returned channel closes when
// the poller has stopped.
func runPlanUsage(ctx context.Context, p *planusage.Poller) <-chan struct{} {
	done := make(chan struct{})
	if p == nil {
		close(done)
		return done
	}
	go func() {
		defer close(done)
		p.Run(ctx)
	}()
	return done
}
