package prom

import (
	"bytes"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/metrics"
)

// both registers a collector in two registries, as the daemon does with
// every collector but the usage families.
type both [2]*prometheus.Registry

func (b both) Register(c prometheus.Collector) error {
	if err := b[0].Register(c); err != nil {
		return err
	}
	return b[1].Register(c)
}

func (b both) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := b.Register(c); err != nil {
			panic(err)
		}
	}
}

func (b both) Unregister(c prometheus.Collector) bool {
	return b[0].Unregister(c) && b[1].Unregister(c)
}

// expositionFormats are the formats Format writes, as Prometheus and
// curl ask for them.
var expositionFormats = []expfmt.Format{
	expfmt.NewFormat(expfmt.TypeTextPlain),
	expfmt.NewFormat(expfmt.TypeTextPlain).WithEscapingScheme(0),
	expfmt.NewFormat(expfmt.TypeOpenMetrics),
	expfmt.Format(expfmt.OpenMetricsType + `; version=` + expfmt.OpenMetricsVersion_0_0_1 + `; charset=utf-8`),
}

func TestUsageTextIsWhatExpfmtWritesForTheGatheredFamilies(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		feed func(m *Metrics, self *Self)
		keep func(string) bool
	}{
		{name: "nothing counted yet", feed: func(*Metrics, *Self) {}},
		{
			name: "every usage family",
			feed: func(m *Metrics, self *Self) {
				feedEveryKind(m, self, now)
				// and what feedEveryKind leaves out
				m.AddCost("claude-opus-4-6", "repo", "main", 0.1)
				m.AddCost("claude-opus-4-6", "repo", "main", 0.2)
				m.AddWebSearches("claude-opus-4-6", "repo", 2)
				m.ObserveToolDuration("Bash", 0)
				m.ObserveToolDuration("Read", 1e6) // past the last bucket
				m.AddLinesOfCode("added", "Edit", "go", "repo", 40)
				m.AddEditDecision("Edit", "accept", "go", "repo")
				m.AddCommit("repo")
				m.AddPullRequest("gh", "repo")
				m.AddActiveTime("user", "repo", 12.5)
			},
		},
		{
			name: "label values that need escaping, in many series to sort",
			feed: func(m *Metrics, _ *Self) {
				for i, p := range []string{`C:\Users\me\repo`, `say "hi"`, "two\nlines", "ünïcödé ✓", "", "z", "a", `\"\n`, "repo"} {
					m.AddTokens("claude-opus-4-6", "input", p, "main", int64(i+1)*1_000_000_007)
					m.AddTokens(p, "output", "repo", p, int64(i))
					m.AddToolCall(p, "ok", p)
					m.ObserveToolDuration(p, float64(i)/3)
					m.AddCost("m", p, "main", 1e-7*float64(i))
				}
			},
		},
		{
			name: "exemplars",
			feed: func(m *Metrics, _ *Self) {
				m.At(now.Add(123456789 * time.Nanosecond))
				m.Exemplar(metrics.Exemplar{TraceID: "0af7651916cd43dd8448eb211c80319c", SpanID: "b7ad6b7169203331"})
				m.AddTokens("opus", "output", "p", "main", 12)
				m.AddCost("opus", "p", "main", 0.25)
				m.Exemplar(metrics.Exemplar{})
				m.AddTokens("opus", "input", "p", "main", 3)
			},
		},
		{
			name: "exemplars of lines whose time is out of range are dropped",
			feed: func(m *Metrics, _ *Self) {
				for _, at := range []time.Time{time.UnixMilli(3e14), time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC)} {
					m.At(at)
					m.Exemplar(metrics.Exemplar{TraceID: "0af7651916cd43dd8448eb211c80319c", SpanID: "b7ad6b7169203331"})
					m.AddTokens("opus", "output", "p", "main", 12)
					m.AddCost("opus", "p", "main", 0.25)
					m.Exemplar(metrics.Exemplar{})
				}
			},
		},
		{
			name: "large, tiny and whole values",
			feed: func(m *Metrics, _ *Self) {
				m.AddTokens("opus", "cache_read", "p", "main", 1<<53)
				m.AddTokens("opus", "cache_read", "q", "main", 1e15)
				m.AddCost("opus", "p", "main", 1e21)
				m.AddCost("opus", "q", "main", 5e-324)
				m.AddCost("opus", "r", "main", 1)
				m.AddActiveTime("user", "p", math.MaxFloat64)
			},
		},
		{
			name: "before the backfill is done",
			feed: func(m *Metrics, self *Self) {
				m.AddTokens("opus", "output", "p", "main", 12)
				m.AddUnpricedTokens("glm-4.7", 9)
				self.LinesRead.Add(10)
			},
			keep: func(name string) bool {
				return !strings.HasPrefix(name, Namespace+"_") || strings.HasPrefix(name, Namespace+"_exporter_")
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			all, own := prometheus.NewRegistry(), prometheus.NewRegistry()
			m := NewMetrics(all, time.Minute, func() time.Time { return now })
			m.RegisterUnwritten(own)
			self := NewSelf(both{all, own})
			tc.feed(m, self)
			var text UsageText // reused, as the daemon reuses it
			check := func() {
				t.Helper()
				for _, f := range expositionFormats {
					// What promhttp writes: every family gathered, then encoded.
					mfs, err := all.Gather()
					if err != nil {
						t.Fatal(err)
					}
					var want bytes.Buffer
					enc := expfmt.NewEncoder(&want, f)
					for _, mf := range mfs {
						// client_golang takes an exemplar's labels from a map,
						// in random order; Format names the trace first.
						for _, mt := range mf.Metric {
							if e := mt.GetCounter().GetExemplar(); e != nil {
								slices.SortFunc(e.Label, func(a, b *dto.LabelPair) int {
									return -strings.Compare(a.GetName(), b.GetName())
								})
							}
						}
						if tc.keep == nil || tc.keep(mf.GetName()) {
							if err := enc.Encode(mf); err != nil {
								t.Fatal(err)
							}
						}
					}
					if c, ok := enc.(expfmt.Closer); ok {
						if err := c.Close(); err != nil {
							t.Fatal(err)
						}
					}
					m.Format(&text, f, tc.keep)
					rest, err := own.Gather()
					if err != nil {
						t.Fatal(err)
					}
					rest = keepFamilies(rest, tc.keep)
					var got bytes.Buffer
					if err := text.WriteTo(&got, rest, f); err != nil {
						t.Fatal(err)
					}
					if want.String() != got.String() {
						t.Errorf("%s: Format and WriteTo differ from expfmt:\n%s", f, firstDifference(want.String(), got.String()))
					}
				}
			}
			check()
			// Series added after a scrape take their place in the next.
			m.AddTokens("aa-new", "output", "a", "main", 1)
			m.AddTokens("zz-new", "output", "z", "main", 2)
			m.ObserveToolDuration("Aa", 3)
			check()
		})
	}
}

