package daemon_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/testonly/testbackend"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/spans"
)

// lockedBuffer is a bytes.Buffer safe for a process writing while the
// test reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) Bytes() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]byte(nil), l.b.Bytes()...)
}

// serveDaemon runs the binary as a daemon over dir on a free port until
// the test ends, and waits until it has read the transcripts present at
// start. It returns the address and the daemon's stdout.
func serveDaemon(t *testing.T, bin, dir string, args ...string) (string, *lockedBuffer) {
	t.Helper()
	addr := fmt.Sprintf("127.0.0.1:%d", testbackend.FreePort(t))
	cmd := exec.Command(bin, append([]string{"--web.listen-address=" + addr, "--claude.dir=" + dir, "--log.level=warn",
		"--state.file=" + filepath.Join(t.TempDir(), "state")}, args...)...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OTEL_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	stdout, stderr := &lockedBuffer{}, &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		select {
		case <-done:
			t.Fatalf("daemon exited:\n%s", stderr.Bytes())
		default:
		}
		if resp, err := http.Get("http://" + addr + "/-/ready"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return addr, stdout
			}
		}
	}
	t.Fatalf("daemon not ready:\n%s", stderr.Bytes())
	return "", nil
}

// promExemplar is one exemplar of the OpenMetrics exposition or of
// Prometheus' query_exemplars answer.
type promExemplar struct {
	metric, model, typ string
	traceID, spanID    string
	value              float64
}

var (
	omExemplarLine = regexp.MustCompile(`^(claude_transcript_(?:tokens|cost_usd)_total)\{([^}]*)\} \S+ # \{([^}]*)\} (\S+)`)
	omLabel        = regexp.MustCompile(`(\w+)="([^"]*)"`)
)

// scrapeExemplars scrapes addr as Prometheus does (OpenMetrics first) and
// returns the exemplars of tokens_total and cost_usd_total.
func scrapeExemplars(t *testing.T, addr string) []promExemplar {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/metrics", nil)
	req.Header.Set("Accept", "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/openmetrics-text") {
		t.Fatalf("/metrics answered %q to an OpenMetrics scrape", resp.Header.Get("Content-Type"))
	}
	var out []promExemplar
	for _, line := range strings.Split(string(body), "\n") {
		m := omExemplarLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		e := promExemplar{metric: m[1]}
		for _, l := range omLabel.FindAllStringSubmatch(m[2], -1) {
			switch l[1] {
			case "model":
				e.model = l[2]
			case "type":
				e.typ = l[2]
			}
		}
		for _, l := range omLabel.FindAllStringSubmatch(m[3], -1) {
			switch l[1] {
			case "trace_id":
				e.traceID = l[2]
			case "span_id":
				e.spanID = l[2]
			}
		}
		fmt.Sscan(m[4], &e.value)
		out = append(out, e)
	}
	return out
}

