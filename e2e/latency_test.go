package e2e

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// streamedLine is one line of message id with the given output tokens and
// stop reason ("" writes null: a placeholder still streaming).
func streamedLine(id string, out int, stop string) string {
	stopJSON := "null"
	if stop != "" {
		stopJSON = fmt.Sprintf("%q", stop)
	}
	return fmt.Sprintf(`{"type":"assistant","uuid":"u-%s-%d","sessionId":"s1","timestamp":"%s","cwd":"/w/proj","message":{"id":"%s","model":"claude-sonnet-4-5","role":"assistant","stop_reason":%s,"usage":{"input_tokens":2,"output_tokens":%d}}}`+"\n",
		id, out, time.Now().UTC().Format("2006-01-02T15:04:05.000Z"), id, stopJSON, out)
}

// linesRead is claude_transcript_exporter_lines_read_total now.
func (e *tailEnv) linesRead() float64 {
	return sumBy(parseExposition(e.t, scrape(e.t, e.addr)), "claude_transcript_exporter_lines_read_total")[""]
}

// waitLinesRead waits until the daemon has read n lines in all.
func (e *tailEnv) waitLinesRead(n float64) {
	e.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for e.linesRead() < n {
		if time.Now().After(deadline) {
			e.t.Fatalf("lines read %v, want %v", e.linesRead(), n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestStopReasonCountsTheRequestAtOnce runs the real daemon with a settle
// time of one hour, so that the only way a request can be counted is its
// stop reason: a streamed request (a placeholder line, then the final line
// with stop_reason) moves the token and request counters to their exact
// values as soon as the final line is read; a placeholder alone is read but
// not counted; with a short settle time a request without stop reason is
// counted once it has been quiet for it.
func TestStopReasonCountsTheRequestAtOnce(t *testing.T) {
	t.Run("stop reason counts at once", func(t *testing.T) {
		e := newTailEnv(t)
		e.args = append(e.args, "--tail.settle=1h")
		path := filepath.Join(e.proj, "s1.jsonl")
		appendTo(t, path, "")
		e.start()

		appendTo(t, path, streamedLine("msg_a", 1, ""))
		e.waitLinesRead(1)
		if out, req := e.counters(); out != 0 || req != 0 {
			t.Fatalf("a placeholder without stop reason was counted: output %v, requests %v", out, req)
		}
		appendTo(t, path, streamedLine("msg_a", 50, "end_turn"))
		e.waitCounters(50, 1)

		// A second request in one write: both lines, the final one last.
		appendTo(t, path, streamedLine("msg_b", 3, "")+streamedLine("msg_b", 30, "tool_use"))
		e.waitCounters(80, 2)

		// Quiet requests without a stop reason wait for the settle time.
		appendTo(t, path, streamedLine("msg_c", 7, ""))
		e.waitLinesRead(4)
		time.Sleep(300 * time.Millisecond) // several polls and flushes
		if out, req := e.counters(); out != 80 || req != 2 {
			t.Errorf("a request without stop reason counted before the settle time: output %v, requests %v", out, req)
		}
	})
	t.Run("no stop reason counts after the settle time", func(t *testing.T) {
		e := newTailEnv(t)
		e.args = append(e.args, "--tail.settle=200ms")
		path := filepath.Join(e.proj, "s1.jsonl")
		appendTo(t, path, "")
		e.start()
		appendTo(t, path, streamedLine("msg_c", 7, ""))
		e.waitCounters(7, 1)
	})
}
