// Package limits reads the notices Claude Code writes when a plan's usage
// limit stops it (a <synthetic> assistant line): which limit (the window)
// and when it resets.
//
// Wordings known (Claude Code 1.x to 2.1.2xx, and those users report):
//
//	Claude AI usage limit reached|1750284000           (reset as Unix time)
//	Claude AI usage limit reached: Mon, Aug 11, 2025, 4:00:00 PM GMT+2
//	You've hit your limit · resets 7pm (Asia/Shanghai)  (also 3:40pm, 12am)
//	You've hit your weekly limit · resets Mon 9am (Europe/Paris)
//	You've hit your Opus limit · resets Oct 6, 1am (UTC)
//	5-hour limit reached ∙ resets 1am / Weekly limit reached ∙ resets Oct 6, 1am
//	You've hit your monthly spend limit · raise it at claude.ai/settings/usage
//	Approaching usage limit · resets at 3pm              (a warning, not a hit)
//
// A wall time is the first such instant in the named IANA zone (else the
// zone the caller gives) after the line's own time, with the zone's DST
// rules: a time a DST jump skips is read as Go's time.Date normalizes it
// (2:30am on a spring-forward day is 3:30am). Any other notice of a limit
// is window Unknown without a reset; nothing here fails.
//
// It is pure: every time is passed in, and zone names are resolved by
// the caller's Zones (the daemon passes time.LoadLocation, and its
// binary embeds the zone database, time/tzdata, so that zones resolve on
// machines without one).
package limits

