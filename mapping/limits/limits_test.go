package limits

import (
	"testing"
	"time"
	_ "time/tzdata" // the zones resolve on a machine without a zone database
)

func ts(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestNoZoneLoaderNoReset(t *testing.T) {
	n, ok := Parse("You've hit your limit · resets 7pm (Asia/Shanghai)", "rate_limit", ts("2026-01-10T05:00:00Z"), Zones{})
	if !ok || n.Window != Session || !n.Reset.IsZero() {
		t.Fatalf("%+v %v: want a session hit without a reset", n, ok)
	}
}

func TestParseWordingsAndResets(t *testing.T) {
	paris, _ := time.LoadLocation("Europe/Paris")
	for _, tc := range []struct {
		name, text, kind, at string
		local                *time.Location
		window, reset        string // reset "" : none
		warning, notLimit    bool
	}{
		{name: "epoch after the bar (seconds)", text: "Claude AI usage limit reached|1750284000", kind: "rate_limit", at: "2025-06-18T18:02:00Z",
			window: Session, reset: "2025-06-18T22:00:00Z"},
		{name: "epoch after the bar (milliseconds)", text: "Claude AI usage limit reached|1750284000000", at: "2025-06-18T18:02:00Z",
			window: Session, reset: "2025-06-18T22:00:00Z"},
		{name: "dated form with a GMT offset", text: "Claude AI usage limit reached: Mon, Aug 11, 2025, 4:00:00 PM GMT+2", at: "2025-08-11T11:00:00Z",
			window: Session, reset: "2025-08-11T14:00:00Z"},
		{name: "dated form, negative offset with minutes", text: "Claude AI usage limit reached: Tue, Aug 12, 2025, 9:30 AM GMT-3:30", at: "2025-08-12T01:00:00Z",
			window: Session, reset: "2025-08-12T13:00:00Z"},
		{name: "hour and zone later the same day", text: "You've hit your limit · resets 7pm (Asia/Shanghai)", kind: "rate_limit", at: "2026-01-10T05:00:00Z",
			window: Session, reset: "2026-01-10T11:00:00Z"},
		{name: "hour already past in the zone: next day", text: "You've hit your limit · resets 7pm (Asia/Shanghai)", kind: "rate_limit", at: "2026-01-10T12:00:00Z",
			window: Session, reset: "2026-01-11T11:00:00Z"},
		{name: "hour and minutes", text: "You've hit your limit · resets 3:40pm (America/Ciudad_Juarez)", kind: "rate_limit", at: "2026-02-01T18:00:00Z",
			window: Session, reset: "2026-02-01T22:40:00Z"},
		{name: "midnight is 12am", text: "You've hit your limit · resets 12am (Asia/Shanghai)", kind: "rate_limit", at: "2026-01-10T12:00:00Z",
			window: Session, reset: "2026-01-10T16:00:00Z"},
		{name: "noon is 12pm", text: "You've hit your limit · resets 12pm (UTC)", kind: "rate_limit", at: "2026-01-10T01:00:00Z",
			window: Session, reset: "2026-01-10T12:00:00Z"},
		{name: "a line at the reset instant gets the next one", text: "You've hit your limit · resets 2pm (UTC)", kind: "rate_limit", at: "2026-01-10T14:00:00Z",
			window: Session, reset: "2026-01-11T14:00:00Z"},
		{name: "spring forward: New York 2:30am does not exist", text: "You've hit your limit · resets 2:30am (America/New_York)", kind: "rate_limit", at: "2026-03-08T05:00:00Z",
			window: Session, reset: "2026-03-08T07:30:00Z"},
		{name: "after spring forward the offset is EDT", text: "You've hit your limit · resets 9am (America/New_York)", kind: "rate_limit", at: "2026-03-08T05:00:00Z",
			window: Session, reset: "2026-03-08T13:00:00Z"},
		{name: "fall back: the hour across the change", text: "You've hit your limit · resets 3am (Europe/Paris)", kind: "rate_limit", at: "2026-10-24T23:30:00Z",
			window: Session, reset: "2026-10-25T02:00:00Z"},
		{name: "fall back: an hour that occurs twice, the first", text: "You've hit your limit · resets 1:30am (America/New_York)", kind: "rate_limit", at: "2026-11-01T05:00:00Z",
			window: Session, reset: "2026-11-01T05:30:00Z"},
		{name: "fall back: an hour that occurs twice, the second after the first passed", text: "You've hit your limit · resets 1:30am (America/New_York)", kind: "rate_limit", at: "2026-11-01T05:45:00Z",
			window: Session, reset: "2026-11-01T06:30:00Z"},
		{name: "day name: the next Monday", text: "You've hit your weekly limit · resets Mon 9am (Europe/Paris)", kind: "rate_limit", at: "2026-11-25T10:00:00Z",
			window: Weekly, reset: "2026-11-30T08:00:00Z"},
		{name: "full day name, today later", text: "Weekly limit reached ∙ resets Wednesday 8pm (UTC)", at: "2026-11-25T10:00:00Z",
			window: Weekly, reset: "2026-11-25T20:00:00Z"},
		{name: "month and day", text: "Opus weekly limit reached ∙ resets Oct 6, 1am (America/Los_Angeles)", at: "2025-10-01T00:00:00Z",
			window: "weekly_opus", reset: "2025-10-06T08:00:00Z"},
		{name: "month and day past this year: next year", text: "Weekly limit reached ∙ resets Jan 2 at 1am (UTC)", at: "2025-12-30T00:00:00Z",
			window: Weekly, reset: "2026-01-02T01:00:00Z"},
		{name: "a model's own limit", text: "You've hit your Opus limit · resets 6pm (UTC)", kind: "rate_limit", at: "2026-11-25T10:00:00Z",
			window: "weekly_opus", reset: "2026-11-25T18:00:00Z"},
		{name: "Sonnet weekly limit", text: "You've hit your Sonnet weekly limit · resets Fri 1am (UTC)", kind: "rate_limit", at: "2026-11-25T10:00:00Z",
			window: "weekly_sonnet", reset: "2026-11-27T01:00:00Z"},
		{name: "5-hour limit without a zone: the caller's zone", text: "5-hour limit reached ∙ resets 1am", at: "2026-11-25T10:00:00Z", local: paris,
			window: Session, reset: "2026-11-26T00:00:00Z"},
		{name: "24-hour wall time", text: "Session limit reached ∙ resets 19:00 (UTC)", at: "2026-11-25T10:00:00Z",
			window: Session, reset: "2026-11-25T19:00:00Z"},
		{name: "invalid UTF-8 before the reset (found by FuzzParseNeverFails): read, no panic", text: "\xc3\xc3 Session limit reached ∙ RESETS 19:00 (UTC)", at: "2026-11-25T10:00:00Z",
			window: Session, reset: "2026-11-25T19:00:00Z"},
		{name: "no zone and none given: reset unknown", text: "5-hour limit reached ∙ resets 1am", at: "2026-11-25T10:00:00Z",
			window: Session},
		{name: "unknown zone (anonymized): reset unknown", text: "You've hit your limit · resets 2pm (lorem ipsum d)", kind: "rate_limit", at: "2026-11-25T10:00:00Z",
			window: Session},
		{name: "the reset clause ends at the next clause", text: "You've hit your limit · resets 4pm (UTC) · /upgrade to increase your usage limit.", kind: "rate_limit", at: "2026-11-25T10:00:00Z",
			window: Session, reset: "2026-11-25T16:00:00Z"},
		{name: "monthly spend limit", text: "You've hit your monthly spend limit · raise it at claude.ai/settings/usage?from=cc_cli_limit_message", kind: "rate_limit", at: "2026-11-25T10:00:00Z",
			window: MonthlySpend},
		{name: "approaching: a warning", text: "Approaching usage limit · resets at 3pm (UTC)", at: "2026-11-25T10:00:00Z",
			window: Session, reset: "2026-11-25T15:00:00Z", warning: true},
		{name: "unknown wording of a rate limit", text: "Your plan's quota is used up for now", kind: "rate_limit", at: "2026-11-25T10:00:00Z",
			window: Unknown},
		{name: "unknown limit wording with a limit-reached phrase", text: "Team limit reached", at: "2026-11-25T10:00:00Z",
			window: Unknown},
		{name: "a transient 429 is no limit hit", text: `API Error: 429 {"type":"error","error":{"type":"rate_limit_error"}}`, kind: "rate_limit", at: "2026-11-25T10:00:00Z", notLimit: true},
		{name: "the context window is no plan limit", text: "Context limit reached · /compact or /clear to continue", kind: "invalid_request", at: "2026-11-25T10:00:00Z", notLimit: true},
		{name: "other notices are not limits", text: "Prompt is too long", kind: "invalid_request", at: "2026-11-25T10:00:00Z", notLimit: true},
		{name: "no response requested", text: "No response requested.", at: "2026-11-25T10:00:00Z", notLimit: true},
		{name: "a bad hour is no reset", text: "You've hit your limit · resets 13pm (UTC)", kind: "rate_limit", at: "2026-11-25T10:00:00Z", window: Session},
		{name: "a bad day name is no reset", text: "You've hit your limit · resets Someday 1pm (UTC)", kind: "rate_limit", at: "2026-11-25T10:00:00Z", window: Session},
		{name: "no line time: no wall-time reset", text: "You've hit your limit · resets 1pm (UTC)", kind: "rate_limit", window: Session},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var at time.Time
			if tc.at != "" {
				at = ts(tc.at)
			}
			n, ok := Parse(tc.text, tc.kind, at, Zones{Load: time.LoadLocation, Local: tc.local})
			if ok == tc.notLimit {
				t.Fatalf("limit notice %v, want %v", ok, !tc.notLimit)
			}
			if !ok {
				return
			}
			if n.Window != tc.window || n.Warning != tc.warning {
				t.Errorf("window %q warning %v, want %q %v", n.Window, n.Warning, tc.window, tc.warning)
			}
			switch {
			case tc.reset == "" && !n.Reset.IsZero():
				t.Errorf("reset %v, want none", n.Reset)
			case tc.reset != "" && !n.Reset.Equal(ts(tc.reset)):
				t.Errorf("reset %v, want %s", n.Reset, tc.reset)
			}
		})
	}
}

func FuzzParseNeverFails(f *testing.F) {
	for _, s := range []string{"You've hit your limit · resets 7pm (Asia/Shanghai)", "Claude AI usage limit reached|1750284000",
		"Claude AI usage limit reached: Mon, Aug 11, 2025, 4:00:00 PM GMT+2", "resets Oct 6, 1am", "limit ("} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, ok := Parse(s, "rate_limit", time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Zones{Load: time.LoadLocation, Local: time.UTC})
		if ok && n.Window == "" {
			t.Fatal("a limit notice without a window")
		}
	})
}
