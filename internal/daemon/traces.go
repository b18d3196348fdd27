package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/common/version"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/exporter/otlp"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/exporter/prom"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/safefile"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/metrics"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/session"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/spans"
)

// tracesStage is the span half of the pipeline.
type tracesStage struct {
	sink session.Sink
	// window holds back the spans of sessions older than --traces.since
	// during the backfill.
	window *traceWindow
	close  func(ctx context.Context, timeout time.Duration) error
	// durable reports whether every span built so far survives a crash:
	// acknowledged by the receiver, or in the spool (which it syncs).
	// Only then may the state file move: lines after its offsets are
	// read again after a crash, and their spans built again.
	durable func() (bool, error)
	// heldAgents lists the subagent runs whose spans wait for their
	// session's end, which the state file keeps (the file moves past
	// their lines); restoreAgents gives a restored state's back.
	heldAgents    func() []session.Subagent
	restoreAgents func([]session.Subagent)
	// exemplar names the chat span of a request, when that span was
	// sent (metrics.Config.Exemplar): the span sink runs before the
	// metrics for each unit, so a request's span, unless held back
	// (--traces.since, or under --traces.granularity=turn until its turn
	// is known), is the last chat span sent when the metrics count it.
	exemplar func(r *session.Request) (metrics.Exemplar, bool)
}

// lastChat is the last chat span of a request that was sent.
type lastChat struct {
	session, message string
	ex               metrics.Exemplar
}

// note records s when it is the chat span of a request.
func (l *lastChat) note(s *spans.Span) {
	if s.Kind != spans.KindClient {
		return
	}
	msg, ok := s.Attr(spans.AttrResponseID)
	if !ok || msg.Str == "" {
		return
	}
	conv, _ := s.Attr(spans.AttrConversationID)
	*l = lastChat{session: conv.Str, message: msg.Str, ex: metrics.Exemplar{TraceID: s.TraceID.String(), SpanID: s.SpanID.String()}}
}

// of returns the exemplar of r when r's span is the one recorded.
func (l *lastChat) of(r *session.Request) (metrics.Exemplar, bool) {
	if l.message == "" || l.message != r.MessageID || l.session != r.SessionID {
		return metrics.Exemplar{}, false
	}
	return l.ex, true
}

// Environment variables that configure the OTLP exporter (read by the
// SDK; the daemon looks at them only to resolve --traces.exporter=auto
// and to name the receiver in messages).
const (
	envTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	envEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	envTracesHeaders  = "OTEL_EXPORTER_OTLP_TRACES_HEADERS"
	envHeaders        = "OTEL_EXPORTER_OTLP_HEADERS"
	envTracesExporter = "OTEL_TRACES_EXPORTER"
	envSDKDisabled    = "OTEL_SDK_DISABLED"
	defaultEndpoint   = "localhost:4317"
)

// newTraces builds the span pipeline — builder → queue → exporter — or
// returns nil when traces are off.
// Spans are priced with the metrics' price table.
func newTraces(ctx context.Context, cfg *Config, prices *metrics.Prices, logger *slog.Logger, self *prom.Self, stdout io.Writer) (*tracesStage, error) {
	return buildTraces(ctx, cfg, prices, logger, self, stdout, os.Getenv)
}

