package planusage

import (
	"errors"
	"testing"
)

// FuzzAnswers feeds any bytes to the answer and login parsers: none
// panics, a failure is malformed, shape (or no OAuth login) and keeps
// nothing, and what is kept is bounded: window names are short tokens, a
// few at most, utilisations percentages, plan labels short tokens.
func FuzzAnswers(f *testing.F) {
	for _, s := range []string{
		`{"five_hour":{"utilization":61.0,"resets_at":"2026-01-28T07:59:59.571404+00:00"},"seven_day":null,"extra_usage":{"is_enabled":false,"monthly_limit":null,"used_credits":null,"utilization":null}}`,
		`{"five_hour":null,"seven_day":{"utilization":"7","resets_at":1},"x_y":{"utilization":1,"resets_at":null}}`,
		`{"limits":[{"kind":"session"}]}`,
		`{"claudeAiOauth":{"accessToken":"sk-ant-oat01-x","expiresAt":1767396165210,"subscriptionType":"max","rateLimitTier":"default_claude_max_20x"}}`,
		`{"claudeAiOauth":{"accessToken":5}}`,
		`null`, `[]`, `{`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		u, err := ParseUsage(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrShape) {
				t.Fatalf("answer: error %v is neither malformed nor shape", err)
			}
			if len(u.Windows) != 0 || u.Extra.Present {
				t.Fatalf("answer: an error kept %+v", u)
			}
		}
		if len(u.Windows) > len(knownWindows)+MaxOtherWindows {
			t.Fatalf("%d windows", len(u.Windows))
		}
		for _, w := range u.Windows {
			if !windowName.MatchString(w.Name) || w.Utilization < 0 || w.Utilization > maxUtilization {
				t.Fatalf("window %+v", w)
			}
		}
		c, err := ParseCredentials(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrShape) && !errors.Is(err, ErrNoOAuth) {
				t.Fatalf("login: error %v is neither malformed, shape nor no OAuth", err)
			}
			if c.AccessToken != "" {
				t.Fatalf("login: an error kept the token")
			}
			return
		}
		if !tokenChars.MatchString(c.AccessToken) {
			t.Fatalf("token %q would not fit a header", c.AccessToken)
		}
		for _, l := range []string{c.Plan.SubscriptionType, c.Plan.RateLimitTier} {
			if l != "unknown" && l != "other" && !planToken.MatchString(l) {
				t.Fatalf("plan label %q", l)
			}
		}
	})
}
