package testbackend

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
	"time"
)

// jaegerStartTimeout bounds the wait for Jaeger's ports after a start.
const jaegerStartTimeout = 30 * time.Second

// Jaeger is a running Jaeger v2 (all in one, in-memory storage) started by
// StartJaeger: an OTLP/gRPC receiver and the HTTP query API that the Jaeger
// UI calls, which is what the tests query.
type Jaeger struct {
	otlp    string
	url     string
	proc    *process
	client  *http.Client
	logPath string
}

// StartJaeger starts Jaeger v2 (JaegerBinary: built from its Go module, or
// $CTE_JAEGER_BIN) with an OTLP gRPC receiver and its query API on free
// ports of 127.0.0.1, storing traces in memory, and waits until both
// answer. It is stopped when the test ends; if the test failed, the tail of
// its log is printed.
func StartJaeger(t testing.TB) *Jaeger {
	t.Helper()
	bin := JaegerBinary(t)
	dir := t.TempDir()
	j := &Jaeger{
		otlp:    fmt.Sprintf("127.0.0.1:%d", FreePort(t)),
		client:  &http.Client{Timeout: 30 * time.Second},
		logPath: filepath.Join(dir, "jaeger.log"),
	}
	queryAddr := fmt.Sprintf("127.0.0.1:%d", FreePort(t))
	j.url = "http://" + queryAddr
	cfg := jaegerConfig(j.otlp, queryAddr, fmt.Sprintf("127.0.0.1:%d", FreePort(t)))
	cfgPath := filepath.Join(dir, "jaeger.yaml")
	if err := os.WriteFile(cfgPath, cfg, 0o644); err != nil {
		t.Fatalf("start jaeger: %v", err)
	}
	var err error
	j.proc, err = startProcess("jaeger", bin, []string{"--config=file:" + cfgPath}, j.logPath)
	if err != nil {
		t.Fatalf("start jaeger: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("jaeger at %s (OTLP %s)\n%s", j.url, j.otlp, logTail(j.logPath, logTailLines))
		}
		if err := j.proc.stop(); err != nil {
			t.Errorf("jaeger: %v\n%s", err, logTail(j.logPath, logTailLines))
		}
	})
	for _, addr := range []string{j.otlp, queryAddr} {
		if err := waitListening(j.proc, addr, jaegerStartTimeout); err != nil {
			t.Fatalf("start jaeger: %v\nconfig:\n%s\n%s", err, cfg, logTail(j.logPath, logTailLines))
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), jaegerStartTimeout)
	defer cancel()
	for {
		if _, err := j.Services(ctx); err == nil {
			break
		} else if ctx.Err() != nil {
			t.Fatalf("start jaeger: query API not ready: %v\n%s", err, logTail(j.logPath, logTailLines))
		}
		time.Sleep(pollInterval)
	}
	return j
}

// jaegerConfig renders Jaeger's configuration (JSON, which is YAML): the
// OTLP receiver, in-memory storage, the query extension, and no telemetry
// of its own (so that nothing binds or calls a fixed port).
func jaegerConfig(otlp, queryHTTP, queryGRPC string) []byte {
	cfg := map[string]any{
		"service": map[string]any{
			"extensions": []string{"jaeger_storage", "jaeger_query"},
			"pipelines": map[string]any{
				"traces": map[string]any{
					"receivers": []string{"otlp"},
					"exporters": []string{"jaeger_storage_exporter"},
				},
			},
			"telemetry": map[string]any{
				"metrics": map[string]any{"level": "none"},
				"logs":    map[string]any{"level": "info"},
			},
		},
		"extensions": map[string]any{
			"jaeger_query": map[string]any{
				"storage": map[string]any{"traces": "memstore"},
				// On by default in Jaeger v2: it would trace itself to
				// localhost:4317 and hang 10 s at shutdown retrying.
				"enable_tracing": false,
				"http":           map[string]any{"endpoint": queryHTTP},
				"grpc":           map[string]any{"endpoint": queryGRPC},
			},
			"jaeger_storage": map[string]any{
				"backends": map[string]any{
					"memstore": map[string]any{"memory": map[string]any{"max_traces": 1_000_000}},
				},
			},
		},
		"receivers": map[string]any{
			"otlp": map[string]any{
				"protocols": map[string]any{"grpc": map[string]any{"endpoint": otlp}},
			},
		},
		"exporters": map[string]any{
			"jaeger_storage_exporter": map[string]any{"trace_storage": "memstore"},
		},
	}
	out, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		panic(err) // a static map of strings always marshals
	}
	return out
}

// OTLPEndpoint returns the host:port of the OTLP gRPC receiver.
func (j *Jaeger) OTLPEndpoint() string { return j.otlp }

// URL returns the base URL of the query API (and UI), http://127.0.0.1:<port>.
func (j *Jaeger) URL() string { return j.url }

// LogPath returns the file that holds Jaeger's output.
func (j *Jaeger) LogPath() string { return j.logPath }

// JaegerTrace is one trace as the query API returns it.
type JaegerTrace struct {
	TraceID string
	Spans   []JaegerSpan
}

// JaegerSpan is one span of a JaegerTrace. ParentSpanID is the span of its
// CHILD_OF reference ("" for a root). Times have the API's microsecond
// resolution.
type JaegerSpan struct {
	TraceID       string
	SpanID        string
	ParentSpanID  string
	OperationName string
	Service       string
	Start         time.Time
	Duration      time.Duration
	Tags          map[string]any
	// ProcessTags are the tags of the span's process: the OTLP resource.
	ProcessTags map[string]any
}

