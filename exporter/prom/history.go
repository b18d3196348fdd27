package prom

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// History keeps when every counter increment happened, so that a one-shot
// read can be written as OpenMetrics samples with timestamps (the history
// export, loaded into Prometheus with promtool). An increment counts at the
// time of the unit that made it (Metrics.At): a request at the line that
// completed it. Histograms and gauges are not kept.
//
// A sample at time T holds the increments made before T. Time is cut into
// cells: in the recent window before the end (NewHistory's recent), one
// per step; before it, one per UTC day (or per step when the step is a day
// or more). A series has a sample at both edges of every cell in which it
// moved, and at the end of the read, where it is the counter's value: the
// value a scrape of the live exporter would give. Nothing else: a series
// that did not move in a cell has no sample in it.
//
// That is all increase(...[d] anchored) needs to be exact over any range
// whose edges are cell edges (every UTC midnight, every step in the recent
// window): anchored takes the last sample at or before the range's start
// (within the lookback delta) and the last sample in the range. The last
// sample at or before an edge holds the value at the edge, since any
// increment between them would have put a sample on the later edge of its
// cell; and when the lookback finds none, the first sample in the range
// is the value at the start for the same reason, and anchored uses it as
// the start. A range in which the series did not move has no sample and
// no result, which sum() reads as 0.
type History struct {
	step   int64 // milliseconds
	recent int64 // milliseconds: cells are steps this long before the end, days before
	at     int64 // the current unit's time in Unix milliseconds; 0 unknown
	series map[*vec]map[string]*histSeries
}

type histSeries struct {
	labels []string
	steps  map[int64]float64 // step index (time / step) → increments in it
	// late are increments without a time: they appear at the end only.
	late float64
}

// NewHistory returns a history whose cells are steps in the recent window
// before its end and UTC days before it. step divides a day or is a
// multiple of one; recent is rounded back to the midnight before it.
func NewHistory(step, recent time.Duration) *History {
	return &History{step: step.Milliseconds(), recent: recent.Milliseconds(), series: map[*vec]map[string]*histSeries{}}
}

// dayMs is a UTC day in milliseconds.
const dayMs = 24 * 60 * 60 * 1000

// cell returns the edges of the cell holding step index i: a step from
// fineFrom on, a day (or the step, if longer) before it.
func (h *History) cell(i, fineFrom int64) (int64, int64) {
	start := i * h.step
	if start >= fineFrom || h.step >= dayMs {
		return start, start + h.step
	}
	day := floorDiv(start, dayMs) * dayMs
	return day, day + dayMs
}

// RecordHistory makes every counter of m keep its increments in h.
func (m *Metrics) RecordHistory(h *History) {
	for _, v := range m.vecs() {
		if v.typ == prometheus.CounterValue && v.buckets == nil {
			v.hist = h
			h.series[v] = map[string]*histSeries{}
		}
	}
	m.hist = h
}

// At sets the time of the unit whose observations follow (the mapper
// calls it; it implements metrics.Timed): the time of its increments in
// the history and of its exemplars.
func (m *Metrics) At(t time.Time) {
	m.unit = t // an exemplar's time
	if m.hist == nil {
		return
	}
	if t.IsZero() {
		m.hist.at = 0
		return
	}
	m.hist.at = t.UnixMilli()
}

// record keeps one increment of v's series lv.
func (h *History) record(v *vec, lv []string, x float64) {
	if x == 0 {
		return
	}
	k := key(lv)
	s := h.series[v][k]
	if s == nil {
		s = &histSeries{labels: append([]string(nil), lv...), steps: map[int64]float64{}}
		h.series[v][k] = s
	}
	if h.at < historyEpoch {
		// No time, or one before Claude Code existed: not a real
		// moment, and hours from it would be samples by the million.
		s.late += x
		return
	}
	s.steps[floorDiv(h.at, h.step)] += x
}

