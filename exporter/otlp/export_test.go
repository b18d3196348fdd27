package otlp_test

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	"go.opentelemetry.io/otel/trace"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/exporter/otlp"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/testonly/testbackend"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/spans"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)

// sample is a small tree with every kind of value the mapping produces.
func sample() []spans.Span {
	const sid = "s-1"
	tr := spans.SessionTraceID(sid)
	return []spans.Span{
		{
			TraceID: tr, SpanID: spans.RootSpanID(sid), Name: "session", Start: t0, End: t0.Add(time.Minute),
			Attrs: []spans.Attr{spans.String(spans.AttrConversationID, sid), spans.Int(spans.AttrSessionTurns, 1),
				spans.Float(spans.AttrCostUSD, 1.25)},
			Events: []spans.Event{{Name: spans.EventAPIError, Time: t0.Add(time.Second),
				Attrs: []spans.Attr{spans.String(spans.AttrAPIErrorKind, "rate_limit"), spans.Int(spans.AttrHTTPStatusCode, 429)}}},
		},
		{
			TraceID: tr, SpanID: spans.RequestSpanID(sid, "m1"), ParentSpanID: spans.RootSpanID(sid), Name: "chat claude-x",
			Kind: spans.KindClient, Start: t0.Add(time.Second), End: t0.Add(2 * time.Second),
			Attrs: []spans.Attr{
				spans.Int(spans.AttrUsageOutputTokens, 1<<40), spans.Strings(spans.AttrResponseFinishReasons, "end_turn"),
				spans.Bool(spans.AttrRequestInterrupted, true),
			},
			Links: []spans.Link{{TraceID: spans.TurnTraceID(sid, "p"), SpanID: spans.TurnSpanID(sid, "p")}},
		},
		{
			TraceID: tr, SpanID: spans.ToolSpanID(sid, "t1"), ParentSpanID: spans.RequestSpanID(sid, "m1"), Name: "execute_tool Bash",
			Start: t0.Add(2 * time.Second), End: t0.Add(3 * time.Second), Status: spans.StatusError, StatusMessage: "tool_result is_error",
		},
	}
}

// check compares spans as a receiver saw them with what was sent.
func check(t *testing.T, got []testbackend.Span, want []spans.Span) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d spans, want %d", len(got), len(want))
	}
	by := map[string]testbackend.Span{}
	for _, s := range got {
		by[s.SpanID] = s
	}
	for _, w := range want {
		g, ok := by[w.SpanID.String()]
		if !ok {
			t.Errorf("span %s (%s) missing", w.SpanID, w.Name)
			continue
		}
		parent := ""
		if !w.ParentSpanID.IsZero() {
			parent = w.ParentSpanID.String()
		}
		kind := testbackend.SpanKindInternal
		if w.Kind == spans.KindClient {
			kind = testbackend.SpanKindClient
		}
		if g.TraceID != w.TraceID.String() || g.ParentSpanID != parent || g.Name != w.Name || g.Kind != kind ||
			!g.Start.Equal(w.Start) || !g.End.Equal(w.End) {
			t.Errorf("got %+v\nwant %+v", g, w)
		}
		for _, a := range w.Attrs {
			gv := g.Attrs[a.Key]
			switch a.Value.Type {
			case spans.TypeStringSlice:
				arr, _ := gv.([]any)
				if len(arr) != len(a.Value.Strs) || arr[0] != a.Value.Strs[0] {
					t.Errorf("%s: %v", a.Key, gv)
				}
			default:
				if gv != a.Value.Any() {
					t.Errorf("%s: %#v, want %#v", a.Key, gv, a.Value.Any())
				}
			}
		}
		if w.Status == spans.StatusError && (g.StatusCode != testbackend.StatusError || g.StatusMessage != w.StatusMessage) {
			t.Errorf("%s: status %d %q", w.Name, g.StatusCode, g.StatusMessage)
		}
		if len(g.Events) != len(w.Events) {
			t.Errorf("%s: %d events", w.Name, len(g.Events))
		}
		for i, e := range w.Events {
			if g.Events[i].Name != e.Name || !g.Events[i].Time.Equal(e.Time) || g.Events[i].Attrs[spans.AttrHTTPStatusCode] != int64(429) {
				t.Errorf("event %+v", g.Events[i])
			}
		}
		if g.Resource["service.name"] != "claude-code" || g.Resource["service.version"] != "v9" || g.Resource["host.name"] == nil {
			t.Errorf("resource %v", g.Resource)
		}
		if g.ScopeName != otlp.ScopeName {
			t.Errorf("scope %q", g.ScopeName)
		}
	}
}

