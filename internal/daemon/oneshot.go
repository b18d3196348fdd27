package daemon

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/exporter/prom"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/discover"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/planusage"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/session"
)

// oneshotRun holds the stages Run built, for a one-shot run.
type oneshotRun struct {
	cfg         *Config
	logger      *slog.Logger
	stdout      io.Writer
	now         func() time.Time
	reg         *prometheus.Registry
	own         *prometheus.Registry // reg without the usage families (exposition.go)
	usage       *prom.Metrics
	self        *prom.Self
	traces      *tracesStage // nil without traces
	claudeFiles *filesStage
	plan        *planusage.Poller // nil without the plan's usage poll
	asm         *session.Assembler
	rd          *reader
	stats       *statsPublisher
}

// runOneshot reads every file on disk once, settles what it read, and
// prints the exposition to stdout (or writes it, and the OpenMetrics
// history, to the files the config names). Spans and pushed metrics are
// delivered before it returns.
func runOneshot(ctx context.Context, o oneshotRun) error {
	// History export: every counter increment with its time.
	var history *prom.History
	if o.cfg.OneshotHistoryFile != "" {
		history = prom.NewHistory(o.cfg.OneshotHistoryStep, o.cfg.OneshotHistoryRecent)
		o.usage.RecordHistory(history)
	}
	// Metrics push: the same series as the exposition, over OTLP.
	push, err := newPush(ctx, o.cfg, o.reg, o.logger.With("component", "push"), os.Getenv)
	if err != nil {
		return err
	}
	start := o.now()
	files, err := scanOnce(o.cfg, o.logger, o.rd, o.traces)
	if err != nil {
		return err
	}
	// What is read is complete: settle it group by group, so that
	// memory holds one group's open state, not the history's.
	o.rd.between = func(reading string) { o.asm.FlushHistory(o.now(), reading) }
	o.rd.readSeq(files, true)
	if history != nil {
		// End as the live exporter ends its backfill: a session
		// still open (a record within --sessions.idle-timeout)
		// stays open, so the history ends where a live scrape
		// begins. Its turn counts when it closes, live.
		o.asm.FlushRead(o.now())
	} else {
		o.asm.Flush(o.now(), true)
	}
	o.claudeFiles.refresh(o.now(), true)
	if o.plan != nil {
		// One poll, after the read: the block is complete.
		o.plan.Poll(ctx)
	}
	o.stats.publish(o.asm.Stats())
	o.self.BackfillDone.Set(1)
	o.self.BackfillSeconds.Set(o.now().Sub(start).Seconds())
	o.usage.BlocksReady()
	o.logger.Info("read every file", "files", len(o.rd.files)+o.rd.streamed, "lines", o.rd.linesN, "seconds", o.now().Sub(start).Seconds())
	var exportErr error
	if o.traces != nil {
		exportErr = o.traces.close(ctx, o.cfg.ShutdownTimeout)
	}
	if history != nil {
		extra := [][2]string{{"instance", o.cfg.OneshotHistoryInstance}, {"job", o.cfg.OneshotHistoryJob}}
		end, cut := o.now(), false
		if e := o.cfg.OneshotHistoryEnd; !e.IsZero() && e.Before(end) {
			end, cut = e, true
		}
		if err := writeOut(o.cfg.OneshotHistoryFile, func(w io.Writer) error {
			return history.WriteOpenMetrics(w, o.usage, end, cut, extra...)
		}); err != nil {
			return fmt.Errorf("--oneshot.history-file: %w", err)
		}
		o.logger.Info("wrote the history", "file", o.cfg.OneshotHistoryFile, "step", o.cfg.OneshotHistoryStep, "recent", o.cfg.OneshotHistoryRecent, "end", end)
	}
	if o.cfg.OneshotMetricsFile != "" {
		if err := writeExpositionFile(o.cfg.OneshotMetricsFile, o.own, o.usage); err != nil {
			return fmt.Errorf("--oneshot.metrics-file: %w", err)
		}
	} else if err := writeExposition(o.stdout, o.own, o.usage); err != nil {
		return err
	}
	if push != nil {
		if err := push.close(o.cfg.ShutdownTimeout); err != nil && exportErr == nil {
			exportErr = err
		}
	}
	return exportErr
}

