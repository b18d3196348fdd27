package daemon_test

import (
	"context"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/daemon"
)

// BenchmarkOneshot runs the whole one-shot pipeline in process (discover,
// tail, decode, assemble, metrics, exposition; traces off) over the Claude
// config dir in $CTE_BENCH_CORPUS, default testdata/corpus/aistrad (the
// anonymized real tree, byte for byte the size of the original). bench/profile.sh runs it with -cpuprofile and
// -memprofile on the amplified corpus.
func BenchmarkOneshot(b *testing.B) {
	dir := os.Getenv("CTE_BENCH_CORPUS")
	if dir == "" {
		dir = filepath.Join(repoRoot(b), "testdata", "corpus", "aistrad")
	}
	if _, err := os.Stat(filepath.Join(dir, "projects")); err != nil {
		b.Fatalf("no corpus (set CTE_BENCH_CORPUS to a Claude config dir): %v", err)
	}
	var size int64
	files := 0
	_ = filepath.WalkDir(filepath.Join(dir, "projects"), func(p string, de fs.DirEntry, err error) error {
		if err == nil && !de.IsDir() && strings.HasSuffix(p, ".jsonl") {
			if info, err := de.Info(); err == nil {
				size += info.Size()
				files++
			}
		}
		return nil
	})
	cfg := daemon.NewConfig()
	cfg.ClaudeDirs = []string{dir}
	cfg.Oneshot = true
	cfg.Traces.Exporter = "none"
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		if err := daemon.Run(context.Background(), cfg, logger, io.Discard); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(files), "files/op")
}

// repoRoot is the dir holding go.mod, above the package dir.
func repoRoot(b *testing.B) string {
	dir, err := os.Getwd()
	if err != nil {
		b.Fatal(err)
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			return dir
		}
	}
}
