package planusage

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// The windows every answer of the known shape may hold.
const (
	WindowFiveHour       = "five_hour"
	WindowSevenDay       = "seven_day"
	WindowSevenDayOpus   = "seven_day_opus"
	WindowSevenDaySonnet = "seven_day_sonnet"
)

var knownWindows = map[string]bool{WindowFiveHour: true, WindowSevenDay: true, WindowSevenDayOpus: true, WindowSevenDaySonnet: true}

// MaxOtherWindows bounds the window-shaped keys of other names that are
// served (seven_day_oauth_apps and the like come and go): the label set
// stays small whatever the answer holds.
const MaxOtherWindows = 8

// maxUtilization bounds a utilisation: past it the number is not a
// percentage of a plan (a shape change, e.g. to a count).
const maxUtilization = 1000

var windowName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)

// Window is one usage window of an answer.
type Window struct {
	Name string
	// Utilization is the percentage of the window used (0-100, past 100
	// when over); HasUtilization is false when the answer says null.
	Utilization    float64
	HasUtilization bool
	// ResetsAt is when the window resets; zero when the answer says null.
	ResetsAt time.Time
}

// ExtraUsage is the answer's extra_usage: credits spent beyond the plan.
// The unit of the credits is the endpoint's (status-line tools read them
// as cents of the currency; nothing documents it).
type ExtraUsage struct {
	// Present: the answer holds an extra_usage object.
	Present bool
	Enabled bool
	// Nil when null or absent.
	UsedCredits, MonthlyLimit, Utilization *float64
}

// Usage is one answer of the usage endpoint.
type Usage struct {
	// Windows present in the answer (null ones left out), by name.
	Windows []Window
	Extra   ExtraUsage
	// Ignored counts top-level keys read past: unknown, or window-shaped
	// beyond MaxOtherWindows.
	Ignored int
}

// Window returns the named window.
func (u Usage) Window(name string) (Window, bool) {
	for _, w := range u.Windows {
		if w.Name == name {
			return w, true
		}
	}
	return Window{}, false
}

// ParseUsage reads a 200 answer. An error wraps ErrMalformed or ErrShape
// and names the field; no value of the answer is kept after an error.
func ParseUsage(b []byte) (Usage, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b, &top); err != nil {
		if json.Valid(b) {
			return Usage{}, fmt.Errorf("%w: the answer is not an object", ErrShape)
		}
		return Usage{}, fmt.Errorf("%w: the answer is not JSON", ErrMalformed)
	}
	if top == nil {
		return Usage{}, fmt.Errorf("%w: the answer is null", ErrShape)
	}
	_, five := top[WindowFiveHour]
	_, seven := top[WindowSevenDay]
	if !five && !seven {
		return Usage{}, fmt.Errorf("%w: neither %s nor %s in the answer", ErrShape, WindowFiveHour, WindowSevenDay)
	}
	keys := make([]string, 0, len(top))
	for k := range top {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var u Usage
	others := 0
	for _, k := range keys {
		raw := top[k]
		switch {
		case knownWindows[k]:
			w, ok, err := parseWindow(k, raw)
			if err != nil {
				return Usage{}, err
			}
			if ok {
				u.Windows = append(u.Windows, w)
			}
		case k == "extra_usage":
			e, err := parseExtra(raw)
			if err != nil {
				return Usage{}, err
			}
			u.Extra = e
		case windowName.MatchString(k) && windowShaped(raw) && others < MaxOtherWindows:
			// A window of another name: served when it reads as
			// one, else only ignored (it is not this package's).
			if w, ok, err := parseWindow(k, raw); err == nil && ok {
				u.Windows = append(u.Windows, w)
				others++
			} else {
				u.Ignored++
			}
		default:
			u.Ignored++
		}
	}
	return u, nil
}

// windowShaped says raw is an object with both window keys.
func windowShaped(raw json.RawMessage) bool {
	var o map[string]json.RawMessage
	if json.Unmarshal(raw, &o) != nil || o == nil {
		return false
	}
	_, u := o["utilization"]
	_, r := o["resets_at"]
	return u && r
}

func isNull(raw json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(raw), []byte("null")) }

