package testbackend

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Span kinds as numbered in OTLP (Span.Kind).
const (
	SpanKindUnspecified = 0
	SpanKindInternal    = 1
	SpanKindServer      = 2
	SpanKindClient      = 3
	SpanKindProducer    = 4
	SpanKindConsumer    = 5
)

// Status codes as numbered in OTLP (Span.StatusCode).
const (
	StatusUnset = 0
	StatusOK    = 1
	StatusError = 2
)

// Span is one span as received by the collector, flattened with its
// resource and instrumentation scope.
//
// Attribute values (Attrs, Resource, Event.Attrs) are string, int64,
// float64, bool, []byte, []any (arrays) or map[string]any (key-value lists).
type Span struct {
	TraceID      string // 32 lowercase hex digits
	SpanID       string // 16 lowercase hex digits
	ParentSpanID string // empty for a root span
	Name         string
	Kind         int // SpanKind* constants
	Start, End   time.Time
	Attrs        map[string]any
	Resource     map[string]any
	ScopeName    string
	ScopeVersion string
	// StatusCode is StatusUnset, StatusOK or StatusError.
	StatusCode    int
	StatusMessage string
	Events        []Event
	Links         []Link
}

// Link is a span link: the trace and span it points to.
type Link struct {
	TraceID, SpanID string
}

// Event is a span event.
type Event struct {
	Name  string
	Time  time.Time
	Attrs map[string]any
}

// OTLP-JSON shapes written by the collector's file exporter.
type (
	otlpTraces struct {
		ResourceSpans []struct {
			Resource struct {
				Attributes []otlpKeyValue `json:"attributes"`
			} `json:"resource"`
			ScopeSpans []struct {
				Scope struct {
					Name    string `json:"name"`
					Version string `json:"version"`
				} `json:"scope"`
				Spans []otlpSpan `json:"spans"`
			} `json:"scopeSpans"`
		} `json:"resourceSpans"`
	}
	otlpSpan struct {
		TraceID           string         `json:"traceId"`
		SpanID            string         `json:"spanId"`
		ParentSpanID      string         `json:"parentSpanId"`
		Name              string         `json:"name"`
		Kind              json.Number    `json:"kind"`
		StartTimeUnixNano json.Number    `json:"startTimeUnixNano"`
		EndTimeUnixNano   json.Number    `json:"endTimeUnixNano"`
		Attributes        []otlpKeyValue `json:"attributes"`
		Events            []struct {
			TimeUnixNano json.Number    `json:"timeUnixNano"`
			Name         string         `json:"name"`
			Attributes   []otlpKeyValue `json:"attributes"`
		} `json:"events"`
		Status struct {
			Code    json.Number `json:"code"`
			Message string      `json:"message"`
		} `json:"status"`
		Links []struct {
			TraceID string `json:"traceId"`
			SpanID  string `json:"spanId"`
		} `json:"links"`
	}
	otlpKeyValue struct {
		Key   string       `json:"key"`
		Value otlpAnyValue `json:"value"`
	}
	otlpAnyValue struct {
		StringValue *string         `json:"stringValue"`
		IntValue    *json.Number    `json:"intValue"`
		DoubleValue json.RawMessage `json:"doubleValue"`
		BoolValue   *bool           `json:"boolValue"`
		BytesValue  *string         `json:"bytesValue"`
		ArrayValue  *struct {
			Values []otlpAnyValue `json:"values"`
		} `json:"arrayValue"`
		KvlistValue *struct {
			Values []otlpKeyValue `json:"values"`
		} `json:"kvlistValue"`
	}
)

// ParseSpans parses the output of the collector's file exporter: one
// OTLP-JSON traces object per line. An incomplete last line (no newline yet,
// the exporter is still writing it) is ignored.
func ParseSpans(data []byte) ([]Span, error) {
	var spans []Span
	for lineNo := 1; len(data) > 0; lineNo++ {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			break // partial line
		}
		line := bytes.TrimSpace(data[:i])
		data = data[i+1:]
		if len(line) == 0 {
			continue
		}
		got, err := parseTracesLine(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", lineNo, err)
		}
		spans = append(spans, got...)
	}
	return spans, nil
}

