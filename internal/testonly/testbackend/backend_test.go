package testbackend

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

func TestRepoLayout(t *testing.T) {
	root := RepoRoot(t)
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("RepoRoot %s: %v", root, err)
	}
	if _, err := os.Stat(filepath.Join(root, "tools", "otelcol", "build.sh")); err != nil {
		t.Errorf("RepoRoot %s has no tools/otelcol/build.sh: %v", root, err)
	}
	if want := filepath.Join(root, "testdata", "corpus"); CorpusDir(t) != want {
		t.Errorf("CorpusDir = %s, want %s (the corpus is part of the repository)", CorpusDir(t), want)
	}
	for _, tree := range CorpusTrees(t) {
		if fi, err := os.Stat(tree); err != nil || !fi.IsDir() {
			t.Errorf("corpus tree %s is not a directory: %v", tree, err)
		}
	}
}

func TestSharedCorpusIsOptionalAndFollowsTheEnvironment(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(SharedDirEnv, dir)
	if got, ok := SharedCorpus(t); ok || got != filepath.Join(dir, "corpus", "real") {
		t.Errorf("SharedCorpus with an empty %s = %s, %v; want %s, false", SharedDirEnv, got, ok, filepath.Join(dir, "corpus", "real"))
	}
	if got := AllCorpusTrees(t); !reflect.DeepEqual(got, CorpusTrees(t)) {
		t.Errorf("AllCorpusTrees without an extra corpus = %v, want the in-repo trees", got)
	}
	if err := os.MkdirAll(filepath.Join(dir, "corpus", "real", "tree"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got, ok := SharedCorpus(t); !ok || got != filepath.Join(dir, "corpus", "real") {
		t.Errorf("SharedCorpus = %s, %v; want %s, true", got, ok, filepath.Join(dir, "corpus", "real"))
	}
	all := AllCorpusTrees(t)
	if last := all[len(all)-1]; last != filepath.Join(dir, "corpus", "real", "tree") {
		t.Errorf("AllCorpusTrees ends with %s, want the extra tree", last)
	}
}

func TestFreePort(t *testing.T) {
	port := FreePort(t)
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatalf("listen on FreePort %d: %v", port, err)
	}
	l.Close()
}

// metricsServer serves a fixed exposition plus a counter that grows by one
// per scrape.
func metricsServer(t *testing.T) *httptest.Server {
	t.Helper()
	var scrapes atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		n := scrapes.Add(1)
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprintf(w, "# HELP cte_testbackend_answer A constant.\n# TYPE cte_testbackend_answer gauge\n"+
			"cte_testbackend_answer{kind=\"constant\"} 42\n"+
			"# HELP cte_testbackend_scrapes_total Scrapes served.\n# TYPE cte_testbackend_scrapes_total counter\n"+
			"cte_testbackend_scrapes_total %d\n", n)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestPrometheus(t *testing.T) {
	srv := metricsServer(t)
	rules := filepath.Join(t.TempDir(), "rules.yml")
	const ruleFile = `groups:
  - name: testbackend
    rules:
      - record: cte:testbackend_answer:doubled
        expr: cte_testbackend_answer * 2
      - alert: CTETestbackendAlwaysFiring
        expr: vector(1)
`
	if err := os.WriteFile(rules, []byte(ruleFile), 0o644); err != nil {
		t.Fatal(err)
	}
	p := StartPrometheus(t, PromOptions{
		Targets:    []string{strings.TrimPrefix(srv.URL, "http://")},
		ScrapeSelf: true,
		RuleFiles:  []string{rules},
	})
	if want := []string{"target-0", SelfJob}; !reflect.DeepEqual(p.Jobs(), want) {
		t.Errorf("Jobs() = %v, want %v", p.Jobs(), want)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := p.WaitForTargetsUp(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.WaitForScrapes(ctx, 3); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		expr   string
		labels map[string]string // subset expected on the single sample
		check  func(float64) bool
		want   string
	}{
		{
			expr:   "cte_testbackend_answer",
			labels: map[string]string{"job": "target-0", "kind": "constant"},
			check:  func(v float64) bool { return v == 42 },
			want:   "42",
		},
		{
			expr:   `up{job="prometheus"}`,
			labels: map[string]string{"job": SelfJob},
			check:  func(v float64) bool { return v == 1 },
			want:   "1",
		},
		{
			expr:  "count(up)",
			check: func(v float64) bool { return v == 2 },
			want:  "2",
		},
		{
			// One increment per scrape, one scrape per second. (rate over
			// a window much longer than the data divides by the window.)
			expr:  "irate(cte_testbackend_scrapes_total[1m])",
			check: func(v float64) bool { return v > 0.5 && v < 2 },
			want:  "about 1/s",
		},
		{
			expr:  "scalar(cte_testbackend_answer) + 1",
			check: func(v float64) bool { return v == 43 },
			want:  "43 (scalar)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			res, err := p.Query(ctx, tt.expr)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Samples) != 1 {
				t.Fatalf("got %s %v, want one sample", res.Type, res.Samples)
			}
			s := res.Samples[0]
			if !tt.check(s.Value) {
				t.Errorf("value = %v, want %s", s.Value, tt.want)
			}
			for k, v := range tt.labels {
				if s.Labels[k] != v {
					t.Errorf("label %s = %q, want %q (sample %v)", k, s.Labels[k], v, s)
				}
			}
			if time.Since(s.Time).Abs() > time.Minute {
				t.Errorf("sample time %v is not now", s.Time)
			}
		})
	}

	t.Run("recording rule", func(t *testing.T) {
		var v float64
		var err error
		for ctx.Err() == nil {
			if v, err = p.QueryValue(ctx, "cte:testbackend_answer:doubled"); err == nil {
				break
			}
			time.Sleep(pollInterval)
		}
		if err != nil || v != 84 {
			t.Fatalf("recorded series = %v, %v; want 84", v, err)
		}
	})

	t.Run("rules and alerts API", func(t *testing.T) {
		body, err := p.API(ctx, "/api/v1/rules", nil)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(body), "CTETestbackendAlwaysFiring") {
			t.Errorf("/api/v1/rules lacks the alert rule: %s", body)
		}
		for ctx.Err() == nil {
			if body, err = p.API(ctx, "/api/v1/alerts", nil); err == nil && strings.Contains(string(body), "CTETestbackendAlwaysFiring") {
				return
			}
			time.Sleep(pollInterval)
		}
		t.Errorf("/api/v1/alerts never listed the alert: %s %v", body, err)
	})

	t.Run("matrix", func(t *testing.T) {
		res, err := p.Query(ctx, "cte_testbackend_answer[1m]")
		if err != nil {
			t.Fatal(err)
		}
		if res.Type != "matrix" || len(res.Samples) < 3 {
			t.Fatalf("got %s with %d samples, want a matrix of >= 3", res.Type, len(res.Samples))
		}
	})

	t.Run("bad query", func(t *testing.T) {
		if _, err := p.Query(ctx, "sum(("); err == nil || !strings.Contains(err.Error(), "bad_data") {
			t.Errorf("Query(bad) error = %v, want a bad_data error", err)
		}
	})
}