func parseWindow(name string, raw json.RawMessage) (Window, bool, error) {
	if isNull(raw) {
		return Window{}, false, nil
	}
	var o map[string]json.RawMessage
	if err := json.Unmarshal(raw, &o); err != nil || o == nil {
		return Window{}, false, fmt.Errorf("%w: %s is not an object", ErrShape, name)
	}
	w := Window{Name: name}
	if v, ok := o["utilization"]; ok && !isNull(v) {
		f, err := number(v)
		if err != nil || f < 0 || f > maxUtilization {
			return Window{}, false, fmt.Errorf("%w: %s.utilization is not a percentage", ErrShape, name)
		}
		w.Utilization, w.HasUtilization = f, true
	}
	if v, ok := o["resets_at"]; ok && !isNull(v) {
		var s string
		if json.Unmarshal(v, &s) != nil {
			return Window{}, false, fmt.Errorf("%w: %s.resets_at is not a string", ErrShape, name)
		}
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return Window{}, false, fmt.Errorf("%w: %s.resets_at is not an RFC 3339 time", ErrShape, name)
		}
		w.ResetsAt = t.UTC()
	}
	return w, true, nil
}

// number reads a JSON number (never a string holding one: that is
// another shape).
func number(raw json.RawMessage) (float64, error) {
	var n json.Number
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(&n); err != nil {
		return 0, err
	}
	if s := strings.TrimSpace(string(raw)); strings.HasPrefix(s, `"`) {
		return 0, fmt.Errorf("a string")
	}
	f, err := n.Float64()
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("not a finite number")
	}
	return f, nil
}

func parseExtra(raw json.RawMessage) (ExtraUsage, error) {
	if isNull(raw) {
		return ExtraUsage{}, nil
	}
	var o map[string]json.RawMessage
	if err := json.Unmarshal(raw, &o); err != nil || o == nil {
		return ExtraUsage{}, fmt.Errorf("%w: extra_usage is not an object", ErrShape)
	}
	e := ExtraUsage{Present: true}
	if v, ok := o["is_enabled"]; ok && !isNull(v) {
		if json.Unmarshal(v, &e.Enabled) != nil {
			return ExtraUsage{}, fmt.Errorf("%w: extra_usage.is_enabled is not a boolean", ErrShape)
		}
	}
	for _, f := range []struct {
		key string
		p   **float64
	}{{"used_credits", &e.UsedCredits}, {"monthly_limit", &e.MonthlyLimit}, {"utilization", &e.Utilization}} {
		v, ok := o[f.key]
		if !ok || isNull(v) {
			continue
		}
		n, err := number(v)
		if err != nil || n < 0 {
			return ExtraUsage{}, fmt.Errorf("%w: extra_usage.%s is not a number", ErrShape, f.key)
		}
		*f.p = &n
	}
	return e, nil
}

var errorType = regexp.MustCompile(`^[a-z_]{1,40}$`)

// ErrorType is the error type of an error answer
// ({"error":{"type":"rate_limit_error",...}}, or {"type":"error","error":{...}}),
// for the log: a short lower-case token, else "". The message is never
// read: it is the server's text.
func ErrorType(b []byte) string {
	var v struct {
		Error struct {
			Type string `json:"type"`
		} `json:"error"`
	}
	if json.Unmarshal(b, &v) != nil || !errorType.MatchString(v.Error.Type) {
		return ""
	}
	return v.Error.Type
}

// MaxRetryAfter bounds a Retry-After: a server asking for more is waited
// for this long, then asked again.
const MaxRetryAfter = time.Hour

// RetryAfter reads a Retry-After header: seconds or an HTTP date. ok is
// false when absent, unreadable, zero or in the past (a "retry-after: 0"
// with a 429 has been seen: it says nothing).
func RetryAfter(h string, now time.Time) (time.Duration, bool) {
	h = strings.TrimSpace(h)
	if h == "" {
		return 0, false
	}
	var d time.Duration
	if n, err := strconv.ParseInt(h, 10, 64); err == nil {
		if n <= 0 {
			return 0, false
		}
		d = time.Duration(min(n, int64(MaxRetryAfter/time.Second))) * time.Second
	} else if t, err := time.Parse(time.RFC1123, h); err == nil {
		d = t.Sub(now)
	} else {
		return 0, false
	}
	if d <= 0 {
		return 0, false
	}
	return min(d, MaxRetryAfter), true
}