func newResource(t *testing.T) *resource.Resource {
	t.Setenv("OTEL_SERVICE_NAME", "")
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "")
	res, err := otlp.NewResource(context.Background(), "v9", true)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestJSONIsOTLPJSON(t *testing.T) {
	var buf bytes.Buffer
	exp := otlp.NewJSON(&buf, newResource(t), "v9")
	in := sample()
	if err := exp.Export(context.Background(), in[:2]); err != nil {
		t.Fatal(err)
	}
	if err := exp.Export(context.Background(), in[2:]); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(buf.String(), "\n"); n != 2 {
		t.Fatalf("%d lines, want one per batch", n)
	}
	// Hex ids (not base64), 64-bit ints as strings, enums as numbers.
	for _, want := range []string{`"traceId":"` + in[0].TraceID.String() + `"`, `"intValue":"1099511627776"`, `"kind":3`, `"code":2`} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("output lacks %s", want)
		}
	}
	got, err := testbackend.ParseSpans(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	check(t, got, in)
}

func TestReadOnly(t *testing.T) {
	s := sample()[1]
	ro := otlp.ReadOnly(&s, newResource(t), instrumentation.Scope{Name: otlp.ScopeName})
	if ro.SpanContext().TraceID() != trace.TraceID(s.TraceID) || ro.Parent().SpanID() != trace.SpanID(s.ParentSpanID) ||
		ro.SpanKind() != trace.SpanKindClient || !ro.StartTime().Equal(s.Start) || len(ro.Attributes()) != 3 ||
		len(ro.Links()) != 1 || !ro.SpanContext().IsSampled() {
		t.Errorf("read-only span %+v", ro)
	}
	root := sample()[0]
	if ro := otlp.ReadOnly(&root, nil, instrumentation.Scope{}); ro.Parent().IsValid() {
		t.Error("root span has a parent")
	}
}

func TestResourceFromEnv(t *testing.T) {
	t.Setenv("OTEL_SERVICE_NAME", "my-claude")
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "team=ml,service.version=override,openinference.project.name=mine")
	res, err := otlp.NewResource(context.Background(), "", true)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, kv := range res.Attributes() {
		got[string(kv.Key)] = kv.Value.String()
	}
	if got["service.name"] != "my-claude" || got["team"] != "ml" || got["service.version"] != "override" || got["host.name"] == "" ||
		got["openinference.project.name"] != "mine" {
		t.Errorf("resource %v", got)
	}
	t.Setenv("OTEL_SERVICE_NAME", "")
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "")
	res, _ = otlp.NewResource(context.Background(), "", false)
	if v, ok := res.Set().Value("openinference.project.name"); !ok || v.AsString() != otlp.DefaultProjectName {
		t.Errorf("openinference.project.name %q, want %q (Phoenix files spans under \"default\" without it)", v.AsString(), otlp.DefaultProjectName)
	}
	for _, kv := range res.Attributes() {
		if kv.Key == "service.version" && kv.Value.String() != "dev" {
			t.Errorf("default version %q", kv.Value.String())
		}
		if kv.Key == "host.name" {
			t.Errorf("host.name %q without identifying attributes", kv.Value.String())
		}
	}
}

// TestGRPCToCollector sends through the SDK exporter to a real
// OpenTelemetry Collector and reads back what it received.
func TestGRPCToCollector(t *testing.T) {
	c := testbackend.StartCollector(t)
	exp, err := otlp.NewGRPC(context.Background(), otlp.GRPCConfig{Endpoint: c.Endpoint(), Insecure: true, Version: "v9"}, newResource(t))
	if err != nil {
		t.Fatal(err)
	}
	q := otlp.NewQueue(exp, otlp.QueueConfig{BatchSize: 2, Endpoint: c.Endpoint()})
	in := sample()
	for _, s := range in {
		if err := q.Enqueue(context.Background(), s); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := q.Close(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := c.WaitForSpans(ctx, len(in))
	if err != nil {
		t.Fatal(err)
	}
	check(t, got, in)
}

// TestGRPCUnreachable: nothing listens; the error says so.
func TestGRPCUnreachable(t *testing.T) {
	endpoint := "127.0.0.1:" + strconv.Itoa(testbackend.FreePort(t))
	exp, err := otlp.NewGRPC(context.Background(), otlp.GRPCConfig{Endpoint: "http://" + endpoint, Version: "v9"}, newResource(t))
	if err != nil {
		t.Fatal(err)
	}
	q := otlp.NewQueue(exp, otlp.QueueConfig{Endpoint: endpoint, InitialBackoff: 10 * time.Millisecond})
	for _, s := range sample() {
		_ = q.Enqueue(context.Background(), s)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	err = q.Close(ctx)
	if err == nil || !strings.Contains(err.Error(), "receiver at "+endpoint+" unreachable after") {
		t.Fatalf("error %v", err)
	}
	var rej *otlp.RejectedError
	if errors.As(err, &rej) {
		t.Error("unreachable reported as rejection")
	}
}
