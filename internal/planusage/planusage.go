// Package planusage polls Anthropic's OAuth usage endpoint (GET
// /api/oauth/usage, the endpoint behind Claude Code's /usage screen) with
// the user's own Claude Code login, opt-in (--limits.usage-api), and
// serves the answer through exporter/prom.PlanUsage.
//
// What it sends: one GET to --limits.usage-api.url (https://api.anthropic.com)
// per --limits.usage-api.interval at most, carrying the login's access
// token (Authorization: Bearer), anthropic-beta: oauth-2025-04-20 and its
// own User-Agent; nothing else. The login is read again before each poll
// (.credentials.json in the Claude dirs, then the macOS Keychain) and the
// token is dropped after the request: it is never logged, exported, kept
// between polls, refreshed or written. An expired token is reported
// (reason expired) and waited out: Claude Code renews it when it runs.
//
// Failures never stop the exporter: each is a reason (mapping/planusage),
// counted and logged once per episode. Server-side ones (429, 5xx, network,
// a changed answer) back off exponentially from the interval to 30
// minutes, longer when Retry-After asks; a 401 or 403 waits until the
// login changes or the back-off ends. The last good answer is served
// until it is older than planusage.MaxAge, then dropped.
package planusage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/exporter/prom"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/planusage"
)

// Endpoint facts.
const (
	// DefaultURL is the default --limits.usage-api.url.
	DefaultURL = "https://api.anthropic.com"
	// Path is the usage endpoint under the base URL.
	Path = "/api/oauth/usage"
	// Beta is the anthropic-beta header the endpoint requires.
	Beta = "oauth-2025-04-20"
	// MinInterval is the shortest --limits.usage-api.interval (and its
	// default): the endpoint rate-limits eagerly.
	MinInterval = time.Minute
	// MaxBackoff caps the back-off of repeated failures.
	MaxBackoff = 30 * time.Minute
	// Timeout bounds one request.
	Timeout = 15 * time.Second
	// maxBody caps an answer read (an answer is a few hundred bytes).
	maxBody = 1 << 20
)

// BlockSource gives the tokens (all types) of the transcripts' active
// five-hour block, for the window's size in tokens. It is called from the
// poller's goroutine: an implementation must be safe for that.
type BlockSource interface {
	ActiveBlockTokens(now time.Time) (tokens int64, ok bool)
}

// BlockEnder is a BlockSource that also tells when the active block ends.
// With it, an estimate is made only while the block and the window end
// within planusage.BlockAlignment of each other (the same five hours);
// without it, whenever a block is active.
type BlockEnder interface {
	ActiveBlockEnd(now time.Time) (end time.Time, ok bool)
}

// activeBlock reads the active block from src.
func activeBlock(src BlockSource, now time.Time) (planusage.Block, bool) {
	tokens, ok := src.ActiveBlockTokens(now)
	if !ok {
		return planusage.Block{}, false
	}
	b := planusage.Block{Tokens: tokens}
	if e, isEnder := src.(BlockEnder); isEnder {
		if b.End, ok = e.ActiveBlockEnd(now); !ok {
			return planusage.Block{}, false
		}
	}
	return b, true
}

// Config configures a Poller.
type Config struct {
	// URL is the endpoint's base URL (--limits.usage-api.url).
	URL string
	// Interval is the time between polls (--limits.usage-api.interval).
	Interval time.Duration
	// Dirs are the Claude dirs whose .credentials.json is read, in order.
	Dirs []string
	// Keychain reads the macOS Keychain item; nil: the platform's (none
	// outside macOS). found is false when there is no item.
	Keychain func(ctx context.Context) (b []byte, found bool, err error)
	// Getenv tells an API-key user (nil: no environment).
	Getenv func(string) string
	// Blocks gives the active block; nil: no window size estimate.
	Blocks BlockSource
	// Client sends the request; nil: one with Timeout, without
	// keep-alive, that never follows a redirect (the token stays with
	// the host it was meant for).
	Client *http.Client
	// Now is the clock; nil: time.Now.
	Now       func() time.Time
	Logger    *slog.Logger
	UserAgent string
}

