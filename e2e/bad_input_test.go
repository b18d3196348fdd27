package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func assistantLine(msgID string, out int64, model string) string {
	return fmt.Sprintf(`{"type":"assistant","uuid":"u-%s-%d","sessionId":"s1","timestamp":"2026-01-02T03:04:05.000Z","cwd":"/home/u/proj","message":{"id":%q,"model":%q,"role":"assistant","stop_reason":"end_turn","usage":{"input_tokens":10,"output_tokens":%d,"cache_read_input_tokens":100,"cache_creation_input_tokens":7}}}`,
		msgID, out, msgID, model, out)
}

// TestBadInputIsCountedByReasonAndLosesNothing writes a Claude dir whose
// files hold malformed lines, an empty file, a 20 MB line, invalid UTF-8,
// binary junk and a half-written last line between good lines: every bad
// line is counted by reason, and every good line is still counted.
func TestBadInputIsCountedByReasonAndLosesNothing(t *testing.T) {
	dir := t.TempDir()
	proj := filepath.Join(dir, "projects", "-home-u-proj")
	if err := os.MkdirAll(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	big := `{"type":"user","uuid":"big","sessionId":"s1","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_x","content":"` +
		strings.Repeat("x", 20<<20) + `"}]}}`
	lines := []string{
		assistantLine("msg_1", 5, "claude-sonnet-4-5"),
		`{"type":"assistant", this is not json`,
		assistantLine("msg_2", 7, "claude-sonnet-4-5"),
		"{\"type\":\"user\",\"message\":{\"content\":\"caf\xe9\"}}", // invalid UTF-8
		big,
		"\x00\x01\x02binary junk\x7f",
		`["an","array"]`,
		``,
		assistantLine("msg_3", 11, "claude-sonnet-4-5"),
	}
	content := strings.Join(lines, "\n") + "\n" + `{"type":"assistant","message":{"id":"msg_half"` // half-written last line
	if err := os.WriteFile(filepath.Join(proj, "s1.jsonl"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(proj, "empty.jsonl"), nil, 0o644); err != nil {
		t.Fatal(err)
	}

	t.Run("oneshot", func(t *testing.T) {
		mfs := parseExposition(t, oneshot(t, "--claude.dir="+dir))
		reasons := sumBy(mfs, "claude_transcript_exporter_decode_errors_total", "reason")
		want := map[string]float64{"invalid_json": 2, "invalid_utf8": 1, "not_object": 1, "truncated": 1, "too_long": 0}
		for r, n := range want {
			if reasons[r] != n {
				t.Errorf("decode_errors_total{reason=%q} = %v, want %v", r, reasons[r], n)
			}
		}
		out := sumBy(mfs, "claude_transcript_tokens_total", "type")["output"]
		if out != 5+7+11 {
			t.Errorf("output tokens = %v, want 23 (every good line counted)", out)
		}
		if req := sumBy(mfs, "claude_transcript_requests_total")[""]; req != 3 {
			t.Errorf("requests = %v, want 3", req)
		}
	})

	t.Run("line over the cap", func(t *testing.T) {
		mfs := parseExposition(t, oneshot(t, "--claude.dir="+dir, "--tail.max-line-bytes=1048576"))
		reasons := sumBy(mfs, "claude_transcript_exporter_decode_errors_total", "reason")
		if reasons["too_long"] != 1 {
			t.Errorf("too_long = %v, want 1", reasons["too_long"])
		}
		if out := sumBy(mfs, "claude_transcript_tokens_total", "type")["output"]; out != 23 {
			t.Errorf("output tokens = %v, want 23", out)
		}
	})

	t.Run("daemon waits for the newline", func(t *testing.T) {
		addr, _ := startServe(t, "--claude.dir="+dir, "--tail.poll-interval=20ms")
		mfs := parseExposition(t, scrape(t, addr))
		if r := sumBy(mfs, "claude_transcript_exporter_decode_errors_total", "reason")["truncated"]; r != 0 {
			t.Errorf("daemon counted a half-written line as truncated")
		}
		// Finish the half-written line: it becomes a request.
		f, err := os.OpenFile(filepath.Join(proj, "s1.jsonl"), os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		rest := `,"model":"claude-sonnet-4-5","usage":{"input_tokens":1,"output_tokens":100}}}` + "\n"
		if _, err := f.WriteString(rest); err != nil {
			t.Fatal(err)
		}
		f.Close()
		waitFor(t, func() bool {
			mfs := parseExposition(t, scrape(t, addr))
			return sumBy(mfs, "claude_transcript_tokens_total", "type")["output"] == 123
		})
	})
}

// usageLine is an assistant line of a fresh request whose input_tokens is
// the raw JSON value given.
func usageLine(msgID, input string) string {
	return fmt.Sprintf(`{"type":"assistant","uuid":"u-%s","sessionId":"s1","timestamp":"2026-01-02T03:04:05.000Z","cwd":"/home/u/proj","message":{"id":%q,"model":"claude-sonnet-4-5","role":"assistant","stop_reason":"end_turn","usage":{"input_tokens":%s,"output_tokens":3,"cache_read_input_tokens":100}}}`,
		msgID, msgID, input)
}

// TestHostileUsageNeverMovesCountersTheWrongWay runs the daemon on a tree,
// then appends lines whose usage is negative, huge, fractional or not a
// number: no token, cost or request counter goes down or jumps, each line
// is counted in invalid_usage_total by reason, and one warning per file is
// logged. A valid line after them still counts.
func TestHostileUsageNeverMovesCountersTheWrongWay(t *testing.T) {
	dir := t.TempDir()
	proj := filepath.Join(dir, "projects", "-home-u-proj")
	if err := os.MkdirAll(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(proj, "s1.jsonl")
	if err := os.WriteFile(path, []byte(assistantLine("msg_ok", 5, "claude-sonnet-4-5")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	addr, stop := startServe(t, "--claude.dir="+dir, "--tail.poll-interval=20ms")
	totals := func() (tokens, cost float64, invalid map[string]float64) {
		mfs := parseExposition(t, scrape(t, addr))
		for _, v := range sumBy(mfs, "claude_transcript_tokens_total") {
			tokens += v
		}
		for _, v := range sumBy(mfs, "claude_transcript_cost_usd_total") {
			cost += v
		}
		return tokens, cost, sumBy(mfs, "claude_transcript_exporter_invalid_usage_total", "reason")
	}
	waitFor(t, func() bool { tok, _, _ := totals(); return tok == 10+5+100+7 })
	baseTok, baseCost, _ := totals()

	bad := []struct{ input, reason string }{
		{`-40`, "negative"},
		{`1e308`, "too_large"},
		{`99999999999999999999`, "too_large"},
		{`"12"`, "not_integer"},
		{`true`, "not_integer"},
		{`1.5`, "not_integer"},
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want := map[string]float64{}
	for i, b := range bad {
		if _, err := f.WriteString(usageLine(fmt.Sprintf("msg_bad_%d", i), b.input) + "\n"); err != nil {
			t.Fatal(err)
		}
		want[b.reason]++
		waitFor(t, func() bool { _, _, inv := totals(); return inv[b.reason] == want[b.reason] })
		if tok, cost, _ := totals(); tok != baseTok || cost != baseCost {
			t.Errorf("after input_tokens=%s: tokens %v (was %v), cost %v (was %v)", b.input, tok, baseTok, cost, baseCost)
		}
	}
	if _, err := f.WriteString(usageLine("msg_good", "20") + "\n"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { tok, _, _ := totals(); return tok == baseTok+20+3+100 })
	logs := stop()
	if n := strings.Count(logs, "token usage rejected"); n != 1 {
		t.Errorf("%d warnings about rejected usage, want 1 per file:\n%s", n, logs)
	}
}
