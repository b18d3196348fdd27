package daemon

import (
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/exporter/prom"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/checkpoint"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/metrics"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/session"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/transcript"
)

// TestProjectLabelsAreKeptInTheStateFile writes a state file after two
// working dirs of one basename got their labels, restarts from it, and
// meets the dirs in the other order: each keeps its label.
func TestProjectLabelsAreKeptInTheStateFile(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	cfg := NewConfig()
	cfg.StateFile = filepath.Join(t.TempDir(), "state")
	build := func() (*prom.Metrics, *session.Assembler, *metrics.Mapper, *reader) { return stateParts(&cfg, now) }

	usage, asm, mapper, rd := build()
	a, b := mapper.Project("/w/a/dl"), mapper.Project("/w/b/dl")
	if a == b {
		t.Fatalf("two dirs share %q", a)
	}
	snap := takeSnapshot(&cfg, usage, asm, rd, now)
	snap.projects = mapper.ProjectLabels()
	if err := snap.write(); err != nil {
		t.Fatal(err)
	}

	saved, err := checkpoint.Load(cfg.StateFile)
	if err != nil {
		t.Fatal(err)
	}
	defer saved.Close()
	usage, asm, mapper, rd = build()
	if err := restoreState(saved, usage, asm, mapper, rd, now); err != nil {
		t.Fatal(err)
	}
	if got := mapper.Project("/w/b/dl"); got != b {
		t.Errorf("after a restart /w/b/dl = %q, want %q", got, b)
	}
	if got := mapper.Project("/w/a/dl"); got != a {
		t.Errorf("after a restart /w/a/dl = %q, want %q", got, a)
	}
}

// TestStateFileWithoutProjectLabelsStillLoads restores a state file
// written before the labels were kept: the labels are given afresh.
func TestStateFileWithoutProjectLabelsStillLoads(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	cfg := NewConfig()
	cfg.StateFile = filepath.Join(t.TempDir(), "state")
	reg := prometheus.NewRegistry()
	usage := prom.NewMetrics(reg, time.Minute, func() time.Time { return now })
	mapper := metrics.NewMapper(metrics.Config{Project: metrics.ProjectBasename}, usage)
	asm := session.New(session.Config{}, mapper)
	rd := newReader(&cfg, slog.New(slog.DiscardHandler), prom.NewSelf(reg), asm, transcript.Options{MaxLineBytes: cfg.MaxLineBytes}, func() time.Time { return now })
	snap := takeSnapshot(&cfg, usage, asm, rd, now)
	core, _ := snap.payloads()
	if err := checkpoint.Write(cfg.StateFile, &checkpoint.File{WrittenAt: now}, core...); err != nil {
		t.Fatal(err)
	}
	saved, err := checkpoint.Load(cfg.StateFile)
	if err != nil {
		t.Fatal(err)
	}
	defer saved.Close()
	if err := restoreState(saved, usage, asm, mapper, rd, now); err != nil {
		t.Fatalf("a state file without project labels: %v", err)
	}
	if got := mapper.Project("/w/a/dl"); got != "dl" {
		t.Errorf("first dir after restoring an older file: %q, want dl", got)
	}
}
