package planusage

import (
	"encoding/json"
	"fmt"
	"regexp"
	"time"
)

// Credentials is the Claude.ai OAuth login Claude Code keeps in
// .credentials.json (claudeAiOauth) or in the macOS Keychain item
// "Claude Code-credentials" (the same JSON). The caller sends AccessToken
// with one request and drops it: it is never logged, exported or kept.
type Credentials struct {
	AccessToken string
	// ExpiresAt is when the access token expires (expiresAt, Unix
	// milliseconds); zero when the login does not say.
	ExpiresAt time.Time
	Plan      Plan
}

// Plan is what the login says of the plan, as label values: a short
// lower-case token each, "unknown" when absent, "other" when not a token.
type Plan struct {
	SubscriptionType string // subscriptionType: pro, max, team, enterprise, ...
	RateLimitTier    string // rateLimitTier: default_claude_max_20x, ...
}

var tokenChars = regexp.MustCompile(`^[\x21-\x7e]+$`)

var planToken = regexp.MustCompile(`^[a-z0-9_.-]{1,64}$`)

func planLabel(p *string) string {
	switch {
	case p == nil || *p == "":
		return "unknown"
	case planToken.MatchString(*p):
		return *p
	}
	return "other"
}

// ParseCredentials reads a credentials file. Its errors wrap ErrMalformed,
// ErrShape or ErrNoOAuth (a file that holds other logins only) and never
// quote the file.
func ParseCredentials(b []byte) (Credentials, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b, &top); err != nil {
		if json.Valid(b) {
			return Credentials{}, fmt.Errorf("%w: not an object", ErrShape)
		}
		return Credentials{}, fmt.Errorf("%w: not JSON", ErrMalformed)
	}
	raw, ok := top["claudeAiOauth"]
	if !ok || isNull(raw) {
		return Credentials{}, ErrNoOAuth
	}
	var o struct {
		AccessToken      *string  `json:"accessToken"`
		ExpiresAt        *float64 `json:"expiresAt"`
		SubscriptionType *string  `json:"subscriptionType"`
		RateLimitTier    *string  `json:"rateLimitTier"`
	}
	if err := json.Unmarshal(raw, &o); err != nil {
		// The decoder's message can quote a value: never pass it on.
		return Credentials{}, fmt.Errorf("%w: claudeAiOauth is not the login object", ErrShape)
	}
	if o.AccessToken == nil || *o.AccessToken == "" {
		return Credentials{}, fmt.Errorf("%w: claudeAiOauth has no accessToken", ErrShape)
	}
	if len(*o.AccessToken) > 8192 || !tokenChars.MatchString(*o.AccessToken) {
		// It goes into a header: no spaces, no line breaks.
		return Credentials{}, fmt.Errorf("%w: claudeAiOauth.accessToken is not a token", ErrShape)
	}
	c := Credentials{AccessToken: *o.AccessToken,
		Plan: Plan{SubscriptionType: planLabel(o.SubscriptionType), RateLimitTier: planLabel(o.RateLimitTier)}}
	if o.ExpiresAt != nil && *o.ExpiresAt > 0 {
		c.ExpiresAt = time.UnixMilli(int64(*o.ExpiresAt)).UTC()
	}
	return c, nil
}
