package otlp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/spans"
)

// JSONExporter writes each batch as one OTLP-JSON ExportTraceServiceRequest
// on a line (the OTLP/HTTP JSON encoding: hex trace and span ids, enums as
// numbers, 64-bit integers as strings), for piping and debugging. A
// successful write is the acknowledgement.
type JSONExporter struct {
	mu      sync.Mutex
	w       io.Writer
	res     []jsonKeyValue
	scope   jsonScope
	scratch []byte
}

// NewJSON returns an exporter writing to w.
func NewJSON(w io.Writer, res *resource.Resource, version string) *JSONExporter {
	e := &JSONExporter{w: w, scope: jsonScope{Name: ScopeName, Version: version}}
	if res != nil {
		for _, kv := range res.Attributes() {
			e.res = append(e.res, jsonKeyValue{Key: string(kv.Key), Value: sdkValue(kv.Value)})
		}
	}
	return e
}

// OTLP-JSON shapes (opentelemetry-proto, JSON mapping).
type (
	jsonRequest struct {
		ResourceSpans []jsonResourceSpans `json:"resourceSpans"`
	}
	jsonResourceSpans struct {
		Resource   jsonResource     `json:"resource"`
		ScopeSpans []jsonScopeSpans `json:"scopeSpans"`
	}
	jsonResource struct {
		Attributes []jsonKeyValue `json:"attributes"`
	}
	jsonScopeSpans struct {
		Scope jsonScope  `json:"scope"`
		Spans []jsonSpan `json:"spans"`
	}
	jsonScope struct {
		Name    string `json:"name"`
		Version string `json:"version,omitempty"`
	}
	jsonSpan struct {
		TraceID           string         `json:"traceId"`
		SpanID            string         `json:"spanId"`
		ParentSpanID      string         `json:"parentSpanId,omitempty"`
		Flags             uint32         `json:"flags,omitempty"`
		Name              string         `json:"name"`
		Kind              int            `json:"kind"`
		StartTimeUnixNano string         `json:"startTimeUnixNano"`
		EndTimeUnixNano   string         `json:"endTimeUnixNano"`
		Attributes        []jsonKeyValue `json:"attributes,omitempty"`
		Events            []jsonEvent    `json:"events,omitempty"`
		Links             []jsonLink     `json:"links,omitempty"`
		Status            jsonStatus     `json:"status"`
	}
	jsonEvent struct {
		TimeUnixNano string         `json:"timeUnixNano"`
		Name         string         `json:"name"`
		Attributes   []jsonKeyValue `json:"attributes,omitempty"`
	}
	jsonLink struct {
		TraceID string `json:"traceId"`
		SpanID  string `json:"spanId"`
	}
	jsonStatus struct {
		Message string `json:"message,omitempty"`
		Code    int    `json:"code,omitempty"`
	}
	jsonKeyValue struct {
		Key   string    `json:"key"`
		Value jsonValue `json:"value"`
	}
	jsonValue struct {
		StringValue *string     `json:"stringValue,omitempty"`
		IntValue    string      `json:"intValue,omitempty"`
		BoolValue   *bool       `json:"boolValue,omitempty"`
		DoubleValue *float64    `json:"doubleValue,omitempty"`
		ArrayValue  *jsonValues `json:"arrayValue,omitempty"`
	}
	jsonValues struct {
		Values []jsonValue `json:"values"`
	}
)

// OTLP enum values.
const (
	otlpKindInternal = 1
	otlpKindClient   = 3
	otlpStatusError  = 2
	otlpFlagSampled  = 1
)

func strValue(s string) jsonValue { return jsonValue{StringValue: &s} }

func spanValue(v spans.Value) jsonValue {
	switch v.Type {
	case spans.TypeInt:
		return jsonValue{IntValue: strconv.FormatInt(v.Int, 10)}
	case spans.TypeBool:
		b := v.Bool
		return jsonValue{BoolValue: &b}
	case spans.TypeStringSlice:
		vals := make([]jsonValue, len(v.Strs))
		for i, s := range v.Strs {
			vals[i] = strValue(s)
		}
		return jsonValue{ArrayValue: &jsonValues{Values: vals}}
	case spans.TypeFloat:
		f := v.Float()
		return jsonValue{DoubleValue: &f}
	}
	return strValue(v.Str)
}

func sdkValue(v attribute.Value) jsonValue {
	switch v.Type() {
	case attribute.BOOL:
		b := v.AsBool()
		return jsonValue{BoolValue: &b}
	case attribute.INT64:
		return jsonValue{IntValue: strconv.FormatInt(v.AsInt64(), 10)}
	case attribute.FLOAT64:
		f := v.AsFloat64()
		return jsonValue{DoubleValue: &f}
	case attribute.STRINGSLICE:
		ss := v.AsStringSlice()
		vals := make([]jsonValue, len(ss))
		for i, s := range ss {
			vals[i] = strValue(s)
		}
		return jsonValue{ArrayValue: &jsonValues{Values: vals}}
	}
	return strValue(v.String())
}

func jsonAttrs(in []spans.Attr) []jsonKeyValue {
	if len(in) == 0 {
		return nil
	}
	out := make([]jsonKeyValue, len(in))
	for i, a := range in {
		out[i] = jsonKeyValue{Key: a.Key, Value: spanValue(a.Value)}
	}
	return out
}

// Export writes the batch as one line.
func (e *JSONExporter) Export(ctx context.Context, batch []spans.Span) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	out := make([]jsonSpan, len(batch))
	for i := range batch {
		s := &batch[i]
		js := jsonSpan{
			TraceID:           s.TraceID.String(),
			SpanID:            s.SpanID.String(),
			Flags:             otlpFlagSampled,
			Name:              s.Name,
			Kind:              otlpKindInternal,
			StartTimeUnixNano: strconv.FormatInt(s.Start.UnixNano(), 10),
			EndTimeUnixNano:   strconv.FormatInt(s.End.UnixNano(), 10),
			Attributes:        jsonAttrs(s.Attrs),
		}
		if s.Kind == spans.KindClient {
			js.Kind = otlpKindClient
		}
		if !s.ParentSpanID.IsZero() {
			js.ParentSpanID = s.ParentSpanID.String()
		}
		if s.Status == spans.StatusError {
			js.Status = jsonStatus{Code: otlpStatusError, Message: s.StatusMessage}
		}
		for _, ev := range s.Events {
			js.Events = append(js.Events, jsonEvent{
				TimeUnixNano: strconv.FormatInt(ev.Time.UnixNano(), 10),
				Name:         ev.Name,
				Attributes:   jsonAttrs(ev.Attrs),
			})
		}
		for _, l := range s.Links {
			js.Links = append(js.Links, jsonLink{TraceID: l.TraceID.String(), SpanID: l.SpanID.String()})
		}
		out[i] = js
	}
	req := jsonRequest{ResourceSpans: []jsonResourceSpans{{
		Resource:   jsonResource{Attributes: e.res},
		ScopeSpans: []jsonScopeSpans{{Scope: e.scope, Spans: out}},
	}}}
	data, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("encode spans: %w", err)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.scratch = append(append(e.scratch[:0], data...), '\n')
	if _, err := e.w.Write(e.scratch); err != nil {
		return fmt.Errorf("write spans: %w", err)
	}
	return nil
}

// Shutdown does nothing: the writer belongs to the caller.
func (e *JSONExporter) Shutdown(context.Context) error { return nil }