func parseTracesLine(line []byte) ([]Span, error) {
	var tr otlpTraces
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	if err := dec.Decode(&tr); err != nil {
		return nil, err
	}
	var spans []Span
	for _, rs := range tr.ResourceSpans {
		resource, err := attrMap(rs.Resource.Attributes)
		if err != nil {
			return nil, fmt.Errorf("resource: %w", err)
		}
		for _, ss := range rs.ScopeSpans {
			for _, in := range ss.Spans {
				s, err := convertSpan(in)
				if err != nil {
					return nil, fmt.Errorf("span %q: %w", in.Name, err)
				}
				s.Resource = resource
				s.ScopeName = ss.Scope.Name
				s.ScopeVersion = ss.Scope.Version
				spans = append(spans, s)
			}
		}
	}
	return spans, nil
}

func convertSpan(in otlpSpan) (Span, error) {
	s := Span{
		TraceID:       in.TraceID,
		SpanID:        in.SpanID,
		ParentSpanID:  in.ParentSpanID,
		Name:          in.Name,
		StatusMessage: in.Status.Message,
	}
	var err error
	if s.Kind, err = enumNumber(in.Kind); err != nil {
		return s, fmt.Errorf("kind: %w", err)
	}
	if s.StatusCode, err = enumNumber(in.Status.Code); err != nil {
		return s, fmt.Errorf("status code: %w", err)
	}
	if s.Start, err = unixNano(in.StartTimeUnixNano); err != nil {
		return s, fmt.Errorf("start: %w", err)
	}
	if s.End, err = unixNano(in.EndTimeUnixNano); err != nil {
		return s, fmt.Errorf("end: %w", err)
	}
	if s.Attrs, err = attrMap(in.Attributes); err != nil {
		return s, fmt.Errorf("attributes: %w", err)
	}
	for _, oe := range in.Events {
		e := Event{Name: oe.Name}
		if e.Time, err = unixNano(oe.TimeUnixNano); err != nil {
			return s, fmt.Errorf("event %q: %w", oe.Name, err)
		}
		if e.Attrs, err = attrMap(oe.Attributes); err != nil {
			return s, fmt.Errorf("event %q: %w", oe.Name, err)
		}
		s.Events = append(s.Events, e)
	}
	for _, l := range in.Links {
		s.Links = append(s.Links, Link{TraceID: l.TraceID, SpanID: l.SpanID})
	}
	return s, nil
}

// enumNumber decodes an enum written as a number (absent means 0).
func enumNumber(n json.Number) (int, error) {
	if n == "" {
		return 0, nil
	}
	v, err := strconv.Atoi(string(n))
	if err != nil {
		return 0, fmt.Errorf("not a number: %q", n)
	}
	return v, nil
}

// unixNano decodes a uint64 nanosecond timestamp written as a string or a
// number; absent or 0 is the zero time.
func unixNano(n json.Number) (time.Time, error) {
	if n == "" || n == "0" {
		return time.Time{}, nil
	}
	ns, err := strconv.ParseInt(string(n), 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("bad timestamp %q: %w", n, err)
	}
	return time.Unix(0, ns), nil
}

func attrMap(kvs []otlpKeyValue) (map[string]any, error) {
	m := make(map[string]any, len(kvs))
	for _, kv := range kvs {
		v, err := kv.Value.value()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", kv.Key, err)
		}
		m[kv.Key] = v
	}
	return m, nil
}

// value converts an OTLP AnyValue; an empty value is nil.
func (v otlpAnyValue) value() (any, error) {
	switch {
	case v.StringValue != nil:
		return *v.StringValue, nil
	case v.IntValue != nil:
		return strconv.ParseInt(v.IntValue.String(), 10, 64)
	case v.DoubleValue != nil:
		// A number, or a string for NaN and infinities.
		return strconv.ParseFloat(strings.Trim(string(v.DoubleValue), `"`), 64)
	case v.BoolValue != nil:
		return *v.BoolValue, nil
	case v.BytesValue != nil:
		return base64.StdEncoding.DecodeString(*v.BytesValue)
	case v.ArrayValue != nil:
		out := make([]any, 0, len(v.ArrayValue.Values))
		for _, e := range v.ArrayValue.Values {
			x, err := e.value()
			if err != nil {
				return nil, err
			}
			out = append(out, x)
		}
		return out, nil
	case v.KvlistValue != nil:
		return attrMap(v.KvlistValue.Values)
	}
	return nil, nil
}
