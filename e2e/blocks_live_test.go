package e2e

import (
	"path/filepath"
	"testing"
	"time"
)

// TestBlockMovesWithTheTokenCounterAndSurvivesRestart follows a live
// transcript: each scrape that shows a request's tokens in tokens_total
// shows them in the active block too (they are counted in one call), the
// block starts at the first request's hour and lasts 5 hours, and a
// restart (nothing read again) keeps it.
func TestBlockMovesWithTheTokenCounterAndSurvivesRestart(t *testing.T) {
	e := newTailEnv(t)
	path := filepath.Join(e.proj, "s1.jsonl")
	appendTo(t, path, "")
	e.start()
	start := time.Now().UTC().Truncate(time.Hour) // the first request is written next: its hour

	check := func(wantOut float64) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			mfs := parseExposition(t, scrape(t, e.addr))
			out := sumBy(mfs, "claude_transcript_tokens_total", "type")["output"]
			block := sumBy(mfs, "claude_transcript_block_tokens", "type")["output"]
			if out == wantOut {
				if block != out {
					t.Fatalf("tokens_total output %v, active block output %v in the same scrape", out, block)
				}
				s := sumBy(mfs, "claude_transcript_block_start_timestamp_seconds")[""]
				end := sumBy(mfs, "claude_transcript_block_end_timestamp_seconds")[""]
				if s != float64(start.Unix()) || end != float64(start.Add(5*time.Hour).Unix()) {
					t.Fatalf("block %v–%v, want %v and 5 hours", s, end, start.Unix())
				}
				if n := sumBy(mfs, "claude_transcript_blocks_total")[""]; n != 1 {
					t.Fatalf("blocks_total %v, want 1", n)
				}
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("output tokens %v, want %v", out, wantOut)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	appendTo(t, path, streamedLine("msg_a", 50, "end_turn"))
	check(50)
	appendTo(t, path, streamedLine("msg_b", 3, "")+streamedLine("msg_b", 30, "tool_use"))
	check(80)

	e.proc.stop(t)
	e.start()
	check(80)
}
