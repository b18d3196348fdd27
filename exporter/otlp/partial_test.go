package otlp_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/exporter/otlp"
)

// partialReceiver is an OTLP trace service that accepts every request
// but answers with a partial success rejecting one span.
type partialReceiver struct {
	coltracepb.UnimplementedTraceServiceServer
}

func (partialReceiver) Export(context.Context, *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	return &coltracepb.ExportTraceServiceResponse{PartialSuccess: &coltracepb.ExportTracePartialSuccess{
		RejectedSpans: 1, ErrorMessage: "span too large",
	}}, nil
}

// TestPartialSuccess checks that the SDK's partial-success answer comes
// out as a RejectedError (which the queue acknowledges, not retries).
func TestPartialSuccess(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(srv, partialReceiver{})
	go func() { _ = srv.Serve(l) }()
	defer srv.Stop()

	exp, err := otlp.NewGRPC(context.Background(), otlp.GRPCConfig{Endpoint: l.Addr().String(), Insecure: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer exp.Shutdown(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = exp.Export(ctx, sample())
	var rej *otlp.RejectedError
	if !errors.As(err, &rej) || rej.Rejected != 1 || rej.Message != "span too large" {
		t.Fatalf("error %v, want a RejectedError of 1 span", err)
	}
}