func keepFamilies(mfs []*dto.MetricFamily, keep func(string) bool) []*dto.MetricFamily {
	if keep == nil {
		return mfs
	}
	var kept []*dto.MetricFamily
	for _, mf := range mfs {
		if keep(mf.GetName()) {
			kept = append(kept, mf)
		}
	}
	return kept
}

// firstDifference shows the first line where two expositions differ.
func firstDifference(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(w) || i < len(g); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return "line " + strconv.Itoa(i+1) + "\nwant: " + wl + "\ngot:  " + gl
		}
	}
	return "(same lines)"
}

// An exemplar whose request had no time gets the scrape's, as
// client_golang gives it (the test above cannot compare two clocks).
func TestUsageTextTimesAnExemplarWithoutATimeAtTheScrape(t *testing.T) {
	m := NewMetrics(prometheus.NewRegistry(), time.Minute, time.Now)
	m.Exemplar(metrics.Exemplar{TraceID: "aa", SpanID: "s1"})
	m.AddTokens("sonnet", "output", "p", "main", 1)
	before := time.Now()
	var out bytes.Buffer
	var text UsageText
	m.Format(&text, expfmt.NewFormat(expfmt.TypeOpenMetrics), nil)
	if err := text.WriteTo(&out, nil, expfmt.NewFormat(expfmt.TypeOpenMetrics)); err != nil {
		t.Fatal(err)
	}
	after := time.Now()
	_, ts, ok := strings.Cut(out.String(), `# {trace_id="aa",span_id="s1"} 1.0 `)
	if !ok {
		t.Fatalf("no exemplar in\n%s", out.String())
	}
	ts, _, _ = strings.Cut(ts, "\n")
	sec, err := strconv.ParseFloat(ts, 64)
	if err != nil {
		t.Fatal(err)
	}
	if at := time.Unix(0, int64(sec*1e9)); at.Before(before.Add(-time.Millisecond)) || at.After(after.Add(time.Millisecond)) {
		t.Errorf("exemplar time %v, want between %v and %v", at, before, after)
	}
}

func TestTextFormatIsTheTextFormatsOnly(t *testing.T) {
	for _, tc := range []struct {
		f    expfmt.Format
		want bool
	}{
		{expfmt.NewFormat(expfmt.TypeTextPlain), true},
		{expfmt.NewFormat(expfmt.TypeOpenMetrics), true},
		{expfmt.NewFormat(expfmt.TypeProtoDelim), false},
		{expfmt.NewFormat(expfmt.TypeProtoText), false},
		{expfmt.Format(expfmt.OpenMetricsType + `; version=` + expfmt.OpenMetricsVersion_2_0_0 + `; charset=utf-8`), false},
	} {
		if got := TextFormat(tc.f); got != tc.want {
			t.Errorf("TextFormat(%q) = %v, want %v", tc.f, got, tc.want)
		}
	}
}
