package daemon_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/daemon"
)

// TestLimitNoticesInTheExposition: a one-shot pass over a session with
// requests, limit notices of real wordings (each written twice, as
// resumed sessions copy them) and a transient retry shows each hit once
// by window, the reset its notice names and the block's tokens.
func TestLimitNoticesInTheExposition(t *testing.T) {
	dir := t.TempDir()
	proj := filepath.Join(dir, "projects", "-work-repo")
	if err := os.MkdirAll(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	req := func(uuid, ts, id string, in, out int) string {
		return `{"type":"assistant","uuid":"` + uuid + `","sessionId":"s1","cwd":"/work/repo","version":"2.1.100","timestamp":"` + ts + `","requestId":"req_` + id + `","message":{"id":"msg_` + id + `","model":"claude-sonnet-4-5-20250929","role":"assistant","stop_reason":"end_turn","usage":{"input_tokens":` + itoa(in) + `,"output_tokens":` + itoa(out) + `,"cache_read_input_tokens":0,"cache_creation_input_tokens":0},"content":[{"type":"text","text":"ok"}]}}`
	}
	notice := func(uuid, ts, id, text string) string {
		return `{"type":"assistant","uuid":"` + uuid + `","sessionId":"s1","cwd":"/work/repo","version":"2.1.100","timestamp":"` + ts + `","message":{"id":"` + id + `","model":"<synthetic>","role":"assistant","stop_reason":"stop_sequence","usage":{"input_tokens":0,"output_tokens":0,"cache_read_input_tokens":0,"cache_creation_input_tokens":0,"speed":null},"content":[{"type":"text","text":"` + text + `"}]},"error":"rate_limit","isApiErrorMessage":true}`
	}
	lines := []string{
		req("a1", "2026-01-10T04:10:00.000Z", "1", 1000, 200),
		req("a2", "2026-01-10T05:00:00.000Z", "2", 3000, 800),
		notice("n1", "2026-01-10T05:01:00.000Z", "syn-1", "You've hit your limit · resets 7pm (Asia/Shanghai)"),
		notice("n1", "2026-01-10T05:01:00.000Z", "syn-1", "You've hit your limit · resets 7pm (Asia/Shanghai)"),
		`{"type":"system","subtype":"api_error","uuid":"r1","sessionId":"s1","timestamp":"2026-01-10T05:02:00.000Z","retryAttempt":1}`,
		req("a3", "2026-01-12T18:00:00.000Z", "3", 50, 5),
		notice("n2", "2026-01-12T18:05:00.000Z", "syn-2", "You've hit your weekly limit · resets Mon 9am (Europe/Paris)"),
		notice("n3", "2026-01-12T18:06:00.000Z", "syn-3", "You've hit your monthly spend limit · raise it at claude.ai/settings/usage"),
		notice("n4", "2026-01-12T18:07:00.000Z", "syn-4", "Your quota is used up"),
	}
	if err := os.WriteFile(filepath.Join(proj, "s1.jsonl"), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := daemon.NewConfig()
	cfg.ClaudeDirs = []string{dir}
	cfg.Oneshot = true
	cfg.StateFile = ""
	cfg.Traces.Exporter = "none"
	now := time.Date(2026, 1, 12, 19, 0, 0, 0, time.UTC)
	cfg.Now = func() time.Time { return now }
	var out bytes.Buffer
	if err := daemon.Run(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), &out); err != nil {
		t.Fatal(err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(&out)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, name := range []string{"claude_transcript_limit_hits_total", "claude_transcript_limit_reset_timestamp_seconds", "claude_transcript_limit_hit_block_tokens"} {
		for _, m := range mfs[name].GetMetric() {
			v := m.GetGauge().GetValue() + m.GetCounter().GetValue()
			got[name+"{"+label(m, "window")+"}"] = v
		}
	}
	want := map[string]float64{
		"claude_transcript_limit_hits_total{session}":       1,
		"claude_transcript_limit_hits_total{weekly}":        1,
		"claude_transcript_limit_hits_total{monthly_spend}": 1,
		"claude_transcript_limit_hits_total{unknown}":       1,
		// 7pm in Shanghai (UTC+8) after 05:01 UTC: 11:00 UTC the same day.
		"claude_transcript_limit_reset_timestamp_seconds{session}": float64(time.Date(2026, 1, 10, 11, 0, 0, 0, time.UTC).Unix()),
		// The Monday after Monday 18:05 UTC (19:05 in Paris): the 19th, 9am CET.
		"claude_transcript_limit_reset_timestamp_seconds{weekly}": float64(time.Date(2026, 1, 19, 8, 0, 0, 0, time.UTC).Unix()),
		// The session hit's block (04:00–09:00): both requests.
		"claude_transcript_limit_hit_block_tokens{session}":       5000,
		"claude_transcript_limit_hit_block_tokens{weekly}":        55,
		"claude_transcript_limit_hit_block_tokens{monthly_spend}": 55,
		"claude_transcript_limit_hit_block_tokens{unknown}":       55,
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s = %v, want %v", k, got[k], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("series %v, want %v", got, want)
	}
	// The rate_limit notices and the retry stay in api_errors_total.
	kinds := map[string]float64{}
	for _, m := range mfs["claude_transcript_api_errors_total"].GetMetric() {
		kinds[label(m, "kind")] += m.GetCounter().GetValue()
	}
	if kinds["rate_limit"] != 4 || kinds["retry"] != 1 {
		t.Errorf("api_errors_total %v, want 4 rate_limit and 1 retry", kinds)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
