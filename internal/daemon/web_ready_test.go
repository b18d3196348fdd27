package daemon

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/exporter/prom"
)

func TestUsageSeriesWaitForTheBackfillButHealthDoesNot(t *testing.T) {
	reg := prometheus.NewRegistry()
	usage := prom.NewMetrics(reg, 0, time.Now)
	self := prom.NewSelf(reg)
	usage.AddTokens("m", "output", "p", "main", 5)
	self.LinesRead.Add(3)
	var ready atomic.Bool
	names := func() map[string]bool {
		mfs, err := readyGatherer{reg, &ready}.Gather()
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]bool{}
		for _, mf := range mfs {
			out[mf.GetName()] = true
		}
		return out
	}
	during := names()
	if during["claude_transcript_tokens_total"] || !during["claude_transcript_exporter_lines_read_total"] || !during["claude_transcript_exporter_build_info"] {
		t.Errorf("during the backfill: %v; want the exporter's series, no usage series", during)
	}
	ready.Store(true)
	if after := names(); !after["claude_transcript_tokens_total"] || !after["claude_transcript_exporter_lines_read_total"] {
		t.Errorf("after the backfill: %v; want every series", after)
	}
}
