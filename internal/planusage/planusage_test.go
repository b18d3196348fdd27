package planusage

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/exporter/prom"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/planusage"
)

const secret = "sk-ant-oat01-TEST-TOKEN-must-never-leak"

// answer is one scripted response of the fake endpoint.
type answer struct {
	status int
	header map[string]string
	body   string
	hangup bool // close the connection without an answer
}

// endpoint is a loopback stand-in for the usage endpoint: it answers from
// a script in order and records what it was sent. A request the script
// has no answer for fails the test (the poller asked when it should not).
type endpoint struct {
	t   *testing.T
	srv *httptest.Server
	mu  sync.Mutex
	// script and seen
	script []answer
	seen   []http.Header
}

func newEndpoint(t *testing.T) *endpoint {
	e := &endpoint{t: t}
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.mu.Lock()
		defer e.mu.Unlock()
		if r.Method != http.MethodGet || r.URL.Path != Path {
			t.Errorf("request %s %s, want GET %s", r.Method, r.URL.Path, Path)
		}
		e.seen = append(e.seen, r.Header.Clone())
		if len(e.script) == 0 {
			t.Errorf("request %d: not expected now", len(e.seen))
			w.WriteHeader(http.StatusTeapot)
			return
		}
		a := e.script[0]
		e.script = e.script[1:]
		if a.hangup {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		for k, v := range a.header {
			w.Header().Set(k, v)
		}
		w.WriteHeader(a.status)
		fmt.Fprint(w, a.body)
	}))
	t.Cleanup(e.srv.Close)
	return e
}

func (e *endpoint) next(a ...answer) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.script = append(e.script, a...)
}

func (e *endpoint) requests() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.seen)
}

// An answer in the shape the public status-line tools document, with an
// unknown window and an unknown field.
const goodBody = `{"five_hour":{"utilization":40.0,"resets_at":"2026-11-25T15:00:00.288792+00:00"},
 "seven_day":{"utilization":22.0,"resets_at":"2026-11-30T09:59:59.571468+00:00"},
 "seven_day_opus":null,
 "seven_day_sonnet":{"utilization":3.0,"resets_at":"2026-11-30T14:59:59.600981+00:00"},
 "iguana_necktie":null,
 "extra_usage":{"is_enabled":true,"monthly_limit":10000,"used_credits":500,"utilization":5.0}}`

func writeLogin(t *testing.T, dir string, expires time.Time) {
	t.Helper()
	b := fmt.Sprintf(`{"claudeAiOauth":{"accessToken":%q,"refreshToken":"sk-ant-ort01-REFRESH","expiresAt":%d,"scopes":["user:inference","user:profile"],"subscriptionType":"max","rateLimitTier":"default_claude_max_20x"}}`,
		secret, expires.UnixMilli())
	if err := os.WriteFile(filepath.Join(dir, CredentialsFile), []byte(b), 0o600); err != nil {
		t.Fatal(err)
	}
}

// fakeBlocks is the block tracker's stand-in: a block active until end.
type fakeBlocks struct {
	end    time.Time
	tokens int64
}

func (f *fakeBlocks) ActiveBlockTokens(now time.Time) (int64, bool) {
	return f.tokens, now.Before(f.end)
}

type ender struct{ *fakeBlocks }

func (f ender) ActiveBlockEnd(now time.Time) (time.Time, bool) { return f.end, now.Before(f.end) }

type rig struct {
	t    *testing.T
	now  time.Time
	reg  *prometheus.Registry
	m    *prom.PlanUsage
	p    *Poller
	logs *bytes.Buffer
	env  map[string]string
}

