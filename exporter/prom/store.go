package prom

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// vec is a counter, gauge or histogram family whose values can be saved
// and restored: the usage counters are part of the durable state, so a
// restart never lowers them. client_golang's own vectors cannot be set
// (histograms least of all), so these are collected as const metrics.
type vec struct {
	name string
	help string
	// hist keeps the counter's increments with their time (the one-shot
	// history export); nil otherwise.
	hist    *History
	desc    *prometheus.Desc
	typ     prometheus.ValueType // CounterValue or GaugeValue; histograms set buckets
	buckets []float64            // histograms only
	labels  []string
	// byName lists the labels' indexes in the order of their names, the
	// order of the exposition's label pairs and of its series.
	byName []int
	// added is the value a series saved before the last label existed
	// takes for it ("" when the family never gained a label).
	added string

	mu sync.Mutex
	m  map[string]*series
	// sorted holds m's series in the exposition's order (appendText), as
	// of the gen-th series made.
	sorted         []*series
	gen, sortedGen uint64
	// buf builds the key of a lookup without allocating (under mu).
	buf []byte
	// recent holds the series of label values looked up lately (under
	// mu), direct-mapped by recentSlot. The mapper passes the same few
	// combinations request after request (a model's token types, its
	// cost), mostly as the very same strings, whose comparison then
	// stops at their pointers: a hit builds and hashes no key. Series
	// are never deleted, so an entry never goes stale.
	recent [recentSeries]recentEntry
	// typed holds, for a family counted a type at a time (addTypes), the
	// series of label values met lately, by type (under mu),
	// direct-mapped by recentSlot of the values with the type left out.
	typed [typedSeries]typedEntry
}

// typedSeries is the number of entries of a vec's typed cache: as many
// combinations of model, project and spender as a history alternates
// between (a session's requests and its subagents').
const typedSeries = 16

// typedEntry holds the series of the label values lv (the type's value
// left empty) by type.
type typedEntry struct {
	lv []string
	s  []*series
}

// recentSeries is the number of entries of a vec's recent cache. With 16,
// the token families missed 41 % of their lookups on the 1 GB benchmark
// tree (a request's five token types, for a model, project and spender
// that alternate with a subagent's, crowd each other out); with 64, 0.5 %.
const recentSeries = 64

type recentEntry struct {
	lv []string
	s  *series
}

// recentSlot picks the cache entry of label values from their lengths
// and end bytes (a token type's "5m" and "1h" differ only there).
func recentSlot(lv []string) int {
	h := uint(len(lv))
	for _, l := range lv {
		h = h*31 + uint(len(l))
		if len(l) > 0 {
			h = h*31 + uint(l[0]) + uint(l[len(l)-1])<<3
		}
	}
	return int(h % recentSeries)
}

type series struct {
	labels []string
	// ex is the exemplar of the latest request (by its time) that added
	// to the series and whose span was sent; nil without one. Not saved:
	// after a restart a series has none until its next request.
	ex     *exemplar
	value  float64  // counter / gauge
	counts []uint64 // histogram: per bucket, not cumulative; last is +Inf
	sum    float64
	count  uint64
}

func newVec(name, help string, typ prometheus.ValueType, buckets []float64, labels ...string) *vec {
	byName := make([]int, len(labels))
	for i := range byName {
		byName[i] = i
	}
	slices.SortFunc(byName, func(a, b int) int { return strings.Compare(labels[a], labels[b]) })
	return &vec{
		byName:  byName,
		name:    name,
		help:    help,
		desc:    prometheus.NewDesc(name, help, labels, nil),
		typ:     typ,
		buckets: buckets,
		labels:  labels,
		m:       map[string]*series{},
	}
}

// appendKey appends the map key of label values lv to dst: the values
// joined by 0xff, a byte no UTF-8 text holds.
func appendKey(dst []byte, lv []string) []byte {
	for i, l := range lv {
		if i > 0 {
			dst = append(dst, 0xff)
		}
		dst = append(dst, l...)
	}
	return dst
}

func key(lv []string) string { return string(appendKey(nil, lv)) }

// get returns the series for the label values, creating it; callers hold
// v.mu.
func (v *vec) get(lv []string) *series {
	r := &v.recent[recentSlot(lv)]
	if r.s != nil && slices.Equal(r.lv, lv) {
		return r.s
	}
	v.buf = appendKey(v.buf[:0], lv)
	s := v.m[string(v.buf)]
	r.lv, r.s = append(r.lv[:0], lv...), s
	if s == nil {
		s = &series{labels: append([]string(nil), lv...)}
		if v.buckets != nil {
			s.counts = make([]uint64, len(v.buckets)+1)
		}
		v.m[string(v.buf)] = s
		v.gen++
		r.s = s
	}
	return s
}

func (v *vec) add(x float64, lv ...string) { v.addEx(x, nil, lv...) }

// exemplar names the span of a request that added to a series, with the
// amount it added and its time.
type exemplar struct {
	traceID, spanID string
	value           float64
	at              time.Time
}

// addEx adds x and, when ex is set, makes it the series' exemplar (see
// add).
func (v *vec) addEx(x float64, ex *exemplar, lv ...string) {
	v.mu.Lock()
	v.get(lv).add(x, ex)
	v.mu.Unlock()
	if v.hist != nil {
		v.hist.record(v, lv, x)
	}
}

