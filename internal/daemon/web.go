package daemon

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/coreos/go-systemd/v22/activation"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/exporter-toolkit/web"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/exporter/prom"
)

// StartError is an error found before any work that a flag caused: main
// exits 2 on it, as on a bad flag value. Its message names the flag.
type StartError struct{ Err error }

func (e *StartError) Error() string { return e.Err.Error() }
func (e *StartError) Unwrap() error { return e.Err }

// listen binds the web listeners before the backfill, so that a busy or bad
// --web.listen-address (or missing systemd sockets) fails at start, not
// after minutes of reading. With --web.systemd-socket the sockets come from
// systemd (LISTEN_FDS); vsock:// addresses are left to the toolkit.
func listen(cfg *Config) ([]net.Listener, error) {
	return listenOn(cfg, extraLoopback(cfg.WebListenAddresses))
}

// extraLoopback is the IPv6 loopback address the default also serves,
// where the host has it, so that http://localhost:9812 answers whichever
// address localhost resolves to first; "" for addresses the user chose.
func extraLoopback(addrs []string) string {
	if slices.Equal(addrs, []string{DefaultListenAddress}) {
		return DefaultListenAddress6
	}
	return ""
}

// listenOn binds the configured listeners, and v6 too where it can be
// bound (a host without IPv6 loopback is no error).
func listenOn(cfg *Config, v6 string) ([]net.Listener, error) {
	if cfg.WebSystemdSocket {
		ls, err := activation.Listeners()
		if err != nil {
			return nil, &StartError{fmt.Errorf("--web.systemd-socket: %w", err)}
		}
		var out []net.Listener
		for _, l := range ls {
			if l != nil {
				out = append(out, l)
			}
		}
		if len(out) == 0 {
			return nil, &StartError{errors.New("--web.systemd-socket: systemd passed no listening socket (LISTEN_FDS); start from a .socket unit or drop the flag")}
		}
		return out, nil
	}
	var out []net.Listener
	for _, addr := range cfg.WebListenAddresses {
		if strings.HasPrefix(addr, "vsock://") {
			return nil, &StartError{fmt.Errorf("--web.listen-address: %s: vsock is not supported", addr)}
		}
		l, err := net.Listen("tcp", addr)
		if err != nil {
			for _, o := range out {
				o.Close()
			}
			return nil, &StartError{fmt.Errorf("--web.listen-address: %w", err)}
		}
		out = append(out, l)
	}
	if v6 != "" {
		if l, err := net.Listen("tcp", v6); err == nil {
			out = append(out, l)
		}
	}
	return out, nil
}

// serve starts the HTTP server with the landing page, metrics and health
// endpoints on listeners bound by listen. Errors from serving arrive on the
// returned channel.
func serve(cfg *Config, logger *slog.Logger, regs registries, usage *prom.Metrics, ready *atomic.Bool, listeners []net.Listener) (*http.Server, <-chan error) {
	reg := regs.all
	mux := http.NewServeMux()
	// OpenMetrics on request (Prometheus asks for it first): the only
	// format that carries the exemplars of tokens_total and
	// cost_usd_total. Every counter's name ends in _total, so the series
	// are the same in either format.
	mux.Handle(cfg.TelemetryPath, newMetricsHandler(regs, usage, ready, logger))
	mux.HandleFunc("/-/healthy", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, "Healthy.\n")
	})
	mux.HandleFunc("/-/ready", func(w http.ResponseWriter, _ *http.Request) {
		if !ready.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, "Reading the transcripts present at start.\n")
			return
		}
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, "Ready.\n")
	})
	if cfg.WebEnablePprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	if cfg.TelemetryPath != "/" {
		mux.Handle("/", landing{cfg: cfg, reg: reg, ready: ready, now: time.Now})
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	errCh := make(chan error, 1)
	flags := &web.FlagConfig{WebListenAddresses: &cfg.WebListenAddresses, WebSystemdSocket: &cfg.WebSystemdSocket, WebConfigFile: &cfg.WebConfigFile}
	go func() {
		if err := web.ServeMultiple(listeners, srv, flags, logger); err != nil && !errors.Is(err, http.ErrServerClosed) {
			errCh <- fmt.Errorf("serving %s: %w", strings.Join(cfg.WebListenAddresses, ","), err)
		}
	}()
	return srv, errCh
}

// readyGatherer serves the usage series only once the backfill is done:
// a scrape during it would record a partial count, which a history loaded
// later (make backfill) would exceed, a reset where the two meet. The
// exporter's own series (claude_transcript_exporter_*, go_*, process_*)
// are served from the start.
type readyGatherer struct {
	g     prometheus.Gatherer
	ready *atomic.Bool
}

func (r readyGatherer) Gather() ([]*dto.MetricFamily, error) {
	mfs, err := r.g.Gather()
	if r.ready.Load() {
		return mfs, err
	}
	return withoutUsage(mfs), err
}
