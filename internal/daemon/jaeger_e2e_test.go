package daemon_test

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/testonly/testbackend"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/spans"
)

// TestBackfilledSessionsAreFoundInJaeger backfills every tree of the corpus
// with the real binary into a real Jaeger v2 and then does what a user does
// in the Jaeger UI: picks the service, types a session id into the tags box
// over the day of the session, and opens the trace. Every session must be
// found, as exactly one trace whose spans (ids, parents, names, start and
// duration) are the ones the in-process pipeline builds; the service search
// over the whole corpus must list every trace once.
func TestBackfilledSessionsAreFoundInJaeger(t *testing.T) {
	bin := tracesBuildBinary(t)
	j := testbackend.StartJaeger(t)

	type trace struct {
		id, session string
		first, last time.Time
		spans       []string
	}
	traces := map[string]*trace{}
	total := 0
	for _, dir := range tracesTrees(t) {
		expected, _ := tracesOneshotStdout(t, dir, nil)
		total += len(expected)
		for _, s := range expected {
			tr := traces[s.TraceID]
			if tr == nil {
				tr = &trace{id: s.TraceID, first: s.Start, last: s.End}
				traces[s.TraceID] = tr
			}
			if tr.session == "" {
				tr.session, _ = s.Attrs[spans.AttrConversationID].(string)
			}
			tr.first = minTime(tr.first, s.Start)
			tr.last = maxTime(tr.last, s.End)
			tr.spans = append(tr.spans, jaegerSpanLine(s.SpanID, s.ParentSpanID, s.Name, s.Start, s.End.Sub(s.Start)))
		}
		if _, stderr, code := tracesRunBinary(t, bin, "--oneshot", "--claude.dir="+dir,
			"--traces.exporter=otlp", "--traces.since=0", "--otlp.endpoint="+j.OTLPEndpoint(), "--otlp.insecure"); code != 0 {
			t.Fatalf("%s: exit %d\n%s", dir, code, stderr)
		}
	}
	if len(traces) == 0 {
		t.Fatal("the corpus gave no traces")
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	services, err := j.Services(ctx)
	if err != nil || !slices.Contains(services, "claude-code") {
		t.Fatalf("Jaeger's service list = %v, %v; want claude-code in it", services, err)
	}

	ids := make([]string, 0, len(traces))
	for id := range traces {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var earliest, latest time.Time
	found, spansFound := 0, 0
	for _, id := range ids {
		tr := traces[id]
		if earliest.IsZero() || tr.first.Before(earliest) {
			earliest = tr.first
		}
		latest = maxTime(latest, tr.last)
		if tr.session == "" {
			t.Errorf("trace %s: no span has %s", id, spans.AttrConversationID)
			continue
		}
		// The day of the session, as a user picks it in the search form.
		day := tr.first.UTC().Truncate(24 * time.Hour)
		got, err := j.FindTraces(ctx, testbackend.TraceQuery{
			Service: "claude-code",
			Tags:    map[string]string{spans.AttrConversationID: tr.session},
			Start:   day,
			End:     maxTime(day.Add(24*time.Hour), tr.last.Add(time.Second)),
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0].TraceID != id {
			t.Errorf("session %s: the tag search found %d traces, want trace %s", tr.session, len(got), id)
			continue
		}
		var have []string
		for _, s := range got[0].Spans {
			have = append(have, jaegerSpanLine(s.SpanID, s.ParentSpanID, s.OperationName, s.Start, s.Duration))
		}
		if d := tracesDiff(tr.spans, have); d != "" {
			t.Errorf("session %s: Jaeger's trace differs from the pipeline's:\n%s", tr.session, d)
			continue
		}
		found++
		spansFound += len(have)
	}

	// The service alone over the corpus's whole time range: every trace once.
	all, err := j.FindTraces(ctx, testbackend.TraceQuery{
		Service: "claude-code",
		Start:   earliest.Add(-time.Minute),
		End:     latest.Add(time.Minute),
		Limit:   10 * len(traces),
	})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, tr := range all {
		seen[tr.TraceID]++
	}
	for _, id := range ids {
		if seen[id] != 1 {
			t.Errorf("trace %s listed %d times by the service search, want once", id, seen[id])
		}
	}
	if len(all) != len(traces) {
		t.Errorf("the service search lists %d traces, want %d", len(all), len(traces))
	}
	t.Logf("Jaeger: %d of %d sessions found by session id (%d of %d spans, identical); service search lists %d traces",
		found, len(traces), spansFound, total, len(all))
}

// jaegerSpanLine is what must match between the pipeline and Jaeger, at
// Jaeger's microsecond resolution.
func jaegerSpanLine(id, parent, name string, start time.Time, d time.Duration) string {
	return fmt.Sprintf("%s %s %d %d %s", id, parent, start.UnixMicro(), d.Microseconds(), strings.TrimSpace(name))
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
