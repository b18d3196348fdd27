package daemon_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/testonly/testbackend"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/spans"
)

// TestPushedMetricsCarryExemplars: the OTLP metrics push carries the
// exemplars too. A one-shot run pushes to a real OpenTelemetry Collector,
// which forwards to a real Prometheus 3's OTLP receiver with exemplar
// storage; query_exemplars on tokens_total and cost_usd_total answers, for
// every model that spent output tokens, exemplars naming chat spans the
// run sent.
func TestPushedMetricsCarryExemplars(t *testing.T) {
	bin := tracesBuildBinary(t)
	p := testbackend.StartPrometheus(t, testbackend.PromOptions{OTLP: true, ExtraArgs: []string{"--enable-feature=exemplar-storage"}})
	col := testbackend.StartMetricsCollector(t, p.URL()+"/api/v1/otlp/v1/metrics")
	dir := filepath.Join(testbackend.CorpusDir(t), "mlevison")
	stdout, stderr, code := tracesRunBinary(t, bin, "--oneshot", "--claude.dir="+dir, "--traces.exporter=stdout", "--traces.since=0",
		"--oneshot.metrics-file="+filepath.Join(t.TempDir(), "metrics.prom"),
		"--metrics.push=otlp", "--metrics.push.endpoint="+col.Endpoint(), "--metrics.push.insecure")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	got, err := testbackend.ParseSpans([]byte(stdout))
	if err != nil {
		t.Fatal(err)
	}
	sent := map[string]testbackend.Span{}
	models := map[string]bool{}
	for _, s := range got {
		sent[s.TraceID+"/"+s.SpanID] = s
		if n, _ := s.Attrs[spans.AttrUsageOutputTokens].(int64); n > 0 {
			models[s.Attrs[spans.AttrRequestModel].(string)] = true
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	covered := map[string]bool{}
	n := 0
	for len(covered) < len(models) && ctx.Err() == nil {
		time.Sleep(time.Second)
		n = 0
		for _, metric := range []string{"claude_transcript_tokens_total", "claude_transcript_cost_usd_total"} {
			series, err := p.QueryExemplars(ctx, metric, time.Unix(0, 0), time.Now().Add(time.Hour))
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range series {
				for _, e := range s.Exemplars {
					n++
					sp, ok := sent[e.Labels["trace_id"]+"/"+e.Labels["span_id"]]
					if !ok {
						t.Fatalf("%s%v: exemplar %v names no span the run sent", metric, s.SeriesLabels, e.Labels)
					}
					if sp.Attrs[spans.AttrRequestModel] == s.SeriesLabels["model"] {
						covered[s.SeriesLabels["model"]] = true
					}
				}
			}
		}
	}
	for m := range models {
		if !covered[m] {
			t.Errorf("model %s: no pushed exemplar names one of its spans", m)
		}
	}
	t.Logf("%d exemplars pushed through the collector into Prometheus; %d of %d models covered", n, len(covered), len(models))
}
