package testbackend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const (
	// ThanosBinEnv names the Thanos binary (tools/thanos/build.sh).
	ThanosBinEnv = "CTE_THANOS_BIN"

	// thanosStartTimeout bounds the wait for /-/ready of a receiver or
	// of query.
	thanosStartTimeout = 60 * time.Second
	// ThanosReplicaLabel is the external label that tells the receivers'
	// copies of a series apart; query deduplicates on it.
	ThanosReplicaLabel = "receive_replica"
)

// ThanosBinary returns the Thanos binary: $CTE_THANOS_BIN, else the one
// tools/thanos/build.sh builds or finds in its cache.
func ThanosBinary(t testing.TB) string {
	t.Helper()
	return backendBinary(t, ThanosBinEnv, "thanos", "thanos")
}

// ThanosOptions configures StartThanosHashring.
type ThanosOptions struct {
	// Receivers is the number of `thanos receive` processes in the
	// hashring; default 3.
	Receivers int
	// ReplicationFactor is --receive.replication-factor; default 2.
	ReplicationFactor int
}

// ThanosHashring is a running Thanos receive hashring with `thanos query`
// in front of it, started by StartThanosHashring.
type ThanosHashring struct {
	// QueryAPI is thanos query's Prometheus-compatible HTTP API, which
	// deduplicates the replicas (ThanosReplicaLabel).
	QueryAPI
	receivers []*ThanosReceiver
	query     *process
	queryLog  string
}

// ThanosReceiver is one `thanos receive` process of a ThanosHashring. It
// can be killed and started again on the same ports and TSDB.
type ThanosReceiver struct {
	name    string
	bin     string
	args    []string
	http    string // --http-address (/-/ready, /metrics)
	grpc    string // --grpc-address (store API; the hashring's endpoint)
	write   string // --remote-write.address (/api/v1/receive, /api/v1/otlp)
	logPath string

	mu   sync.Mutex
	proc *process // nil while killed
}

// StartThanosHashring starts opts.Receivers `thanos receive` processes on
// free ports of 127.0.0.1, in one hashring (hashmod, every receiver an
// ingestor and a router) with replication factor opts.ReplicationFactor,
// and a `thanos query` reading all of them, deduplicating on
// ThanosReplicaLabel; it waits until every receiver and query is ready and
// query sees every receiver. The binary is ThanosBinary. Everything is
// stopped when the test ends; if the test failed, the tails of the logs are
// printed.
func StartThanosHashring(t testing.TB, opts ThanosOptions) *ThanosHashring {
	t.Helper()
	if opts.Receivers <= 0 {
		opts.Receivers = 3
	}
	if opts.ReplicationFactor <= 0 {
		opts.ReplicationFactor = 2
	}
	bin := ThanosBinary(t)
	// A port FreePort found free may be taken before thanos binds it (by
	// another test's process, or an outgoing connection's local port):
	// the hashring then starts again on other ports.
	const attempts = 3
	for attempt := 1; ; attempt++ {
		h, err := startThanosHashring(t, bin, t.TempDir(), opts)
		if err == nil {
			return h
		}
		if attempt == attempts || !errors.Is(err, errPortTaken) {
			t.Fatal(err)
		}
		t.Logf("thanos hashring, attempt %d of %d: %v; again on other ports", attempt, attempts, err)
	}
}

// errPortTaken says a process could not bind a port it was given.
var errPortTaken = errors.New("a port was taken before the process bound it")

