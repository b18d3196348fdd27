package daemon

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/exporter/prom"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/session"
)

// tracesStage is the span half of the pipeline.
type tracesStage struct {
	sink  session.Sink
	close func(ctx context.Context, timeout time.Duration) error
	// pending reports spans built and not yet acknowledged.
	pending func() int
}

// newTraces builds the span pipeline, or returns nil when traces are off.
func newTraces(_ context.Context, cfg *Config, _ *slog.Logger, _ *prom.Self, _ io.Writer) (*tracesStage, error) {
	switch cfg.Traces.Exporter {
	case "none", "auto":
		return nil, nil
	}
	return nil, fmt.Errorf("--traces.exporter: %s is not built yet", cfg.Traces.Exporter)
}
