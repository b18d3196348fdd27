package daemon

import (
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/exporter/prom"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/metrics"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/session"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/transcript"
)

// stateParts builds what a state file is written from and restored into:
// counters, assembler, mapper (project labels by basename) and reader,
// on a registry of their own, with the clock stopped at now.
func stateParts(cfg *Config, now time.Time) (*prom.Metrics, *session.Assembler, *metrics.Mapper, *reader) {
	reg := prometheus.NewRegistry()
	usage := prom.NewMetrics(reg, time.Minute, func() time.Time { return now })
	mapper := metrics.NewMapper(metrics.Config{Project: metrics.ProjectBasename}, usage)
	asm := session.New(session.Config{}, mapper)
	rd := newReader(cfg, slog.New(slog.DiscardHandler), prom.NewSelf(reg), asm, transcript.Options{MaxLineBytes: cfg.MaxLineBytes}, func() time.Time { return now })
	return usage, asm, mapper, rd
}