// historyEpoch is 2024-01-01 UTC in Unix milliseconds: earlier times in a
// transcript are not real (Claude Code was released in 2025).
const historyEpoch = 1704067200000

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// WriteOpenMetrics writes every recorded series as OpenMetrics text with
// timestamps, ending with "# EOF". extra are label pairs added to every
// series (the job and instance a scrape would add); end is the time of the
// last sample: the end of the read, where a series is the counter's value,
// or, when cut, a step boundary before it, where a series holds the
// increments made before end (and a series with none is left out).
func (h *History) WriteOpenMetrics(w io.Writer, m *Metrics, end time.Time, cut bool, extra ...[2]string) error {
	bw := bufio.NewWriterSize(w, 256<<10)
	endMs := end.UnixMilli()
	// The recent window begins at the UTC midnight before end - recent,
	// so that days and steps share their edges.
	fineFrom := floorDiv(endMs-h.recent, dayMs) * dayMs
	vecs := make([]*vec, 0, len(h.series))
	for v := range h.series {
		vecs = append(vecs, v)
	}
	sort.Slice(vecs, func(i, j int) bool { return vecs[i].name < vecs[j].name })
	var line []byte
	for _, v := range vecs {
		// A family's HELP and TYPE come with its first series: a family
		// without one is left out.
		header := false
		keys := make([]string, 0, len(h.series[v]))
		for k := range h.series[v] {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			s := h.series[v][k]
			final := v.value(s.labels)
			idx := make([]int64, 0, len(s.steps))
			for i := range s.steps {
				idx = append(idx, i)
			}
			slices.Sort(idx)
			if cut {
				// Summed in time order, as the samples are: in the map's
				// order, the last bits of a total changed from run to run.
				var before float64
				for _, i := range idx {
					if i*h.step < endMs {
						before += s.steps[i]
					}
				}
				if before == 0 {
					continue
				}
				final = min(before, final)
			}
			if !header {
				family := strings.TrimSuffix(v.name, "_total")
				fmt.Fprintf(bw, "# HELP %s %s\n# TYPE %s counter\n", family, escapeHelp(v.help), family)
				header = true
			}
			prefix := seriesPrefix(v.name, v.labels, s.labels, extra)
			sample := func(ms int64, val float64) {
				line = append(line[:0], prefix...)
				line = append(line, ' ')
				line = strconv.AppendFloat(line, val, 'g', -1, 64)
				line = append(line, ' ')
				line = appendSeconds(line, ms)
				line = append(line, '\n')
				bw.Write(line)
			}
			// The edges of every cell the series moved in, in order, each
			// with the running total of the increments before it.
			var cum, prev float64
			last := int64(math.MinInt64)
			j := 0
			edge := func(t int64) {
				if t <= last || t >= endMs {
					return
				}
				last = t
				for j < len(idx) && idx[j]*h.step < t {
					cum += s.steps[idx[j]]
					j++
				}
				// Summed in another order than the counter, a total may
				// differ from it in its last bits: never above the final
				// value, never below the previous sample.
				prev = min(max(cum, prev), final)
				sample(t, prev)
			}
			for _, i := range idx {
				start, end := h.cell(i, fineFrom)
				edge(start)
				edge(end)
			}
			sample(endMs, final)
		}
	}
	bw.WriteString("# EOF\n")
	return bw.Flush()
}

// appendSeconds writes Unix milliseconds as seconds ("1763900000" or
// "1763900000.123").
func appendSeconds(b []byte, ms int64) []byte {
	sec, frac := floorDiv(ms, 1000), ms-floorDiv(ms, 1000)*1000
	b = strconv.AppendInt(b, sec, 10)
	if frac != 0 {
		b = append(b, '.')
		b = append(b, fmt.Sprintf("%03d", frac)...)
	}
	return b
}

// seriesPrefix is `name{label="value",...}` with the series' labels and
// the extra ones, values escaped as the exposition formats require.
func seriesPrefix(name string, names, values []string, extra [][2]string) string {
	var b strings.Builder
	b.WriteString(name)
	b.WriteByte('{')
	n := 0
	write := func(k, v string) {
		if n > 0 {
			b.WriteByte(',')
		}
		n++
		b.WriteString(k)
		b.WriteString(`="`)
		b.WriteString(escapeLabel(v))
		b.WriteByte('"')
	}
	for i, k := range names {
		write(k, values[i])
	}
	for _, kv := range extra {
		write(kv[0], kv[1])
	}
	b.WriteByte('}')
	return b.String()
}

var labelEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)
var helpEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`)

func escapeLabel(s string) string { return labelEscaper.Replace(s) }
func escapeHelp(s string) string  { return helpEscaper.Replace(s) }
