package daemon

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/exporter/prom"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/checkpoint"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/metrics"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/session"
)

// TestStateWrittenInPlaceRestoresLikeACopy reads a corpus tree, writes
// the state file once from a frozen copy (the periodic write) and once encoded
// from the assembler itself (the write at the end of the backfill and at
// shutdown), and checks that both restore the same assembler state, file
// table and counters.
func TestStateWrittenInPlaceRestoresLikeACopy(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	cfg := corpusConfig(t)
	build := func() (*prom.Metrics, *session.Assembler, *metrics.Mapper, *reader) { return stateParts(&cfg, now) }
	usage, asm, mapper, rd := build()
	files, err := scanTable(&cfg, rd)
	if err != nil {
		t.Fatal(err)
	}
	rd.readFiles(files, false)
	asm.FlushRead(now)
	want := asm.State()
	if len(want.Sessions) == 0 || len(want.DoneRequests) <= checkpoint.ChunkLen || len(want.Agents) == 0 {
		t.Fatalf("corpus read gave %d sessions, %d requests, %d subagents", len(want.Sessions), len(want.DoneRequests), len(want.Agents))
	}

	restored := map[string]session.State{}
	for name, take := range map[string]func(*Config, *prom.Metrics, *session.Assembler, *reader, time.Time) *snapshot{
		"frozen": takeSnapshot, "in place": inPlace,
	} {
		c := cfg
		c.StateFile = filepath.Join(t.TempDir(), "state")
		snap := take(&c, usage, asm, rd, now)
		snap.projects = mapper.ProjectLabels()
		if err := snap.write(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		saved, err := checkpoint.Load(c.StateFile)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		usage2, asm2, mapper2, rd2 := build()
		err = restoreState(saved, usage2, asm2, mapper2, nil, rd2, now)
		saved.Close()
		if err != nil {
			t.Fatalf("%s: restore: %v", name, err)
		}
		read := 0 // empty files have no watermark
		for _, f := range rd.files {
			if f.offset > 0 || f.fpLen > 0 {
				read++
			}
		}
		if len(rd2.restored) != read {
			t.Errorf("%s: %d file watermarks restored, want %d", name, len(rd2.restored), read)
		}
		if got, want := fmt.Sprint(usage2.State()), fmt.Sprint(usage.State()); got != want {
			t.Errorf("%s: counters differ after the restore", name)
		}
		restored[name] = canonical(asm2.State())
	}
	wantC := canonical(want)
	for name, got := range restored {
		if !reflect.DeepEqual(got.Sessions, wantC.Sessions) || !reflect.DeepEqual(got.DoneRequests, wantC.DoneRequests) ||
			!reflect.DeepEqual(got.SeenKeys, wantC.SeenKeys) || got.Seq != wantC.Seq || len(got.Requests) != len(wantC.Requests) {
			t.Errorf("%s: restored assembler state differs (%d sessions, %d requests, %d keys; want %d, %d, %d)", name,
				len(got.Sessions), len(got.DoneRequests), len(got.SeenKeys), len(wantC.Sessions), len(wantC.DoneRequests), len(wantC.SeenKeys))
		}
		if !reflect.DeepEqual(got.Agents, wantC.Agents) {
			t.Errorf("%s: restored subagents differ (%d, want %d)", name, len(got.Agents), len(wantC.Agents))
		}
	}
}

// corpusConfig is a daemon config over every tree of testdata/corpus.
func corpusConfig(t *testing.T) Config {
	t.Helper()
	roots, err := filepath.Glob(filepath.Join("..", "..", "testdata", "corpus", "*", "projects"))
	if err != nil || len(roots) == 0 {
		t.Fatalf("no corpus trees: %v", err)
	}
	cfg := NewConfig()
	for _, r := range roots {
		cfg.ClaudeDirs = append(cfg.ClaudeDirs, filepath.Dir(r))
	}
	return cfg
}

// canonical sorts a state's unordered slices.
func canonical(st session.State) session.State {
	slices.SortFunc(st.Sessions, func(a, b session.SessionState) int { return cmp.Compare(a.ID, b.ID) })
	for i := range st.Sessions {
		slices.Sort(st.Sessions[i].OpenTools)
		slices.Sort(st.Sessions[i].Agents)
		if st.Sessions[i].Start.IsZero() {
			st.Sessions[i].Start = time.Time{}
		}
	}
	slices.SortFunc(st.DoneRequests, func(a, b session.DoneRequest) int { return cmp.Compare(a.Key, b.Key) })
	slices.Sort(st.SeenKeys)
	slices.SortFunc(st.Agents, func(a, b session.AgentState) int { return cmp.Compare(a.ID, b.ID) })
	return st
}

// readCorpus reads the corpus trees into a reader and assembler of their
// own, with a state file in a temp dir, and settles what was read.
func readCorpus(t *testing.T, now time.Time) (Config, *prom.Metrics, *session.Assembler, *metrics.Mapper, *reader, []*fileState) {
	t.Helper()
	cfg := corpusConfig(t)
	cfg.StateFile = filepath.Join(t.TempDir(), "state")
	usage, asm, mapper, rd := stateParts(&cfg, now)
	files, err := scanTable(&cfg, rd)
	if err != nil {
		t.Fatal(err)
	}
	rd.readFiles(files, false)
	asm.FlushRead(now)
	return cfg, usage, asm, mapper, rd, files
}

// TestVersion4StateRestoresItsSubagents: a state file written before the
// subagents were streamed after the assembler's other large parts
// (version 5) holds them in the assembler's head; it restores them.
func TestVersion4StateRestoresItsSubagents(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	cfg, usage, asm, mapper, rd, _ := readCorpus(t, now)
	want := canonical(asm.State())
	if len(want.Agents) == 0 {
		t.Fatal("the corpus gave no subagents")
	}
	// Version 4's payloads: the head with its subagents, no stream of them.
	snap := inPlace(&cfg, usage, asm, rd, now)
	snap.projects = mapper.ProjectLabels()
	core, extra := snap.payloads()
	head := core[1].(*session.State)
	head.Agents = want.Agents
	core = core[:len(core)-1]
	if err := checkpoint.Write(cfg.StateFile, &checkpoint.File{WrittenAt: now, FileStream: snap.entries}, append(core, extra...)...); err != nil {
		t.Fatal(err)
	}
	saved, err := checkpoint.Load(cfg.StateFile)
	if err != nil {
		t.Fatal(err)
	}
	defer saved.Close()
	saved.Version = 4
	usage2, asm2, mapper2, rd2 := stateParts(&cfg, now)
	if err := restoreState(saved, usage2, asm2, mapper2, nil, rd2, now); err != nil {
		t.Fatal(err)
	}
	if got := canonical(asm2.State()); !reflect.DeepEqual(got.Agents, want.Agents) || !reflect.DeepEqual(got.Sessions, want.Sessions) {
		t.Errorf("version 4 state: %d subagents and %d sessions restored, want %d and %d", len(got.Agents), len(got.Sessions), len(want.Agents), len(want.Sessions))
	}
}

// TestVersion5FingerprintsStillIdentifyTheirFiles: a state file written
// before fingerprints were cut to 128 bits (version 5) holds each file's
// whole SHA-256; restored, every file is known as the same one and read
// on from its offset, not again from its start.
func TestVersion5FingerprintsStillIdentifyTheirFiles(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	cfg, usage, asm, mapper, rd, files := readCorpus(t, now)
	snap := inPlace(&cfg, usage, asm, rd, now)
	snap.projects = mapper.ProjectLabels()
	core, extra := snap.payloads()
	// Version 5's file table: the whole SHA-256 of each file's first
	// bytes.
	saved := 0
	whole := func(yield func([]checkpoint.Entry) error) error {
		return snap.entries(func(es []checkpoint.Entry) error {
			for i := range es {
				if es[i].FPLen == 0 {
					continue
				}
				b := make([]byte, es[i].FPLen)
				fh, err := os.Open(es[i].Path)
				if err != nil {
					return err
				}
				_, err = io.ReadFull(fh, b)
				fh.Close()
				if err != nil {
					return err
				}
				sum := sha256.Sum256(b)
				es[i].Fingerprint = hex.EncodeToString(sum[:])
				saved++
			}
			return yield(es)
		})
	}
	if err := checkpoint.Write(cfg.StateFile, &checkpoint.File{WrittenAt: now, FileStream: whole}, append(core, extra...)...); err != nil {
		t.Fatal(err)
	}
	if saved == 0 {
		t.Fatal("no file with a fingerprint was saved")
	}
	f, err := checkpoint.Load(cfg.StateFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.Version = 5
	_, asm2, mapper2, rd2 := stateParts(&cfg, now)
	if err := restoreState(f, usage, asm2, mapper2, nil, rd2, now); err != nil {
		t.Fatal(err)
	}
	files2, err := scanTable(&cfg, rd2)
	if err != nil {
		t.Fatal(err)
	}
	rd2.readFiles(files2, false)
	if n := testutil.ToFloat64(rd2.self.FilesReread); n != 0 || rd2.linesN != 0 {
		t.Errorf("after restoring %d version 5 fingerprints: %v files read again, %d lines read; want none", saved, n, rd2.linesN)
	}
	for i, f := range files2 {
		if f.offset != files[i].offset {
			t.Errorf("%s: offset %d, want %d", f.path(), f.offset, files[i].offset)
		}
	}
}
