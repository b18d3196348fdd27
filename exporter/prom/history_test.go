package prom

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

func TestHistoryWritesEveryStepFromZeroToTheCounter(t *testing.T) {
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
		name string
		adds []add
		end  string
		cut  bool
		want []string // the tokens_total sample lines, in order
	}{
		{name: "one increment: 0 at the boundary before it, then every hour, then the counter at the end",
			adds: []add{{"2026-11-01T10:20:00Z", "m", "p", 5}}, end: "2026-11-01T12:30:00.5Z",
			want: []string{
				`claude_transcript_tokens_total{model="m",type="output",project="p",spender="main",instance="i",job="j"} 0 1793527200`,
				`claude_transcript_tokens_total{model="m",type="output",project="p",spender="main",instance="i",job="j"} 5 1793530800`,
				`claude_transcript_tokens_total{model="m",type="output",project="p",spender="main",instance="i",job="j"} 5 1793534400`,
				`claude_transcript_tokens_total{model="m",type="output",project="p",spender="main",instance="i",job="j"} 5 1793536200.500`,
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
			h := NewHistory(time.Hour)
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
			if !strings.HasSuffix(b.String(), "# EOF\n") {
				t.Errorf("no # EOF at the end")
			}
		})
	}
}
