package prom

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

func TestHistoryWritesTheEdgesOfTheCellsASeriesMovedIn(t *testing.T) {
	at := func(s string) time.Time {
		tm, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return tm
	}
	type add struct {
		at      string // "" for an increment without a time
		model   string
		project string
		n       int64
	}
	for _, tc := range []struct {
		name   string
		adds   []add
		end    string
		cut    bool
		recent time.Duration // 0: steps throughout
		want   []string      // the tokens_total sample lines, in order
	}{
		{name: "one increment: 0 at the step before it, its total at the step after, then the counter at the end",
			adds: []add{{"2026-11-01T10:20:00Z", "m", "p", 5}}, end: "2026-11-01T12:30:00.5Z",
			want: []string{
				`claude_transcript_tokens_total{model="m",type="output",project="p",spender="main",instance="i",job="j"} 0 1793527200`,
				`claude_transcript_tokens_total{model="m",type="output",project="p",spender="main",instance="i",job="j"} 5 1793530800`,
				`claude_transcript_tokens_total{model="m",type="output",project="p",spender="main",instance="i",job="j"} 5 1793536200.500`,
			}},
		{name: "before the recent window, the midnights around the days it moved in; within it, the steps",
			adds: []add{{"2026-10-01T10:20:00Z", "m", "p", 5}, {"2026-10-01T15:00:00Z", "m", "p", 2}, {"2026-10-03T01:00:00Z", "m", "p", 1},
				{"2026-10-31T23:30:00Z", "m", "p", 4}},
			end: "2026-11-01T12:30:00Z", recent: 36 * time.Hour,
			want: []string{
				`claude_transcript_tokens_total{model="m",type="output",project="p",spender="main",instance="i",job="j"} 0 1790812800`,
				`claude_transcript_tokens_total{model="m",type="output",project="p",spender="main",instance="i",job="j"} 7 1790899200`,
				`claude_transcript_tokens_total{model="m",type="output",project="p",spender="main",instance="i",job="j"} 7 1790985600`,
				`claude_transcript_tokens_total{model="m",type="output",project="p",spender="main",instance="i",job="j"} 8 1791072000`,
				`claude_transcript_tokens_total{model="m",type="output",project="p",spender="main",instance="i",job="j"} 8 1793487600`,
				`claude_transcript_tokens_total{model="m",type="output",project="p",spender="main",instance="i",job="j"} 12 1793491200`,
				`claude_transcript_tokens_total{model="m",type="output",project="p",spender="main",instance="i",job="j"} 12 1793536200`,
			}},
		{name: "an increment on a boundary counts from the next one; one without a time only at the end",
			adds: []add{{"2026-11-01T10:00:00Z", "m", "p", 1}, {"", "m", "p", 7}, {"2026-11-01T10:59:59Z", "m", "p", 2}},
			end:  "2026-11-01T11:00:00Z",
			want: []string{
				`claude_transcript_tokens_total{model="m",type="output",project="p",spender="main",instance="i",job="j"} 0 1793527200`,
				`claude_transcript_tokens_total{model="m",type="output",project="p",spender="main",instance="i",job="j"} 10 1793530800`,
			}},
		{name: "times before 2024 are not moments: at the end only",
			adds: []add{{"1970-01-01T00:00:01Z", "m", "p", 3}}, end: "2026-11-01T11:00:00Z",
			want: []string{
				`claude_transcript_tokens_total{model="m",type="output",project="p",spender="main",instance="i",job="j"} 3 1793530800`,
			}},
		{name: "label values are escaped",
			adds: []add{{"2026-11-01T10:00:00Z", "m", "a\"b\\c\nd", 1}}, end: "2026-11-01T11:00:00Z",
			want: []string{
				`claude_transcript_tokens_total{model="m",type="output",project="a\"b\\c\nd",spender="main",instance="i",job="j"} 0 1793527200`,
				`claude_transcript_tokens_total{model="m",type="output",project="a\"b\\c\nd",spender="main",instance="i",job="j"} 1 1793530800`,
			}},
		{name: "cut: the history ends on a boundary with what came before it; a series that begins after is left out",
			adds: []add{{"2026-11-01T09:10:00Z", "m", "p", 1}, {"2026-11-01T10:10:00Z", "m", "p", 2}, {"2026-11-01T10:20:00Z", "n", "p", 4}},
			end:  "2026-11-01T10:00:00Z", cut: true,
			want: []string{
				`claude_transcript_tokens_total{model="m",type="output",project="p",spender="main",instance="i",job="j"} 0 1793523600`,
				`claude_transcript_tokens_total{model="m",type="output",project="p",spender="main",instance="i",job="j"} 1 1793527200`,
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := NewMetrics(prometheus.NewRegistry(), 0, time.Now)
			recent := tc.recent
			if recent == 0 {
				recent = 1 << 40
			}
			h := NewHistory(time.Hour, recent)
			m.RecordHistory(h)
			for _, a := range tc.adds {
				var tm time.Time
				if a.at != "" {
					tm = at(a.at)
				}
				m.At(tm)
				m.AddTokens(a.model, "output", a.project, "main", a.n)
			}
			var b strings.Builder
			if err := h.WriteOpenMetrics(&b, m, at(tc.end), tc.cut, [2]string{"instance", "i"}, [2]string{"job", "j"}); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, l := range strings.Split(b.String(), "\n") {
				if strings.HasPrefix(l, "claude_transcript_tokens_total{") {
					got = append(got, l)
				}
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			// Only families with a series have HELP and TYPE: here the
			// tokens alone.
			if n := strings.Count(b.String(), "# TYPE "); n != 1 {
				t.Errorf("%d families written, want 1 (tokens):\n%s", n, b.String())
			}
			if !strings.HasSuffix(b.String(), "# EOF\n") {
				t.Errorf("no # EOF at the end")
			}
		})
	}
}

// anchoredIncrease is increase(s[rng] anchored) at t as Prometheus 3
// defines it: the last sample at or before t-rng within the lookback delta
// (else the first sample in the range) to the last sample in (t-rng, t];
// no sample in the range, no result (0 under sum()).
func anchoredIncrease(ts []int64, vs []float64, t, rng, lookback int64) float64 {
	before, first, last := -1, -1, -1
	for i, x := range ts {
		if x <= t-rng && x >= t-rng-lookback {
			before = i
		}
		if x > t-rng && x <= t {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	if last < 0 {
		return 0
	}
	if before >= 0 {
		first = before
	}
	return vs[last] - vs[first]
}

func TestHistoryAnchoredIncreaseIsExactAtEveryCellEdge(t *testing.T) {
	end := time.Date(2026, 11, 1, 12, 30, 0, 0, time.UTC)
	start := end.Add(-20 * 24 * time.Hour).Truncate(24 * time.Hour)
	m := NewMetrics(prometheus.NewRegistry(), 0, time.Now)
	h := NewHistory(time.Hour, 48*time.Hour)
	m.RecordHistory(h)
	type inc struct {
		at time.Time
		n  int64
	}
	var incs []inc
	// A deterministic scatter: bursts on some days, quiet days between,
	// increments on edges and just before them.
	for k := int64(0); k < 400; k++ {
		at := start.Add(time.Duration((k*k*7919+k*104729)%(int64(end.Sub(start)/time.Second))) * time.Second)
		if k%9 == 0 {
			at = at.Truncate(time.Hour)
		}
		if k%11 == 0 {
			at = at.Truncate(24 * time.Hour).Add(-time.Second)
		}
		if at.Weekday() == time.Tuesday {
			continue
		}
		incs = append(incs, inc{at, k%13 + 1})
		m.At(at)
		m.AddTokens("m", "output", "p", "main", k%13+1)
	}
	var b strings.Builder
	if err := h.WriteOpenMetrics(&b, m, end, false); err != nil {
		t.Fatal(err)
	}
	var ts []int64
	var vs []float64
	for _, l := range strings.Split(b.String(), "\n") {
		if !strings.HasPrefix(l, "claude_transcript_tokens_total{") {
			continue
		}
		f := strings.Fields(l)
		v, _ := strconv.ParseFloat(f[1], 64)
		sec, _ := strconv.ParseFloat(f[2], 64)
		ts, vs = append(ts, int64(sec*1000)), append(vs, v)
	}
	if len(ts) >= 24*20 {
		t.Fatalf("%d samples over 20 days: not sparse", len(ts))
	}
	truth := func(from, to time.Time) float64 {
		var n float64
		for _, x := range incs {
			if !x.at.Before(from) && x.at.Before(to) {
				n += float64(x.n)
			}
		}
		return n
	}
	check := func(at time.Time, rng time.Duration) {
		t.Helper()
		got := anchoredIncrease(ts, vs, at.UnixMilli(), rng.Milliseconds(), (5 * time.Minute).Milliseconds())
		if want := truth(at.Add(-rng), at); got != want {
			t.Errorf("increase([%s] anchored) at %s: %v, want %v", rng, at.Format(time.RFC3339), got, want)
		}
	}
	for d := start.Add(24 * time.Hour); !d.After(end.Truncate(24 * time.Hour)); d = d.Add(24 * time.Hour) {
		check(d, 24*time.Hour)
		check(d, 7*24*time.Hour)
	}
	for hr := end.Truncate(24 * time.Hour).Add(-47 * time.Hour); hr.Before(end); hr = hr.Add(time.Hour) {
		check(hr, time.Hour)
	}
	if got, want := vs[len(vs)-1], truth(start.Add(-48*time.Hour), end); got != want {
		t.Errorf("the last sample %v, want the counter %v", got, want)
	}
}

// A cut history's last sample is the sum of the increments before the cut.
// Float increments summed in the map's order changed the total's last bits
// from one write to the next: the same history must write the same bytes,
// and its total is the increments' sum in time order.
func TestHistoryWritesTheSameBytesEveryTime(t *testing.T) {
	end := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	m := NewMetrics(prometheus.NewRegistry(), 0, time.Now)
	h := NewHistory(time.Hour, 48*time.Hour)
	m.RecordHistory(h)
	var want float64
	for k := 0; k < 300; k++ {
		at := end.Add(-time.Duration(300-k) * 5 * time.Hour)
		x := 0.1 + float64(k%17)*1.37e-3 + float64(k)*1e3
		m.At(at)
		m.AddActiveTime("cli", "p", x)
		want += x
	}
	// An increment after the cut is counted in the counter, not written.
	m.At(end.Add(time.Hour))
	m.AddActiveTime("cli", "p", 1)
	var first string
	for i := 0; i < 20; i++ {
		var b strings.Builder
		if err := h.WriteOpenMetrics(&b, m, end, true); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = b.String()
			continue
		}
		if b.String() != first {
			t.Fatalf("write %d differs from the first: %s", i, firstDifference(first, b.String()))
		}
	}
	var last string
	for _, l := range strings.Split(first, "\n") {
		if strings.HasPrefix(l, "claude_transcript_active_time_seconds_total{") {
			last = l
		}
	}
	f := strings.Fields(last)
	if len(f) != 3 {
		t.Fatalf("no active time sample in\n%s", first)
	}
	if got, _ := strconv.ParseFloat(f[1], 64); got != want {
		t.Errorf("last sample %v, want the time-ordered sum %v", got, want)
	}
}
