package planusage

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t.UTC()
}

func f(v float64) *float64 { return &v }

// The answers below are in the shapes public status-line tools document
// for GET /api/oauth/usage (2025-11 to 2026-11).
func TestParseUsageReadsTheDocumentedShapesAndRefusesOthers(t *testing.T) {
	for _, tc := range []struct {
		name string
		body string
		want Usage
		err  error
	}{
		{"five-hour and seven-day as fractional percents with microsecond offsets",
			`{"five_hour":{"utilization":61.0,"resets_at":"2026-01-28T07:59:59.571404+00:00"},
			  "seven_day":{"utilization":22.0,"resets_at":"2026-02-03T09:59:59.571468+00:00"},
			  "extra_usage":{"is_enabled":false,"monthly_limit":null,"used_credits":null,"utilization":null}}`,
			Usage{Windows: []Window{
				{Name: "five_hour", Utilization: 61, HasUtilization: true, ResetsAt: at("2026-01-28T07:59:59.571404Z")},
				{Name: "seven_day", Utilization: 22, HasUtilization: true, ResetsAt: at("2026-02-03T09:59:59.571468Z")},
			}, Extra: ExtraUsage{Present: true}}, nil},
		{"whole percents, Z times, model windows, null windows and unknown keys",
			`{"five_hour":{"utilization":25,"resets_at":"2026-01-28T15:00:00Z"},
			  "seven_day":{"utilization":40,"resets_at":"2026-02-01T00:00:00Z"},
			  "seven_day_opus":null,
			  "seven_day_sonnet":{"utilization":1.0,"resets_at":"2026-01-08T14:59:59.600981+00:00","new_field":[1,2]},
			  "seven_day_oauth_apps":null,"iguana_necktie":null,"plan_note":"x",
			  "extra_usage":{"is_enabled":true,"used_credits":500,"monthly_limit":10000,"utilization":5.0,"currency":"USD"}}`,
			Usage{Windows: []Window{
				{Name: "five_hour", Utilization: 25, HasUtilization: true, ResetsAt: at("2026-01-28T15:00:00Z")},
				{Name: "seven_day", Utilization: 40, HasUtilization: true, ResetsAt: at("2026-02-01T00:00:00Z")},
				{Name: "seven_day_sonnet", Utilization: 1, HasUtilization: true, ResetsAt: at("2026-01-08T14:59:59.600981Z")},
			}, Extra: ExtraUsage{Present: true, Enabled: true, UsedCredits: f(500), MonthlyLimit: f(10000), Utilization: f(5)}, Ignored: 3}, nil},
		{"a window of a new name is served under its name",
			`{"five_hour":null,"seven_day":null,"seven_day_cowork":{"utilization":3,"resets_at":null}}`,
			Usage{Windows: []Window{{Name: "seven_day_cowork", Utilization: 3, HasUtilization: true}}}, nil},
		{"utilization and resets_at null (a window not started)",
			`{"five_hour":{"utilization":null,"resets_at":null},"seven_day":{"utilization":0.0,"resets_at":null}}`,
			Usage{Windows: []Window{{Name: "five_hour"}, {Name: "seven_day", HasUtilization: true}}}, nil},
		{"only seven_day", `{"seven_day":{"utilization":7,"resets_at":"2025-12-01T21:00:00.288804+00:00"}}`,
			Usage{Windows: []Window{{Name: "seven_day", Utilization: 7, HasUtilization: true, ResetsAt: at("2025-12-01T21:00:00.288804Z")}}}, nil},
		{"over the limit", `{"five_hour":{"utilization":104,"resets_at":null},"seven_day":null}`,
			Usage{Windows: []Window{{Name: "five_hour", Utilization: 104, HasUtilization: true}}}, nil},
		{"not JSON", `<html>bad gateway</html>`, Usage{}, ErrMalformed},
		{"truncated", `{"five_hour":{"utilization":61.0,"resets_`, Usage{}, ErrMalformed},
		{"empty", ``, Usage{}, ErrMalformed},
		{"an array", `[{"five_hour":1}]`, Usage{}, ErrShape},
		{"null", `null`, Usage{}, ErrShape},
		{"a changed answer: a limits array", `{"limits":[{"kind":"session","percent":12}],"spend":{"used":2.33}}`, Usage{}, ErrShape},
		{"an error object with 200", `{"error":{"type":"api_error","message":"x"}}`, Usage{}, ErrShape},
		{"utilization as a string", `{"five_hour":{"utilization":"61","resets_at":null},"seven_day":null}`, Usage{}, ErrShape},
		{"utilization negative", `{"five_hour":{"utilization":-1,"resets_at":null},"seven_day":null}`, Usage{}, ErrShape},
		{"utilization a fraction count", `{"five_hour":{"utilization":250000,"resets_at":null},"seven_day":null}`, Usage{}, ErrShape},
		{"resets_at as epoch", `{"five_hour":{"utilization":1,"resets_at":1750284000},"seven_day":null}`, Usage{}, ErrShape},
		{"resets_at not a time", `{"five_hour":{"utilization":1,"resets_at":"7pm"},"seven_day":null}`, Usage{}, ErrShape},
		{"a window as a number", `{"five_hour":0.61,"seven_day":null}`, Usage{}, ErrShape},
		{"extra_usage as a string", `{"five_hour":null,"seven_day":null,"extra_usage":"on"}`, Usage{}, ErrShape},
		{"extra_usage credits as a string", `{"five_hour":null,"seven_day":null,"extra_usage":{"is_enabled":true,"used_credits":"5"}}`, Usage{}, ErrShape},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseUsage([]byte(tc.body))
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("err %v, want %v", err, tc.err)
				}
				if !reflect.DeepEqual(got, Usage{}) {
					t.Errorf("an error kept %+v", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestParseUsageServesAFewWindowsOfOtherNamesAtMost(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"five_hour":null,"seven_day":null`)
	for i := range 20 {
		b.WriteString(`,"w` + string(rune('a'+i)) + `":{"utilization":1,"resets_at":null}`)
	}
	b.WriteString(`,"Bad Name":{"utilization":1,"resets_at":null}}`)
	u, err := ParseUsage([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if len(u.Windows) != MaxOtherWindows || u.Ignored != 20-MaxOtherWindows+1 {
		t.Errorf("%d windows, %d ignored; want %d and %d", len(u.Windows), u.Ignored, MaxOtherWindows, 20-MaxOtherWindows+1)
	}
}

func TestStatusReasonsAndRetryAfter(t *testing.T) {
	for code, want := range map[int]string{200: "", 401: ReasonUnauthorized, 403: ReasonForbidden, 429: ReasonRateLimited,
		500: ReasonServerError, 503: ReasonServerError, 529: ReasonServerError, 302: ReasonStatus, 404: ReasonStatus, 400: ReasonStatus} {
		if got := StatusReason(code); got != want {
			t.Errorf("%d: %q, want %q", code, got, want)
		}
	}
	now := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		h    string
		want time.Duration
		ok   bool
	}{
		{"", 0, false}, {"0", 0, false}, {"-5", 0, false}, {"soon", 0, false},
		{"120", 2 * time.Minute, true}, {" 30 ", 30 * time.Second, true},
		{"999999", MaxRetryAfter, true},
		{"Wed, 25 Nov 2026 10:05:00 GMT", 5 * time.Minute, true},
		{"Wed, 25 Nov 2026 09:00:00 GMT", 0, false},
	} {
		d, ok := RetryAfter(tc.h, now)
		if d != tc.want || ok != tc.ok {
			t.Errorf("Retry-After %q: %v %v, want %v %v", tc.h, d, ok, tc.want, tc.ok)
		}
	}
	for body, want := range map[string]string{
		`{"error":{"message":"Rate limited. Please try again later.","type":"rate_limit_error"}}`:       "rate_limit_error",
		`{"type":"error","error":{"type":"authentication_error","message":"OAuth token has expired."}}`: "authentication_error",
		`{"error":{"type":"Bearer sk-ant-oat01-secret"}}`:                                               "",
		`<html>`: "",
	} {
		if got := ErrorType([]byte(body)); got != want {
			t.Errorf("%s: %q, want %q", body, got, want)
		}
	}
}

func TestParseCredentialsKeepsTheLoginAndNeverQuotesTheFile(t *testing.T) {
	const secret = "sk-ant-oat01-SECRET"
	for _, tc := range []struct {
		name string
		body string
		want Credentials
		err  error
	}{
		{"a subscriber's login",
			`{"claudeAiOauth":{"accessToken":"` + secret + `","refreshToken":"sk-ant-ort01-R","expiresAt":1767396165210,
			  "scopes":["user:inference","user:profile"],"subscriptionType":"max","rateLimitTier":"default_claude_max_20x"},"mcpOAuth":{}}`,
			Credentials{AccessToken: secret, ExpiresAt: time.UnixMilli(1767396165210).UTC(),
				Plan: Plan{SubscriptionType: "max", RateLimitTier: "default_claude_max_20x"}}, nil},
		{"no expiry, no plan", `{"claudeAiOauth":{"accessToken":"` + secret + `","subscriptionType":null}}`,
			Credentials{AccessToken: secret, Plan: Plan{SubscriptionType: "unknown", RateLimitTier: "unknown"}}, nil},
		{"a plan name that is not a token", `{"claudeAiOauth":{"accessToken":"` + secret + `","subscriptionType":"Max Plan!"}}`,
			Credentials{AccessToken: secret, Plan: Plan{SubscriptionType: "other", RateLimitTier: "unknown"}}, nil},
		{"other logins only", `{"mcpOAuth":{"server":{"accessToken":"x"}}}`, Credentials{}, ErrNoOAuth},
		{"a null login", `{"claudeAiOauth":null}`, Credentials{}, ErrNoOAuth},
		{"not JSON", `{"claudeAiOauth":{"accessToken":"` + secret, Credentials{}, ErrMalformed},
		{"a list", `["` + secret + `"]`, Credentials{}, ErrShape},
		{"no token", `{"claudeAiOauth":{"expiresAt":1}}`, Credentials{}, ErrShape},
		{"a token as a number", `{"claudeAiOauth":{"accessToken":5}}`, Credentials{}, ErrShape},
		{"expiresAt as a string quoting the token", `{"claudeAiOauth":{"accessToken":"` + secret + `","expiresAt":"` + secret + `"}}`, Credentials{}, ErrShape},
		{"a token with a line break", `{"claudeAiOauth":{"accessToken":"` + secret + `\r\nX-Evil: 1"}}`, Credentials{}, ErrShape},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseCredentials([]byte(tc.body))
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("err %v, want %v", err, tc.err)
				}
				if strings.Contains(err.Error(), "SECRET") {
					t.Errorf("the error quotes the token: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestWindowTokensIsTheBlockOverTheUtilisationWhenTheyAreTheSameFiveHours(t *testing.T) {
	reset := at("2026-11-25T15:00:00.5Z")
	block := Block{End: at("2026-11-25T15:00:00Z"), Tokens: 12_000_000}
	for _, tc := range []struct {
		name string
		w    Window
		b    Block
		want float64
		ok   bool
	}{
		{"40 % of the window", Window{Name: WindowFiveHour, Utilization: 40, HasUtilization: true, ResetsAt: reset}, block, 30_000_000, true},
		{"a fractional percent", Window{Utilization: 37.5, HasUtilization: true, ResetsAt: reset}, block, 32_000_000, true},
		{"block ending 59 minutes from the reset", Window{Utilization: 40, HasUtilization: true, ResetsAt: reset.Add(59 * time.Minute)}, block, 30_000_000, true},
		{"block of another window", Window{Utilization: 40, HasUtilization: true, ResetsAt: reset.Add(3 * time.Hour)}, block, 0, false},
		{"block whose end is not known", Window{Utilization: 40, HasUtilization: true, ResetsAt: reset.Add(3 * time.Hour)}, Block{Tokens: 12_000_000}, 30_000_000, true},
		{"at the least utilisation", Window{Utilization: MinEstimateUtilization, HasUtilization: true, ResetsAt: reset}, block, 240_000_000, true},
		{"below it", Window{Utilization: 4, HasUtilization: true, ResetsAt: reset}, block, 0, false},
		{"zero", Window{Utilization: 0, HasUtilization: true, ResetsAt: reset}, block, 0, false},
		{"null utilisation", Window{ResetsAt: reset}, block, 0, false},
		{"no reset time", Window{Utilization: 40, HasUtilization: true}, block, 0, false},
		{"no tokens", Window{Utilization: 40, HasUtilization: true, ResetsAt: reset}, Block{End: block.End}, 0, false},
	} {
		got, ok := WindowTokens(tc.w, tc.b)
		if ok != tc.ok || math.Abs(got-tc.want) > 0.5 {
			t.Errorf("%s: %v %v, want %v %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

func TestCurrentDropsStaleAnswersAndWindowsPastTheirReset(t *testing.T) {
	t0 := at("2026-11-25T10:00:00Z")
	s := Snapshot{At: t0, Estimate: 1e6, HasEstimate: true, Usage: Usage{Windows: []Window{
		{Name: WindowFiveHour, Utilization: 50, HasUtilization: true, ResetsAt: t0.Add(30 * time.Minute)},
		{Name: WindowSevenDay, Utilization: 10, HasUtilization: true, ResetsAt: t0.Add(72 * time.Hour)},
		{Name: WindowSevenDaySonnet, Utilization: 1, HasUtilization: true},
	}}}
	maxAge := MaxAge(time.Minute)
	if maxAge != 15*time.Minute || MaxAge(10*time.Minute) != 30*time.Minute {
		t.Fatalf("MaxAge: %v, %v", maxAge, MaxAge(10*time.Minute))
	}
	names := func(c Snapshot) []string {
		var out []string
		for _, w := range c.Usage.Windows {
			out = append(out, w.Name)
		}
		return out
	}
	if c := s.Current(t0.Add(time.Minute), maxAge); len(c.Usage.Windows) != 3 || !c.HasEstimate {
		t.Errorf("fresh: %v %v, want all", names(c), c.HasEstimate)
	}
	if c := s.Current(t0.Add(14*time.Minute), maxAge); len(c.Usage.Windows) != 3 {
		t.Errorf("14 minutes old: %v, want all", names(c))
	}
	c := s.Current(t0.Add(30*time.Minute), time.Hour)
	if !reflect.DeepEqual(names(c), []string{WindowSevenDay, WindowSevenDaySonnet}) || c.HasEstimate {
		t.Errorf("past the five-hour reset: %v estimate %v, want it and its estimate gone", names(c), c.HasEstimate)
	}
	if c := s.Current(t0.Add(16*time.Minute), maxAge); !c.At.IsZero() || len(c.Usage.Windows) != 0 {
		t.Errorf("16 minutes old: %+v, want nothing", c)
	}
	if c := (Snapshot{}).Current(t0, maxAge); !c.At.IsZero() {
		t.Errorf("no answer yet: %+v", c)
	}
}
