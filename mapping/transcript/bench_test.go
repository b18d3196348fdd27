package transcript

import (
	"bufio"
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/testonly/testbackend"
)

// loadCorpus holds every non-empty line of the real corpus in memory.
func loadCorpus(b testing.TB) (lines [][]byte, total int64) {
	b.Helper()
	root := testbackend.CorpusDir(b)
	if _, err := os.Stat(root); err != nil {
		b.Fatalf("no corpus: %v", err)
	}
	err := filepath.WalkDir(root, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if de.IsDir() || !strings.HasSuffix(p, ".jsonl") {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(make([]byte, 0, 1<<20), DefaultMaxLineBytes)
		for sc.Scan() {
			if len(sc.Bytes()) > 0 {
				line := bytes.Clone(sc.Bytes())
				lines = append(lines, line)
				total += int64(len(line))
			}
		}
		return sc.Err()
	})
	if err != nil {
		b.Fatal(err)
	}
	if len(lines) == 0 {
		b.Fatal("empty corpus")
	}
	return lines, total
}

// BenchmarkDecode decodes every real corpus line once per iteration, with
// one decoder and one record as the exporter does.
func BenchmarkDecode(b *testing.B) {
	lines, total := loadCorpus(b)
	dec := NewDecoder(Options{})
	var r Record
	bad := 0
	b.SetBytes(total)
	b.ReportAllocs()
	for b.Loop() {
		bad = 0
		for _, line := range lines {
			if dec.Decode(line, &r) != nil {
				bad++
			}
		}
	}
	b.ReportMetric(float64(b.N)*float64(len(lines))/b.Elapsed().Seconds(), "lines/s")
	b.ReportMetric(float64(len(lines)), "lines/op")
	if bad > 0 {
		b.Logf("%d of %d lines rejected", bad, len(lines))
	}
}

// BenchmarkDecodeLargeSnapshot: one 5 MB file-history-snapshot line, all of
// it skipped.
func BenchmarkDecodeLargeSnapshot(b *testing.B) {
	line := []byte(snapshotLine(5 << 20))
	dec := NewDecoder(Options{})
	var r Record
	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	for b.Loop() {
		if err := dec.Decode(line, &r); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeLargeToolResult: one 5 MB tool output string, skipped
// with a memchr.
func BenchmarkDecodeLargeToolResult(b *testing.B) {
	chunk := `func main() {\n\tfmt.Println(\"hello, \\\"world\\\"\")\n}\n`
	line := []byte(`{"type":"user","uuid":"big","message":{"role":"user","content":[{"tool_use_id":"toolu_big","type":"tool_result","content":"` +
		strings.Repeat(chunk, (5<<20)/len(chunk)) + `","is_error":false}]}}`)
	dec := NewDecoder(Options{})
	var r Record
	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	for b.Loop() {
		if err := dec.Decode(line, &r); err != nil {
			b.Fatal(err)
		}
	}
}

// assistantLine is a typical streamed assistant line from Claude Code 2.1.
const assistantLine = `{"parentUuid":"7d3f2a10-6a57-4c1e-9a43-2d8a5b0c9e11","isSidechain":false,"userType":"external","cwd":"/home/dev/work/project","sessionId":"8e0abc0e-19a0-449a-bb45-19d37e96d658","version":"2.1.41","gitBranch":"main","slug":"cozy-prancing-cray","message":{"model":"claude-opus-4-5-20251101","id":"msg_01XAihD1EzvcQvBUzBkm2Evg","type":"message","role":"assistant","content":[{"type":"tool_use","id":"toolu_01HK8n4o3RcuzgR4YCeFbX8X","name":"Bash","input":{"command":"go test ./... 2>&1 | tail -20","description":"Run the test suite"}}],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":3,"cache_creation_input_tokens":1532,"cache_read_input_tokens":48211,"cache_creation":{"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens":1532},"output_tokens":26,"service_tier":"standard"}},"requestId":"req_011CUZ5X3Zx3zzd2xW8Cq1dP","type":"assistant","uuid":"ae6534e9-3e87-4284-a2e0-ac68ac110607","timestamp":"2026-05-08T21:02:39.816Z"}`

// BenchmarkDecodeAssistantLine: the common case.
func BenchmarkDecodeAssistantLine(b *testing.B) {
	line := []byte(assistantLine)
	dec := NewDecoder(Options{})
	var r Record
	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	for b.Loop() {
		if err := dec.Decode(line, &r); err != nil {
			b.Fatal(err)
		}
	}
	if r.Message.Usage.CacheRead != 48211 || len(r.Message.ToolUses) != 1 {
		b.Fatalf("bad decode: %+v", r.Message)
	}
}

// editLine is an Edit call of 40 lines replaced by 44, the middle changed
// (its input's lines are diffed: InputLines).
func editLine() string {
	var old, new strings.Builder
	for i := 0; i < 40; i++ {
		line := `\t\tif err := step` + strings.Repeat("x", i%9) + `(ctx, \"arg\"); err != nil {\n`
		old.WriteString(line)
		if i == 20 {
			new.WriteString(`\t\t// changed\n\t\tlog.Printf(\"%v\", v)\n\t\tv++\n\t\tw--\n`)
		}
		if i != 10 {
			new.WriteString(line)
		} else {
			new.WriteString(`\t\tchanged()\n`)
		}
	}
	return `{"type":"assistant","uuid":"e","message":{"id":"msg_e","model":"claude-opus-4-5","role":"assistant","content":[{"type":"tool_use","id":"toolu_e","name":"Edit","input":{"replace_all":false,"file_path":"/home/dev/work/project/main.go","old_string":"` +
		old.String() + `","new_string":"` + new.String() + `"}}],"stop_reason":"tool_use","usage":{"input_tokens":3,"output_tokens":400}}}`
}

// BenchmarkDecodeEditLine: an Edit call, its input diffed.
func BenchmarkDecodeEditLine(b *testing.B) {
	line := []byte(editLine())
	dec := NewDecoder(Options{})
	var r Record
	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	for b.Loop() {
		if err := dec.Decode(line, &r); err != nil {
			b.Fatal(err)
		}
	}
}
