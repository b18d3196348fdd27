package daemon

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strconv"
	"testing"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/exporter/prom"
)

// countField matches one token count of a usage object, or a
// compaction's context size.
var countField = regexp.MustCompile(`"(input_tokens|output_tokens|cache_read_input_tokens|cache_creation_input_tokens|ephemeral_5m_input_tokens|ephemeral_1h_input_tokens|preTokens)":(-?[0-9.eE+]+|"[^"]*"|true|false|null)`)

// hostileCounts are usage values a line must not be counted with.
var hostileCounts = []string{"-40", "-1", "1e308", "-1e308", `"12"`, "true", "false", "1.5", "0.5",
	"99999999999999999999999", "9223372036854775807", "-9223372036854775808", "100000001", "1e9", "[1]", "{}"}

// mutator builds record sequences from real lines.
type mutator struct {
	rng *rand.Rand
	// compactions are real compact_boundary lines, inserted now and then.
	compactions [][]byte
}

// count returns a replacement for a usage count: hostile, or a valid
// number smaller or larger than before (a copy of the request with other
// usage), or 0/null/-0 (valid zeros).
func (m *mutator) count(old string) string {
	n, _ := strconv.ParseInt(old, 10, 64)
	switch m.rng.IntN(6) {
	case 0, 1:
		return hostileCounts[m.rng.IntN(len(hostileCounts))]
	case 2:
		return strconv.FormatInt(n/int64(1+m.rng.IntN(4)), 10) // smaller
	case 3:
		return strconv.FormatInt(n+int64(m.rng.IntN(5000)), 10) // larger
	case 4:
		return []string{"0", "null", "-0", "1e3", "100000000"}[m.rng.IntN(5)]
	}
	return old
}

// usage rewrites some of a line's token counts.
func (m *mutator) usage(line []byte, p float64) []byte {
	return countField.ReplaceAllFunc(line, func(f []byte) []byte {
		if m.rng.Float64() >= p {
			return f
		}
		sub := countField.FindSubmatch(f)
		return []byte(fmt.Sprintf(`"%s":%s`, sub[1], m.count(string(sub[2]))))
	})
}

// timestampField matches a record's timestamp.
var timestampField = regexp.MustCompile(`"timestamp":"[^"]*"`)

// hostileTimes are timestamps from far away or not timestamps at all.
var hostileTimes = []string{`"0001-01-01T00:00:00Z"`, `"9999-12-31T23:59:59.999Z"`, `"1970-01-01T00:00:00Z"`,
	`"2026-13-45T99:99:99Z"`, `""`, `1778784474379`, `-1`, `null`, `"2019-01-01T00:00:00Z"`}

// timestamp replaces a line's timestamp with a hostile one.
func (m *mutator) timestamp(line []byte) []byte {
	return timestampField.ReplaceAll(line, []byte(`"timestamp":`+hostileTimes[m.rng.IntN(len(hostileTimes))]))
}

var ops = [][]byte{[]byte("!f"), []byte("!t"), []byte("!T"), []byte("!s"), []byte("!h"), []byte("!r"), []byte("!b"),
	[]byte("!0"), []byte("!1"), []byte("!2"), []byte("!3")}