// TraceQuery is a search as the Jaeger UI's search form sends it.
type TraceQuery struct {
	Service   string
	Operation string            // empty: all
	Tags      map[string]string // all must match a span of the trace
	Start     time.Time         // the search window (the UI's lookback)
	End       time.Time
	Limit     int // 0: 20, the UI's default
}

// Services returns the service names Jaeger knows, as the UI's service
// dropdown shows them.
func (j *Jaeger) Services(ctx context.Context) ([]string, error) {
	var out []string
	if err := j.get(ctx, "/api/services", nil, &out); err != nil {
		return nil, err
	}
	sort.Strings(out)
	return out, nil
}

// FindTraces runs a search (GET /api/traces) and returns the traces found.
func (j *Jaeger) FindTraces(ctx context.Context, q TraceQuery) ([]JaegerTrace, error) {
	params := url.Values{}
	params.Set("service", q.Service)
	if q.Operation != "" {
		params.Set("operation", q.Operation)
	}
	if len(q.Tags) > 0 {
		tags, err := json.Marshal(q.Tags)
		if err != nil {
			return nil, err
		}
		params.Set("tags", string(tags))
	}
	limit := q.Limit
	if limit == 0 {
		limit = 20
	}
	params.Set("limit", strconv.Itoa(limit))
	params.Set("lookback", "custom")
	params.Set("start", strconv.FormatInt(q.Start.UnixMicro(), 10))
	params.Set("end", strconv.FormatInt(q.End.UnixMicro(), 10))
	var data []jaegerAPITrace
	if err := j.get(ctx, "/api/traces", params, &data); err != nil {
		return nil, err
	}
	return convertJaegerTraces(data), nil
}

// Trace returns one trace by id (GET /api/traces/<id>), as the UI's
// trace-id box loads it.
func (j *Jaeger) Trace(ctx context.Context, traceID string) (JaegerTrace, error) {
	var data []jaegerAPITrace
	if err := j.get(ctx, "/api/traces/"+url.PathEscape(traceID), nil, &data); err != nil {
		return JaegerTrace{}, err
	}
	traces := convertJaegerTraces(data)
	if len(traces) != 1 {
		return JaegerTrace{}, fmt.Errorf("trace %s: %d traces in the answer", traceID, len(traces))
	}
	return traces[0], nil
}

// get fetches path and decodes the "data" member of the API's envelope; a
// non-200 status or a non-empty "errors" member is an error.
func (j *Jaeger) get(ctx context.Context, path string, params url.Values, data any) error {
	u := j.url + path
	if len(params) > 0 {
		u += "?" + params.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := j.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %.500s", u, resp.Status, body)
	}
	var env struct {
		Data   json.RawMessage `json:"data"`
		Errors []struct {
			Code int    `json:"code"`
			Msg  string `json:"msg"`
		} `json:"errors"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return fmt.Errorf("GET %s: %w", u, err)
	}
	if len(env.Errors) > 0 {
		return fmt.Errorf("GET %s: %d errors, first %d %s", u, len(env.Errors), env.Errors[0].Code, env.Errors[0].Msg)
	}
	if len(env.Data) == 0 || string(env.Data) == "null" {
		return nil
	}
	if err := json.Unmarshal(env.Data, data); err != nil {
		return fmt.Errorf("GET %s: data: %w", u, err)
	}
	return nil
}

// The query API's JSON shapes (Jaeger's UI model).
type (
	jaegerAPITrace struct {
		TraceID   string                      `json:"traceID"`
		Spans     []jaegerAPISpan             `json:"spans"`
		Processes map[string]jaegerAPIProcess `json:"processes"`
	}
	jaegerAPISpan struct {
		TraceID       string `json:"traceID"`
		SpanID        string `json:"spanID"`
		OperationName string `json:"operationName"`
		References    []struct {
			RefType string `json:"refType"`
			TraceID string `json:"traceID"`
			SpanID  string `json:"spanID"`
		} `json:"references"`
		StartTime int64          `json:"startTime"` // microseconds since the epoch
		Duration  int64          `json:"duration"`  // microseconds
		Tags      []jaegerAPITag `json:"tags"`
		ProcessID string         `json:"processID"`
	}
	jaegerAPIProcess struct {
		ServiceName string         `json:"serviceName"`
		Tags        []jaegerAPITag `json:"tags"`
	}
	jaegerAPITag struct {
		Key   string `json:"key"`
		Value any    `json:"value"`
	}
)

func convertJaegerTraces(in []jaegerAPITrace) []JaegerTrace {
	out := make([]JaegerTrace, 0, len(in))
	for _, tr := range in {
		jt := JaegerTrace{TraceID: tr.TraceID}
		for _, s := range tr.Spans {
			js := JaegerSpan{
				TraceID:       s.TraceID,
				SpanID:        s.SpanID,
				OperationName: s.OperationName,
				Start:         time.UnixMicro(s.StartTime).UTC(),
				Duration:      time.Duration(s.Duration) * time.Microsecond,
				Tags:          jaegerTags(s.Tags),
			}
			for _, r := range s.References {
				if r.RefType == "CHILD_OF" {
					js.ParentSpanID = r.SpanID
				}
			}
			if p, ok := tr.Processes[s.ProcessID]; ok {
				js.Service = p.ServiceName
				js.ProcessTags = jaegerTags(p.Tags)
			}
			jt.Spans = append(jt.Spans, js)
		}
		out = append(out, jt)
	}
	return out
}

func jaegerTags(tags []jaegerAPITag) map[string]any {
	m := make(map[string]any, len(tags))
	for _, t := range tags {
		m[t.Key] = t.Value
	}
	return m
}
