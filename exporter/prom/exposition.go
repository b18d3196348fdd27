package prom

import (
	"bytes"
	"io"
	"math"
	"mime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// The usage families are most of a scrape: at 100,000 files, 3,700 of its
// 4,100 series. Collected through client_golang, every series becomes a
// const metric, its label pairs, a dto.Metric and its checks, about a
// kilobyte of garbage a series; a daemon whose live heap sits near its
// memory limit then collects on nearly every scrape, and a scrape took
// 26 ms of CPU (50 with gzip and OpenMetrics, as Prometheus asks). So
// the text formats write them straight from the series, in the bytes
// expfmt would write for the families client_golang would gather (the
// tests compare the two), and collect only the rest (the exporter's own,
// Go and process series).

// TextFormat says whether f is one Format writes: the text format or
// OpenMetrics 1.0 (0.0.1 included). Protobuf and OpenMetrics 2.0 are not.
func TextFormat(f expfmt.Format) bool {
	switch f.FormatType() {
	case expfmt.TypeTextPlain:
		return true
	case expfmt.TypeOpenMetrics:
		_, params, err := mime.ParseMediaType(string(f))
		return err == nil && params["version"] != expfmt.OpenMetricsVersion_2_0_0
	}
	return false
}

// RegisterUnwritten registers in r the usage collectors Format does not
// format (the active sessions and the plan's limits), for a registry that
// gathers everything but the families Format formats.
func (m *Metrics) RegisterUnwritten(r prometheus.Registerer) {
	r.MustRegister(activeCollector{m}, planCollector{m})
}

// UsageText is the usage families' exposition in one format, formatted
// at one moment: Format takes it before the other families are gathered,
// so that a scrape never shows a request's tokens in tokens_total before
// its block (the mapper counts the tokens, then the block). Reused from
// scrape to scrape, it keeps the largest exposition's bytes.
type UsageText struct {
	buf   []byte
	names []string
	ends  []int // buf[ends[i-1]:ends[i]] is names[i]'s family
}

// Format formats the usage families keep admits (nil: all) in format f
// (TextFormat must hold), each under its own lock.
func (m *Metrics) Format(t *UsageText, f expfmt.Format, keep func(name string) bool) {
	om := f.FormatType() == expfmt.TypeOpenMetrics
	now := time.Now() // an exemplar without a time gets the scrape's, as client_golang gives it
	t.buf, t.names, t.ends = t.buf[:0], t.names[:0], t.ends[:0]
	for _, v := range m.byName {
		if keep != nil && !keep(v.name) {
			continue
		}
		n := len(t.buf)
		if t.buf = v.appendText(t.buf, om, now); len(t.buf) > n {
			t.names = append(t.names, v.name)
			t.ends = append(t.ends, len(t.buf))
		}
	}
}

// Size is the formatted exposition's size in bytes.
func (t *UsageText) Size() int { return len(t.buf) }

// WriteTo writes the families mfs (gathered from the collectors
// RegisterUnwritten and the rest of the daemon registered, sorted by name)
// and the formatted usage families, merged in name order, in format f (the
// one t was formatted in), closed with OpenMetrics' "# EOF" when f is
// OpenMetrics.
func (t *UsageText) WriteTo(w io.Writer, mfs []*dto.MetricFamily, f expfmt.Format) error {
	enc := expfmt.NewEncoder(w, f)
	start := 0
	for i := 0; len(mfs) > 0 || i < len(t.names); {
		if i == len(t.names) || (len(mfs) > 0 && mfs[0].GetName() < t.names[i]) {
			if err := enc.Encode(mfs[0]); err != nil {
				return err
			}
			mfs = mfs[1:]
			continue
		}
		if _, err := w.Write(t.buf[start:t.ends[i]]); err != nil {
			return err
		}
		start = t.ends[i]
		i++
	}
	if c, ok := enc.(expfmt.Closer); ok {
		return c.Close()
	}
	return nil
}

// appendText appends the family's exposition to dst (nothing when it has
// no series): what expfmt writes for the family Collect makes, with the
// series in Registry.Gather's order (by label values, labels taken in name
// order), sorted again only when a series was added.
func (v *vec) appendText(dst []byte, om bool, now time.Time) []byte {
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.m) == 0 {
		return dst
	}
	if v.sortedGen != v.gen || len(v.sorted) != len(v.m) { // a series was made
		v.sortedGen = v.gen
		v.sorted = v.sorted[:0]
		for _, s := range v.m {
			v.sorted = append(v.sorted, s)
		}
		slices.SortFunc(v.sorted, func(a, b *series) int {
			for _, i := range v.byName {
				if c := strings.Compare(a.labels[i], b.labels[i]); c != 0 {
					return c
				}
			}
			return 0
		})
	}
	name := v.name
	typ := " gauge\n"
	switch {
	case v.buckets != nil:
		typ = " histogram\n"
	case v.typ == prometheus.CounterValue:
		typ = " counter\n"
		if om {
			if base, ok := strings.CutSuffix(name, "_total"); ok {
				name = base
			} else {
				typ = " unknown\n"
			}
		}
	}
	dst = append(dst, "# HELP "...)
	dst = append(dst, name...)
	dst = append(dst, ' ')
	dst = appendEscaped(dst, v.help, om)
	dst = append(dst, "\n# TYPE "...)
	dst = append(dst, name...)
	dst = append(dst, typ...)
	for _, s := range v.sorted {
		if v.buckets == nil {
			dst = v.appendLabels(dst, "", s, "")
			dst = append(dst, ' ')
			dst = appendFloat(dst, s.value, om)
			if om && s.ex != nil && v.typ == prometheus.CounterValue {
				// client_golang takes an exemplar's labels from a map,
				// in no fixed order.
				dst = append(dst, ` # {`+ExemplarTraceID+`="`...)
				dst = appendEscaped(dst, s.ex.traceID, true)
				dst = append(dst, `",`+ExemplarSpanID+`="`...)
				dst = appendEscaped(dst, s.ex.spanID, true)
				dst = append(dst, `"} `...)
				dst = appendFloat(dst, s.ex.value, true)
				dst = append(dst, ' ')
				at := s.ex.at
				if at.IsZero() {
					at = now
				}
				dst = appendFloat(dst, float64(at.UnixNano())/1e9, true)
			}
			dst = append(dst, '\n')
			continue
		}
		var cum uint64
		inf := false
		for i, ub := range v.buckets {
			cum += s.counts[i]
			dst = v.appendBucket(dst, s, ub, cum, om)
			inf = inf || math.IsInf(ub, +1)
		}
		if !inf {
			dst = v.appendBucket(dst, s, math.Inf(+1), s.count, om)
		}
		dst = v.appendLabels(dst, "_sum", s, "")
		dst = append(dst, ' ')
		dst = appendFloat(dst, s.sum, om)
		dst = append(dst, '\n')
		dst = v.appendLabels(dst, "_count", s, "")
		dst = append(dst, ' ')
		dst = appendCount(dst, s.count, om)
		dst = append(dst, '\n')
	}
	return dst
}

