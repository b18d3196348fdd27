package daemon

import (
	"log/slog"
	"path/filepath"
	"reflect"
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
	if err := restoreState(saved, usage, asm, mapper, nil, rd, now); err != nil {
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
	if err := restoreState(saved, usage, asm, mapper, nil, rd, now); err != nil {
		t.Fatalf("a state file without project labels: %v", err)
	}
	if got := mapper.Project("/w/a/dl"); got != "dl" {
		t.Errorf("first dir after restoring an older file: %q, want dl", got)
	}
}

// TestHeldSubagentsAreKeptInTheStateFile: the subagent runs whose spans
// wait for their session's end are written with the state and given back
// to the span builder at a restart (the lines that made them are before
// the saved offsets, and are not read again); a file without them loads.
func TestHeldSubagentsAreKeptInTheStateFile(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	cfg := NewConfig()
	cfg.StateFile = filepath.Join(t.TempDir(), "state")
	held := []session.Subagent{
		{Where: session.Where{SessionID: "s1", AgentID: "a1"}, AgentType: "Explore", ToolUseID: "tu1", Start: now, End: now.Add(time.Minute), Ended: true},
		{Where: session.Where{SessionID: "s2", AgentID: "a2"}, Background: true, Start: now, End: now.Add(time.Hour), Ended: true},
	}
	// Written as the daemon writes it: once every span built so far is
	// safe (durable), with what the span builder holds.
	usage, asm, mapper, rd := stateParts(&cfg, now)
	reg := prometheus.NewRegistry()
	keep := &stateKeeper{cfg: &cfg, mapper: mapper, log: slog.New(slog.DiscardHandler), self: prom.NewSelf(reg)}
	keep.save(usage, asm, rd, &tracesStage{
		durable:    func() (bool, error) { return true, nil },
		heldAgents: func() []session.Subagent { return held },
	}, now, true)
	if keep.failed.Load() {
		t.Fatal("state not written")
	}
	snap := takeSnapshot(&cfg, usage, asm, rd, now)
	snap.agents = held
	for _, tt := range []struct {
		name string
		want []session.Subagent
	}{{"with held subagents", held}, {"written before they were kept", nil}} {
		if tt.want == nil {
			core, extra := snap.payloads()
			if err := checkpoint.Write(cfg.StateFile, &checkpoint.File{WrittenAt: now}, append(core, extra[:2]...)...); err != nil {
				t.Fatal(err)
			}
		}
		saved, err := checkpoint.Load(cfg.StateFile)
		if err != nil {
			t.Fatal(err)
		}
		var got []session.Subagent
		traces := &tracesStage{restoreAgents: func(us []session.Subagent) { got = us }}
		usage, asm, mapper, rd := stateParts(&cfg, now)
		err = restoreState(saved, usage, asm, mapper, traces, rd, now)
		saved.Close()
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: restored %+v, want %+v", tt.name, got, tt.want)
		}
	}
}
