package daemon

import (
	"strings"
	"testing"
	"time"
)

func TestPushKindAndInterval(t *testing.T) {
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	kinds := []struct {
		name string
		pc   PushConfig
		env  func(string) string
		want string
	}{
		{"auto without anything", PushConfig{Exporter: "auto"}, env(), "none"},
		{"the traces endpoint alone does not push metrics", PushConfig{Exporter: "auto"}, env(envEndpoint, "c:4317"), "none"},
		{"a metrics endpoint", PushConfig{Exporter: "auto"}, env(envMetricsEndpoint, "c:4317"), "otlp"},
		{"OTEL_METRICS_EXPORTER", PushConfig{Exporter: "auto"}, env(envMetricsExporter, "otlp"), "otlp"},
		{"the flag's endpoint", PushConfig{Exporter: "auto", Endpoint: "c:4317"}, env(), "otlp"},
		{"SDK disabled", PushConfig{Exporter: "auto", Endpoint: "c:4317"}, env(envSDKDisabled, "true"), "none"},
		{"explicit none", PushConfig{Exporter: "none", Endpoint: "c:4317"}, env(), "none"},
		{"explicit otlp", PushConfig{Exporter: "otlp"}, env(), "otlp"},
	}
	for _, tc := range kinds {
		if got := pushKind(tc.pc, tc.env); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
	intervals := []struct {
		name string
		pc   PushConfig
		env  func(string) string
		want time.Duration
		err  string
	}{
		{"default", PushConfig{}, env(), DefaultPushInterval, ""},
		{"environment, milliseconds", PushConfig{}, env(envExportInterval, "15000"), 15 * time.Second, ""},
		{"the flag wins", PushConfig{Interval: 5 * time.Second}, env(envExportInterval, "15000"), 5 * time.Second, ""},
		{"environment too short", PushConfig{}, env(envExportInterval, "10"), 0, "at least 1000"},
		{"environment not a number", PushConfig{}, env(envExportInterval, "1m"), 0, "milliseconds"},
	}
	for _, tc := range intervals {
		got, err := pushInterval(tc.pc, tc.env)
		if got != tc.want || (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%s: %v %v, want %v %q", tc.name, got, err, tc.want, tc.err)
		}
	}
}

func TestPushFlagsAreValidatedAtStart(t *testing.T) {
	cases := []struct {
		name string
		set  func(*Config)
		want string
	}{
		{"interval below a second", func(c *Config) { c.Push.Interval = 10 * time.Millisecond }, "--metrics.push.interval"},
		{"identity key with '='", func(c *Config) { c.Push.Identity.Attributes["a=b"] = "c" }, "--identity.attribute"},
		{"empty identity key", func(c *Config) { c.Push.Identity.Attributes[""] = "c" }, "--identity.attribute"},
		{"bad headers", func(c *Config) { c.Push.Headers = "novalue" }, "--metrics.push.headers"},
	}
	for _, tc := range cases {
		cfg := NewConfig()
		cfg.ClaudeDirs = []string{claudeDir(t)}
		cfg.StateFile = ""
		tc.set(&cfg)
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error naming %s", tc.name, err, tc.want)
		}
	}
}
