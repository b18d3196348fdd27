package spans_test

import (
	"testing"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/session"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/spans"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/transcript"
)

// recorder keeps copies of units to replay them into a builder.
type recorder []func(session.Sink)

func (r *recorder) Session(u *session.Session) {
	c := *u
	*r = append(*r, func(s session.Sink) { s.Session(&c) })
}
func (r *recorder) Turn(u *session.Turn) {
	c := *u
	*r = append(*r, func(s session.Sink) { s.Turn(&c) })
}
func (r *recorder) Request(u *session.Request) {
	c := *u
	*r = append(*r, func(s session.Sink) { s.Request(&c) })
}
func (r *recorder) RequestUpdate(u *session.RequestUpdate) {
	c := *u
	*r = append(*r, func(s session.Sink) { s.RequestUpdate(&c) })
}
func (r *recorder) ToolCall(u *session.ToolCall) {
	c := *u
	*r = append(*r, func(s session.Sink) { s.ToolCall(&c) })
}
func (r *recorder) Subagent(u *session.Subagent) {
	c := *u
	*r = append(*r, func(s session.Sink) { s.Subagent(&c) })
}
func (r *recorder) Compaction(u *session.Compaction) {
	c := *u
	*r = append(*r, func(s session.Sink) { s.Compaction(&c) })
}
func (r *recorder) PullRequest(*session.PullRequest) {}
func (r *recorder) APIError(u *session.APIError) {
	c := *u
	*r = append(*r, func(s session.Sink) { s.APIError(&c) })
}

// BenchmarkBuilder measures the builder alone: the units of every real
// tree, recorded once, replayed into a new builder per iteration.
func BenchmarkBuilder(b *testing.B) {
	for _, g := range []struct {
		name string
		g    spans.Granularity
	}{{"session", spans.GranularitySession}, {"turn", spans.GranularityTurn}} {
		b.Run(g.name, func(b *testing.B) {
			var units recorder
			for _, dir := range corpusTrees(b) {
				readTree(b, dir).run(transcript.Options{}, spans.Config{}, []session.Sink{&units}, func(spans.Span) {})
			}
			var n int64
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				bl := spans.NewBuilder(spans.Config{Granularity: g.g}, func(spans.Span) { n++ })
				for _, u := range units {
					u(bl)
				}
			}
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "spans/s")
			b.ReportMetric(float64(n)/float64(b.N), "spans/op")
		})
	}
}

// BenchmarkPipeline measures decode → assemble → build over every real
// tree held in memory: what a one-shot run costs before export.
func BenchmarkPipeline(b *testing.B) {
	var trees []*treeLines
	var size int64
	for _, dir := range corpusTrees(b) {
		t := readTree(b, dir)
		trees = append(trees, t)
		size += t.bytes
	}
	var n int64
	b.SetBytes(size)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		for _, t := range trees {
			t.run(transcript.Options{}, spans.Config{}, nil, func(spans.Span) { n++ })
		}
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "spans/s")
}
