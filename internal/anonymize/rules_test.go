package anonymize

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/transcript"
)

func anonymizeLine(a *Anonymizer, line string) string {
	b := []byte(line)
	a.Document(b)
	return string(b)
}

// decoded returns the value at a dotted path of a JSON line ("message.content.0.text").
func decoded(t *testing.T, line, path string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(line), &v); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, line)
	}
	for _, p := range strings.Split(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			v = x[p]
		case []any:
			i := 0
			for _, c := range p {
				i = i*10 + int(c-'0')
			}
			v = x[i]
		default:
			t.Fatalf("no %s in %s", path, line)
		}
	}
	return v
}

func TestDocumentKeepsWhatTheExporterReadsAndFillsTheRest(t *testing.T) {
	cases := []struct {
		name string
		line string
		keep map[string]any // path -> value that must be unchanged
		gone []string       // substrings that must not survive
	}{
		{
			name: "assistant line: ids, model, usage, stop reason and tool names stay; text and tool input go",
			line: `{"parentUuid":"p-1","isSidechain":false,"userType":"external","cwd":"/home/alice/secret-project","sessionId":"s-1","version":"2.1.3","gitBranch":"feature/alice-login","message":{"id":"msg_01","model":"claude-opus-4-6","role":"assistant","stop_reason":"tool_use","usage":{"input_tokens":12,"output_tokens":340,"cache_read_input_tokens":1000,"cache_creation":{"ephemeral_5m_input_tokens":5,"ephemeral_1h_input_tokens":7}},"content":[{"type":"text","text":"I will read /home/alice/secret-project/main.go"},{"type":"tool_use","id":"toolu_1","name":"Read","input":{"file_path":"/home/alice/secret-project/main.go"}},{"type":"tool_use","id":"toolu_2","name":"Task","input":{"subagent_type":"Explore","description":"find alice's keys","prompt":"look for passwords","run_in_background":true}}]},"requestId":"req_1","type":"assistant","uuid":"u-1","timestamp":"2026-01-02T03:04:05.678Z"}`,
			keep: map[string]any{
				"parentUuid": "p-1", "sessionId": "s-1", "version": "2.1.3", "type": "assistant", "uuid": "u-1",
				"timestamp": "2026-01-02T03:04:05.678Z", "requestId": "req_1", "message.id": "msg_01",
				"message.model": "claude-opus-4-6", "message.stop_reason": "tool_use",
				"message.usage.input_tokens": 12.0, "message.usage.cache_creation.ephemeral_1h_input_tokens": 7.0,
				"message.content.1.name": "Read", "message.content.1.id": "toolu_1",
				"message.content.2.input.subagent_type": "Explore", "message.content.2.input.run_in_background": true,
			},
			gone: []string{"alice", "secret", "passwords", "read /home", "login"},
		},
		{
			name: "prompt markers stay, what follows them goes",
			line: `{"type":"user","message":{"role":"user","content":"<command-name>/compact</command-name> keep alice's notes"},"uuid":"u-2"}`,
			keep: map[string]any{"uuid": "u-2"},
			gone: []string{"alice", "notes"},
		},
		{
			name: "interrupt marker and warmup survive whole",
			line: `{"type":"user","message":{"role":"user","content":[{"type":"text","text":"[Request interrupted by user for tool use]"},{"type":"text","text":"Warmup"}]}}`,
			keep: map[string]any{
				"message.content.0.text": "[Request interrupted by user for tool use]",
				"message.content.1.text": "Warmup",
			},
		},
		{
			name: "tool results: is_error and ids stay, output goes",
			line: `{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","is_error":true,"content":"ENOENT: /home/alice/.ssh/id_rsa"}]},"toolUseResult":{"agentId":"a1b2","agentType":"general-purpose","status":"completed","totalDurationMs":42,"content":[{"type":"text","text":"alice@example.com"}]}}`,
			keep: map[string]any{
				"message.content.0.tool_use_id": "toolu_1", "message.content.0.is_error": true,
				"toolUseResult.agentId": "a1b2", "toolUseResult.agentType": "general-purpose",
				"toolUseResult.status": "completed", "toolUseResult.totalDurationMs": 42.0,
			},
			gone: []string{"alice", "ssh", "example.com", "ENOENT"},
		},
		{
			name: "synthetic API errors keep their words but not what is in parentheses",
			line: `{"type":"assistant","isApiErrorMessage":true,"error":"rate_limit","message":{"id":"m","model":"<synthetic>","content":[{"type":"text","text":"You've hit your limit · resets 4pm (Europe/Paris)"}]}}`,
			keep: map[string]any{"error": "rate_limit", "message.model": "<synthetic>"},
			gone: []string{"Europe/Paris"},
		},
		{
			name: "compaction metadata stays",
			line: `{"type":"system","subtype":"compact_boundary","content":"Conversation compacted","compactMetadata":{"trigger":"auto","preTokens":168000},"logicalParentUuid":"l-1","level":"info"}`,
			keep: map[string]any{
				"subtype": "compact_boundary", "compactMetadata.trigger": "auto", "compactMetadata.preTokens": 168000.0,
				"logicalParentUuid": "l-1", "level": "info",
			},
		},
		{
			name: "paths used as keys are filled, keys that are names are not",
			line: `{"type":"file-history-snapshot","snapshot":{"trackedFileBackups":{"/home/alice/a.py":{"backupFileName":"0123abcd@v1","version":1},"/home/alice/b.py":{"backupFileName":null,"version":2}}}}`,
			keep: map[string]any{"type": "file-history-snapshot"},
			gone: []string{"alice"},
		},
		{
			name: "titles, summaries, todos and history text go",
			line: `{"type":"summary","summary":"Alice fixes the billing bug","leafUuid":"x-1","customTitle":"alice's title","display":"alice typed this","project":"/Users/alice/billing"}`,
			keep: map[string]any{"leafUuid": "x-1"},
			gone: []string{"Alice", "alice", "billing"},
		},
		{
			name: "enum keys holding prose are filled (a status is a token, not a sentence)",
			line: `{"type":"user","toolUseResult":{"status":"deployed by alice to prod","id":"alice@example.com"}}`,
			gone: []string{"alice", "deployed", "example"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := New([]byte("k"))
			out := anonymizeLine(a, tc.line)
			if len(out) != len(tc.line) {
				t.Fatalf("length %d, want %d", len(out), len(tc.line))
			}
			for path, want := range tc.keep {
				if got := decoded(t, out, path); got != want {
					t.Errorf("%s = %v, want %v kept\n%s", path, got, want, out)
				}
			}
			for _, s := range tc.gone {
				if strings.Contains(out, s) {
					t.Errorf("%q survived:\n%s", s, out)
				}
			}
		})
	}
}