import (
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Zones resolves the zones of wall times: Load the IANA zone a notice
// names (nil: such a reset is unknown), Local the zone of a wall time
// that names none (nil: unknown).
type Zones struct {
	Load  func(name string) (*time.Location, error)
	Local *time.Location
}

// Windows: the values of the window label.
const (
	Session      = "session"
	Weekly       = "weekly"
	MonthlySpend = "monthly_spend"
	Unknown      = "unknown"
)

// Notice is what a limit notice says.
type Notice struct {
	// Window is the limit hit: Session, Weekly, weekly_<model> (opus,
	// sonnet, haiku), MonthlySpend or Unknown.
	Window string
	// Reset is when the limit resets (zero when the notice does not say
	// or the zone is unknown).
	Reset time.Time
	// Warning is set for a notice that a limit is near, not reached.
	Warning bool
}

// Parse reads a <synthetic> line's text (its start suffices) of error
// kind kind (the line's error field, "" when none), written at at, its
// wall times read with zones. ok is false when the line is not about a plan limit: other
// API errors, and transient rate limits ("API Error: 429 …"), which
// Claude Code retries.
func Parse(text, kind string, at time.Time, zones Zones) (n Notice, ok bool) {
	low := strings.ToLower(strings.TrimSpace(text))
	if strings.HasPrefix(low, "api error") || strings.Contains(low, "context") || strings.Contains(low, "prompt is too long") {
		// A transient API error, or the context window ("Context limit
		// reached · /compact or /clear to continue"): no plan limit.
		return Notice{}, false
	}
	if !strings.Contains(low, "limit") {
		if kind == "rate_limit" {
			return Notice{Window: Unknown}, true
		}
		return Notice{}, false
	}
	n.Window = window(low)
	n.Warning = strings.HasPrefix(low, "approaching")
	if !n.Warning && n.Window == Unknown && kind != "rate_limit" && !strings.Contains(low, "limit reached") && !strings.Contains(low, "hit your") {
		return Notice{}, false
	}
	n.Reset = reset(text, at, zones)
	return n, true
}

var modelRe = regexp.MustCompile(`\b(opus|sonnet|haiku)\b`)

func window(low string) string {
	switch {
	case strings.Contains(low, "spend limit"):
		return MonthlySpend
	case modelRe.MatchString(low[:max(0, strings.Index(low, "limit"))]):
		return Weekly + "_" + modelRe.FindString(low)
	case strings.Contains(low, "weekly"):
		return Weekly
	case strings.Contains(low, "usage limit"), strings.Contains(low, "hit your limit"),
		strings.Contains(low, "5-hour"), strings.Contains(low, "5 hour"), strings.Contains(low, "session limit"):
		return Session
	}
	return Unknown
}

var (
	epochRe  = regexp.MustCompile(`\|\s*(\d{9,13})\b`)
	datedRe  = regexp.MustCompile(`(?i)reached:\s*(?:[a-z]{3},\s*)?([a-z]{3} \d{1,2}, \d{4}, \d{1,2}:\d{2}(?::\d{2})? [ap]m)\s*(?:(?:gmt|utc)\s*([+-]\d{1,2})(?::?(\d{2}))?)?`)
	resetsRe = regexp.MustCompile(`(?i)\bresets\s+(?:at\s+)?(?:on\s+)?(.*?)\s*(?:\(([^)]*)\))?\s*$`)
	wallRe   = regexp.MustCompile(`(?i)^(?:([a-z]+)\.?\s+(\d{1,2})?,?\s*(?:at\s+)?)?(\d{1,2})(?::(\d{2}))?\s*([ap]m)?$`)
)

var months = map[string]time.Month{"jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6, "jul": 7, "aug": 8,
	"sep": 9, "oct": 10, "nov": 11, "dec": 12}

var weekdays = map[string]time.Weekday{"sun": time.Sunday, "mon": time.Monday, "tue": time.Tuesday, "wed": time.Wednesday,
	"thu": time.Thursday, "fri": time.Friday, "sat": time.Saturday}

func reset(text string, at time.Time, zones Zones) time.Time {
	if m := epochRe.FindStringSubmatch(text); m != nil {
		v, err := strconv.ParseInt(m[1], 10, 64)
		if err != nil {
			return time.Time{}
		}
		if len(m[1]) >= 13 {
			return time.UnixMilli(v).UTC()
		}
		return time.Unix(v, 0).UTC()
	}
	if m := datedRe.FindStringSubmatch(text); m != nil {
		loc := time.UTC
		if m[2] != "" {
			h, _ := strconv.Atoi(m[2])
			mm, _ := strconv.Atoi(m[3])
			off := (abs(h)*3600 + mm*60)
			if strings.HasPrefix(m[2], "-") {
				off = -off
			}
			loc = time.FixedZone("", off)
		}
		for _, layout := range []string{"Jan 2, 2006, 3:04:05 PM", "Jan 2, 2006, 3:04 PM"} {
			if t, err := time.ParseInLocation(layout, strings.ToUpper(m[1][:1])+strings.ToLower(m[1][1:3])+strings.ToUpper(m[1][3:]), loc); err == nil {
				return t.UTC()
			}
		}
		return time.Time{}
	}
	if at.IsZero() {
		return time.Time{}
	}
	m := resetsRe.FindStringSubmatch(firstClause(text))
	if m == nil {
		return time.Time{}
	}
	loc := zones.Local
	if z := strings.TrimSpace(m[2]); z != "" {
		if zones.Load == nil || z == "Local" || z == "" {
			return time.Time{}
		}
		l, err := zones.Load(z)
		if err != nil || l == nil {
			return time.Time{}
		}
		loc = l
	}
	if loc == nil {
		return time.Time{}
	}
	return wallTime(strings.TrimSpace(m[1]), at, loc)
}

// firstClause is the notice up to a following sentence or clause that
// is not about the reset ("· /upgrade to …").
func firstClause(text string) string {
	i := indexASCIIFold(text, "resets")
	if i < 0 {
		return text
	}
	rest := text[i:]
	for _, sep := range []string{"·", "∙", "\n", ". "} {
		if j := strings.Index(rest, sep); j >= 0 {
			rest = rest[:j]
		}
	}
	return strings.TrimRight(text[:i]+rest, " .")
}

// indexASCIIFold is the index in s of the first match of the lower-case
// ASCII word w, ASCII letters matched in either case, or -1. The index is
// one of s itself: strings.ToLower may change the length of what it
// lowers (invalid UTF-8 becomes U+FFFD), so an index into its result is
// no index into s.
func indexASCIIFold(s, w string) int {
	for i := 0; i+len(w) <= len(s); i++ {
		j := 0
		for ; j < len(w); j++ {
			c := s[i+j]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != w[j] {
				break
			}
		}
		if j == len(w) {
			return i
		}
	}
	return -1
}

// wallTime is the first instant after at, in loc, that the wall time s
// names: "7pm", "3:40pm", "12am", "19:00", "Mon 9am", "Oct 6, 1am",
// "Oct 6 at 1am".
func wallTime(s string, at time.Time, loc *time.Location) time.Time {
	m := wallRe.FindStringSubmatch(s)
	if m == nil {
		return time.Time{}
	}
	hour, _ := strconv.Atoi(m[3])
	minute := 0
	if m[4] != "" {
		minute, _ = strconv.Atoi(m[4])
	}
	switch ampm := strings.ToLower(m[5]); {
	case ampm != "" && (hour < 1 || hour > 12):
		return time.Time{}
	case ampm == "am" && hour == 12:
		hour = 0
	case ampm == "pm" && hour != 12:
		hour += 12
	}
	if hour > 23 || minute > 59 {
		return time.Time{}
	}
	local := at.In(loc)
	y, mo, d := local.Date()
	word := strings.ToLower(m[1])
	switch {
	case word == "":
		for i := 0; i < 3; i++ {
			if t, ok := firstAfter(y, mo, d+i, hour, minute, loc, at); ok {
				return t
			}
		}
	case m[2] != "" && len(word) >= 3 && months[word[:3]] != 0:
		day, _ := strconv.Atoi(m[2])
		for yy := y; yy <= y+1; yy++ {
			if time.Date(yy, months[word[:3]], day, 12, 0, 0, 0, loc).Day() != day {
				continue // no such day (Feb 30)
			}
			if t, ok := firstAfter(yy, months[word[:3]], day, hour, minute, loc, at); ok {
				return t
			}
		}
	case m[2] == "" && len(word) >= 3:
		wd, ok := weekdays[word[:3]]
		if !ok {
			return time.Time{}
		}
		for i := 0; i < 8; i++ {
			if time.Date(y, mo, d+i, 12, 0, 0, 0, loc).Weekday() != wd {
				continue
			}
			if t, ok := firstAfter(y, mo, d+i, hour, minute, loc, at); ok {
				return t
			}
		}
	}
	return time.Time{}
}

// firstAfter is the first instant after at whose wall clock in loc is
// hour:minute on the given day. A wall time that occurs twice (DST ends)
// is the first of the two after at; one that a DST jump skips is read as
// the same time after the jump (2:30am is 3:30am).
func firstAfter(y int, mo time.Month, d, hour, minute int, loc *time.Location, at time.Time) (time.Time, bool) {
	t0 := time.Date(y, mo, d, hour, minute, 0, 0, loc)
	var exact []time.Time
	for _, c := range []time.Time{t0.Add(-time.Hour), t0, t0.Add(time.Hour)} {
		w := c.In(loc)
		if w.Hour() == hour && w.Minute() == minute && w.Day() == t0.Day() {
			exact = append(exact, c)
		}
	}
	if len(exact) == 0 {
		// Skipped by a jump: the wall time an hour later, after it.
		t := t0
		if w := t0.In(loc); w.Hour() < hour || (w.Hour() == hour && w.Minute() < minute) {
			t = t0.Add(time.Hour)
		}
		exact = append(exact, t)
	}
	for _, c := range exact {
		if c.After(at) {
			return c.UTC(), true
		}
	}
	return time.Time{}, false
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
