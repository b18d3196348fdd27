package otlp

import (
	"context"
	"fmt"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/spans"
)

// ScopeName is the instrumentation scope of every exported span.
const ScopeName = "github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/spans"

// Exporter sends one batch of spans and returns when the receiver has
// answered: nil means every span was accepted, a *RejectedError that the
// receiver answered but refused some of them (retrying will not help),
// any other error that the batch was not delivered.
type Exporter interface {
	Export(ctx context.Context, batch []spans.Span) error
	// Shutdown releases the exporter's connection.
	Shutdown(ctx context.Context) error
}

// RejectedError reports an OTLP partial success: the receiver took the
// request but rejected Rejected spans of it.
type RejectedError struct {
	Rejected int64
	Message  string
}

func (e *RejectedError) Error() string {
	return fmt.Sprintf("receiver rejected %d spans: %s", e.Rejected, e.Message)
}