// writeExposition writes the text exposition: own's families and the
// usage families, as /metrics writes them.
func writeExposition(w io.Writer, own prometheus.Gatherer, usage *prom.Metrics) error {
	format := expfmt.NewFormat(expfmt.TypeTextPlain)
	var text prom.UsageText
	usage.Format(&text, format, nil)
	mfs, err := own.Gather()
	if err != nil {
		return fmt.Errorf("gather metrics: %w", err)
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	if err := text.WriteTo(bw, mfs, format); err != nil {
		return fmt.Errorf("write exposition: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write exposition: %w", err)
	}
	return nil
}

// writeExpositionFile writes the exposition to path (see writeOut).
func writeExpositionFile(path string, own prometheus.Gatherer, usage *prom.Metrics) error {
	return writeOut(path, func(w io.Writer) error { return writeExposition(w, own, usage) })
}

// writeOut writes a file through write. A regular file (or a new one) is
// replaced atomically, a temp file renamed over it, as node_exporter's
// textfile collector requires; through a link, the file it names is
// replaced and the link stays. A device or a pipe is written in place,
// never replaced; a directory is an error.
func writeOut(path string, write func(io.Writer) error) error {
	// A link is followed: the file it names is what gets replaced.
	target := path
	if resolved, err := filepath.EvalSymlinks(path); err == nil {
		target = resolved
	}
	fi, err := os.Stat(target)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return err
	case fi.IsDir():
		return fmt.Errorf("%s is a directory", path)
	case !fi.Mode().IsRegular():
		// A device (/dev/null, /dev/stdout) or a pipe is written in
		// place: renaming over it would replace it with a file.
		return writeInPlace(target, write)
	}
	tmp, err := os.CreateTemp(filepath.Dir(target), "."+filepath.Base(target)+".*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := write(tmp); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), target)
}

// writeInPlace writes a file that is not a regular file. It opens without
// blocking, so a pipe nobody reads is an error ("no such device or
// address") instead of a hang.
func writeInPlace(path string, write func(io.Writer) error) error {
	f, err := openWriteNonBlocking(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// scanOnce finds every transcript once (one-shot runs: no watches) and
// yields them in reading order. The files are read as the walk finds
// them (streamFiles), unless the trace window is open: it settles which
// sessions' spans go out by the times of all their files, so then every
// file is found before the first is read.
func scanOnce(cfg *Config, logger *slog.Logger, rd *reader, traces *tracesStage) (iter.Seq[*fileState], error) {
	w, err := discover.New(discover.Config{Roots: cfg.ClaudeDirs, Match: session.IsTranscriptName, PollOnly: true,
		Logger: logger.With("component", "discover")})
	if err != nil {
		return nil, fmt.Errorf("scan claude dirs: %w", err)
	}
	if traces == nil || !traces.window.open() {
		return rd.streamFiles(w, logger), nil
	}
	defer w.Close()
	files, err := rd.scanAll(w, func(f *fileState, fi discover.File) { traces.window.see(rd.sessionID(f), fi.ModTime) })
	if err != nil {
		logger.Warn("scan incomplete", "err", err)
	}
	return slices.Values(files), nil
}

// scanAll fills the table from one Scan of w (sync, with visit) and
// returns its files in reading order.
func (r *reader) scanAll(w *discover.Watcher, visit func(*fileState, discover.File)) ([]*fileState, error) {
	err := r.sync(w.ScanEach, visit)
	return r.sorted(), err
}

// streamBatch is how many found files the walk hands over at once.
const streamBatch = 128

// streamFiles walks w's roots (then closes w) and yields their files in
// reading order as the walk hands them over: the read starts on the first
// projects while later ones are walked (1 GB bench corpus: the walk took
// 80 to 90 ms before the first line was read; 100,000 files: over half a
// second). The files are counted (r.streamed), not added to the table: a
// one-shot reads each once, and its table was a third of its live heap at
// 100,000 files, for the collector to scan on every cycle. It runs on
// readSeq's feeder.
func (r *reader) streamFiles(w *discover.Watcher, log *slog.Logger) iter.Seq[*fileState] {
	return func(yield func(*fileState) bool) {
		batches := make(chan []discover.File, 4)
		stop := make(chan struct{})
		// A reader that stops early lets the walk finish without it: the
		// walk goes on to its end, handing nothing over, then closes w.
		defer close(stop)
		go func() {
			defer close(batches)
			defer w.Close()
			var batch []discover.File
			stopped := false
			send := func() {
				select {
				case batches <- batch:
				case <-stop:
					stopped = true
				}
				batch = nil
			}
			err := w.ScanEach(func(f discover.File) {
				if stopped {
					return
				}
				if batch = append(batch, f); len(batch) == streamBatch {
					send()
				}
			})
			if len(batch) > 0 && !stopped {
				send()
			}
			if err != nil {
				log.Warn("scan incomplete", "err", err)
			}
		}()
		var order agentsLast
		more := true
		emit := func(f *fileState) {
			if more {
				more = yield(f)
			}
			// Read (its ranges are emitted) or dropped: its directory's
			// entry is not kept for it. Without the release every
			// directory stayed interned to the end, a subagents/ one per
			// session: 50,000 sessions with a subagent each held 8.6 MB.
			r.release(f)
		}
		for batch := range batches {
			for _, fi := range batch {
				rel, ok := r.relOf(fi.Path)
				if !ok {
					continue
				}
				r.streamed++
				r.self.FilesWatched.Set(float64(r.streamed))
				f := r.newFileState(fi.Path, rel, fi.Dir)
				f.set(flagStreamed)
				f.listed(fi)
				if order.next(f, emit); !more {
					return
				}
			}
		}
		order.end(emit)
	}
}