func TestDecodeQueryData(t *testing.T) {
	tests := []struct {
		name string
		data string
		want QueryResult
	}{
		{
			name: "vector",
			data: `{"resultType":"vector","result":[{"metric":{"job":"a"},"value":[1700000000.5,"2.5"]}]}`,
			want: QueryResult{Type: "vector", Samples: []Sample{{
				Labels: map[string]string{"job": "a"}, Value: 2.5, Time: time.Unix(1700000000, 5e8),
			}}},
		},
		{
			name: "scalar",
			data: `{"resultType":"scalar","result":[1700000000,"+Inf"]}`,
			want: QueryResult{Type: "scalar", Samples: []Sample{{
				Labels: map[string]string{}, Value: math.Inf(1), Time: time.Unix(1700000000, 0),
			}}},
		},
		{
			name: "matrix",
			data: `{"resultType":"matrix","result":[{"metric":{},"values":[[1,"1"],[2,"2"]]}]}`,
			want: QueryResult{Type: "matrix", Samples: []Sample{
				{Labels: map[string]string{}, Value: 1, Time: time.Unix(1, 0)},
				{Labels: map[string]string{}, Value: 2, Time: time.Unix(2, 0)},
			}},
		},
		{
			name: "string",
			data: `{"resultType":"string","result":[1,"hello"]}`,
			want: QueryResult{Type: "string", String: "hello"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := decodeQueryData(json.RawMessage(tt.data))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestParseSpans(t *testing.T) {
	// Shaped like the file exporter's output; the last line is incomplete.
	data := `{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"svc"}}]},` +
		`"scopeSpans":[{"scope":{"name":"sc","version":"1"},"spans":[{"traceId":"0102030405060708090a0b0c0d0e0f10",` +
		`"spanId":"0102030405060708","parentSpanId":"1112131415161718","name":"op","kind":3,` +
		`"startTimeUnixNano":"1700000000000000001","endTimeUnixNano":"1700000001000000000",` +
		`"attributes":[{"key":"s","value":{"stringValue":"x"}},{"key":"i","value":{"intValue":"-7"}},` +
		`{"key":"d","value":{"doubleValue":1.5}},{"key":"nan","value":{"doubleValue":"NaN"}},` +
		`{"key":"b","value":{"boolValue":true}},{"key":"by","value":{"bytesValue":"aGk="}},` +
		`{"key":"a","value":{"arrayValue":{"values":[{"stringValue":"p"},{"intValue":"2"}]}}},` +
		`{"key":"kv","value":{"kvlistValue":{"values":[{"key":"k","value":{"boolValue":false}}]}}},{"key":"empty","value":{}}],` +
		`"events":[{"timeUnixNano":"1700000000500000000","name":"ev","attributes":[{"key":"n","value":{"intValue":"1"}}]}],` +
		`"status":{"code":2,"message":"boom"}}]}]}]}` + "\n\n" +
		`{"resourceSpans":[{"resource":{},"scopeSpans":[{"scope":{},"spans":[{"traceId":"aa","spanId":"bb","name":"root",` +
		`"startTimeUnixNano":"1","endTimeUnixNano":"2","status":{}}]}]}]}` + "\n" +
		`{"resourceSpans":[{"resource":`
	spans, err := ParseSpans([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	if len(spans) != 2 {
		t.Fatalf("got %d spans, want 2: %+v", len(spans), spans)
	}
	got := spans[0]
	nan := got.Attrs["nan"]
	delete(got.Attrs, "nan")
	want := Span{
		TraceID:      "0102030405060708090a0b0c0d0e0f10",
		SpanID:       "0102030405060708",
		ParentSpanID: "1112131415161718",
		Name:         "op",
		Kind:         SpanKindClient,
		Start:        time.Unix(0, 1700000000000000001),
		End:          time.Unix(1700000001, 0),
		Attrs: map[string]any{
			"s": "x", "i": int64(-7), "d": 1.5, "b": true, "by": []byte("hi"),
			"a": []any{"p", int64(2)}, "kv": map[string]any{"k": false}, "empty": nil,
		},
		Resource:      map[string]any{"service.name": "svc"},
		ScopeName:     "sc",
		ScopeVersion:  "1",
		StatusCode:    StatusError,
		StatusMessage: "boom",
		Events: []Event{{
			Name: "ev", Time: time.Unix(1700000000, 5e8), Attrs: map[string]any{"n": int64(1)},
		}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("span 0:\n got %+v\nwant %+v", got, want)
	}
	if f, ok := nan.(float64); !ok || !math.IsNaN(f) {
		t.Errorf("nan attribute = %#v, want NaN", nan)
	}
	if r := spans[1]; r.Name != "root" || r.ParentSpanID != "" || r.Kind != SpanKindUnspecified || r.StatusCode != StatusUnset {
		t.Errorf("span 1 = %+v", r)
	}

	if _, err := ParseSpans([]byte("{not json}\n")); err == nil {
		t.Error("ParseSpans(garbage) succeeded")
	}
}

// newTracerProvider exports to the collector at endpoint over insecure gRPC.
func newTracerProvider(t *testing.T, endpoint string, opts ...otlptracegrpc.Option) *sdktrace.TracerProvider {
	t.Helper()
	opts = append([]otlptracegrpc.Option{
		otlptracegrpc.WithEndpoint(endpoint),
		otlptracegrpc.WithInsecure(),
	}, opts...)
	exp, err := otlptracegrpc.New(context.Background(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	return sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp),
		sdktrace.WithResource(resource.NewSchemaless(
			attribute.String("service.name", "testbackend-test"),
			attribute.String("test.name", t.Name()),
		)),
	)
}

func TestCollectorReceivesSpans(t *testing.T) {
	c := StartCollector(t)
	tp := newTracerProvider(t, c.Endpoint())
	tracer := tp.Tracer("testbackend", trace.WithInstrumentationVersion("0.1"))

	ctx, parent := tracer.Start(context.Background(), "parent", trace.WithSpanKind(trace.SpanKindServer))
	parent.SetAttributes(
		attribute.String("str", "hello"),
		attribute.Int64("int", 1<<40),
		attribute.Float64("float", 2.5),
		attribute.Bool("bool", true),
		attribute.StringSlice("strs", []string{"a", "b"}),
	)
	_, child := tracer.Start(ctx, "child", trace.WithSpanKind(trace.SpanKindClient))
	child.AddEvent("something happened", trace.WithAttributes(attribute.Int("count", 3)))
	child.SetStatus(codes.Error, "it broke")
	child.End()
	parent.End()

	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := tp.Shutdown(shutdownCtx); err != nil {
		t.Fatalf("tracer provider shutdown (export): %v", err)
	}

	waitCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	spans, err := c.WaitForSpans(waitCtx, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(spans) != 2 {
		t.Fatalf("got %d spans, want 2: %+v", len(spans), spans)
	}
	byName := map[string]Span{}
	for _, s := range spans {
		byName[s.Name] = s
	}
	p, ch := byName["parent"], byName["child"]
	if p.SpanID != parent.SpanContext().SpanID().String() || p.TraceID != parent.SpanContext().TraceID().String() {
		t.Errorf("parent ids = %s/%s, want %s/%s", p.TraceID, p.SpanID,
			parent.SpanContext().TraceID(), parent.SpanContext().SpanID())
	}

	tests := []struct {
		name string
		got  any
		want any
	}{
		{"parent has no parent", p.ParentSpanID, ""},
		{"child's parent", ch.ParentSpanID, p.SpanID},
		{"same trace", ch.TraceID, p.TraceID},
		{"parent kind", p.Kind, SpanKindServer},
		{"child kind", ch.Kind, SpanKindClient},
		{"parent attributes", p.Attrs, map[string]any{
			"str": "hello", "int": int64(1 << 40), "float": 2.5, "bool": true, "strs": []any{"a", "b"},
		}},
		{"resource", p.Resource["service.name"], "testbackend-test"},
		{"scope", p.ScopeName + "@" + p.ScopeVersion, "testbackend@0.1"},
		{"parent status", p.StatusCode, StatusUnset},
		{"child status", [2]any{ch.StatusCode, ch.StatusMessage}, [2]any{StatusError, "it broke"}},
		{"child event name", len(ch.Events) == 1 && ch.Events[0].Name == "something happened", true},
		{"child event attributes", eventAttrs(ch), map[string]any{"count": int64(3)}},
		{"parent spans child", !p.Start.After(ch.Start) && !p.End.Before(ch.End) && p.Start.Before(p.End), true},
		{"recent", time.Since(p.Start) < time.Minute, true},
	}
	for _, tt := range tests {
		if !reflect.DeepEqual(tt.got, tt.want) {
			t.Errorf("%s: got %#v, want %#v", tt.name, tt.got, tt.want)
		}
	}
}

func eventAttrs(s Span) map[string]any {
	if len(s.Events) == 0 {
		return nil
	}
	return s.Events[0].Attrs
}

// sendSpan exports one span named name to endpoint, without retries, and
// returns the export error.
func sendSpan(t *testing.T, endpoint, name string) error {
	t.Helper()
	tp := newTracerProvider(t, endpoint,
		otlptracegrpc.WithRetry(otlptracegrpc.RetryConfig{Enabled: false}),
		otlptracegrpc.WithTimeout(2*time.Second),
	)
	_, span := tp.Tracer("testbackend").Start(context.Background(), name)
	span.End()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := tp.ForceFlush(ctx)
	if serr := tp.Shutdown(ctx); err == nil {
		err = serr
	}
	return err
}

func TestCollectorStopRestart(t *testing.T) {
	// Two collectors at once: neither binds a fixed port.
	c := StartCollector(t)
	other := StartCollector(t)
	if c.Endpoint() == other.Endpoint() {
		t.Fatalf("both collectors on %s", c.Endpoint())
	}
	endpoint := c.Endpoint()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	if err := sendSpan(t, endpoint, "before-stop"); err != nil {
		t.Fatalf("send before stop: %v", err)
	}
	if err := sendSpan(t, other.Endpoint(), "to-other"); err != nil {
		t.Fatalf("send to the other collector: %v", err)
	}
	if _, err := c.WaitForSpans(ctx, 1); err != nil {
		t.Fatal(err)
	}

	c.Stop()
	c.Stop() // idempotent
	if conn, err := net.DialTimeout("tcp", endpoint, time.Second); err == nil {
		conn.Close()
		t.Fatalf("%s still accepts connections after Stop", endpoint)
	}
	if err := sendSpan(t, endpoint, "while-stopped"); err == nil {
		t.Errorf("export to a stopped collector succeeded")
	}

	c.Restart()
	if c.Endpoint() != endpoint {
		t.Errorf("endpoint after restart = %s, want %s", c.Endpoint(), endpoint)
	}
	if err := sendSpan(t, endpoint, "after-restart"); err != nil {
		t.Fatalf("send after restart: %v", err)
	}
	spans, err := c.WaitForSpans(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range spans {
		names = append(names, s.Name)
	}
	if want := []string{"before-stop", "after-restart"}; !reflect.DeepEqual(names, want) {
		t.Errorf("span names = %v, want %v", names, want)
	}

	otherSpans, err := other.WaitForSpans(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(otherSpans) != 1 || otherSpans[0].Name != "to-other" {
		t.Errorf("other collector spans = %+v, want one named to-other", otherSpans)
	}
}

func TestPrometheusQueryURL(t *testing.T) {
	// API encodes params; a query with special characters must round-trip.
	p := StartPrometheus(t, PromOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	body, err := p.API(ctx, "/api/v1/query", url.Values{"query": {`label_replace(vector(1), "x", "a&b=c", "", "")`}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(body), `"x":"a\u0026b=c"`) && !strings.Contains(string(body), `"x":"a&b=c"`) {
		t.Errorf("unexpected body %s", body)
	}
}

// TestJaegerFindsSpansItReceived sends a parent and a child span to a real
// Jaeger and finds them the ways a user does: the service list, a tag
// search over a time window, and a trace id.
func TestJaegerFindsSpansItReceived(t *testing.T) {
	j := StartJaeger(t)
	tp := newTracerProvider(t, j.OTLPEndpoint())
	tracer := tp.Tracer("testbackend")
	ctx, parent := tracer.Start(context.Background(), "parent")
	parent.SetAttributes(attribute.String("conversation", "c-1"), attribute.Int64("turns", 3))
	_, child := tracer.Start(ctx, "child", trace.WithSpanKind(trace.SpanKindClient))
	child.End()
	parent.End()
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := tp.Shutdown(shutdownCtx); err != nil {
		t.Fatalf("export: %v", err)
	}
	traceID := parent.SpanContext().TraceID().String()

	ctx, cancel = context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var found []JaegerTrace
	for {
		var err error
		found, err = j.FindTraces(ctx, TraceQuery{
			Service: "testbackend-test",
			Tags:    map[string]string{"conversation": "c-1"},
			Start:   time.Now().Add(-time.Hour),
			End:     time.Now().Add(time.Minute),
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(found) > 0 || ctx.Err() != nil {
			break
		}
		time.Sleep(pollInterval)
	}
	if len(found) != 1 || found[0].TraceID != traceID || len(found[0].Spans) != 2 {
		t.Fatalf("tag search found %+v, want trace %s with 2 spans", found, traceID)
	}
	byName := map[string]JaegerSpan{}
	for _, s := range found[0].Spans {
		byName[s.OperationName] = s
	}
	p, c := byName["parent"], byName["child"]
	tests := []struct {
		name      string
		got, want any
	}{
		{"parent id", p.SpanID, parent.SpanContext().SpanID().String()},
		{"root has no parent", p.ParentSpanID, ""},
		{"child's parent", c.ParentSpanID, p.SpanID},
		{"service", p.Service, "testbackend-test"},
		{"int tag", p.Tags["turns"], float64(3)},
		{"kind tag", c.Tags["span.kind"], "client"},
		{"resource tag", p.ProcessTags["test.name"], t.Name()},
	}
	for _, tt := range tests {
		if !reflect.DeepEqual(tt.got, tt.want) {
			t.Errorf("%s: got %#v, want %#v", tt.name, tt.got, tt.want)
		}
	}

	// A window before the spans finds nothing; the trace id still loads.
	none, err := j.FindTraces(ctx, TraceQuery{
		Service: "testbackend-test", Start: time.Now().Add(-3 * time.Hour), End: time.Now().Add(-2 * time.Hour),
	})
	if err != nil || len(none) != 0 {
		t.Errorf("search before the spans: %d traces, %v; want none", len(none), err)
	}
	byID, err := j.Trace(ctx, traceID)
	if err != nil || len(byID.Spans) != 2 {
		t.Errorf("trace by id: %d spans, %v; want 2", len(byID.Spans), err)
	}
	services, err := j.Services(ctx)
	if err != nil || !reflect.DeepEqual(services, []string{"testbackend-test"}) {
		t.Errorf("services = %v, %v", services, err)
	}
}

func TestThanosReceiversStartOutsideTheirPruningMinutes(t *testing.T) {
	at := func(h, m, s int) time.Time { return time.Date(2026, 11, 28, h, m, s, 0, time.Local) }
	for _, tc := range []struct {
		name string
		now  time.Time
		want time.Duration
	}{
		{"midday, far from a pruning minute", at(13, 35, 0), 0},
		{"in the pruning minute CI lost a run to", at(12, 0, 23), 37 * time.Second},
		{"at the start of a pruning minute", at(16, 0, 0), time.Minute},
		{"the second after a pruning minute", at(20, 1, 0), 0},
		{"midnight is a pruning minute", at(0, 0, 59), time.Second},
		{"just inside the lead before one", at(3, 59, 40), 20*time.Second + time.Minute},
		{"just before the lead", at(3, 59, 39), 0},
		{"two hours past one is not one", at(6, 0, 10), 0},
		{"before midnight's", at(23, 59, 50), 70 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := thanosPruneWait(tc.now); got != tc.want {
				t.Errorf("thanosPruneWait(%s) = %v, want %v", tc.now.Format("15:04:05"), got, tc.want)
			}
			// Whatever the wait, the start it leads to is outside the
			// pruning minutes and their lead.
			start := tc.now.Add(tc.want)
			if w := thanosPruneWait(start); w != 0 {
				t.Errorf("starting at %s after waiting still waits %v", start.Format("15:04:05"), w)
			}
		})
	}
}