// sequence mutates a real session into a record sequence: usage numbers
// changed (negative, huge, float, string...), timestamps from far away or
// none, assistant lines copied later
// (the same message id) with smaller or larger usage, neighbours swapped,
// lines cut short, and operations (flushes, clock moves, restarts, other
// files) in between.
func (m *mutator) sequence(lines [][]byte) [][]byte {
	var out [][]byte
	var later [][]byte // copies waiting to be inserted
	for _, l := range lines {
		l = bytes.Clone(l)
		isAssistant := bytes.Contains(l, []byte(`"type":"assistant"`))
		if isAssistant && m.rng.IntN(3) == 0 {
			later = append(later, m.usage(bytes.Clone(l), 0.8))
		}
		if m.rng.IntN(4) == 0 {
			l = m.usage(l, 0.5)
		}
		if m.rng.IntN(20) == 0 {
			l = m.timestamp(l)
		}
		if m.rng.IntN(25) == 0 && len(l) > 1 {
			l = l[:m.rng.IntN(len(l))] // a cut line
		}
		out = append(out, l)
		if len(later) > 0 && m.rng.IntN(3) == 0 {
			i := m.rng.IntN(len(later))
			out = append(out, later[i])
			later = append(later[:i], later[i+1:]...)
		}
		if m.rng.IntN(8) == 0 {
			out = append(out, ops[m.rng.IntN(len(ops))])
		}
		if len(m.compactions) > 0 && m.rng.IntN(30) == 0 {
			out = append(out, m.usage(bytes.Clone(m.compactions[m.rng.IntN(len(m.compactions))]), 0.7))
		}
	}
	out = append(out, later...)
	// Reorder: swap some neighbours.
	for range len(out) / 10 {
		i := m.rng.IntN(len(out))
		j := min(len(out)-1, i+1+m.rng.IntN(3))
		out[i], out[j] = out[j], out[i]
	}
	// Truncate: sometimes the sequence stops early.
	if m.rng.IntN(5) == 0 {
		out = out[:m.rng.IntN(len(out)+1)]
	}
	return out
}

// TestPipelineCountersNeverDecrease is the property test of issue 11's
// "counters are monotonic under any input": many sequences built from real
// corpus lines by a seeded generator go through the daemon's path, and
// after every step no exposed counter or histogram series went down, went
// negative or stopped being finite (see pipe.check). The generator's
// reach is checked too: across the sequences, every kind of rejected usage
// was counted, copies were deduplicated, restarts happened and tokens were
// counted, so the invariant was tested on what it is about.
func TestPipelineCountersNeverDecrease(t *testing.T) {
	sessions := corpusSessions(t, 24, 120)
	compactions := corpusLinesWith(t, []byte(`"subtype":"compact_boundary"`), 8)
	const sequences = 160
	var invalid = map[string]float64{}
	var dups, tokens, decodeErrs, compacted float64
	restarts := 0
	for seed := range uint64(sequences) {
		m := &mutator{rng: rand.New(rand.NewPCG(seed, 0x11)), compactions: compactions}
		base := sessions[int(seed)%len(sessions)]
		seq := m.sequence(base)
		p := newPipe(t, pipeStart)
		func() {
			defer func() {
				if t.Failed() {
					t.Logf("seed %d, base session %d, sequence:\n%s", seed, int(seed)%len(sessions), bytes.Join(seq, []byte("\n")))
				}
			}()
			for _, l := range seq {
				p.line(l)
				if t.Failed() {
					return
				}
			}
			p.finish()
		}()
		if t.Failed() {
			return
		}
		for _, r := range []string{"negative", "too_large", "not_integer"} {
			invalid[r] += p.value(prom.Namespace+"_exporter_invalid_usage_total", `reason="`+r+`"`)
		}
		dups += p.value(prom.Namespace + "_exporter_duplicate_request_lines_total")
		decodeErrs += p.value(prom.Namespace + "_exporter_decode_errors_total")
		tokens += p.value(prom.Namespace + "_tokens_total")
		compacted += p.value(prom.Namespace + "_compactions_total")
		restarts += p.restarts
	}
	for r, n := range invalid {
		if n == 0 {
			t.Errorf("no sequence had a usage rejected as %s: the generator misses a case", r)
		}
	}
	if dups == 0 || tokens == 0 || restarts == 0 || decodeErrs == 0 || compacted == 0 {
		t.Errorf("the generator misses a case: %v duplicate lines, %v tokens, %d restarts, %v decode errors, %v compactions",
			dups, tokens, restarts, decodeErrs, compacted)
	}
	t.Logf("%d sequences: %v tokens, %v duplicate lines, %d restarts, invalid usage %v, %v decode errors, %v compactions",
		sequences, tokens, dups, restarts, invalid, decodeErrs, compacted)
}