// TestExemplarsNameOnlySpansSent: the token and cost counters' exemplars
// name request spans the exporter sent (the chat spans on its stdout, each
// exemplar's value the span's own), one at least for every model that
// spent output tokens; none of a session held back by --traces.since, and
// none at all with --traces.exporter=none.
func TestExemplarsNameOnlySpansSent(t *testing.T) {
	bin := tracesBuildBinary(t)
	src := filepath.Join(testbackend.CorpusDir(t), "damon-salvet")
	// A copy whose files date from a month ago, but for one session's.
	windowed := t.TempDir()
	copyTree(t, src, windowed)
	old, recent := time.Now().Add(-30*24*time.Hour), time.Now().Add(-time.Hour)
	var sessionFile string
	var best int64
	if err := filepath.WalkDir(filepath.Join(windowed, "projects"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".jsonl") && filepath.Base(filepath.Dir(p)) != "subagents" {
			if info, _ := d.Info(); info != nil && info.Size() > best {
				sessionFile, best = p, info.Size()
			}
		}
		return os.Chtimes(p, old, old)
	}); err != nil || sessionFile == "" {
		t.Fatalf("no session in %s: %v", src, err)
	}
	if err := os.Chtimes(sessionFile, recent, recent); err != nil {
		t.Fatal(err)
	}
	recentTrace := spans.SessionTraceID(strings.TrimSuffix(filepath.Base(sessionFile), ".jsonl")).String()

	tests := []struct {
		name string
		dir  string
		args []string
		// check judges the exemplars against the spans sent.
		check func(t *testing.T, ex []promExemplar, sent map[string]testbackend.Span)
	}{
		{"every span sent", src, []string{"--traces.exporter=stdout", "--traces.since=0"}, func(t *testing.T, ex []promExemplar, sent map[string]testbackend.Span) {
			models := map[string]bool{}
			for _, s := range sent {
				if n, _ := s.Attrs[spans.AttrUsageOutputTokens].(int64); n > 0 {
					models[s.Attrs[spans.AttrRequestModel].(string)] = true
				}
			}
			for _, e := range ex {
				delete(models, e.model)
			}
			if len(models) > 0 || len(ex) == 0 {
				t.Errorf("%d exemplars; models that spent output tokens without one: %v", len(ex), models)
			}
		}},
		{"sessions before --traces.since held back", windowed, []string{"--traces.exporter=stdout", "--traces.since=7d"}, func(t *testing.T, ex []promExemplar, _ map[string]testbackend.Span) {
			if len(ex) == 0 {
				t.Error("no exemplar: the session in the window sent its spans")
			}
			for _, e := range ex {
				if e.traceID != recentTrace {
					t.Errorf("%s{model=%s} names trace %s, a session held back (only %s was sent)", e.metric, e.model, e.traceID, recentTrace)
				}
			}
		}},
		{"no exporter", src, []string{"--traces.exporter=none"}, func(t *testing.T, ex []promExemplar, _ map[string]testbackend.Span) {
			if len(ex) != 0 {
				t.Errorf("%d exemplars with --traces.exporter=none, first %+v", len(ex), ex[0])
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			addr, stdout := serveDaemon(t, bin, tc.dir, tc.args...)
			ex := scrapeExemplars(t, addr)
			// Sent means handed to the exporter, whose batches reach
			// stdout a moment later: wait for the spans named.
			var sent map[string]testbackend.Span
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
				out := stdout.Bytes()
				got, err := testbackend.ParseSpans(out[:bytes.LastIndexByte(out, '\n')+1])
				if err != nil {
					t.Fatal(err)
				}
				sent = map[string]testbackend.Span{}
				for _, s := range got {
					sent[s.TraceID+"/"+s.SpanID] = s
				}
				missing := 0
				for _, e := range ex {
					if _, ok := sent[e.traceID+"/"+e.spanID]; !ok {
						missing++
					}
				}
				if missing == 0 || time.Now().After(deadline) {
					break
				}
			}
			for _, e := range ex {
				s, ok := sent[e.traceID+"/"+e.spanID]
				if !ok {
					t.Errorf("%s{model=%s,type=%s} names span %s/%s, which was not sent", e.metric, e.model, e.typ, e.traceID, e.spanID)
					continue
				}
				checkExemplarValue(t, e, s)
			}
			tc.check(t, ex, sent)
			t.Logf("%d exemplars, %d spans sent", len(ex), len(sent))
		})
	}
}

// checkExemplarValue: an output-token or cost exemplar's value is what its
// span says the request spent (when the request had no advisor, whose
// tokens count under the advisor's model).
func checkExemplarValue(t *testing.T, e promExemplar, s testbackend.Span) {
	t.Helper()
	if s.Attrs[spans.AttrAdvisorModel] != nil || s.Attrs[spans.AttrRequestModel] != e.model {
		return
	}
	var want float64
	switch {
	case e.metric == "claude_transcript_cost_usd_total":
		want, _ = s.Attrs[spans.AttrUsageCost].(float64)
	case e.typ == "output":
		n, _ := s.Attrs[spans.AttrUsageOutputTokens].(int64)
		want = float64(n)
	default:
		return
	}
	if diff := e.value - want; diff > 1e-9 || diff < -1e-9 {
		t.Errorf("%s{model=%s,type=%s} exemplar value %v, span %s says %v", e.metric, e.model, e.typ, e.value, s.Name, want)
	}
}

