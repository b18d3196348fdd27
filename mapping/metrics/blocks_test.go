package metrics

import (
	"testing"
	"time"
	_ "time/tzdata" // Asia/Shanghai resolves on any machine

	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/blocks"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/limits"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/session"
)

func TestRequestIsABlockEntryAtItsCountedLine(t *testing.T) {
	r := newRec()
	m := NewMapper(Config{}, r)
	first := time.Date(2026, 1, 10, 9, 59, 58, 0, time.UTC)
	m.Request(&session.Request{Model: "claude-sonnet-4-5-20250929", Tokens: session.Tokens{Input: 10, Output: 20, CacheRead: 30},
		Advisor: []session.ModelTokens{{Model: "claude-opus-4-5-20251101", Tokens: session.Tokens{Output: 5}}},
		Start:   first.Add(-time.Minute), UsageAt: first, End: first.Add(3 * time.Second)})
	if len(r.blockUsage) != 1 {
		t.Fatalf("block usage %+v, want one entry", r.blockUsage)
	}
	u := r.blockUsage[0]
	if !u.at.Equal(first) || !u.entry || u.t != (blocks.Tokens{Input: 10, Output: 25, CacheRead: 30}) {
		t.Errorf("entry %+v: want the counted line's time and the advisor's tokens added", u)
	}
	if u.usd <= 0 || u.usd != r.cost {
		t.Errorf("entry cost %v, want the request's cost %v (advisor included)", u.usd, r.cost)
	}
	m.RequestUpdate(&session.RequestUpdate{Model: "claude-sonnet-4-5-20250929", Delta: session.Tokens{Output: 7},
		Day: int32(first.Unix() / 86400), At: first.Add(2 * time.Second)})
	if g := r.blockUsage[1]; g.entry || g.t.Output != 7 || !g.at.Equal(first.Add(2*time.Second)) {
		t.Errorf("growth %+v: want 7 output tokens, no new entry, at the growing line", g)
	}
}

func TestSyntheticLinesAreEntriesAndLimitHits(t *testing.T) {
	at := time.Date(2026, 1, 10, 5, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name, kind, head string
		usage            bool // ccusage reads the line as an entry
		entry            bool
		window           string
		reset            time.Time
	}{
		{"a limit notice", "rate_limit", "You've hit your limit · resets 7pm (Asia/Shanghai)", true, true, limits.Session, time.Date(2026, 1, 10, 11, 0, 0, 0, time.UTC)},
		{"a monthly spend limit", "rate_limit", "You've hit your monthly spend limit · raise it at claude.ai/settings/usage", true, true, limits.MonthlySpend, time.Time{}},
		{"an unknown wording", "rate_limit", "Quota exhausted", true, true, limits.Unknown, time.Time{}},
		{"a warning is no hit", "", "Approaching usage limit · resets at 3pm (UTC)", true, true, "", time.Time{}},
		{"another API error", "invalid_request", "Prompt is too long", true, true, "", time.Time{}},
		{"a transient 429", "rate_limit", `API Error: 429 {"error":{"type":"rate_limit_error"}}`, true, true, "", time.Time{}},
		{"a limit notice ccusage rejects (usage.speed null) is a hit, not an entry", "rate_limit", "You've hit your limit · resets 7pm (Asia/Shanghai)", false, false, limits.Session, time.Date(2026, 1, 10, 11, 0, 0, 0, time.UTC)},
		{"a retry is neither", session.KindRetry, "", true, false, "", time.Time{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRec()
			NewMapper(Config{LimitZones: limits.Zones{Load: time.LoadLocation}}, r).APIError(&session.APIError{Kind: tc.kind, Head: tc.head, Time: at, UsageEntry: tc.usage})
			if got := len(r.blockUsage) == 1 && r.blockUsage[0].entry && r.blockUsage[0].t == (blocks.Tokens{}); got != tc.entry {
				t.Errorf("block entry %v (%+v), want %v", got, r.blockUsage, tc.entry)
			}
			switch {
			case tc.window == "" && len(r.limitHits) != 0:
				t.Errorf("limit hits %+v, want none", r.limitHits)
			case tc.window != "" && (len(r.limitHits) != 1 || r.limitHits[0].window != tc.window || !r.limitHits[0].reset.Equal(tc.reset) || !r.limitHits[0].at.Equal(at)):
				t.Errorf("limit hits %+v, want one of %s resetting %v", r.limitHits, tc.window, tc.reset)
			}
		})
	}
}