func buildTraces(ctx context.Context, cfg *Config, prices *metrics.Prices, logger *slog.Logger, self *prom.Self, stdout io.Writer, getenv func(string) string) (*tracesStage, error) {
	tc := cfg.Traces
	kind := exporterKind(tc, getenv)
	if kind == "none" {
		logger.Debug("traces off", "exporter", tc.Exporter)
		return nil, nil
	}
	v := version.Version
	if v == "" {
		v = "dev"
	}
	res, err := otlp.NewResource(ctx, v, tc.Identifying)
	if err != nil {
		if res == nil {
			return nil, fmt.Errorf("--traces.exporter: %w", err)
		}
		logger.Warn("resource attributes incomplete", "err", err)
	}

	var exp otlp.Exporter
	endpoint := "stdout"
	switch kind {
	case "otlp":
		if receiverName(tc.Endpoint, getenv) == defaultEndpoint && strings.TrimSpace(tc.Endpoint) == "" {
			// The SDK would dial TLS to its default and fail one timeout
			// later with a message naming neither it nor the flags.
			return nil, &StartError{fmt.Errorf("--traces.exporter=otlp: no OTLP endpoint given: set --otlp.endpoint=host:port "+
				"(or OTEL_EXPORTER_OTLP_ENDPOINT); the default would be %s over TLS, and a local collector without TLS also needs --otlp.insecure "+
				"(e.g. --otlp.endpoint=127.0.0.1:4317 --otlp.insecure)", defaultEndpoint)}
		}
		headers, err := otlpHeaders(tc.Headers, getenv)
		if err != nil {
			return nil, err
		}
		g, err := otlp.NewGRPC(ctx, otlp.GRPCConfig{Endpoint: tc.Endpoint, Insecure: tc.Insecure, Headers: headers, Version: v}, res)
		if err != nil {
			return nil, fmt.Errorf("--otlp.endpoint: %w", err)
		}
		exp, endpoint = g, receiverName(tc.Endpoint, getenv)
	case "stdout":
		exp = otlp.NewJSON(stdout, res, v)
	default:
		return nil, fmt.Errorf("--traces.exporter: unknown exporter %q", kind)
	}

	qcfg := otlp.QueueConfig{
		BatchSize:     tc.BatchSize,
		ExportTimeout: tc.Timeout,
		Endpoint:      endpoint,
		Observer:      selfObserver{self},
		Logger:        logger,
	}
	if cfg.Oneshot {
		// A one-shot run must end: stop retrying once the receiver has
		// failed for as long as shutdown may take, and exit non-zero.
		qcfg.GiveUpAfter = cfg.ShutdownTimeout
	} else if dir := spoolDir(cfg); dir != "" {
		// The daemon never waits for the receiver: what it has not taken
		// waits on disk.
		var warned atomic.Bool
		sp, err := otlp.OpenSpool(dir, otlp.SpoolConfig{
			MaxBytes: tc.SpoolMaxBytes,
			Dropped: func(n int) {
				self.SpoolDropped.Add(float64(n))
				if !warned.Swap(true) {
					logger.Warn("spool full: dropping the oldest spans (counted in claude_transcript_exporter_spool_dropped_spans_total; logged once)",
						"dir", dir, "max_bytes", tc.SpoolMaxBytes)
				}
			},
		})
		if errors.Is(err, safefile.ErrLocked) {
			_ = exp.Shutdown(ctx)
			return nil, &StartError{fmt.Errorf("--otlp.spool-dir: %w; give each exporter its own --otlp.spool-dir (default: spool/ beside --state.file)", err)}
		}
		if err != nil {
			_ = exp.Shutdown(ctx)
			return nil, fmt.Errorf("--otlp.spool-dir: %w", err)
		}
		qcfg.Spool = sp
	}
	q := otlp.NewQueue(exp, qcfg)

	var (
		b           *spans.Builder
		lastClamped int64
		dropLogged  bool
		window      = &traceWindow{}
		last        lastChat
	)
	emit := func(s spans.Span) {
		if !window.keep(&s) {
			self.SpansBeforeWindow.Inc()
			return
		}
		if err := q.Enqueue(ctx, s); err != nil {
			if !dropLogged {
				dropLogged = true
				logger.Error("dropping spans", "err", err)
			}
		} else {
			last.note(&s)
		}
		if c := b.Stats().Clamped; c > lastClamped {
			self.ClampedTimes.Add(float64(c - lastClamped))
			lastClamped = c
		}
	}
	b = spans.NewBuilder(builderConfig(tc, cfg.projectOf, prices), emit)
	spool := "none"
	if qcfg.Spool != nil {
		spool = qcfg.Spool.Dir()
	}
	logger.Info("exporting spans", "exporter", kind, "endpoint", endpoint, "granularity", tc.Granularity,
		"capture", strings.Join(tc.Capture, ","), "batch_size", tc.BatchSize, "spool", spool)

	closeFn := func(ctx context.Context, timeout time.Duration) error {
		cctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		st := b.Stats()
		if st.EventsDropped+st.EventsLost+st.Unlinked+st.StandInAgents > 0 {
			logger.Info("span mapping notes", "events_dropped", st.EventsDropped, "events_lost", st.EventsLost,
				"unlinked", st.Unlinked, "stand_in_agents", st.StandInAgents)
		}
		if err := q.Close(cctx); err != nil {
			return err
		}
		if q.Len() == 0 {
			logger.Info("spans delivered", "spans", st.Spans, "endpoint", endpoint)
		}
		return nil
	}
	durable := func() (bool, error) {
		// Only this goroutine adds spans, so once Checkpoint has moved
		// those in memory to the spool and synced it, every span built so
		// far is acknowledged or on disk; MemoryLen counts any the spool
		// refused. Spans the builder still holds exist only here.
		if b.Held() > 0 {
			return false, nil
		}
		if err := q.Checkpoint(); err != nil {
			return false, err
		}
		return q.MemoryLen() == 0, nil
	}
	return &tracesStage{sink: b, window: window, close: closeFn, durable: durable, exemplar: last.of,
		heldAgents: b.HeldAgents, restoreAgents: b.RestoreHeldAgents}, nil
}