func newRig(t *testing.T, e *endpoint, dir string, t0 time.Time, blocks BlockSource) *rig {
	r := &rig{t: t, now: t0, reg: prometheus.NewRegistry(), logs: &bytes.Buffer{}, env: map[string]string{}}
	r.m = prom.NewPlanUsage(r.reg, func() time.Time { return r.now }, planusage.MaxAge(time.Minute))
	r.p = New(Config{URL: e.srv.URL, Interval: time.Minute, Dirs: []string{dir}, Blocks: blocks,
		Keychain: func(context.Context) ([]byte, bool, error) { return nil, false, nil },
		Getenv:   func(k string) string { return r.env[k] },
		Now:      func() time.Time { return r.now }, Logger: slog.New(slog.NewTextHandler(r.logs, nil)),
		UserAgent: "claude-transcript-exporter/test"}, r.m)
	return r
}

// at moves the clock to t0+d and polls.
func (r *rig) at(t0 time.Time, d time.Duration) {
	r.now = t0.Add(d)
	r.p.Poll(context.Background())
}

// scrape serves /metrics as the daemon does and returns its text and its
// samples by "name{label=value,...}".
func (r *rig) scrape() (string, map[string]float64) {
	r.t.Helper()
	rec := httptest.NewRecorder()
	promhttp.HandlerFor(r.reg, promhttp.HandlerOpts{}).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	text := rec.Body.String()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		r.t.Fatal(err)
	}
	out := map[string]float64{}
	for n, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var ls []string
			for _, l := range m.GetLabel() {
				ls = append(ls, l.GetName()+"="+l.GetValue())
			}
			sort.Strings(ls)
			v := m.GetGauge().GetValue() + m.GetCounter().GetValue()
			out[n+"{"+strings.Join(ls, ",")+"}"] = v
		}
	}
	return text, out
}

func TestAnAnswerIsServedAsTheEndpointGaveItAndTheTokenOnlyGoesToTheEndpoint(t *testing.T) {
	e := newEndpoint(t)
	dir := t.TempDir()
	t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	writeLogin(t, dir, t0.Add(8*time.Hour))
	blocks := &fakeBlocks{end: time.Date(2026, 11, 25, 15, 0, 0, 0, time.UTC), tokens: 12_345_678}
	r := newRig(t, e, dir, t0, ender{blocks})
	e.next(answer{status: 200, body: goodBody})
	r.at(t0, 0)
	r.at(t0, 30*time.Second) // too soon: no request

	if n := e.requests(); n != 1 {
		t.Fatalf("%d requests, want 1", n)
	}
	h := e.seen[0]
	if got := h.Get("Authorization"); got != "Bearer "+secret {
		t.Errorf("Authorization %q, want the login's token", got)
	}
	if got := h.Get("anthropic-beta"); got != "oauth-2025-04-20" {
		t.Errorf("anthropic-beta %q", got)
	}
	if got := h.Get("User-Agent"); got != "claude-transcript-exporter/test" {
		t.Errorf("User-Agent %q", got)
	}
	text, s := r.scrape()
	want := map[string]float64{
		"claude_transcript_plan_utilization_ratio{window=five_hour}":                                0.40,
		"claude_transcript_plan_utilization_ratio{window=seven_day}":                                0.22,
		"claude_transcript_plan_utilization_ratio{window=seven_day_sonnet}":                         0.03,
		"claude_transcript_plan_reset_timestamp_seconds{window=five_hour}":                          float64(time.Date(2026, 11, 25, 15, 0, 0, 288_000_000, time.UTC).UnixMilli()) / 1000,
		"claude_transcript_plan_reset_timestamp_seconds{window=seven_day}":                          float64(time.Date(2026, 11, 30, 9, 59, 59, 571_000_000, time.UTC).UnixMilli()) / 1000,
		"claude_transcript_plan_window_tokens_estimate{}":                                           30_864_195, // 12,345,678 / 0.40
		"claude_transcript_plan_info{rate_limit_tier=default_claude_max_20x,subscription_type=max}": 1,
		"claude_transcript_plan_extra_usage_enabled{}":                                              1,
		"claude_transcript_plan_extra_usage_used_credits{}":                                         500,
		"claude_transcript_plan_extra_usage_monthly_limit_credits{}":                                10000,
		"claude_transcript_plan_extra_usage_utilization_ratio{}":                                    0.05,
		"claude_transcript_exporter_plan_usage_requests_total{result=ok}":                           1,
		"claude_transcript_exporter_plan_usage_errors_total{reason=network}":                        0,
		"claude_transcript_exporter_plan_usage_last_success_timestamp_seconds{}":                    float64(t0.Unix()),
	}
	for k, v := range want {
		if got, ok := s[k]; !ok || got != v {
			t.Errorf("%s = %v (served %v), want %v", k, got, ok, v)
		}
	}
	if _, ok := s["claude_transcript_plan_utilization_ratio{window=seven_day_opus}"]; ok {
		t.Errorf("a null window is served")
	}
	for _, where := range []struct{ name, text string }{{"/metrics", text}, {"the log", r.logs.String()}} {
		if strings.Contains(where.text, "TEST-TOKEN") || strings.Contains(where.text, "REFRESH") {
			t.Errorf("%s holds the token:\n%s", where.name, where.text)
		}
	}
	if !strings.Contains(r.logs.String(), "plan usage: first answer") {
		t.Errorf("log:\n%s", r.logs)
	}
}

