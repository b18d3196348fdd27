package daemon

import (
	"cmp"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/exporter/prom"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/claudefiles"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/claudedir"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/metrics"
)

// filesStage reads the Claude dir's files beside the transcripts (tasks,
// todos, prompt history, live sessions, jobs) into their metrics, every
// --claude.files-interval. It runs on the pipeline's goroutine: the
// mapper's project labels are shared with the transcripts' metrics.
type filesStage struct {
	rd     *claudefiles.Reader
	obs    claudedir.Observer
	mapper *metrics.Mapper
	every  time.Duration
	next   time.Time
}

func newFilesStage(cfg *Config, reg prometheus.Registerer, mapper *metrics.Mapper) *filesStage {
	var alive func(int) bool
	if cfg.PIDCheck {
		alive = claudefiles.ProcessAlive
	}
	return &filesStage{
		rd: claudefiles.New(claudefiles.Config{Roots: cfg.ClaudeDirs, MaxLineBytes: cfg.MaxLineBytes,
			Alive: alive}),
		obs:    prom.NewClaudeDir(reg),
		mapper: mapper,
		every:  cfg.FilesInterval,
	}
}

// refresh reads what changed when the interval is up (always when final:
// the one-shot's only read, which also counts a last history line
// without its newline).
func (s *filesStage) refresh(now time.Time, final bool) {
	if !final && now.Before(s.next) {
		return
	}
	s.next = now.Add(s.every)
	inv, d := s.rd.Refresh(final)
	s.obs.SetInventory(inv)
	// In a fixed order: a working dir first met here is given its
	// project label now, and which of two dirs of one basename keeps the
	// plain label must not depend on a map's order.
	keys := slices.SortedFunc(maps.Keys(d.Prompts), func(a, b claudefiles.PromptKey) int {
		return cmp.Or(strings.Compare(a.Project, b.Project), strings.Compare(a.Command, b.Command))
	})
	for _, k := range keys {
		if n := d.Prompts[k]; k.Command != "" {
			s.obs.AddSlashCommands(k.Command, n)
		} else {
			s.obs.AddPrompts(s.mapper.Project(k.Project), n)
		}
	}
	for k, n := range d.Errors {
		s.obs.AddFileErrors(k.File, k.Reason, n)
	}
}
