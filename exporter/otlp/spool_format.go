package otlp

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/spans"
)

// The line format: short keys, hex ids, RFC 3339 times (exact to the
// nanosecond, any year), attribute values tagged with their type.
type (
	spoolSpan struct {
		T  string       `json:"t"`
		S  string       `json:"s"`
		P  string       `json:"p,omitempty"`
		N  string       `json:"n"`
		K  uint8        `json:"k,omitempty"`
		B  time.Time    `json:"b"`
		E  time.Time    `json:"e"`
		A  []spoolAttr  `json:"a,omitempty"`
		St uint8        `json:"st,omitempty"`
		SM string       `json:"sm,omitempty"`
		Ev []spoolEvent `json:"ev,omitempty"`
		L  []spoolLink  `json:"l,omitempty"`
	}
	spoolAttr struct {
		K  string   `json:"k"`
		T  uint8    `json:"t,omitempty"`
		S  string   `json:"s,omitempty"`
		I  int64    `json:"i,omitempty"`
		B  bool     `json:"b,omitempty"`
		SS []string `json:"ss,omitempty"`
	}
	spoolEvent struct {
		N string      `json:"n"`
		T time.Time   `json:"t"`
		A []spoolAttr `json:"a,omitempty"`
	}
	spoolLink struct {
		T string `json:"t"`
		S string `json:"s"`
	}
)

func encodeSpan(sp *spans.Span) ([]byte, error) {
	out := spoolSpan{
		T: sp.TraceID.String(), S: sp.SpanID.String(), N: sp.Name, K: uint8(sp.Kind),
		B: sp.Start, E: sp.End, A: encodeAttrs(sp.Attrs), St: uint8(sp.Status), SM: sp.StatusMessage,
	}
	if !sp.ParentSpanID.IsZero() {
		out.P = sp.ParentSpanID.String()
	}
	for _, e := range sp.Events {
		out.Ev = append(out.Ev, spoolEvent{N: e.Name, T: e.Time, A: encodeAttrs(e.Attrs)})
	}
	for _, l := range sp.Links {
		out.L = append(out.L, spoolLink{T: l.TraceID.String(), S: l.SpanID.String()})
	}
	b, err := json.Marshal(&out)
	if err != nil {
		return nil, fmt.Errorf("encode span %s: %w", sp.SpanID, err)
	}
	return append(b, '\n'), nil
}

func encodeAttrs(as []spans.Attr) []spoolAttr {
	if len(as) == 0 {
		return nil
	}
	out := make([]spoolAttr, len(as))
	for i, a := range as {
		out[i] = spoolAttr{K: a.Key, T: uint8(a.Value.Type)}
		switch a.Value.Type {
		case spans.TypeInt:
			out[i].I = a.Value.Int
		case spans.TypeBool:
			out[i].B = a.Value.Bool
		case spans.TypeStringSlice:
			out[i].SS = a.Value.Strs
		default:
			out[i].S = a.Value.Str
		}
	}
	return out
}

func decodeSpan(line []byte) (spans.Span, error) {
	var in spoolSpan
	if err := json.Unmarshal(line, &in); err != nil {
		return spans.Span{}, err
	}
	sp := spans.Span{Name: in.N, Kind: spans.Kind(in.K), Start: in.B, End: in.E,
		Attrs: decodeAttrs(in.A), Status: spans.StatusCode(in.St), StatusMessage: in.SM}
	var err error
	if sp.TraceID, err = decodeID[spans.TraceID](in.T); err != nil {
		return spans.Span{}, err
	}
	if sp.SpanID, err = decodeID[spans.SpanID](in.S); err != nil {
		return spans.Span{}, err
	}
	if in.P != "" {
		if sp.ParentSpanID, err = decodeID[spans.SpanID](in.P); err != nil {
			return spans.Span{}, err
		}
	}
	if len(in.Ev) > 0 {
		sp.Events = make([]spans.Event, len(in.Ev))
		for i, e := range in.Ev {
			sp.Events[i] = spans.Event{Name: e.N, Time: e.T, Attrs: decodeAttrs(e.A)}
		}
	}
	if len(in.L) > 0 {
		sp.Links = make([]spans.Link, len(in.L))
		for i, l := range in.L {
			if sp.Links[i].TraceID, err = decodeID[spans.TraceID](l.T); err != nil {
				return spans.Span{}, err
			}
			if sp.Links[i].SpanID, err = decodeID[spans.SpanID](l.S); err != nil {
				return spans.Span{}, err
			}
		}
	}
	return sp, nil
}

func decodeAttrs(in []spoolAttr) []spans.Attr {
	if len(in) == 0 {
		return nil
	}
	out := make([]spans.Attr, len(in))
	for i, a := range in {
		out[i] = spans.Attr{Key: a.K, Value: spans.Value{Type: spans.ValueType(a.T), Str: a.S, Int: a.I, Bool: a.B, Strs: a.SS}}
	}
	return out
}

func decodeID[T spans.TraceID | spans.SpanID](s string) (T, error) {
	var id T
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != len(id) {
		return id, fmt.Errorf("bad id %q", s)
	}
	switch p := any(&id).(type) {
	case *spans.TraceID:
		copy(p[:], b)
	case *spans.SpanID:
		copy(p[:], b)
	}
	return id, nil
}