// Poller polls the endpoint. Poll and Run are not for concurrent use.
type Poller struct {
	cfg Config
	m   *prom.PlanUsage
	url string

	last        string // the last poll's reason; "" answered; start before any
	lastRequest time.Time
	failures    int // consecutive failed requests
	holdUntil   time.Time
	// holdLogin: the hold ends early when the login changes (a 401 or
	// 403 is the token's, not the server's); holdExpiry is the failed
	// login's expiry, which Claude Code moves when it renews the token.
	holdLogin  bool
	holdExpiry time.Time
}

const start = "start"

// New returns a Poller serving into m.
func New(cfg Config, m *prom.PlanUsage) *Poller {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Getenv == nil {
		cfg.Getenv = func(string) string { return "" }
	}
	if cfg.Keychain == nil {
		cfg.Keychain = platformKeychain
	}
	if cfg.Client == nil {
		// A new connection per poll: a poll a minute apart finds a
		// kept-alive one closed, and the transport would send the
		// request again on another; this way one poll is one request.
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.DisableKeepAlives = true
		cfg.Client = &http.Client{Transport: tr, Timeout: Timeout, CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		}}
	}
	if cfg.Interval < MinInterval {
		cfg.Interval = MinInterval
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = "claude-transcript-exporter"
	}
	return &Poller{cfg: cfg, m: m, url: strings.TrimRight(cfg.URL, "/") + Path, last: start}
}

