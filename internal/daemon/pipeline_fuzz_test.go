package daemon

import (
	"bufio"
	"bytes"
	"encoding/gob"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/exporter/prom"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/testonly/testbackend"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/metrics"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/session"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/spans"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/transcript"
)

// The pipeline tests feed record sequences to the assembler along the
// daemon's own path (decode, reader.record, assembler, metrics mapper and
// span builder, prom.Metrics and prom.Self on one registry, the stats
// publisher, state save and restore) without files, and read the series
// the way a scrape does (Registry.Gather) after every step. Invariant: no
// counter or histogram series ever goes down, goes negative, becomes NaN
// or ±Inf, or disappears; last_activity_timestamp_seconds never goes down.
// A restart (state saved and restored, as on SIGTERM) keeps every usage
// series; the self-metrics start again from zero, as in a new process.

// A line starting with '!' is an operation, not a record (no JSONL line
// starts with '!'):
//
//	!f  Flush (a follow step)          !h  FlushHistory (between backfill groups)
//	!r  FlushRead (end of the backfill) !s  restart: save the state, restore it in a new pipeline
//	!t  the clock moves past Settle     !T  the clock moves past the idle timeout
//	!b  the clock goes back an hour     !0..!3  the next records come from another file
//
// Every other line is decoded and recorded as if read from the current
// file; the clock moves 10 ms per line. A final Flush (a one-shot run's
// end) closes every sequence.

// pipeFiles are the files records are read from: a session, one of its
// subagents, a legacy agent beside it, a session of another project.
var pipeFiles = []string{
	"-home-u-proj-a/0b5e7f3e-9c53-4cf0-a5a9-2a6f1a7d4c11.jsonl",
	"-home-u-proj-a/0b5e7f3e-9c53-4cf0-a5a9-2a6f1a7d4c11/subagents/agent-a1b2c3d.jsonl",
	"-home-u-proj-a/agent-e4f5a6b.jsonl",
	"-home-u-proj-b/7d1c3a52-0f4e-4b8e-9a2d-5c6b7e8f9a01.jsonl",
}

type pipe struct {
	tb    testing.TB
	cfg   Config
	reg   *prometheus.Registry
	usage *prom.Metrics
	self  *prom.Self
	asm   *session.Assembler
	rd    *reader
	stats *statsPublisher
	dec   *transcript.Decoder
	files []*fileState
	cur   int
	now   time.Time
	// prev holds every checked series' last value, by key; persisted
	// names the metric families saved in the state (see restart).
	prev      map[string]float64
	persisted map[string]bool
	steps     int
	restarts  int
	// rejected is the usage problem of the line just recorded, if any.
	rejected transcript.UsageProblem
}

func newPipe(tb testing.TB, now time.Time) *pipe {
	p := &pipe{tb: tb, cfg: NewConfig(), now: now, prev: map[string]float64{}}
	p.cfg.ClaudeDirs = []string{"/nonexistent/claude"}
	p.build()
	p.persisted = map[string]bool{}
	for name := range p.usage.State() {
		p.persisted[name] = true
	}
	p.check()
	return p
}

// build wires the stages as Run does.
func (p *pipe) build() {
	clock := func() time.Time { return p.now }
	p.reg = prometheus.NewRegistry()
	p.usage = prom.NewMetrics(p.reg, p.cfg.ActiveWindow, clock)
	p.self = prom.NewSelf(p.reg)
	label, err := metrics.ParseProjectLabel(p.cfg.ProjectLabel)
	if err != nil {
		p.tb.Fatal(err)
	}
	prices := metrics.DefaultPrices()
	mapper := metrics.NewMapper(metrics.Config{Project: label, Prices: prices}, p.usage)
	builder := spans.NewBuilder(builderConfig(p.cfg.Traces, mapper.Project, prices), func(spans.Span) {})
	p.asm = session.New(session.Config{Settle: p.cfg.Settle, IdleTimeout: p.cfg.IdleTimeout}, session.Fanout{mapper, builder})
	p.rd = newReader(&p.cfg, slog.New(slog.DiscardHandler), p.self, p.asm, transcript.Options{MaxLineBytes: p.cfg.MaxLineBytes}, clock)
	p.stats = &statsPublisher{self: p.self}
	p.dec = transcript.NewDecoder(p.rd.decOpts)
	p.files = p.files[:0]
	for _, rel := range pipeFiles {
		p.files = append(p.files, p.rd.newFileState(filepath.Join(p.cfg.ClaudeDirs[0], "projects", rel), rel, ""))
	}
}