func (v *vec) appendBucket(dst []byte, s *series, ub float64, cum uint64, om bool) []byte {
	dst = v.appendLabels(dst, "_bucket", s, "le")
	dst = appendFloat(dst, ub, om)
	dst = append(dst, `"} `...)
	dst = appendCount(dst, cum, om)
	return append(dst, '\n')
}

// appendLabels appends the sample's name (the family's and suffix) and
// labels in name order. With extra set, the label set is left open after
// `extra="` for its value.
func (v *vec) appendLabels(dst []byte, suffix string, s *series, extra string) []byte {
	dst = append(dst, v.name...)
	dst = append(dst, suffix...)
	if len(v.byName) == 0 && extra == "" {
		return dst
	}
	sep := byte('{')
	for _, i := range v.byName {
		dst = append(dst, sep)
		dst = append(dst, v.labels[i]...)
		dst = append(dst, `="`...)
		dst = appendEscaped(dst, s.labels[i], true)
		dst = append(dst, '"')
		sep = ','
	}
	if extra != "" {
		dst = append(dst, sep)
		dst = append(dst, extra...)
		return append(dst, `="`...)
	}
	return append(dst, '}')
}

// appendEscaped escapes as expfmt does: backslash and newline, and the
// double quote in label values and OpenMetrics' help.
func appendEscaped(dst []byte, s string, quote bool) []byte {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			dst = append(dst, `\\`...)
		case c == '\n':
			dst = append(dst, `\n`...)
		case c == '"' && quote:
			dst = append(dst, `\"`...)
		default:
			dst = append(dst, c)
		}
	}
	return dst
}

// appendFloat formats f as expfmt does: the shortest form, and in
// OpenMetrics with ".0" when that has neither a point nor an exponent.
func appendFloat(dst []byte, f float64, om bool) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, "NaN"...)
	case math.IsInf(f, +1):
		return append(dst, "+Inf"...)
	case math.IsInf(f, -1):
		return append(dst, "-Inf"...)
	case f == 0:
		f = 0 // -0 is written as 0
	}
	n := len(dst)
	dst = strconv.AppendFloat(dst, f, 'g', -1, 64)
	if om && !bytes.ContainsAny(dst[n:], "e.") {
		dst = append(dst, ".0"...)
	}
	return dst
}

// appendCount formats a histogram's count: an integer in OpenMetrics, a
// float in the text format.
func appendCount(dst []byte, n uint64, om bool) []byte {
	if om {
		return strconv.AppendUint(dst, n, 10)
	}
	return appendFloat(dst, float64(n), false)
}
