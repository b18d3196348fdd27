package transcript

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/testonly/testbackend"
)

func corpusLines(t *testing.T, fn func(path string, line []byte)) {
	root := testbackend.CorpusDir(t)
	n := 0
	err := filepath.WalkDir(root, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if de.IsDir() || !strings.HasSuffix(p, ".jsonl") {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		r := bufio.NewReaderSize(f, 1<<20)
		for {
			line, err := r.ReadBytes('\n')
			line = bytes.TrimSuffix(line, []byte("\n"))
			if len(line) > 0 {
				n++
				fn(p, line)
			}
			if err != nil {
				break
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 10000 {
		t.Fatalf("read only %d corpus lines from %s", n, root)
	}
}

type refUsage struct {
	Input         *int64 `json:"input_tokens"`
	Output        *int64 `json:"output_tokens"`
	CacheRead     *int64 `json:"cache_read_input_tokens"`
	CacheCreation *int64 `json:"cache_creation_input_tokens"`
	Breakdown     *struct {
		E5m int64 `json:"ephemeral_5m_input_tokens"`
		E1h int64 `json:"ephemeral_1h_input_tokens"`
	} `json:"cache_creation"`
	ServerToolUse *struct {
		WebSearch int64 `json:"web_search_requests"`
	} `json:"server_tool_use"`
}

type refMessage struct {
	ID         string          `json:"id"`
	Model      string          `json:"model"`
	StopReason *string         `json:"stop_reason"`
	Usage      *refUsage       `json:"usage"`
	Content    json.RawMessage `json:"content"`
}

type refRecord struct {
	Type            string      `json:"type"`
	Subtype         string      `json:"subtype"`
	UUID            string      `json:"uuid"`
	SessionID       string      `json:"sessionId"`
	IsSidechain     bool        `json:"isSidechain"`
	IsMeta          bool        `json:"isMeta"`
	IsCompact       bool        `json:"isCompactSummary"`
	Message         *refMessage `json:"message"`
	CompactMetadata *struct {
		Trigger   string `json:"trigger"`
		PreTokens int64  `json:"preTokens"`
	} `json:"compactMetadata"`
	Data *struct {
		Type    string     `json:"type"`
		AgentID string     `json:"agentId"`
		Message *refRecord `json:"message"`
	} `json:"data"`
}

func val(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// TestDecodeAgreesWithEncodingJSONOnCorpus decodes every real line with
// the fast decoder and with encoding/json and compares every field the
// exporter counts.
func TestDecodeAgreesWithEncodingJSONOnCorpus(t *testing.T) {
	dec := NewDecoder(Options{})
	var rec Record
	corpusLines(t, func(path string, line []byte) {
		var ref refRecord
		refErr := json.Unmarshal(line, &ref)
		err := dec.Decode(line, &rec)
		if refErr != nil {
			if err == nil {
				t.Errorf("%s: encoding/json rejects a line the decoder accepts: %v", path, refErr)
			}
			return
		}
		if err != nil {
			t.Fatalf("%s: decode: %v\n%.300s", path, err, line)
		}
		compareRecord(t, path, &ref, &rec)
		if ref.Data != nil && ref.Data.Message != nil {
			if !rec.HasEmbedded() && (ref.Data.Message.Type == "user" || ref.Data.Message.Type == "assistant") {
				t.Fatalf("%s: progress message not decoded", path)
			}
			if rec.HasEmbedded() {
				compareRecord(t, path, ref.Data.Message, rec.Embedded)
			}
			if rec.Rare().ProgressAgentID != ref.Data.AgentID {
				t.Fatalf("%s: progress data mismatch", path)
			}
		}
	})
}

func compareRecord(t *testing.T, path string, ref *refRecord, rec *Record) {
	t.Helper()
	if rec.Type != ref.Type || rec.Rare().Subtype != ref.Subtype || rec.UUID != ref.UUID || rec.SessionID != ref.SessionID ||
		rec.IsSidechain != ref.IsSidechain || rec.IsMeta != ref.IsMeta || rec.IsCompactSummary != ref.IsCompact {
		t.Fatalf("%s: envelope mismatch: got %+v", path, rec)
	}
	if ref.CompactMetadata != nil {
		if rec.Rare().CompactTrigger != ref.CompactMetadata.Trigger || rec.Rare().CompactPreTokens != ref.CompactMetadata.PreTokens {
			t.Fatalf("%s: compact mismatch", path)
		}
	}
	if ref.Message == nil {
		return
	}
	m := ref.Message
	got := rec.Message
	stop := ""
	if m.StopReason != nil {
		stop = *m.StopReason
	}
	if got.ID != m.ID || got.Model != m.Model || got.StopReason != stop {
		t.Fatalf("%s: message header mismatch: got %q %q %q want %q %q %q", path, got.ID, got.Model, got.StopReason, m.ID, m.Model, stop)
	}
	if (m.Usage != nil) != got.HasUsage {
		t.Fatalf("%s: usage presence mismatch", path)
	}
	if m.Usage != nil {
		u := got.Usage
		if u.Input != val(m.Usage.Input) || u.Output != val(m.Usage.Output) || u.CacheRead != val(m.Usage.CacheRead) || u.CacheCreation != val(m.Usage.CacheCreation) {
			t.Fatalf("%s: usage mismatch: %+v", path, u)
		}
		if (m.Usage.Breakdown != nil) != u.HasBreakdown {
			t.Fatalf("%s: breakdown presence mismatch", path)
		}
		if m.Usage.Breakdown != nil && (u.Ephemeral5m != m.Usage.Breakdown.E5m || u.Ephemeral1h != m.Usage.Breakdown.E1h) {
			t.Fatalf("%s: breakdown mismatch", path)
		}
		if m.Usage.ServerToolUse != nil && u.WebSearchRequests != m.Usage.ServerToolUse.WebSearch {
			t.Fatalf("%s: web_search_requests %d, want %d", path, u.WebSearchRequests, m.Usage.ServerToolUse.WebSearch)
		}
	}
	var blocks []map[string]any
	var s string
	if len(m.Content) > 0 && json.Unmarshal(m.Content, &s) == nil {
		if !got.ContentIsString {
			t.Fatalf("%s: string content not seen", path)
		}
		want := s
		if len(want) > TextHeadMax {
			want = string(cutUTF8([]byte(want), TextHeadMax))
		}
		if got.TextHead != want || got.TextHeadCut != (len(s) > TextHeadMax) {
			t.Fatalf("%s: text head %q want %q", path, got.TextHead, want)
		}
		return
	}
	_ = json.Unmarshal(m.Content, &blocks)
	var uses, results int
	for _, b := range blocks {
		switch b["type"] {
		case "tool_use", "server_tool_use":
			if got.ToolUses[uses].ID != b["id"] || got.ToolUses[uses].Name != b["name"] {
				t.Fatalf("%s: tool_use mismatch", path)
			}
			if in, ok := b["input"].(map[string]any); ok && (b["name"] == "Task" || b["name"] == "Agent") {
				if st, _ := in["subagent_type"].(string); st != got.ToolUses[uses].SubagentType {
					t.Fatalf("%s: subagent_type %q want %q", path, got.ToolUses[uses].SubagentType, st)
				}
				if bg, _ := in["run_in_background"].(bool); bg != got.ToolUses[uses].Background {
					t.Fatalf("%s: run_in_background %v want %v", path, got.ToolUses[uses].Background, bg)
				}
			}
			uses++
		case "tool_result":
			isErr, _ := b["is_error"].(bool)
			if got.ToolResults[results].ToolUseID != b["tool_use_id"] || got.ToolResults[results].IsError != isErr {
				t.Fatalf("%s: tool_result mismatch", path)
			}
			results++
		}
	}
	if uses != len(got.ToolUses) || results != len(got.ToolResults) {
		t.Fatalf("%s: block counts %d/%d want %d/%d", path, len(got.ToolUses), len(got.ToolResults), uses, results)
	}
}
