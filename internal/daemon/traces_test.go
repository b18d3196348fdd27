package daemon

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/exporter/prom"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/metrics"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/session"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/spans"
)

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestTracesExporterAuto(t *testing.T) {
	tests := []struct {
		name     string
		exporter string
		endpoint string
		env      map[string]string
		want     string
	}{
		{"auto without endpoint", "auto", "", nil, "none"},
		{"auto with flag", "auto", "collector:4317", nil, "otlp"},
		{"auto with traces env", "auto", "", map[string]string{envTracesEndpoint: "http://c:4317"}, "otlp"},
		{"auto with generic env", "auto", "", map[string]string{envEndpoint: "http://c:4317"}, "otlp"},
		{"auto, OTEL_TRACES_EXPORTER=none", "auto", "c:4317", map[string]string{envTracesExporter: "none"}, "none"},
		{"auto, OTEL_SDK_DISABLED", "auto", "", map[string]string{envEndpoint: "c:4317", envSDKDisabled: "true"}, "none"},
		{"explicit stdout", "stdout", "", nil, "stdout"},
		{"explicit otlp without endpoint (SDK default)", "otlp", "", nil, "otlp"},
		{"explicit none", "none", "c:4317", nil, "none"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := exporterKind(TracesConfig{Exporter: tc.exporter, Endpoint: tc.endpoint}, envOf(tc.env))
			if got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

func TestReceiverName(t *testing.T) {
	if got := receiverName("a:1", envOf(map[string]string{envEndpoint: "b:2"})); got != "a:1" {
		t.Errorf("flag first: %s", got)
	}
	if got := receiverName("", envOf(map[string]string{envEndpoint: "b:2", envTracesEndpoint: "c:3"})); got != "c:3" {
		t.Errorf("traces env before generic: %s", got)
	}
	if got := receiverName("", envOf(nil)); got != defaultEndpoint {
		t.Errorf("default: %s", got)
	}
}

func TestOTLPHeaders(t *testing.T) {
	h, err := otlpHeaders("", envOf(map[string]string{envHeaders: "a=1"}))
	if err != nil || h != nil {
		t.Errorf("no flag: %v %v, want nil (the SDK reads the environment)", h, err)
	}
	h, err = otlpHeaders("b=2,a=3", envOf(map[string]string{envHeaders: "a=1,c=x%20y"}))
	if err != nil || h["a"] != "3" || h["b"] != "2" || h["c"] != "x y" {
		t.Errorf("flag adds to the environment: %v %v", h, err)
	}
	h, _ = otlpHeaders("b=2", envOf(map[string]string{envHeaders: "a=1", envTracesHeaders: "t=1"}))
	if h["t"] != "1" || h["a"] != "" {
		t.Errorf("traces headers win over generic: %v", h)
	}
	if _, err := otlpHeaders("novalue", envOf(nil)); err == nil || !strings.Contains(err.Error(), "--otlp.headers") {
		t.Errorf("bad flag: %v", err)
	}
}

func TestBuilderConfig(t *testing.T) {
	c := builderConfig(TracesConfig{Capture: []string{CaptureTools, CaptureThinking}, CaptureMaxBytes: 7, Granularity: "turn"}, metrics.Basename, nil)
	if c.Granularity != spans.GranularityTurn || c.CaptureMaxBytes != 7 || c.Capture != (spans.Capture{Tools: true, Thinking: true}) ||
		c.Identifying || c.Price != nil {
		t.Errorf("got %+v", c)
	}
	// The project is the metrics' label, from their mapper.
	for label, want := range map[metrics.ProjectLabel]string{metrics.ProjectBasename: "repo", metrics.ProjectPath: `C:\Users\alice\repo`, metrics.ProjectNone: ""} {
		c := builderConfig(TracesConfig{}, metrics.NewMapper(metrics.Config{Project: label}, nil).Project, nil)
		if got := c.Project(`C:\Users\alice\repo`); got != want {
			t.Errorf("--metrics.project-label=%s: project %q, want %q", label, got, want)
		}
	}
	// Costs come from the metrics' price table, by the request's date and
	// modifiers.
	c = builderConfig(TracesConfig{Identifying: true}, metrics.Basename, metrics.DefaultPrices())
	r := &session.Request{End: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), Attribution: session.Attribution{Speed: "fast"}}
	usd, ok := c.Price("claude-opus-4-6", session.Tokens{Output: 1_000_000}, r)
	if !c.Identifying || !ok || usd != 150 {
		t.Errorf("price %v %v identifying %v; want 150 (fast 6x on 2026-03-01)", usd, ok, c.Identifying)
	}
	if _, ok := c.Price("kimi-k2", session.Tokens{Output: 1}, r); ok {
		t.Error("an unpriced model has a price")
	}
}

func TestTracesOffBuildsNothing(t *testing.T) {
	cfg := NewConfig()
	st, err := buildTraces(context.Background(), &cfg, nil, slog.New(slog.DiscardHandler), prom.NewSelf(prometheus.NewRegistry()), io.Discard, envOf(nil))
	if err != nil || st != nil {
		t.Errorf("auto without endpoint: %v %v", st, err)
	}
}

func TestTraceWindowKeepsSessionsActiveSinceTheCutoff(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	span := func(id string) *spans.Span {
		return &spans.Span{Attrs: []spans.Attr{spans.String(spans.AttrConversationID, id)}}
	}
	type seen struct {
		id  string
		age time.Duration
	}
	tests := []struct {
		name  string
		since time.Duration
		seen  []seen
		end   bool
		keep  map[string]bool
	}{
		{"no window keeps all", 0, nil, false, map[string]bool{"a": true, "": true}},
		{"a file modified in the window keeps its session", 7 * 24 * time.Hour,
			[]seen{{"a", time.Hour}, {"b", 30 * 24 * time.Hour}}, false, map[string]bool{"a": true, "b": false, "c": false}},
		{"one recent file of a session is enough", 7 * 24 * time.Hour,
			[]seen{{"a", 30 * 24 * time.Hour}, {"a", 24 * time.Hour}}, false, map[string]bool{"a": true}},
		{"the cutoff itself is in the window", 7 * 24 * time.Hour,
			[]seen{{"a", 7 * 24 * time.Hour}}, false, map[string]bool{"a": true}},
		{"a file of no known session marks nothing", 7 * 24 * time.Hour,
			[]seen{{"", time.Hour}}, false, map[string]bool{"": false}},
		{"after the backfill everything goes out", 7 * 24 * time.Hour,
			[]seen{{"b", 30 * 24 * time.Hour}}, true, map[string]bool{"b": true, "c": true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var w traceWindow
			w.begin(tt.since, now)
			for _, s := range tt.seen {
				w.see(s.id, now.Add(-s.age))
			}
			if tt.end {
				w.end()
			}
			for id, want := range tt.keep {
				if got := w.keep(span(id)); got != want {
					t.Errorf("keep(%q) = %v, want %v", id, got, want)
				}
			}
		})
	}
}

func TestOTLPWithoutEndpointFailsAtStartNamingTheFlags(t *testing.T) {
	for _, tc := range []struct {
		name     string
		endpoint string
		env      map[string]string
		fails    bool
	}{
		{"no endpoint", "", nil, true},
		{"--otlp.endpoint", "127.0.0.1:4317", nil, false},
		{"OTEL_EXPORTER_OTLP_ENDPOINT", "", map[string]string{envEndpoint: "http://127.0.0.1:4317"}, false},
		{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "", map[string]string{envTracesEndpoint: "http://127.0.0.1:4317"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := NewConfig()
			cfg.Traces.Exporter, cfg.Traces.Endpoint, cfg.Traces.Insecure = "otlp", tc.endpoint, true
			st, err := buildTraces(context.Background(), &cfg, nil, slog.New(slog.DiscardHandler), prom.NewSelf(prometheus.NewRegistry()), io.Discard, envOf(tc.env))
			if st != nil {
				defer st.close(context.Background(), time.Second)
			}
			if !tc.fails {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var start *StartError
			if !errors.As(err, &start) {
				t.Fatalf("error %v, want a StartError (exit 2)", err)
			}
			for _, w := range []string{"--otlp.endpoint", "--otlp.insecure", defaultEndpoint, "OTEL_EXPORTER_OTLP_ENDPOINT"} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %s", err, w)
				}
			}
		})
	}
}