func TestPathsMapConsistentlyAndStayDistinct(t *testing.T) {
	a := New([]byte("k"))
	l1 := anonymizeLine(a, `{"cwd":"/home/alice/proj-a","gitBranch":"main"}`)
	l2 := anonymizeLine(a, `{"cwd":"/home/alice/proj-a","gitBranch":"main"}`)
	l3 := anonymizeLine(a, `{"cwd":"/home/alice/proj-b","file_path":"/home/alice/proj-b/x.go"}`)
	if l1 != l2 {
		t.Errorf("the same cwd maps twice differently:\n%s\n%s", l1, l2)
	}
	cwd1 := decoded(t, l1, "cwd").(string)
	cwd3 := decoded(t, l3, "cwd").(string)
	if cwd1 == cwd3 {
		t.Errorf("two projects map to one cwd %s", cwd1)
	}
	if !strings.HasPrefix(cwd3, cwd1[:strings.LastIndexByte(cwd1, '/')]) {
		t.Errorf("a shared parent folder maps differently: %s vs %s", cwd1, cwd3)
	}
	if fp := decoded(t, l3, "file_path").(string); !strings.HasPrefix(fp, cwd3+"/") || !strings.HasSuffix(fp, ".go") {
		t.Errorf("file_path %s does not sit in cwd %s with its extension", fp, cwd3)
	}
	// An encoded project folder maps like the cwd it encodes.
	dir := []byte("-home-alice-proj-a")
	a.fillPath(dir)
	if want := strings.ReplaceAll(cwd1, "/", "-"); string(dir) != want {
		t.Errorf("folder maps to %s, want %s (its cwd's encoding)", dir, want)
	}
	// The same key gives the same filler; another key another.
	if b := anonymizeLine(New([]byte("k")), `{"cwd":"/home/alice/proj-a"}`); decoded(t, b, "cwd") != cwd1 {
		t.Errorf("same key, different filler")
	}
	if b := anonymizeLine(New([]byte("other")), `{"cwd":"/home/alice/proj-a"}`); decoded(t, b, "cwd") == cwd1 {
		t.Errorf("another key gives the same filler")
	}
}