func TestFailuresCountOncePerEpisodeBackOffAndNeverStopThePoller(t *testing.T) {
	e := newEndpoint(t)
	dir := t.TempDir()
	t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	expiry := t0.Add(8 * time.Hour)
	writeLogin(t, dir, expiry)
	r := newRig(t, e, dir, t0, nil)
	ratio := "claude_transcript_plan_utilization_ratio{window=five_hour}"
	served := func(when string, want bool) {
		t.Helper()
		if _, s := r.scrape(); (s[ratio] == 0.40) != want {
			t.Errorf("%s: five-hour ratio served %v (%v), want %v", when, s[ratio] == 0.40, s[ratio], want)
		}
	}
	limitsArray := `{"limits":[{"kind":"session","percent":12}],"spend":{"used":2.33}}`

	e.next(answer{status: 200, body: goodBody})
	r.at(t0, 0)
	served("after the answer", true)
	// 429 asking for 5 minutes: nothing is sent before then.
	e.next(answer{status: 429, header: map[string]string{"Retry-After": "300"}, body: `{"error":{"message":"Rate limited. Please try again later.","type":"rate_limit_error"}}`})
	for m := 1; m <= 5; m++ {
		r.at(t0, time.Duration(m)*time.Minute)
	}
	// Still 429, with "retry-after: 0" (seen in the wild): the back-off doubles to 2 minutes.
	e.next(answer{status: 429, header: map[string]string{"Retry-After": "0"}, body: `{"error":{"type":"rate_limit_error"}}`})
	r.at(t0, 6*time.Minute)
	r.at(t0, 7*time.Minute)
	e.next(answer{status: 503, body: `upstream connect error`})
	r.at(t0, 8*time.Minute) // back-off 4m
	e.next(answer{status: 200, body: `<html>oops</html>`})
	r.at(t0, 12*time.Minute) // back-off 8m
	served("14 minutes after the answer", true)
	r.now = t0.Add(16 * time.Minute)
	served("16 minutes after the answer", false)
	e.next(answer{status: 200, body: limitsArray})
	r.at(t0, 20*time.Minute) // a changed shape; back-off 16m
	e.next(answer{hangup: true})
	r.at(t0, 36*time.Minute) // network; back-off 30m (the cap)
	e.next(answer{status: 200, body: goodBody})
	r.at(t0, 66*time.Minute)
	served("after answering again", true)
	// 401: asked again only when the back-off ends or the login changes.
	e.next(answer{status: 401, body: `{"type":"error","error":{"type":"authentication_error","message":"OAuth token has expired."}}`})
	r.at(t0, 67*time.Minute)
	e.next(answer{status: 401, body: `{"type":"error","error":{"type":"authentication_error"}}`})
	r.at(t0, 68*time.Minute)                  // back-off of 1m over
	r.at(t0, 69*time.Minute)                  // held (2m), the login unchanged
	writeLogin(t, dir, expiry.Add(time.Hour)) // Claude Code renewed it
	e.next(answer{status: 200, body: goodBody})
	r.at(t0, 69*time.Minute+30*time.Second)
	// Local reasons: nothing is sent.
	writeLogin(t, dir, t0) // expired
	r.at(t0, 71*time.Minute)
	r.at(t0, 72*time.Minute)
	if err := os.Remove(filepath.Join(dir, CredentialsFile)); err != nil {
		t.Fatal(err)
	}
	r.at(t0, 73*time.Minute)
	r.env["ANTHROPIC_API_KEY"] = "sk-ant-api03-KEY"
	r.at(t0, 74*time.Minute)
	if err := os.WriteFile(filepath.Join(dir, CredentialsFile), []byte(`{"claudeAiOauth":{"accessToken":"`+secret), 0o600); err != nil {
		t.Fatal(err)
	}
	r.at(t0, 75*time.Minute)
	r.at(t0, 76*time.Minute)

	e.mu.Lock()
	left := len(e.script)
	e.mu.Unlock()
	if left != 0 {
		t.Errorf("%d scripted answers never asked for", left)
	}
	text, s := r.scrape()
	for k, v := range map[string]float64{
		"claude_transcript_exporter_plan_usage_requests_total{result=ok}":           3,
		"claude_transcript_exporter_plan_usage_requests_total{result=rate_limited}": 2,
		"claude_transcript_exporter_plan_usage_requests_total{result=server_error}": 1,
		"claude_transcript_exporter_plan_usage_requests_total{result=malformed}":    1,
		"claude_transcript_exporter_plan_usage_requests_total{result=shape}":        1,
		"claude_transcript_exporter_plan_usage_requests_total{result=network}":      1,
		"claude_transcript_exporter_plan_usage_requests_total{result=unauthorized}": 2,
		"claude_transcript_exporter_plan_usage_errors_total{reason=rate_limited}":   1,
		"claude_transcript_exporter_plan_usage_errors_total{reason=server_error}":   1,
		"claude_transcript_exporter_plan_usage_errors_total{reason=malformed}":      1,
		"claude_transcript_exporter_plan_usage_errors_total{reason=shape}":          1,
		"claude_transcript_exporter_plan_usage_errors_total{reason=network}":        1,
		"claude_transcript_exporter_plan_usage_errors_total{reason=unauthorized}":   1,
		"claude_transcript_exporter_plan_usage_errors_total{reason=expired}":        1,
		"claude_transcript_exporter_plan_usage_errors_total{reason=no_login}":       1,
		"claude_transcript_exporter_plan_usage_errors_total{reason=api_key_user}":   1,
		"claude_transcript_exporter_plan_usage_errors_total{reason=credentials}":    1,
		"claude_transcript_exporter_plan_usage_errors_total{reason=forbidden}":      0,
		"claude_transcript_exporter_plan_usage_last_success_timestamp_seconds{}":    float64(t0.Add(69*time.Minute + 30*time.Second).Unix()),
	} {
		if got, ok := s[k]; !ok || got != v {
			t.Errorf("%s = %v (served %v), want %v", k, got, ok, v)
		}
	}
	if n := e.requests(); n != 11 {
		t.Errorf("%d requests, want 11", n)
	}
	logs := r.logs.String()
	if n := strings.Count(logs, "plan usage: no answer"); n != 10 {
		t.Errorf("%d failure log lines, want one per episode (10):\n%s", n, logs)
	}
	if n := strings.Count(logs, "plan usage: answered again"); n != 2 {
		t.Errorf("%d recovery log lines, want 2:\n%s", n, logs)
	}
	for _, leak := range []string{"TEST-TOKEN", "REFRESH", "sk-ant-api03"} {
		if strings.Contains(logs, leak) || strings.Contains(text, leak) {
			t.Errorf("%s leaked into the log or /metrics:\n%s", leak, logs)
		}
	}
	for _, h := range e.seen {
		if h.Get("Authorization") != "Bearer "+secret || h.Get("anthropic-beta") != Beta {
			t.Errorf("a request without the login or the beta header: %v", h)
		}
	}
}