// traceWindow is --traces.since. During the backfill, the spans of a
// session go out only when one of its transcript files was modified within
// the window before start: a session active in the window is exported whole,
// an older one not at all (no half trees), and its metrics count either way.
// A recent file marks its session by its path (<session>.jsonl and
// <session>/subagents/*.jsonl) when the scan finds it, before any span is
// built, and marks the sessions its records name as they are read (a legacy
// agent-*.jsonl, a file named otherwise, a resumed session's copies).
// Everything after the backfill is exported. The zero value lets every
// span through.
type traceWindow struct {
	cutoff time.Time           // zero: no window
	recent map[string]struct{} // sessions with a file modified at or after cutoff
}

// begin opens the window before the backfill: since before now (0: none).
func (w *traceWindow) begin(since time.Duration, now time.Time) {
	if since <= 0 {
		return
	}
	w.cutoff = now.Add(-since)
	w.recent = map[string]struct{}{}
}

// see notes a transcript file of session id modified at mtime.
func (w *traceWindow) see(id string, mtime time.Time) {
	if w.recent == nil || id == "" || mtime.Before(w.cutoff) {
		return
	}
	w.recent[id] = struct{}{}
}

// open says the window is open: which sessions' spans go out depends on
// the times of files not read yet (see must see every file first).
func (w *traceWindow) open() bool { return w.recent != nil }

// end closes the window after the backfill: every later span goes out.
func (w *traceWindow) end() {
	w.cutoff, w.recent = time.Time{}, nil
}

// keep says whether a span goes out.
func (w *traceWindow) keep(s *spans.Span) bool {
	if w.recent == nil {
		return true
	}
	v, _ := s.Attr(spans.AttrConversationID)
	_, ok := w.recent[v.Str]
	return ok
}

// spoolDir resolves --otlp.spool-dir: the flag, else spool/ next to the
// state file, else none. Without a state file a restart reads and sends
// everything again anyway; the in-memory queue then blocks the reader
// during a long outage.
func spoolDir(cfg *Config) string {
	switch {
	case cfg.Traces.SpoolDir != "":
		return cfg.Traces.SpoolDir
	case cfg.StateFile != "":
		return filepath.Join(filepath.Dir(cfg.StateFile), "spool")
	}
	return ""
}