// line runs one line of a sequence and checks the series.
func (p *pipe) line(b []byte) {
	p.tb.Helper()
	p.steps++
	if len(b) >= 2 && b[0] == '!' {
		p.op(b[1])
	} else {
		p.record(b)
	}
	p.check()
}

// record does what a decode worker and the pipeline goroutine do with one
// line (see worker.run and readFiles).
func (p *pipe) record(b []byte) {
	p.now = p.now.Add(10 * time.Millisecond)
	p.self.LinesRead.Inc()
	p.self.BytesRead.Add(float64(len(b) + 1))
	if len(b) > p.cfg.MaxLineBytes {
		p.self.DecodeErrors.WithLabelValues(string(transcript.ReasonTooLong)).Inc()
		return
	}
	if transcript.IsBlank(b) {
		return
	}
	var rec transcript.Record
	if err := p.dec.Decode(b, &rec); err != nil {
		p.self.DecodeErrors.WithLabelValues(string(transcript.ReasonOf(err))).Inc()
		return
	}
	p.rejected = rec.Message.Usage.Problem
	if p.rejected == "" && rec.HasEmbedded() {
		p.rejected = rec.Embedded.Message.Usage.Problem
	}
	p.rd.record(p.files[p.cur], &rec, p.now)
}

func (p *pipe) op(c byte) {
	switch c {
	case 'f':
		p.asm.Flush(p.now, false)
	case 'h':
		p.asm.FlushHistory(p.now, "")
	case 'r':
		p.asm.FlushRead(p.now)
	case 's':
		p.restart()
		return
	case 't':
		p.now = p.now.Add(p.cfg.Settle + time.Millisecond)
		return
	case 'T':
		p.now = p.now.Add(p.cfg.IdleTimeout + time.Second)
		return
	case 'b':
		p.now = p.now.Add(-time.Hour)
		return
	case '0', '1', '2', '3':
		p.cur = int(c - '0')
		return
	default:
		return
	}
	p.stats.publish(p.asm.Stats())
}

// restart saves the usage series and the assembler state as the state
// file does (gob) and restores them in a new pipeline, as a new process
// does at start (see restoreState).
func (p *pipe) restart() {
	p.restarts++
	p.asm.Flush(p.now, false)
	var ms, as bytes.Buffer
	if err := gob.NewEncoder(&ms).Encode(p.usage.State()); err != nil {
		p.tb.Fatalf("save counters: %v", err)
	}
	if err := gob.NewEncoder(&as).Encode(p.asm.State()); err != nil {
		p.tb.Fatalf("save assembler: %v", err)
	}
	p.build()
	var mst prom.State
	if err := gob.NewDecoder(&ms).Decode(&mst); err != nil {
		p.tb.Fatal(err)
	}
	if err := p.usage.Restore(mst); err != nil {
		p.tb.Fatalf("restore counters: %v", err)
	}
	var ast session.State
	if err := gob.NewDecoder(&as).Decode(&ast); err != nil {
		p.tb.Fatal(err)
	}
	if err := p.asm.Restore(ast, p.now); err != nil {
		p.tb.Fatalf("restore assembler: %v", err)
	}
	// A new process: its self-metrics start from zero.
	for k := range p.prev {
		if !p.persisted[k[:strings.IndexByte(k, '{')]] {
			delete(p.prev, k)
		}
	}
}

// finish ends the sequence as a one-shot run does.
func (p *pipe) finish() {
	p.tb.Helper()
	p.asm.Flush(p.now, true)
	p.stats.publish(p.asm.Stats())
	p.check()
}

