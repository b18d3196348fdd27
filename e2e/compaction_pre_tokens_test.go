package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCompactionSizeThatIsNoneIsNotObserved: a compaction whose preTokens
// is negative or over 100,000,000 still counts in compactions_total, but
// its size stays out of compaction_pre_tokens, whose sum and count only
// grow. (FuzzPipeline found preTokens -167828 lowering the histogram's
// sum.)
func TestCompactionSizeThatIsNoneIsNotObserved(t *testing.T) {
	dir := t.TempDir()
	proj := filepath.Join(dir, "projects", "-home-u-proj")
	if err := os.MkdirAll(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	compaction := func(uuid, pre string) string {
		return fmt.Sprintf(`{"parentUuid":null,"cwd":"/home/u/proj","sessionId":"s1","type":"system","subtype":"compact_boundary","content":"Conversation compacted","timestamp":"2026-01-02T03:04:05.000Z","uuid":%q,"level":"info","compactMetadata":{"trigger":"auto","preTokens":%s}}`, uuid, pre)
	}
	lines := []string{
		compaction("c1", "167828"),
		compaction("c2", "-167828"),
		compaction("c3", "1e400"),
		compaction("c4", "100000001"),
	}
	if err := os.WriteFile(filepath.Join(proj, "s1.jsonl"), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mfs := parseExposition(t, oneshot(t, "--claude.dir="+dir))
	if n := sumBy(mfs, "claude_transcript_compactions_total")[""]; n != 4 {
		t.Errorf("compactions_total = %v, want 4", n)
	}
	mf := mfs["claude_transcript_compaction_pre_tokens"]
	if mf == nil || len(mf.GetMetric()) != 1 {
		t.Fatalf("compaction_pre_tokens: %v", mf)
	}
	h := mf.GetMetric()[0].GetHistogram()
	if h.GetSampleCount() != 1 || h.GetSampleSum() != 167828 {
		t.Errorf("compaction_pre_tokens count %d sum %v, want 1 and 167828", h.GetSampleCount(), h.GetSampleSum())
	}
}
