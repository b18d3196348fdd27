package spans

import (
	"encoding/hex"
	"strconv"
	"time"
)

// TraceID is a 16-byte trace id.
type TraceID [16]byte

// SpanID is an 8-byte span id. The zero SpanID means "no parent".
type SpanID [8]byte

// String returns the id as 32 lowercase hex digits.
func (t TraceID) String() string { return hex.EncodeToString(t[:]) }

// IsZero reports whether every byte is zero.
func (t TraceID) IsZero() bool { return t == TraceID{} }

// String returns the id as 16 lowercase hex digits.
func (s SpanID) String() string { return hex.EncodeToString(s[:]) }

// IsZero reports whether every byte is zero.
func (s SpanID) IsZero() bool { return s == SpanID{} }

// Kind is the span kind. Only the two kinds this mapping produces exist.
type Kind uint8

// Span kinds.
const (
	KindInternal Kind = iota
	KindClient
)

func (k Kind) String() string {
	if k == KindClient {
		return "client"
	}
	return "internal"
}

// StatusCode is the span status. Spans are never marked OK: unset means
// nothing went wrong that the transcript recorded.
type StatusCode uint8

// Status codes.
const (
	StatusUnset StatusCode = iota
	StatusError
)

func (c StatusCode) String() string {
	if c == StatusError {
		return "error"
	}
	return "unset"
}

// ValueType says which field of a Value is set.
type ValueType uint8

// Value types.
const (
	TypeString ValueType = iota
	TypeInt
	TypeBool
	TypeStringSlice
	// TypeFloat keeps the number in Str, in its shortest decimal form, so
	// that every encoder of a Value round-trips it as a string.
	TypeFloat
)

// Value is a typed attribute value.
type Value struct {
	Type ValueType
	Str  string
	Int  int64
	Bool bool
	Strs []string
}

// Float returns a TypeFloat value as a number (0 for any other type).
func (v Value) Float() float64 {
	if v.Type != TypeFloat {
		return 0
	}
	f, _ := strconv.ParseFloat(v.Str, 64)
	return f
}

// Any returns the value as a Go value: string, int64, bool, float64 or
// []string.
func (v Value) Any() any {
	switch v.Type {
	case TypeFloat:
		return v.Float()
	case TypeInt:
		return v.Int
	case TypeBool:
		return v.Bool
	case TypeStringSlice:
		return v.Strs
	}
	return v.Str
}

// Attr is one attribute.
type Attr struct {
	Key   string
	Value Value
}

// String, Int, Bool and Strings build attributes.
func String(k, v string) Attr    { return Attr{Key: k, Value: Value{Type: TypeString, Str: v}} }
func Int(k string, v int64) Attr { return Attr{Key: k, Value: Value{Type: TypeInt, Int: v}} }
func Bool(k string, v bool) Attr { return Attr{Key: k, Value: Value{Type: TypeBool, Bool: v}} }

// Float builds a floating-point attribute.
func Float(k string, v float64) Attr {
	return Attr{Key: k, Value: Value{Type: TypeFloat, Str: strconv.FormatFloat(v, 'g', -1, 64)}}
}
func Strings(k string, v ...string) Attr {
	return Attr{Key: k, Value: Value{Type: TypeStringSlice, Strs: v}}
}

// Event is a timestamped annotation on a span.
type Event struct {
	Name  string
	Time  time.Time
	Attrs []Attr
}

// Link points at a span of another trace (turn granularity: each turn
// links to its session's root span).
type Link struct {
	TraceID TraceID
	SpanID  SpanID
}

// Span is one finished span. The emit callback owns it: the Builder keeps
// no reference to its slices.
type Span struct {
	TraceID      TraceID
	SpanID       SpanID
	ParentSpanID SpanID // zero for a root span
	Name         string
	Kind         Kind
	Start, End   time.Time
	Attrs        []Attr
	Status       StatusCode
	// StatusMessage describes an error status.
	StatusMessage string
	Events        []Event
	Links         []Link
}

// Attr returns the value of the attribute k and whether it is set.
func (s *Span) Attr(k string) (Value, bool) {
	for _, a := range s.Attrs {
		if a.Key == k {
			return a.Value, true
		}
	}
	return Value{}, false
}