// TestWindowsPathsMapCaseInsensitively: Claude Code writes one Windows
// working dir as S:\repo and s:\repo, and the exporter reads both as one
// project; the copy must too, and its project folder must stay the
// cwd's encoding.
func TestWindowsPathsMapCaseInsensitively(t *testing.T) {
	a := New([]byte("k"))
	upper := decoded(t, anonymizeLine(a, `{"cwd":"S:\\01_Repos\\BeFirst_Docs"}`), "cwd").(string)
	lower := decoded(t, anonymizeLine(a, `{"cwd":"s:\\01_repos\\BeFirst_Docs"}`), "cwd").(string)
	other := decoded(t, anonymizeLine(a, `{"cwd":"T:\\01_Repos\\BeFirst_Docs"}`), "cwd").(string)
	if !strings.EqualFold(upper, lower) || upper == lower {
		t.Errorf("S: and s: spellings map to %q and %q, want one dir in two cases", upper, lower)
	}
	if upper[0] < 'A' || upper[0] > 'Z' || upper[1] != ':' || lower[0] < 'a' || lower[0] > 'z' {
		t.Errorf("drive letters map to %q and %q, want letters of the same case", upper[:2], lower[:2])
	}
	if strings.EqualFold(upper, other) {
		t.Errorf("drives S: and T: map to one %q", upper)
	}
	if strings.Contains(upper, "Repos") || strings.Contains(upper, "BeFirst") {
		t.Errorf("personal text survived: %q", upper)
	}
	dir := []byte("S--01-Repos-BeFirst-Docs")
	a.fillPath(dir)
	want := strings.NewReplacer(":", "-", "\\", "-", "_", "-").Replace(upper)
	if !strings.EqualFold(string(dir), want) {
		t.Errorf("folder maps to %s, want %s (its cwd's encoding, any case)", dir, want)
	}
}

func TestDefectsStayDefectsWithoutPersonalBytes(t *testing.T) {
	cases := []struct {
		name, line string
		valid      bool // the output must (not) be valid JSON
		validUTF8  bool
	}{
		{"truncated line", `{"type":"user","message":{"content":"alice's secret pla`, false, true},
		{"garbage", `alice was here`, false, true},
		{"invalid UTF-8 inside a valid line", "{\"type\":\"user\",\"message\":{\"content\":\"caf\xe9 alice\"}}", true, false}, // encoding/json tolerates it; the exporter does not
		{"invalid UTF-8 in a broken line", "{\"content\":\"caf\xe9 alice", false, false},
		{"not an object", `"alice"`, true, true},
		{"escapes and non-ASCII", `{"text":"\u00e9t\u00e9 \"alice\"\n\ud83d\ude00 é\\path"}`, true, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := anonymizeLine(New(nil), tc.line)
			if len(out) != len(tc.line) {
				t.Fatalf("length %d, want %d", len(out), len(tc.line))
			}
			if strings.Contains(strings.ToLower(out), "alice") || strings.Contains(out, "secret") {
				t.Errorf("personal text survived: %q", out)
			}
			if got := json.Valid([]byte(out)); got != tc.valid {
				t.Errorf("valid JSON = %v, want %v: %q", got, tc.valid, out)
			}
			if got := utf8.ValidString(out); got != tc.validUTF8 {
				t.Errorf("valid UTF-8 = %v, want %v: %q", got, tc.validUTF8, out)
			}
			var rec transcript.Record
			dec := transcript.NewDecoder(transcript.Options{})
			want := transcript.ReasonOf(dec.Decode([]byte(tc.line), &rec))
			if got := transcript.ReasonOf(dec.Decode([]byte(out), &rec)); got != want {
				t.Errorf("the exporter skips the copy for %q, the source for %q", got, want)
			}
			if bytes.Count([]byte(out), []byte{0xFF}) != invalidBytes(tc.line) {
				t.Errorf("invalid bytes: %d in the copy, %d in the source", bytes.Count([]byte(out), []byte{0xFF}), invalidBytes(tc.line))
			}
		})
	}
}

func invalidBytes(s string) int {
	n := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			n++
		}
		i += size
	}
	return n
}

func TestTextFillerKeepsLineStructure(t *testing.T) {
	in := `{"content":"first line\nsecond\n\nthird\tcol"}`
	out := anonymizeLine(New(nil), in)
	got := decoded(t, out, "content").(string)
	if strings.Count(got, "\n") != 3 || strings.Count(got, "\t") != 1 {
		t.Errorf("newlines or tabs lost: %q", got)
	}
	if !strings.HasPrefix(got, lorem[:10]) {
		t.Errorf("filler %q is not the lorem pattern", got)
	}
}