// TestExemplarsLeadFromPrometheusToJaeger does what a user does from a
// spend or token graph: a real Prometheus 3 with exemplar storage scrapes
// the daemon over a corpus tree that sends its spans to a real Jaeger;
// /api/v1/query_exemplars answers, for every model that spent tokens (and
// every priced one's cost), exemplars whose trace Jaeger finds, holding
// the named chat span of that model. Prometheus keeps what the exposition
// shows: the same exemplars.
func TestExemplarsLeadFromPrometheusToJaeger(t *testing.T) {
	bin := tracesBuildBinary(t)
	j := testbackend.StartJaeger(t)
	dir := filepath.Join(testbackend.CorpusDir(t), "mlevison")
	addr, _ := serveDaemon(t, bin, dir, "--traces.exporter=otlp", "--traces.since=0",
		"--otlp.endpoint="+j.OTLPEndpoint(), "--otlp.insecure")
	exposed := scrapeExemplars(t, addr)
	p := testbackend.StartPrometheus(t, testbackend.PromOptions{Targets: []string{addr},
		ExtraArgs: []string{"--enable-feature=exemplar-storage"}})

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// Models that spent output tokens, and those with a cost, as
	// Prometheus has them.
	want := map[string]map[string]bool{}
	for metric, expr := range map[string]string{
		"claude_transcript_tokens_total":   `sum by (model) (claude_transcript_tokens_total{type="output"}) > 0`,
		"claude_transcript_cost_usd_total": `sum by (model) (claude_transcript_cost_usd_total) > 0`,
	} {
		var res testbackend.QueryResult
		for len(res.Samples) == 0 && ctx.Err() == nil {
			time.Sleep(500 * time.Millisecond)
			res, _ = p.Query(ctx, expr)
		}
		want[metric] = map[string]bool{}
		for _, s := range res.Samples {
			want[metric][s.Labels["model"]] = true
		}
	}
	if len(want["claude_transcript_tokens_total"]) < 2 {
		t.Fatalf("models that spent output tokens: %v; the test needs several", want["claude_transcript_tokens_total"])
	}

	type stored struct{ metric, model, trace, span string }
	var got []stored
	for len(got) < len(exposed) && ctx.Err() == nil {
		got = got[:0]
		for metric := range want {
			series, err := p.QueryExemplars(ctx, metric, time.Unix(0, 0), time.Now().Add(time.Hour))
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range series {
				for _, e := range s.Exemplars {
					got = append(got, stored{metric, s.SeriesLabels["model"], e.Labels["trace_id"], e.Labels["span_id"]})
				}
			}
		}
		time.Sleep(time.Second)
	}
	if len(got) != len(exposed) {
		t.Errorf("Prometheus stores %d exemplars, the exposition shows %d", len(got), len(exposed))
	}

	traces := map[string]testbackend.JaegerTrace{}
	covered := map[string]map[string]bool{}
	for _, e := range got {
		tr, ok := traces[e.trace]
		for !ok && ctx.Err() == nil {
			var err error
			if tr, err = j.Trace(ctx, e.trace); err == nil {
				traces[e.trace], ok = tr, true
			} else {
				time.Sleep(500 * time.Millisecond)
			}
		}
		if !ok {
			t.Errorf("%s{model=%s}: Jaeger does not find trace %s", e.metric, e.model, e.trace)
			continue
		}
		var span *testbackend.JaegerSpan
		for i := range tr.Spans {
			if tr.Spans[i].SpanID == e.span {
				span = &tr.Spans[i]
			}
		}
		switch {
		case span == nil:
			t.Errorf("%s{model=%s}: trace %s has no span %s", e.metric, e.model, e.trace, e.span)
		case !strings.HasPrefix(span.OperationName, "chat") || (span.Tags[spans.AttrRequestModel] != e.model && span.Tags[spans.AttrAdvisorModel] == nil):
			t.Errorf("%s{model=%s}: span %s is %q of model %v", e.metric, e.model, e.span, span.OperationName, span.Tags[spans.AttrRequestModel])
		default:
			if covered[e.metric] == nil {
				covered[e.metric] = map[string]bool{}
			}
			covered[e.metric][e.model] = true
		}
	}
	for metric, models := range want {
		for m := range models {
			if !covered[metric][m] {
				t.Errorf("%s{model=%s}: no exemplar leads to a span Jaeger has", metric, m)
			}
		}
	}
	t.Logf("%d exemplars in Prometheus (%d exposed), %d traces found in Jaeger; models covered: tokens %d of %d, cost %d of %d",
		len(got), len(exposed), len(traces), len(covered["claude_transcript_tokens_total"]), len(want["claude_transcript_tokens_total"]),
		len(covered["claude_transcript_cost_usd_total"]), len(want["claude_transcript_cost_usd_total"]))
}
