// Package planusage reads the answers of Anthropic's OAuth usage endpoint
// (GET /api/oauth/usage, the endpoint behind Claude Code's /usage screen)
// and Claude Code's login file (.credentials.json) into the facts the
// exporter serves: each usage window's utilisation and reset time, the
// extra-usage credits, the plan's kind, and the five-hour window's size in
// tokens measured from the active block.
//
// The endpoint is undocumented. Its shape here is the one public
// status-line tools document (2025-11 to 2026-11): an object with the
// windows five_hour, seven_day, seven_day_opus and seven_day_sonnet (each
// null or {utilization: percent or null, resets_at: RFC 3339 or null}),
// extra_usage, and other keys that come and go. Unknown keys are ignored
// (a window-shaped one is served under its own name, a few at most); an
// answer without five_hour and seven_day, or with a known key of another
// type, is a changed answer (ErrShape) and is never half read.
//
// It is pure: bytes and times in, facts out. It never returns, logs or
// formats an access token except as Credentials.AccessToken, which the
// caller sends and drops.
package planusage

import (
	"errors"
	"math"
	"time"
)

// Errors name why an answer or a login was not used.
var (
	// ErrMalformed: not JSON.
	ErrMalformed = errors.New("malformed")
	// ErrShape: JSON, but not the shape this package knows (the endpoint
	// changed, or another file sits under the name).
	ErrShape = errors.New("shape")
	// ErrNoOAuth: a credentials file without a Claude.ai OAuth login.
	ErrNoOAuth = errors.New("no OAuth login")
)

// Reasons are the reason label values of
// claude_transcript_exporter_plan_usage_errors_total: why the last poll
// gave no answer.
const (
	// ReasonNoLogin: no Claude Code login found (no .credentials.json in
	// any Claude dir, no macOS Keychain item) and no API key either.
	ReasonNoLogin = "no_login"
	// ReasonAPIKeyUser: no OAuth login, and Claude Code is given an API
	// key (ANTHROPIC_API_KEY or ANTHROPIC_AUTH_TOKEN): API keys have no
	// plan windows.
	ReasonAPIKeyUser = "api_key_user"
	// ReasonCredentials: the login file is unreadable, malformed, too
	// large or of another shape.
	ReasonCredentials = "credentials"
	// ReasonExpired: the login's access token has expired (expiresAt);
	// no request is sent. Claude Code renews it when it next runs; the
	// exporter never does.
	ReasonExpired = "expired"
	// ReasonUnauthorized: 401 (token revoked, or expired early).
	ReasonUnauthorized = "unauthorized"
	// ReasonForbidden: 403 (a token without the user:profile scope, such
	// as claude setup-token's, or a seat the endpoint does not serve).
	ReasonForbidden = "forbidden"
	// ReasonRateLimited: 429.
	ReasonRateLimited = "rate_limited"
	// ReasonServerError: 5xx.
	ReasonServerError = "server_error"
	// ReasonStatus: any other status (a redirect, 404: the endpoint moved).
	ReasonStatus = "unexpected_status"
	// ReasonNetwork: no answer (connection, DNS, TLS, timeout).
	ReasonNetwork = "network"
	// ReasonMalformed: a 200 whose body is not JSON (or is too large).
	ReasonMalformed = "malformed"
	// ReasonShape: a 200 whose JSON is not the known shape.
	ReasonShape = "shape"
)

// Reasons lists every reason, for counters served at 0 from the start.
var Reasons = [...]string{ReasonNoLogin, ReasonAPIKeyUser, ReasonCredentials, ReasonExpired,
	ReasonUnauthorized, ReasonForbidden, ReasonRateLimited, ReasonServerError, ReasonStatus,
	ReasonNetwork, ReasonMalformed, ReasonShape}

// StatusReason is the reason of an HTTP status: "" for 200.
func StatusReason(code int) string {
	switch {
	case code == 200:
		return ""
	case code == 401:
		return ReasonUnauthorized
	case code == 403:
		return ReasonForbidden
	case code == 429:
		return ReasonRateLimited
	case code >= 500 && code <= 599:
		return ReasonServerError
	}
	return ReasonStatus
}

// Local says a reason is found on this machine, before any request: no
// request is sent for it.
func Local(reason string) bool {
	switch reason {
	case ReasonNoLogin, ReasonAPIKeyUser, ReasonCredentials, ReasonExpired:
		return true
	}
	return false
}

// Transient says a reason may pass without anything changing on this
// machine (the server's or the network's state): the poller backs off.
func Transient(reason string) bool {
	switch reason {
	case ReasonRateLimited, ReasonServerError, ReasonNetwork, ReasonMalformed:
		return true
	}
	return false
}

// Block is the active five-hour block of the transcripts (ccusage's
// definition): its tokens so far, all types, and its end (zero when the
// source does not say: then no alignment is checked).
type Block struct {
	End    time.Time
	Tokens int64
}

// Estimate rules.
const (
	// MinEstimateUtilization is the least five-hour utilisation (percent)
	// an estimate is made from: the endpoint gives whole percents, so at
	// 5 % the estimate is within ±10 %; below, the rounding dominates.
	MinEstimateUtilization = 5
	// BlockAlignment is how far the block's end may be from the window's
	// reset: further, the block and the window are not the same five
	// hours (a window reset in the middle of the block, or a block of
	// another window), and the ratio means nothing.
	BlockAlignment = time.Hour
)

// WindowTokens is the five-hour window's size in tokens: the active
// block's tokens divided by the window's utilisation. ok is false when no
// estimate can be made: no utilisation or below MinEstimateUtilization, no
// reset time, no tokens, or a block whose end is known and does not line
// up with the window.
func WindowTokens(five Window, b Block) (float64, bool) {
	if !five.HasUtilization || five.Utilization < MinEstimateUtilization || five.ResetsAt.IsZero() || b.Tokens <= 0 {
		return 0, false
	}
	if d := b.End.Sub(five.ResetsAt); !b.End.IsZero() && (d > BlockAlignment || d < -BlockAlignment) {
		return 0, false
	}
	return math.Round(float64(b.Tokens) * 100 / five.Utilization), true
}

// MaxAge is how long an answer is served after it came: 15 minutes, or
// three polls when they are further apart. Past it the plan series are
// dropped (a stale utilisation is worse than none: it hides a reset and
// draws a flat line through the time the window filled up).
func MaxAge(interval time.Duration) time.Duration {
	return max(15*time.Minute, 3*interval)
}

// Snapshot is the last good answer with what was derived from it.
type Snapshot struct {
	Usage Usage
	// At is when the answer came.
	At time.Time
	// Plan is what the login says of the plan.
	Plan Plan
	// Estimate is WindowTokens at the answer's time (the block's tokens
	// then, against the utilisation then); HasEstimate says there is one.
	Estimate    float64
	HasEstimate bool
}

// Current is what of s may be served at now, with answers older than
// maxAge dropped whole and windows whose reset time has passed dropped
// (their utilisation went back to zero then; the next answer says what it
// is now). The estimate goes with the five-hour window.
func (s Snapshot) Current(now time.Time, maxAge time.Duration) Snapshot {
	if s.At.IsZero() || now.Sub(s.At) > maxAge {
		return Snapshot{}
	}
	out := s
	out.Usage.Windows = nil
	for _, w := range s.Usage.Windows {
		if !w.ResetsAt.IsZero() && !now.Before(w.ResetsAt) {
			if w.Name == WindowFiveHour {
				out.HasEstimate, out.Estimate = false, 0
			}
			continue
		}
		out.Usage.Windows = append(out.Usage.Windows, w)
	}
	return out
}
