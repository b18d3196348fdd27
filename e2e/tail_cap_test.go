package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOneshotUnterminatedLastLineOverTheCapIsTooLong: a one-shot run reads
// a file's unterminated last line; when it is over --tail.max-line-bytes
// it is skipped and counted as too_long, like any line over the cap, even
// when it is valid JSON. (FuzzTail found the streaming reader handing such
// a line over whole when it fit its 1 MiB buffer: a 300 KiB request with
// --tail.max-line-bytes=1024 was buffered and decoded, and counted as
// truncated, the reason of a half-written line.)
func TestOneshotUnterminatedLastLineOverTheCapIsTooLong(t *testing.T) {
	dir := t.TempDir()
	proj := filepath.Join(dir, "projects", "-home-u-proj")
	if err := os.MkdirAll(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	// A valid request of 300 KiB (its text), without a final newline:
	// longer than two 128 KiB decode ranges plus the cap, so a decode
	// worker streams it.
	long := strings.Replace(assistantLine("msg_long", 1000, "claude-sonnet-4-5"), `"role":"assistant",`,
		`"role":"assistant","content":[{"type":"text","text":"`+strings.Repeat("x", 300<<10)+`"}],`, 1)
	content := assistantLine("msg_1", 5, "claude-sonnet-4-5") + "\n" + long
	if err := os.WriteFile(filepath.Join(proj, "s1.jsonl"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	mfs := parseExposition(t, oneshot(t, "--claude.dir="+dir, "--tail.max-line-bytes=1024"))
	reasons := sumBy(mfs, "claude_transcript_exporter_decode_errors_total", "reason")
	if reasons["too_long"] != 1 || reasons["truncated"] != 0 {
		t.Errorf("decode errors %v, want too_long 1 and truncated 0", reasons)
	}
	if out := sumBy(mfs, "claude_transcript_tokens_total", "type")["output"]; out != 5 {
		t.Errorf("output tokens = %v, want 5 (the line over the cap is not counted)", out)
	}
	if req := sumBy(mfs, "claude_transcript_requests_total")[""]; req != 1 {
		t.Errorf("requests = %v, want 1", req)
	}
}