// exporterKind resolves --traces.exporter: auto is otlp when an endpoint
// is configured (--otlp.endpoint, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or
// OTEL_EXPORTER_OTLP_ENDPOINT) and OTEL_TRACES_EXPORTER / OTEL_SDK_DISABLED
// do not turn traces off; else none.
func exporterKind(tc TracesConfig, getenv func(string) string) string {
	if tc.Exporter != "auto" {
		return tc.Exporter
	}
	if strings.EqualFold(strings.TrimSpace(getenv(envSDKDisabled)), "true") ||
		strings.EqualFold(strings.TrimSpace(getenv(envTracesExporter)), "none") {
		return "none"
	}
	if tc.Endpoint != "" || getenv(envTracesEndpoint) != "" || getenv(envEndpoint) != "" {
		return "otlp"
	}
	return "none"
}

// receiverName names the receiver in messages: the flag, else the
// environment, else the SDK's default.
func receiverName(flag string, getenv func(string) string) string {
	for _, v := range []string{flag, getenv(envTracesEndpoint), getenv(envEndpoint)} {
		if v = strings.TrimSpace(v); v != "" {
			return v
		}
	}
	return defaultEndpoint
}

// otlpHeaders returns nil (leave headers to the SDK, which reads the
// environment) when --otlp.headers is empty; else the environment's
// headers with the flag's added, since an SDK option replaces them.
func otlpHeaders(flag string, getenv func(string) string) (map[string]string, error) {
	if strings.TrimSpace(flag) == "" {
		return nil, nil
	}
	h := map[string]string{}
	env := getenv(envTracesHeaders)
	if env == "" {
		env = getenv(envHeaders)
	}
	if env != "" {
		parsed, err := ParseHeaders(env)
		if err == nil {
			for k, v := range parsed {
				k2, kerr := url.PathUnescape(k)
				v2, verr := url.PathUnescape(v)
				if kerr == nil && verr == nil {
					h[k2] = v2
				}
			}
		}
	}
	parsed, err := ParseHeaders(flag)
	if err != nil {
		return nil, fmt.Errorf("--otlp.headers: %w", err)
	}
	for k, v := range parsed {
		h[k] = v
	}
	return h, nil
}

// builderConfig maps the flags to the span builder's configuration: the
// project named by project (the metrics' mapper: the same labels, never
// two dirs under one), costs from the metrics' price table (nil: no cost
// on spans).
func builderConfig(tc TracesConfig, project func(cwd string) string, prices *metrics.Prices) spans.Config {
	c := spans.Config{
		CaptureMaxBytes: tc.CaptureMaxBytes,
		Identifying:     tc.Identifying,
		Project:         project,
		Capture: spans.Capture{
			Prompts:   tc.Captures(CapturePrompts),
			Responses: tc.Captures(CaptureResponses),
			Tools:     tc.Captures(CaptureTools),
			Thinking:  tc.Captures(CaptureThinking),
		},
	}
	if tc.Granularity == "turn" {
		c.Granularity = spans.GranularityTurn
	}
	if prices != nil {
		memo := prices.Memo() // the builder prices on one goroutine
		c.Price = func(model string, t session.Tokens, r *session.Request) (float64, bool) {
			return memo.RequestCost(model, metrics.RequestTime(r), t, metrics.ModifiersOf(r.Attribution))
		}
	}
	return c
}

// selfObserver moves the queue's counts into the self-metrics.
type selfObserver struct{ self *prom.Self }

func (o selfObserver) Acknowledged(n int, t time.Time) {
	o.self.SpansExported.Add(float64(n))
	o.self.LastExport.Set(float64(t.UnixNano()) / 1e9)
}

func (o selfObserver) Failed(n int) { o.self.SpansFailed.Add(float64(n)) }

func (o selfObserver) Pending(n int) { o.self.SpansPending.Set(float64(n)) }

func (o selfObserver) Spooled(n int) { o.self.SpoolSpans.Set(float64(n)) }