// check gathers the registry and compares every counter and histogram
// series (and the last-activity gauge) with its last value.
func (p *pipe) check() {
	p.tb.Helper()
	mfs, err := p.reg.Gather()
	if err != nil {
		p.tb.Fatalf("step %d: gather: %v", p.steps, err)
	}
	cur := map[string]float64{}
	for _, mf := range mfs {
		name := mf.GetName()
		for _, m := range mf.GetMetric() {
			k := name + seriesLabels(m)
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				cur[k] = m.GetCounter().GetValue()
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				cur[k+"count"] = float64(h.GetSampleCount())
				cur[k+"sum"] = h.GetSampleSum()
				for _, b := range h.GetBucket() {
					cur[k+"le="+strconv.FormatFloat(b.GetUpperBound(), 'g', -1, 64)] = float64(b.GetCumulativeCount())
				}
			case dto.MetricType_GAUGE:
				if name == prom.Namespace+"_last_activity_timestamp_seconds" {
					cur[k] = m.GetGauge().GetValue()
				}
			}
		}
	}
	for k, v := range cur {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			p.tb.Fatalf("step %d: %s is %v", p.steps, k, v)
		}
		if v < 0 && !strings.HasPrefix(k, prom.Namespace+"_last_activity_timestamp_seconds") {
			p.tb.Fatalf("step %d: %s is negative: %v", p.steps, k, v)
		}
	}
	for k, was := range p.prev {
		v, ok := cur[k]
		if !ok {
			p.tb.Fatalf("step %d: series %s (was %v) disappeared", p.steps, k, was)
		}
		if v < was {
			p.tb.Fatalf("step %d: %s went down from %v to %v", p.steps, k, was, v)
		}
	}
	// A line whose usage was rejected is counted once in
	// invalid_usage_total under its reason, and adds no token and no cost.
	if r := p.rejected; r != "" {
		p.rejected = ""
		k := prom.Namespace + `_exporter_invalid_usage_total{reason="` + string(r) + `"}`
		if cur[k] != p.prev[k]+1 {
			p.tb.Fatalf("step %d: usage rejected as %s, but %s went from %v to %v", p.steps, r, k, p.prev[k], cur[k])
		}
		for k, v := range cur {
			if (strings.HasPrefix(k, prom.Namespace+"_tokens_total{") || strings.HasPrefix(k, prom.Namespace+"_cost_usd_total{")) && v != p.prev[k] {
				p.tb.Fatalf("step %d: usage rejected as %s, but %s moved from %v to %v", p.steps, r, k, p.prev[k], v)
			}
		}
	}
	p.prev = cur
}

// seriesLabels renders a series' labels (Gather sorts them by name),
// ending in '}'.
func seriesLabels(m *dto.Metric) string {
	b := []byte{'{'}
	for i, l := range m.GetLabel() {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, l.GetName()...)
		b = append(b, '=')
		b = strconv.AppendQuote(b, l.GetValue())
	}
	return string(append(b, '}'))
}

// value returns the sum of the gathered series of a metric whose labels
// contain every one of match (for the property test's coverage checks).
func (p *pipe) value(name string, match ...string) float64 {
	var sum float64
	for k, v := range p.prev {
		if !strings.HasPrefix(k, name+"{") {
			continue
		}
		ok := true
		for _, m := range match {
			ok = ok && strings.Contains(k, m)
		}
		if ok {
			sum += v
		}
	}
	return sum
}

// corpusSessions reads up to n real session transcripts of at most maxLines
// lines (each line at most 16 KiB, longer ones left out), whole files in
// path order. It fails when the corpus is not there.
func corpusSessions(tb testing.TB, n, maxLines int) [][][]byte {
	root := testbackend.CorpusDir(tb)
	var out [][][]byte
	_ = filepath.WalkDir(root, func(path string, de fs.DirEntry, err error) error {
		if err != nil || de.IsDir() || !strings.HasSuffix(path, ".jsonl") {
			return nil
		}
		fh, err := os.Open(path)
		if err != nil {
			return nil
		}
		defer fh.Close()
		var lines [][]byte
		sc := bufio.NewScanner(fh)
		sc.Buffer(make([]byte, 0, 1<<16), 64<<20)
		for sc.Scan() && len(lines) < maxLines {
			if len(sc.Bytes()) <= 16<<10 {
				lines = append(lines, bytes.Clone(sc.Bytes()))
			}
		}
		if len(lines) >= 4 && bytes.Contains(bytes.Join(lines, nil), []byte(`"usage"`)) {
			out = append(out, lines)
		}
		if len(out) >= n {
			return fs.SkipAll
		}
		return nil
	})
	if len(out) == 0 {
		tb.Fatalf("no session transcript with usage under %s", root)
	}
	return out
}