// Run polls at once, then every interval, until ctx is done.
func (p *Poller) Run(ctx context.Context) {
	t := time.NewTicker(p.cfg.Interval)
	defer t.Stop()
	for {
		p.Poll(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Poll reads the login and, unless backing off or too soon after the last
// request, asks the endpoint once.
func (p *Poller) Poll(ctx context.Context) {
	now := p.cfg.Now()
	// Never more than one request per interval, whoever calls (a tick
	// may come a little early).
	if !p.lastRequest.IsZero() && now.Sub(p.lastRequest) < p.cfg.Interval*9/10 {
		return
	}
	creds, reason, detail := p.login(ctx)
	if reason == "" && !creds.ExpiresAt.IsZero() && !now.Before(creds.ExpiresAt) {
		reason, detail = planusage.ReasonExpired, "expired at "+creds.ExpiresAt.Format(time.RFC3339)
	}
	if reason != "" {
		p.fail(now, reason, false, 0, slog.String("detail", detail))
		return
	}
	if now.Before(p.holdUntil) && (!p.holdLogin || creds.ExpiresAt.Equal(p.holdExpiry)) {
		return
	}
	p.lastRequest, p.holdLogin = now, false
	code, body, hdr, err := p.get(ctx, creds.AccessToken)
	creds.AccessToken = ""
	if err != nil {
		p.fail(now, planusage.ReasonNetwork, true, 0, slog.String("detail", err.Error()))
		return
	}
	if r := planusage.StatusReason(code); r != "" {
		var wait time.Duration
		if r == planusage.ReasonRateLimited {
			wait, _ = planusage.RetryAfter(hdr.Get("Retry-After"), now)
		}
		p.holdLogin = r == planusage.ReasonUnauthorized || r == planusage.ReasonForbidden
		p.holdExpiry = creds.ExpiresAt
		p.fail(now, r, true, wait, slog.Int("status", code), slog.String("error_type", planusage.ErrorType(body)))
		return
	}
	u, err := planusage.ParseUsage(body)
	if err != nil {
		r := planusage.ReasonShape
		if errors.Is(err, planusage.ErrMalformed) {
			r = planusage.ReasonMalformed
		}
		p.fail(now, r, true, 0, slog.String("detail", err.Error()))
		return
	}
	snap := planusage.Snapshot{Usage: u, At: now, Plan: creds.Plan}
	if five, ok := u.Window(planusage.WindowFiveHour); ok && p.cfg.Blocks != nil {
		if b, ok := activeBlock(p.cfg.Blocks, now); ok {
			snap.Estimate, snap.HasEstimate = planusage.WindowTokens(five, b)
		}
	}
	p.m.Set(snap)
	p.m.LastSuccess.Set(float64(now.UnixMilli()) / 1000)
	p.m.Requests.WithLabelValues("ok").Inc()
	p.failures, p.holdUntil, p.holdLogin = 0, time.Time{}, false
	switch p.last {
	case "":
	case start:
		p.cfg.Logger.Info("plan usage: first answer", "windows", len(u.Windows), "ignored_fields", u.Ignored)
	default:
		p.cfg.Logger.Info("plan usage: answered again", "after", p.last)
	}
	p.last = ""
}

// fail records a poll without an answer: the request counter when one was
// sent, the back-off, and the error counter and one log line when the
// reason is new.
func (p *Poller) fail(now time.Time, reason string, sent bool, retryAfter time.Duration, attrs ...slog.Attr) {
	var wait time.Duration
	if sent {
		p.m.Requests.WithLabelValues(reason).Inc()
		p.failures++
		wait = p.cfg.Interval << min(p.failures-1, 10)
		wait = max(min(wait, MaxBackoff), retryAfter)
		p.holdUntil = now.Add(wait)
	}
	if reason == p.last {
		return
	}
	p.last = reason
	p.m.Errors.WithLabelValues(reason).Inc()
	args := []any{"reason", reason, "hint", hints[reason]}
	if sent {
		args = append(args, "next_try_in", wait.String())
	}
	for _, a := range attrs {
		if a.Value.String() != "" {
			args = append(args, a)
		}
	}
	p.cfg.Logger.Warn("plan usage: no answer (logged once until the reason changes)", args...)
}

var hints = map[string]string{
	planusage.ReasonNoLogin:      "no Claude Code login: no .credentials.json in the Claude dirs and no macOS Keychain item; log in with claude",
	planusage.ReasonAPIKeyUser:   "Claude Code uses an API key: only a subscription login (claude.ai) has plan windows",
	planusage.ReasonCredentials:  "the Claude Code login could not be read",
	planusage.ReasonExpired:      "the login's access token has expired; Claude Code renews it the next time it runs (the exporter never does)",
	planusage.ReasonUnauthorized: "the endpoint refused the login (401); retried when Claude Code renews it",
	planusage.ReasonForbidden:    "the endpoint refused the login (403): a token without the user:profile scope (claude setup-token) or a seat it does not serve",
	planusage.ReasonRateLimited:  "the endpoint is rate-limiting (429); backing off",
	planusage.ReasonServerError:  "the endpoint failed (5xx); backing off",
	planusage.ReasonStatus:       "unexpected status: the undocumented endpoint may have moved or changed",
	planusage.ReasonNetwork:      "no answer from the endpoint; backing off",
	planusage.ReasonMalformed:    "the answer is not JSON; backing off",
	planusage.ReasonShape:        "the answer is not of the known shape: the undocumented endpoint may have changed",
}

// get sends the request. The token goes into the Authorization header
// and nowhere else; errors are the transport's, which never carry headers.
func (p *Poller) get(ctx context.Context, token string) (int, []byte, http.Header, error) {
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.url, nil)
	if err != nil {
		return 0, nil, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("anthropic-beta", Beta)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", p.cfg.UserAgent)
	resp, err := p.cfg.Client.Do(req)
	if err != nil {
		return 0, nil, nil, fmt.Errorf("GET %s: %w", p.url, unwrapURL(err))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return 0, nil, nil, fmt.Errorf("GET %s: reading the answer: %w", p.url, err)
	}
	if len(body) > maxBody && resp.StatusCode == http.StatusOK {
		// Too large to be an answer: read as malformed.
		body = []byte("too large")
	}
	return resp.StatusCode, body, resp.Header, nil
}

// unwrapURL drops the *url.Error wrapper, whose message repeats the URL.
func unwrapURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) && ue.Err != nil {
		return ue.Err
	}
	return err
}
