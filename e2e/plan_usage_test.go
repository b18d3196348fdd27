package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

const planToken = "sk-ant-oat01-E2E-SECRET-TOKEN"

// planEndpoint is a loopback stand-in for Anthropic's OAuth usage
// endpoint, answering as public status-line tools document it.
type planEndpoint struct {
	srv    *httptest.Server
	mu     sync.Mutex
	status int
	body   string
	seen   []http.Header
}

func newPlanEndpoint(t *testing.T, status int, body string) *planEndpoint {
	e := &planEndpoint{status: status, body: body}
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.mu.Lock()
		defer e.mu.Unlock()
		if r.URL.Path != "/api/oauth/usage" {
			t.Errorf("request to %s", r.URL.Path)
		}
		e.seen = append(e.seen, r.Header.Clone())
		w.WriteHeader(e.status)
		fmt.Fprint(w, e.body)
	}))
	t.Cleanup(e.srv.Close)
	return e
}

func (e *planEndpoint) requests() []http.Header {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]http.Header(nil), e.seen...)
}

// planDir is a Claude dir with a subscriber's login and one transcript.
func planDir(t *testing.T, expires time.Time) string {
	dir := t.TempDir()
	login := fmt.Sprintf(`{"claudeAiOauth":{"accessToken":%q,"refreshToken":"sk-ant-ort01-E2E-REFRESH","expiresAt":%d,"scopes":["user:inference","user:profile"],"subscriptionType":"pro","rateLimitTier":"default_claude_ai"}}`,
		planToken, expires.UnixMilli())
	if err := os.WriteFile(filepath.Join(dir, ".credentials.json"), []byte(login), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "projects", "p"), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

const planAnswer = `{"five_hour":{"utilization":37.0,"resets_at":"2030-03-10T04:59:59.000000+00:00"},
 "seven_day":{"utilization":26.0,"resets_at":"2030-03-15T14:59:59.771647+00:00"},
 "seven_day_opus":null,
 "seven_day_sonnet":{"utilization":1.0,"resets_at":"2030-03-16T20:59:59.771655+00:00"},
 "seven_day_oauth_apps":null,"iguana_necktie":null,
 "extra_usage":{"is_enabled":false,"monthly_limit":null,"used_credits":null,"utilization":null}}`

func TestPlanUsageAPIIsServedOnMetricsAndTheTokenGoesOnlyToTheEndpoint(t *testing.T) {
	e := newPlanEndpoint(t, 200, planAnswer)
	dir := planDir(t, time.Now().Add(8*time.Hour))
	addr, stop := startServe(t, "--claude.dir="+dir, "--limits.usage-api", "--limits.usage-api.url="+e.srv.URL, "--log.level=debug")
	var text string
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if text = scrape(t, addr); strings.Contains(text, "claude_transcript_plan_utilization_ratio") {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	mfs := parseExposition(t, text)
	ratio := sumBy(mfs, "claude_transcript_plan_utilization_ratio", "window")
	reset := sumBy(mfs, "claude_transcript_plan_reset_timestamp_seconds", "window")
	for w, want := range map[string]float64{"five_hour": 0.37, "seven_day": 0.26, "seven_day_sonnet": 0.01} {
		if ratio[w] != want {
			t.Errorf("plan_utilization_ratio{window=%q} = %v, want %v (the endpoint's %v %%)", w, ratio[w], want, want*100)
		}
	}
	for w, at := range map[string]string{"five_hour": "2030-03-10T04:59:59Z", "seven_day": "2030-03-15T14:59:59.771Z"} {
		want, _ := time.Parse(time.RFC3339Nano, at)
		if reset[w] != float64(want.UnixMilli())/1000 {
			t.Errorf("plan_reset_timestamp_seconds{window=%q} = %v, want %v", w, reset[w], float64(want.UnixMilli())/1000)
		}
	}
	if len(ratio) != 3 {
		t.Errorf("windows %v, want the three the answer holds (null ones left out)", ratio)
	}
	if got := sumBy(mfs, "claude_transcript_plan_info", "subscription_type", "rate_limit_tier"); got["pro|default_claude_ai"] != 1 {
		t.Errorf("plan_info %v", got)
	}
	if got := sumBy(mfs, "claude_transcript_exporter_plan_usage_requests_total", "result"); got["ok"] != 1 {
		t.Errorf("requests %v, want one ok", got)
	}
	logs := stop()
	seen := e.requests()
	if len(seen) != 1 {
		t.Fatalf("%d requests in a run shorter than the interval, want 1", len(seen))
	}
	if seen[0].Get("Authorization") != "Bearer "+planToken || seen[0].Get("anthropic-beta") != "oauth-2025-04-20" {
		t.Errorf("request headers %v: want the login's bearer token and the beta header", seen[0])
	}
	if !strings.HasPrefix(seen[0].Get("User-Agent"), "claude-transcript-exporter/") {
		t.Errorf("User-Agent %q", seen[0].Get("User-Agent"))
	}
	for _, where := range []struct{ name, text string }{{"/metrics", text}, {"the log", logs}} {
		if strings.Contains(where.text, "E2E-SECRET") || strings.Contains(where.text, "E2E-REFRESH") {
			t.Errorf("%s holds the token:\n%s", where.name, where.text)
		}
	}
	if !strings.Contains(logs, "plan usage: first answer") {
		t.Errorf("no first-answer line in the log:\n%s", logs)
	}
}

func TestPlanUsageAPIFailuresAreAHealthCounterAndOneLogLineNeverAFailedRun(t *testing.T) {
	for _, tc := range []struct {
		name, reason string
		status       int
		body         string
		expired      bool
	}{
		{"401", "unauthorized", 401, `{"type":"error","error":{"type":"authentication_error","message":"OAuth token has expired."}}`, false},
		{"429", "rate_limited", 429, `{"error":{"message":"Rate limited. Please try again later.","type":"rate_limit_error"}}`, false},
		{"a changed answer", "shape", 200, `{"limits":[{"kind":"session","percent":12}]}`, false},
		{"an expired login: nothing sent", "expired", 200, planAnswer, true},
		// No login and an API-key user are tested in internal/planusage
		// with a fake Keychain: here, on macOS, the real one would be read.
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newPlanEndpoint(t, tc.status, tc.body)
			expires := time.Now().Add(time.Hour)
			if tc.expired {
				expires = time.Now().Add(-time.Minute)
			}
			dir := planDir(t, expires)
			code, out := runToExit(t, time.Minute, "--oneshot", "--traces.exporter=none", "--claude.dir="+dir,
				"--limits.usage-api", "--limits.usage-api.url="+e.srv.URL)
			if code != 0 {
				t.Fatalf("exit %d:\n%s", code, out)
			}
			mfs := parseExposition(t, out[strings.Index(out, "# HELP"):])
			errs := sumBy(mfs, "claude_transcript_exporter_plan_usage_errors_total", "reason")
			for r, n := range errs {
				want := 0.0
				if r == tc.reason {
					want = 1
				}
				if n != want {
					t.Errorf("errors_total{reason=%q} = %v, want %v", r, n, want)
				}
			}
			if len(errs) < 12 {
				t.Errorf("errors_total serves %d reasons, want every reason from 0", len(errs))
			}
			if strings.Contains(out, "claude_transcript_plan_utilization_ratio{") {
				t.Errorf("a utilisation served without an answer")
			}
			if n := strings.Count(out, "plan usage: no answer"); n != 1 {
				t.Errorf("%d log lines of the failure, want 1:\n%s", n, out)
			}
			sent := len(e.requests())
			if wantSent := !tc.expired; (sent == 1) != wantSent || sent > 1 {
				t.Errorf("%d requests sent", sent)
			}
			if strings.Contains(out, "E2E-SECRET") {
				t.Errorf("the token is in the output:\n%s", out)
			}
		})
	}
}

func TestPlanUsageAPIIsOffByDefaultAndItsFlagsFailAtStart(t *testing.T) {
	dir := planDir(t, time.Now().Add(time.Hour))
	if out := oneshot(t, "--claude.dir="+dir); strings.Contains(out, "plan_") {
		t.Errorf("plan series without --limits.usage-api:\n%s", out)
	}
	for flag, arg := range map[string]string{
		"--limits.usage-api.interval": "--limits.usage-api.interval=30s",
		"--limits.usage-api.url":      "--limits.usage-api.url=http://api.anthropic.com",
	} {
		code, out := runToExit(t, time.Minute, "--oneshot", "--claude.dir="+dir, "--limits.usage-api", arg)
		if code != 2 || !strings.Contains(out, flag) {
			t.Errorf("%s: exit %d, want 2 naming %s:\n%s", arg, code, flag, out)
		}
	}
}