// corpusLinesWith returns up to n real lines (at most 16 KiB each) that
// contain sub. It fails when there is none.
func corpusLinesWith(tb testing.TB, sub []byte, n int) [][]byte {
	root := testbackend.CorpusDir(tb)
	var out [][]byte
	_ = filepath.WalkDir(root, func(path string, de fs.DirEntry, err error) error {
		if err != nil || de.IsDir() || !strings.HasSuffix(path, ".jsonl") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil || !bytes.Contains(b, sub) {
			return nil
		}
		for _, l := range bytes.Split(b, []byte("\n")) {
			if len(l) <= 16<<10 && bytes.Contains(l, sub) {
				out = append(out, bytes.Clone(l))
				if len(out) >= n {
					return fs.SkipAll
				}
			}
		}
		return nil
	})
	if len(out) == 0 {
		tb.Fatalf("no line with %s under %s", sub, root)
	}
	return out
}

// pipeStart is the sequences' clock at start: the corpus' records are
// from 2025-2026, so sessions are neither all idle nor all in the future.
var pipeStart = time.Date(2026, 1, 15, 12, 0, 0, 0, time.UTC)

func FuzzPipeline(f *testing.F) {
	// Real sessions, cut to their first short lines (at most 12 KiB a
	// seed: the fuzzer minimizes every input that finds new code, and a
	// long one takes it minutes), with operations between.
	for i, lines := range corpusSessions(f, 8, 400) {
		ops := []string{"!f", "!t", "!s", "!1", "!h", "!r", "!T", "!b"}
		var seq [][]byte
		size := 0
		for j, l := range lines {
			if len(l) > 2<<10 {
				continue
			}
			if size += len(l); size > 12<<10 {
				break
			}
			seq = append(seq, l)
			if j%7 == 6 {
				seq = append(seq, []byte(ops[(i+j)%len(ops)]))
			}
		}
		f.Add(bytes.Join(seq, []byte("\n")))
	}
	// Hostile usage on a request counted, on its copies, and on a new
	// request (issue 11: a fresh id with input_tokens -40 lowered the
	// project's input counter).
	const req = `{"type":"assistant","uuid":"u%d","sessionId":"0b5e7f3e-9c53-4cf0-a5a9-2a6f1a7d4c11","cwd":"/home/u/proj-a","timestamp":"2026-01-15T12:00:0%dZ","message":{"id":"msg_%d","model":"claude-opus-4-5-20251101","stop_reason":%s,"usage":{"input_tokens":%s,"output_tokens":%s,"cache_read_input_tokens":%s}}}`
	for _, v := range []string{"-40", "1e308", `"12"`, "true", "1.5", "99999999999999999999999", "100000001", "-0", "null"} {
		f.Add([]byte(strings.Join([]string{
			fmt.Sprintf(req, 1, 1, 1, "null", "44", "5", "10"),
			"!t", "!f",
			fmt.Sprintf(req, 2, 2, 1, `"end_turn"`, v, "6", v),
			"!f",
			fmt.Sprintf(req, 3, 3, 2, `"end_turn"`, v, "4", "10"),
			"!s", "!1",
			fmt.Sprintf(req, 4, 4, 3, `"end_turn"`, "40", v, "1"),
			"!f", "!T", "!f",
		}, "\n")))
	}
	// Real compactions, then one with a context size that is none.
	for _, l := range corpusLinesWith(f, []byte(`"subtype":"compact_boundary"`), 2) {
		f.Add(bytes.Join([][]byte{l, []byte("!f"), bytes.Replace(l, []byte(`"preTokens":`), []byte(`"preTokens":-`), 1)}, []byte("\n")))
	}
	for _, s := range []string{"", "!s", "!s\n!s", "\xff\n!f", "{}\n!r\n{}", "!b\n!T\n!h"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p := newPipe(t, pipeStart)
		lines := bytes.Split(data, []byte("\n"))
		for _, l := range lines[:min(len(lines), 256)] {
			p.line(l)
		}
		p.finish()
	})
}