// startThanosHashring is one attempt of StartThanosHashring; on an error
// it stops what it started.
func startThanosHashring(t testing.TB, bin, dir string, opts ThanosOptions) (_ *ThanosHashring, err error) {
	h := &ThanosHashring{}
	ports := map[int]bool{}
	addr := func() string {
		for {
			if p := FreePort(t); !ports[p] {
				ports[p] = true
				return fmt.Sprintf("127.0.0.1:%d", p)
			}
		}
	}
	var endpoints []string
	for i := 0; i < opts.Receivers; i++ {
		r := &ThanosReceiver{
			name:  fmt.Sprintf("receive-%d", i),
			bin:   bin,
			http:  addr(),
			grpc:  addr(),
			write: addr(),
		}
		r.logPath = filepath.Join(dir, r.name+".log")
		h.receivers = append(h.receivers, r)
		endpoints = append(endpoints, r.grpc)
	}
	ring, err := json.Marshal([]map[string]any{{"hashring": "default", "endpoints": endpoints}})
	if err != nil {
		return nil, err
	}
	ringPath := filepath.Join(dir, "hashring.json")
	if err := os.WriteFile(ringPath, ring, 0o644); err != nil {
		return nil, err
	}
	for i, r := range h.receivers {
		r.args = []string{"receive",
			"--tsdb.path=" + filepath.Join(dir, r.name),
			"--tsdb.retention=1d",
			// As deploy/team/thanos/docker-compose.yml: the collector
			// sends a queue's requests concurrently, so a machine's later
			// push can reach a receiver before its earlier one; without
			// the window that earlier push is refused (409) and dropped.
			"--tsdb.out-of-order.time-window=1h",
			"--http-address=" + r.http,
			"--grpc-address=" + r.grpc,
			"--remote-write.address=" + r.write,
			"--receive.capnproto-address=" + addr(),
			"--receive.local-endpoint=" + r.grpc,
			"--receive.hashrings-file=" + ringPath,
			"--receive.replication-factor=" + strconv.Itoa(opts.ReplicationFactor),
			fmt.Sprintf("--label=%s=\"%d\"", ThanosReplicaLabel, i),
			"--log.level=warn",
		}
	}
	stopAll := func() {
		for _, r := range h.receivers {
			_ = r.stop()
		}
		if h.query != nil {
			_ = h.query.stop()
		}
	}
	// failed wraps an error with the tail of a log, and errPortTaken when
	// the log says a port was in use.
	failed := func(what string, err error, logPath string) error {
		tail := logTail(logPath, logTailLines)
		if strings.Contains(tail, "address already in use") {
			err = fmt.Errorf("%w: %w", errPortTaken, err)
		}
		return fmt.Errorf("%s: %w\n%s", what, err, tail)
	}
	defer func() {
		if err != nil {
			stopAll()
		}
	}()
	for _, r := range h.receivers {
		if err := r.start(t); err != nil {
			return nil, failed("start thanos "+r.name, err, r.logPath)
		}
	}
	for _, r := range h.receivers {
		if err := waitHTTPReady(r.proc, "http://"+r.http+"/-/ready", thanosStartTimeout); err != nil {
			return nil, failed("thanos "+r.name, err, r.logPath)
		}
	}

	qhttp := addr()
	args := []string{"query",
		"--http-address=" + qhttp,
		"--grpc-address=" + addr(),
		"--query.replica-label=" + ThanosReplicaLabel,
		"--log.level=warn",
	}
	for _, e := range endpoints {
		args = append(args, "--endpoint="+e)
	}
	h.queryLog = filepath.Join(dir, "query.log")
	if h.query, err = startProcess("thanos query", bin, args, h.queryLog); err != nil {
		return nil, failed("start thanos query", err, h.queryLog)
	}
	h.QueryAPI = NewQueryAPI("http://" + qhttp)
	if err := waitHTTPReady(h.query, h.url+"/-/ready", thanosStartTimeout); err != nil {
		return nil, failed("thanos query", err, h.queryLog)
	}
	ctx, cancel := context.WithTimeout(context.Background(), thanosStartTimeout)
	defer cancel()
	if err := h.waitStores(ctx, len(endpoints)); err != nil {
		return nil, failed("thanos query", err, h.queryLog)
	}
	t.Cleanup(func() {
		for _, r := range h.receivers {
			if t.Failed() {
				t.Logf("thanos %s\n%s", r.name, logTail(r.logPath, logTailLines))
			}
			if err := r.stop(); err != nil {
				t.Errorf("thanos %s: %v", r.name, err)
			}
		}
		if t.Failed() {
			t.Logf("thanos query\n%s", logTail(h.queryLog, logTailLines))
		}
		if err := h.query.stop(); err != nil {
			t.Errorf("thanos query: %v", err)
		}
	})
	return h, nil
}

// waitStores waits until query lists n healthy store endpoints
// (/api/v1/stores).
func (h *ThanosHashring) waitStores(ctx context.Context, n int) error {
	var last string
	for {
		body, err := h.API(ctx, "/api/v1/stores", nil)
		if err == nil {
			var env struct {
				Data map[string][]struct {
					Name      string `json:"name"`
					LastError any    `json:"lastError"`
				} `json:"data"`
			}
			if err := json.Unmarshal(body, &env); err == nil {
				up := 0
				for _, stores := range env.Data {
					for _, s := range stores {
						if s.LastError == nil {
							up++
						}
					}
				}
				if up >= n {
					return nil
				}
			}
			last = string(body)
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("query does not see %d stores: %w (last: %s)", n, ctx.Err(), last)
		case <-time.After(pollInterval * 5):
		}
	}
}

// Receivers returns the receivers, in hashring order.
func (h *ThanosHashring) Receivers() []*ThanosReceiver { return h.receivers }

// QueryPID is the process id of thanos query.
func (h *ThanosHashring) QueryPID() int { return h.query.cmd.Process.Pid }

// OTLPURL is the receiver's OTLP/HTTP metrics endpoint (an otlphttp
// exporter's metrics_endpoint).
func (r *ThanosReceiver) OTLPURL() string { return "http://" + r.write + "/api/v1/otlp" }

// MetricsURL is the receiver's own /metrics.
func (r *ThanosReceiver) MetricsURL() string { return "http://" + r.http + "/metrics" }

// Name is receive-<i>.
func (r *ThanosReceiver) Name() string { return r.name }

// PID is the process id of the running receiver (0 while killed).
func (r *ThanosReceiver) PID() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.proc == nil {
		return 0
	}
	return r.proc.cmd.Process.Pid
}