func TestTheKeychainIsReadWhenNoClaudeDirHoldsALogin(t *testing.T) {
	e := newEndpoint(t)
	dir := t.TempDir()
	// A credentials file holding other logins only: the Keychain decides.
	if err := os.WriteFile(filepath.Join(dir, CredentialsFile), []byte(`{"mcpOAuth":{}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	r := newRig(t, e, dir, t0, nil)
	r.p.cfg.Keychain = func(context.Context) ([]byte, bool, error) {
		return []byte(`{"claudeAiOauth":{"accessToken":"` + secret + `","expiresAt":` + fmt.Sprint(t0.Add(time.Hour).UnixMilli()) + `}}`), true, nil
	}
	e.next(answer{status: 200, body: goodBody})
	r.at(t0, 0)
	if _, s := r.scrape(); s["claude_transcript_plan_utilization_ratio{window=seven_day}"] != 0.22 ||
		s["claude_transcript_plan_info{rate_limit_tier=unknown,subscription_type=unknown}"] != 1 {
		t.Errorf("served %v", s)
	}
	if len(e.seen) != 1 || e.seen[0].Get("Authorization") != "Bearer "+secret {
		t.Errorf("requests %v", e.seen)
	}
}

func TestAServerThatRedirectsNeverGetsTheTokenElsewhere(t *testing.T) {
	other := newEndpoint(t) // any request to it fails the test
	e := newEndpoint(t)
	dir := t.TempDir()
	t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	writeLogin(t, dir, t0.Add(time.Hour))
	r := newRig(t, e, dir, t0, nil)
	e.next(answer{status: 302, header: map[string]string{"Location": other.srv.URL + Path}})
	r.at(t0, 0)
	if _, s := r.scrape(); s["claude_transcript_exporter_plan_usage_errors_total{reason=unexpected_status}"] != 1 {
		t.Errorf("a redirect: %v, want unexpected_status", s)
	}
	if other.requests() != 0 {
		t.Errorf("the redirect was followed")
	}
}

func TestTheWindowSizeIsEstimatedOnlyFromABlockOfTheSameFiveHours(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	est := "claude_transcript_plan_window_tokens_estimate{}"
	for _, tc := range []struct {
		name   string
		blocks BlockSource
		want   float64 // 0: no sample
	}{
		{"the block ends at the window's reset", ender{&fakeBlocks{end: time.Date(2026, 11, 25, 15, 0, 0, 0, time.UTC), tokens: 8_000_000}}, 20_000_000},
		{"the block ends two hours before it", ender{&fakeBlocks{end: time.Date(2026, 11, 25, 13, 0, 0, 0, time.UTC), tokens: 8_000_000}}, 0},
		{"no block is active", ender{&fakeBlocks{end: t0, tokens: 8_000_000}}, 0},
		{"a source that does not tell the end", &fakeBlocks{end: time.Date(2026, 11, 25, 13, 0, 0, 0, time.UTC), tokens: 8_000_000}, 20_000_000},
		{"no source (the tracker not wired)", nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEndpoint(t)
			dir := t.TempDir()
			writeLogin(t, dir, t0.Add(time.Hour))
			r := newRig(t, e, dir, t0, tc.blocks)
			e.next(answer{status: 200, body: goodBody})
			r.at(t0, 0)
			_, s := r.scrape()
			got, ok := s[est]
			if ok != (tc.want != 0) || got != tc.want {
				t.Errorf("estimate %v (served %v), want %v", got, ok, tc.want)
			}
			if s["claude_transcript_plan_utilization_ratio{window=five_hour}"] != 0.40 {
				t.Errorf("the utilisation is not served: %v", s)
			}
		})
	}
}
