package otlp

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/spans"
)

// GRPCConfig configures the OTLP gRPC exporter. Zero values leave the
// setting to the SDK, which reads OTEL_EXPORTER_OTLP_TRACES_* and
// OTEL_EXPORTER_OTLP_* (endpoint, headers, insecure, certificates,
// compression, timeout) and defaults to localhost:4317 with TLS.
type GRPCConfig struct {
	// Endpoint is host:port or a URL (http:// means plaintext).
	Endpoint string
	// Insecure forces plaintext gRPC when true.
	Insecure bool
	// Headers, when not nil, replace the environment's headers.
	Headers map[string]string
	// Version is the exporter's version, the instrumentation scope's.
	Version string
}

// GRPCExporter sends batches with the SDK's otlptracegrpc exporter. The
// SDK's own retry is off: the Queue retries, so that it knows which spans
// were acknowledged.
type GRPCExporter struct {
	exp   *otlptrace.Exporter
	res   *resource.Resource
	scope instrumentation.Scope
}

// NewGRPC returns an exporter to the configured receiver. It does not
// connect: the first Export does.
func NewGRPC(ctx context.Context, cfg GRPCConfig, res *resource.Resource) (*GRPCExporter, error) {
	opts := []otlptracegrpc.Option{otlptracegrpc.WithRetry(otlptracegrpc.RetryConfig{Enabled: false})}
	if cfg.Endpoint != "" {
		if strings.Contains(cfg.Endpoint, "://") {
			opts = append(opts, otlptracegrpc.WithEndpointURL(cfg.Endpoint))
		} else {
			opts = append(opts, otlptracegrpc.WithEndpoint(cfg.Endpoint))
		}
	}
	if cfg.Insecure {
		opts = append(opts, otlptracegrpc.WithInsecure())
	}
	if cfg.Headers != nil {
		opts = append(opts, otlptracegrpc.WithHeaders(cfg.Headers))
	}
	exp, err := otlptracegrpc.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("create otlp exporter: %w", err)
	}
	return &GRPCExporter{exp: exp, res: res, scope: instrumentation.Scope{Name: ScopeName, Version: cfg.Version}}, nil
}

// Export sends one batch and waits for the receiver's answer.
func (e *GRPCExporter) Export(ctx context.Context, batch []spans.Span) error {
	ro := make([]sdktrace.ReadOnlySpan, len(batch))
	for i := range batch {
		ro[i] = ReadOnly(&batch[i], e.res, e.scope)
	}
	err := e.exp.ExportSpans(ctx, ro)
	if err == nil {
		return nil
	}
	if rej, ok := partialSuccess(err); ok {
		return rej
	}
	return err
}

// Shutdown closes the connection.
func (e *GRPCExporter) Shutdown(ctx context.Context) error { return e.exp.Shutdown(ctx) }

// partialSuccess recognises the SDK's partial-success error (an internal
// type with the fields ErrorMessage and RejectedItems) when it is the
// only thing wrong: the receiver answered OK but rejected some spans.
func partialSuccess(err error) (*RejectedError, bool) {
	var target interface {
		error
		As(any) bool
		Is(error) bool
	}
	if !errors.As(err, &target) {
		return nil, false
	}
	v := reflect.ValueOf(target)
	if v.Kind() != reflect.Struct {
		return nil, false
	}
	msg, n := v.FieldByName("ErrorMessage"), v.FieldByName("RejectedItems")
	if !msg.IsValid() || !n.IsValid() || msg.Kind() != reflect.String || n.Kind() != reflect.Int64 {
		return nil, false
	}
	// A transport error joined to it means the request failed as well.
	if strings.Contains(err.Error(), "rpc error:") {
		return nil, false
	}
	return &RejectedError{Rejected: n.Int(), Message: msg.String()}, true
}

// ReadOnly converts a span to the SDK's read-only form, for SDK exporters.
func ReadOnly(s *spans.Span, res *resource.Resource, scope instrumentation.Scope) sdktrace.ReadOnlySpan {
	stub := tracetest.SpanStub{
		Name: s.Name,
		SpanContext: trace.NewSpanContext(trace.SpanContextConfig{
			TraceID:    trace.TraceID(s.TraceID),
			SpanID:     trace.SpanID(s.SpanID),
			TraceFlags: trace.FlagsSampled,
		}),
		SpanKind:             trace.SpanKindInternal,
		StartTime:            s.Start,
		EndTime:              s.End,
		Attributes:           attrs(s.Attrs),
		Resource:             res,
		InstrumentationScope: scope,
	}
	if s.Kind == spans.KindClient {
		stub.SpanKind = trace.SpanKindClient
	}
	if !s.ParentSpanID.IsZero() {
		stub.Parent = trace.NewSpanContext(trace.SpanContextConfig{
			TraceID:    trace.TraceID(s.TraceID),
			SpanID:     trace.SpanID(s.ParentSpanID),
			TraceFlags: trace.FlagsSampled,
		})
	}
	if s.Status == spans.StatusError {
		stub.Status = sdktrace.Status{Code: codes.Error, Description: s.StatusMessage}
	}
	if len(s.Events) > 0 {
		stub.Events = make([]sdktrace.Event, len(s.Events))
		for i, e := range s.Events {
			stub.Events[i] = sdktrace.Event{Name: e.Name, Time: e.Time, Attributes: attrs(e.Attrs)}
		}
	}
	for _, l := range s.Links {
		stub.Links = append(stub.Links, sdktrace.Link{SpanContext: trace.NewSpanContext(trace.SpanContextConfig{
			TraceID:    trace.TraceID(l.TraceID),
			SpanID:     trace.SpanID(l.SpanID),
			TraceFlags: trace.FlagsSampled,
		})})
	}
	return stub.Snapshot()
}

func attrs(in []spans.Attr) []attribute.KeyValue {
	if len(in) == 0 {
		return nil
	}
	out := make([]attribute.KeyValue, len(in))
	for i, a := range in {
		switch a.Value.Type {
		case spans.TypeInt:
			out[i] = attribute.Int64(a.Key, a.Value.Int)
		case spans.TypeBool:
			out[i] = attribute.Bool(a.Key, a.Value.Bool)
		case spans.TypeStringSlice:
			out[i] = attribute.StringSlice(a.Key, a.Value.Strs)
		case spans.TypeFloat:
			out[i] = attribute.Float64(a.Key, a.Value.Float())
		default:
			out[i] = attribute.String(a.Key, a.Value.Str)
		}
	}
	return out
}