// addTypes adds xs[i] to the series of the label values lv with the
// value types[i] at index at, and makes exs[i] its exemplar as add does
// (exs may be nil): one lookup for the series of every type, where
// addEx would make one each. lv[at] is overwritten. A family's calls
// pass the same types: an entry of the typed cache is valid for them.
func (v *vec) addTypes(at int, types []string, xs []float64, exs []*exemplar, lv []string) {
	v.mu.Lock()
	lv[at] = ""
	e := &v.typed[recentSlot(lv)%typedSeries]
	if len(e.s) != len(types) || !slices.Equal(e.lv, lv) {
		e.lv, e.s = append(e.lv[:0], lv...), e.s[:0]
		for _, t := range types {
			lv[at] = t
			e.s = append(e.s, v.get(lv))
		}
		lv[at] = ""
	}
	for i, s := range e.s {
		var ex *exemplar
		if exs != nil {
			ex = exs[i]
		}
		s.add(xs[i], ex)
	}
	v.mu.Unlock()
	if v.hist != nil {
		for i, t := range types {
			lv[at] = t
			v.hist.record(v, lv, xs[i])
		}
	}
}

// add adds x to the series and, when ex is set, makes it its exemplar
// unless it holds a later one (a backfill reads files in no time order;
// Prometheus rejects an exemplar older than the last it stored). Callers
// hold the vec's mu.
func (s *series) add(x float64, ex *exemplar) {
	s.value += x
	if ex != nil && (s.ex == nil || !ex.at.Before(s.ex.at)) {
		s.ex = ex
	}
}

// value is a series' value (0 when it does not exist).
func (v *vec) value(lv []string) float64 {
	v.mu.Lock()
	defer v.mu.Unlock()
	if s := v.m[key(lv)]; s != nil {
		return s.value
	}
	return 0
}

func (v *vec) setMax(x float64, lv ...string) {
	v.mu.Lock()
	if s := v.get(lv); x > s.value {
		s.value = x
	}
	v.mu.Unlock()
}

func (v *vec) observe(x float64, lv ...string) {
	i := sort.SearchFloat64s(v.buckets, x) // first bucket with upper bound >= x
	v.mu.Lock()
	s := v.get(lv)
	s.counts[i]++
	s.sum += x
	s.count++
	v.mu.Unlock()
}

func (v *vec) Describe(ch chan<- *prometheus.Desc) { ch <- v.desc }

func (v *vec) Collect(ch chan<- prometheus.Metric) {
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, s := range v.m {
		if v.buckets == nil {
			m := prometheus.MustNewConstMetric(v.desc, v.typ, s.value, s.labels...)
			if s.ex != nil {
				// Shown in the OpenMetrics exposition only.
				m = prometheus.MustNewMetricWithExemplars(m, prometheus.Exemplar{
					Value:     s.ex.value,
					Labels:    prometheus.Labels{ExemplarTraceID: s.ex.traceID, ExemplarSpanID: s.ex.spanID},
					Timestamp: s.ex.at,
				})
			}
			ch <- m
			continue
		}
		cum := make(map[float64]uint64, len(v.buckets))
		var c uint64
		for i, ub := range v.buckets {
			c += s.counts[i]
			cum[ub] = c
		}
		ch <- prometheus.MustNewConstHistogram(v.desc, s.count, s.sum, cum, s.labels...)
	}
}

// SeriesState is one saved series.
type SeriesState struct {
	Labels []string `json:"l"`
	Value  float64  `json:"v,omitempty"`
	Counts []uint64 `json:"c,omitempty"`
	Sum    float64  `json:"s,omitempty"`
	Count  uint64   `json:"n,omitempty"`
}

func (v *vec) snapshot() []SeriesState {
	v.mu.Lock()
	defer v.mu.Unlock()
	// In the order of the series' keys (the map's keys): a key made per
	// comparison was most of a state write's garbage at 20,000 sessions.
	keys := make([]string, 0, len(v.m))
	for k := range v.m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]SeriesState, 0, len(v.m))
	for _, k := range keys {
		s := v.m[k]
		st := SeriesState{Labels: s.labels, Value: s.value, Sum: s.sum, Count: s.count}
		if s.counts != nil {
			st.Counts = append([]uint64(nil), s.counts...)
		}
		out = append(out, st)
	}
	return out
}

func (v *vec) restore(states []SeriesState) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, st := range states {
		if v.added != "" && len(st.Labels) == len(v.labels)-1 {
			// Saved before the family gained its last label.
			st.Labels = append(st.Labels[:len(st.Labels):len(st.Labels)], v.added)
		}
		if len(st.Labels) != len(v.labels) {
			return fmt.Errorf("restore %s: %d label values, want %d", v.name, len(st.Labels), len(v.labels))
		}
		if v.buckets != nil && len(st.Counts) != len(v.buckets)+1 {
			return fmt.Errorf("restore %s: %d buckets, want %d (bucket layout changed)", v.name, len(st.Counts), len(v.buckets)+1)
		}
		s := v.get(st.Labels)
		s.value, s.sum, s.count = st.Value, st.Sum, st.Count
		if v.buckets != nil {
			copy(s.counts, st.Counts)
		}
	}
	return nil
}