// Kill sends SIGKILL to the receiver (no flush, no goodbye) and waits for
// it to exit.
func (r *ThanosReceiver) Kill(t testing.TB) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.proc == nil {
		return
	}
	if err := r.proc.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("kill thanos %s: %v", r.name, err)
	}
	<-r.proc.done
	r.proc = nil
}

// Restart starts a killed receiver again on the same ports and TSDB (it
// replays its WAL) and waits until it is ready.
func (r *ThanosReceiver) Restart(t testing.TB) {
	t.Helper()
	if err := r.start(t); err != nil {
		t.Fatalf("restart thanos %s: %v\n%s", r.name, err, logTail(r.logPath, logTailLines))
	}
	if err := waitHTTPReady(r.proc, "http://"+r.http+"/-/ready", thanosStartTimeout); err != nil {
		t.Fatalf("restart thanos %s: %v\n%s", r.name, err, logTail(r.logPath, logTailLines))
	}
}

func (r *ThanosReceiver) start(t testing.TB) error {
	waitOutsidePruning(t, r.name)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.proc != nil {
		return fmt.Errorf("already running")
	}
	p, err := startProcess("thanos "+r.name, r.bin, r.args, r.logPath)
	if err != nil {
		return err
	}
	r.proc = p
	return nil
}

func (r *ThanosReceiver) stop() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.proc == nil {
		return nil
	}
	err := r.proc.stop()
	r.proc = nil
	return err
}

// ThanosProcess is one thanos process started by StartThanos.
type ThanosProcess struct {
	proc    *process
	logPath string
}

// StartThanos starts the Thanos binary (ThanosBinary) with args (a
// subcommand and its flags, e.g. taken from a compose file), waits until
// readyURL answers 200, and stops it when the test ends. A process that
// exits or is not ready in time fails the test with its log.
func StartThanos(t testing.TB, name string, args []string, readyURL string) *ThanosProcess {
	t.Helper()
	bin := ThanosBinary(t)
	if len(args) > 0 && args[0] == "receive" {
		waitOutsidePruning(t, name)
	}
	p := &ThanosProcess{logPath: filepath.Join(t.TempDir(), name+".log")}
	var err error
	p.proc, err = startProcess("thanos "+name, bin, args, p.logPath)
	if err != nil {
		t.Fatalf("start thanos %s: %v", name, err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("thanos %s\n%s", name, logTail(p.logPath, logTailLines))
		}
		if err := p.proc.stop(); err != nil {
			t.Errorf("thanos %s: %v", name, err)
		}
	})
	if err := waitHTTPReady(p.proc, readyURL, thanosStartTimeout); err != nil {
		t.Fatalf("thanos %s %v: %v\n%s", name, args, err, logTail(p.logPath, logTailLines))
	}
	return p
}

// Log returns the process' output so far.
func (p *ThanosProcess) Log() string {
	b, _ := os.ReadFile(p.logPath)
	return string(b)
}

// Thanos receive (v0.42.4) checks once a minute from its start, the first
// time at once, and prunes its tenants when the minute of the day (local
// time) is a multiple of thanosPruneEveryMinutes, 2 × the default
// --tsdb.max-block-duration of 2h (cmd/thanos/receive.go). A tenant whose
// TSDB is still opening then has none, and the pruning dereferences it and
// the receiver panics (thanos-io/thanos#8990, "receive: avoid pruning panic", merged
// upstream but in no release up to v0.42.5). CI lost a run to it when a receiver
// started at 12:00:23. Receivers are therefore started outside those
// minutes and far enough before them that start-up (and opening the TSDBs
// it finds, seconds for a test's) is over when the first one comes; the
// next check is a minute after the start.
const (
	thanosPruneEveryMinutes = 240
	// thanosPruneLead is how long before a pruning minute a receiver is
	// no longer started.
	thanosPruneLead = 20 * time.Second
)

// waitOutsidePruning sleeps until a thanos receive may start
// (thanosPruneWait), saying why in the test's log.
func waitOutsidePruning(t testing.TB, name string) {
	if wait := thanosPruneWait(time.Now()); wait > 0 {
		t.Logf("thanos %s: waiting %v to start outside the minute thanos receive prunes its tenants in", name, wait.Round(time.Second))
		time.Sleep(wait)
	}
}

// thanosPruneWait is how long to wait from now before starting a thanos
// receive so that it does not start in, or within thanosPruneLead of, a
// minute in which it prunes its tenants; 0 when it can start at once.
func thanosPruneWait(now time.Time) time.Duration {
	const period = thanosPruneEveryMinutes * time.Minute
	// The wall clock's time of day, as thanos computes its minute.
	sinceMidnight := time.Duration(now.Hour())*time.Hour + time.Duration(now.Minute())*time.Minute +
		time.Duration(now.Second())*time.Second + time.Duration(now.Nanosecond())
	into := sinceMidnight % period // time since the last pruning minute began
	switch {
	case into < time.Minute:
		return time.Minute - into
	case period-into <= thanosPruneLead:
		return period - into + time.Minute
	}
	return 0
}
