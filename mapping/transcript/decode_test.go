package transcript

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
	"unsafe"
)

// decodeOK decodes line with a fresh decoder and fails on error.
func decodeOK(t *testing.T, opts Options, line string) *Record {
	t.Helper()
	var r Record
	if err := NewDecoder(opts).Decode([]byte(line), &r); err != nil {
		t.Fatalf("decode: %v\n%s", err, line)
	}
	return &r
}

func eq[T comparable](t *testing.T, what string, got, want T) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %#v, want %#v", what, got, want)
	}
}

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	ts, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatal(err)
	}
	return ts.UTC()
}

type decodeCase struct {
	name  string
	line  string
	check func(t *testing.T, r *Record)
}

// runCases decodes every case twice: with a fresh decoder and record, and
// with one decoder and record shared by the whole table (so that reset and
// reuse are exercised: no field may leak from the previous line).
func runCases(t *testing.T, opts Options, cases []decodeCase) {
	t.Helper()
	shared := NewDecoder(opts)
	var sharedRec Record
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.check(t, decodeOK(t, opts, tc.line))
			if err := shared.Decode([]byte(tc.line), &sharedRec); err != nil {
				t.Fatalf("reused decoder: %v", err)
			}
			tc.check(t, &sharedRec)
		})
	}
}

func TestDecodeRecordKinds(t *testing.T) {
	runCases(t, Options{}, []decodeCase{
		{
			name: "user prompt as a string is one text block with its head",
			line: `{"parentUuid":null,"isSidechain":false,"userType":"external","cwd":"/home/u/proj","sessionId":"s-1","version":"2.1.41","gitBranch":"main","type":"user","message":{"role":"user","content":"fix the failing test"},"uuid":"u-1","timestamp":"2026-05-14T18:47:54.379Z","promptId":"p-1"}`,
			check: func(t *testing.T, r *Record) {
				eq(t, "Kind", r.Kind, KindUser)
				eq(t, "Type", r.Type, "user")
				eq(t, "UUID", r.UUID, "u-1")
				eq(t, "ParentUUID", r.ParentUUID, "")
				eq(t, "SessionID", r.SessionID, "s-1")
				eq(t, "Cwd", r.Cwd, "/home/u/proj")
				eq(t, "Version", r.Version, "2.1.41")
				eq(t, "GitBranch", r.GitBranch, "main")
				eq(t, "Timestamp", r.Timestamp, mustTime(t, "2026-05-14T18:47:54.379Z"))
				eq(t, "HasMessage", r.HasMessage, true)
				eq(t, "ContentIsString", r.Message.ContentIsString, true)
				eq(t, "TextBlocks", r.Message.TextBlocks, 1)
				eq(t, "TextHead", r.Message.TextHead, "fix the failing test")
				eq(t, "TextHeadCut", r.Message.TextHeadCut, false)
				eq(t, "Text (privacy by default)", r.Message.Text, "")
				eq(t, "HasUsage", r.Message.HasUsage, false)
				eq(t, "UnknownFields", r.UnknownFields, 0)
				eq(t, "HasEmbedded", r.HasEmbedded(), false)
			},
		},
		{
			name: "user with text blocks counts text and other blocks and heads the first text",
			line: `{"type":"user","uuid":"u-2","parentUuid":"u-1","message":{"role":"user","content":[{"type":"text","text":"first block"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}},{"type":"text","text":"second block"}]}}`,
			check: func(t *testing.T, r *Record) {
				eq(t, "Kind", r.Kind, KindUser)
				eq(t, "ParentUUID", r.ParentUUID, "u-1")
				eq(t, "ContentIsString", r.Message.ContentIsString, false)
				eq(t, "TextBlocks", r.Message.TextBlocks, 2)
				eq(t, "OtherBlocks", r.Message.OtherBlocks, 1)
				eq(t, "TextHead", r.Message.TextHead, "first block")
				eq(t, "Text", r.Message.Text, "")
				eq(t, "tool uses", len(r.Message.ToolUses), 0)
			},
		},
		{
			name: "tool_result is_error true, false and missing",
			line: `{"type":"user","uuid":"u-3","sourceToolUseID":"toolu_src","message":{"role":"user","content":[{"tool_use_id":"toolu_a","type":"tool_result","content":"boom","is_error":true},{"type":"tool_result","tool_use_id":"toolu_b","content":[{"type":"text","text":"ok"}],"is_error":false},{"type":"tool_result","tool_use_id":"toolu_c","content":"no flag"},{"type":"tool_result","tool_use_id":"toolu_d","is_error":null}]},"toolUseResult":"Error: boom"}`,
			check: func(t *testing.T, r *Record) {
				if r.TaskResult != nil {
					t.Errorf("TaskResult = %+v, want nil", r.TaskResult)
				}
				want := []ToolResult{{ToolUseID: "toolu_a", IsError: true}, {ToolUseID: "toolu_b"}, {ToolUseID: "toolu_c"}, {ToolUseID: "toolu_d"}}
				if len(r.Message.ToolResults) != len(want) {
					t.Fatalf("ToolResults = %+v, want %+v", r.Message.ToolResults, want)
				}
				for i, w := range want {
					eq(t, "ToolResults[i]", r.Message.ToolResults[i], w)
				}
				eq(t, "TextBlocks (tool results are not text)", r.Message.TextBlocks, 0)
				eq(t, "OtherBlocks", r.Message.OtherBlocks, 0)
			},
		},
		{
			name: "synthetic line with usage.speed null (Claude Code 2.1)",
			line: `{"type":"assistant","uuid":"a-9","timestamp":"2026-03-04T08:10:04.565Z","message":{"id":"eaeb3468","model":"<synthetic>","role":"assistant","stop_reason":"stop_sequence","type":"message","usage":{"input_tokens":0,"output_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"service_tier":null,"inference_geo":null,"iterations":null,"speed":null},"content":[{"type":"text","text":"You've hit your limit · resets 2pm (Asia/Shanghai)"}]},"error":"rate_limit","isApiErrorMessage":true}`,
			check: func(t *testing.T, r *Record) {
				eq(t, "HasUsage", r.Message.HasUsage, true)
				eq(t, "SpeedNull", r.Message.Usage.SpeedNull, true)
				eq(t, "Speed", r.Message.Usage.Speed, "")
				eq(t, "TextHead", r.Message.TextHead, "You've hit your limit · resets 2pm (Asia/Shanghai)")
			},
		},
		{
			name: "usage.speed standard is not null",
			line: `{"type":"assistant","uuid":"a-10","timestamp":"2026-03-04T08:10:04.565Z","message":{"id":"msg_9","model":"claude-opus-4-6","role":"assistant","usage":{"input_tokens":1,"output_tokens":2,"speed":"standard"},"content":[]}}`,
			check: func(t *testing.T, r *Record) {
				eq(t, "SpeedNull", r.Message.Usage.SpeedNull, false)
				eq(t, "Speed", r.Message.Usage.Speed, "standard")
			},
		},
		{
			name: "toolUseResult of a Task call names the subagent",
			line: `{"type":"user","uuid":"u-4","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_task","content":[{"type":"text","text":"done"}]}]},"toolUseResult":{"status":"completed","prompt":"look around","agentId":"a1b2c3","agentType":"Explore","content":[{"type":"text","text":"done"}],"totalDurationMs":12345,"totalTokens":999,"usage":{"input_tokens":5}}}`,
			check: func(t *testing.T, r *Record) {
				if r.TaskResult == nil {
					t.Fatal("TaskResult is nil")
				}
				eq(t, "TaskResult", *r.TaskResult, TaskResult{AgentID: "a1b2c3", AgentType: "Explore", Status: "completed", TotalDurationMs: 12345})
				eq(t, "HasUsage (toolUseResult.usage is not message usage)", r.Message.HasUsage, false)
			},
		},
		{
			name: "assistant streamed line with thinking",
			line: `{"parentUuid":"u-1","isSidechain":false,"type":"assistant","uuid":"a-1","timestamp":"2026-05-14T18:47:56.001Z","requestId":"req_1","message":{"model":"claude-opus-4-5-20251101","id":"msg_01","type":"message","role":"assistant","content":[{"type":"thinking","thinking":"let me think about \"this\"","signature":"Eu8BCkYIBxgCKkB"}],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":10,"cache_creation_input_tokens":2000,"cache_read_input_tokens":30000,"cache_creation":{"ephemeral_5m_input_tokens":500,"ephemeral_1h_input_tokens":1500},"output_tokens":8,"service_tier":"standard"}}}`,
			check: func(t *testing.T, r *Record) {
				eq(t, "Kind", r.Kind, KindAssistant)
				eq(t, "RequestID", r.RequestID, "req_1")
				m := r.Message
				eq(t, "ID", m.ID, "msg_01")
				eq(t, "Model", m.Model, "claude-opus-4-5-20251101")
				eq(t, "StopReason (null)", m.StopReason, "")
				eq(t, "HasUsage", m.HasUsage, true)
				eq(t, "Usage", m.Usage, Usage{Input: 10, Output: 8, CacheRead: 30000, CacheCreation: 2000, Ephemeral5m: 500, Ephemeral1h: 1500, HasBreakdown: true})
				eq(t, "ThinkingBlocks", m.ThinkingBlocks, 1)
				eq(t, "Thinking (privacy by default)", m.Thinking, "")
				eq(t, "TextBlocks", m.TextBlocks, 0)
				eq(t, "TextHead", m.TextHead, "")
				eq(t, "IsSynthetic", r.IsSynthetic(), false)
			},
		},
		{
			name: "assistant streamed line with text",
			line: `{"type":"assistant","uuid":"a-2","parentUuid":"a-1","requestId":"req_1","message":{"model":"claude-opus-4-5-20251101","id":"msg_01","role":"assistant","content":[{"type":"text","text":"Here is the fix."}],"stop_reason":null,"usage":{"input_tokens":10,"cache_creation_input_tokens":2000,"cache_read_input_tokens":30000,"output_tokens":8}}}`,
			check: func(t *testing.T, r *Record) {
				m := r.Message
				eq(t, "ID", m.ID, "msg_01")
				eq(t, "TextBlocks", m.TextBlocks, 1)
				eq(t, "TextHead", m.TextHead, "Here is the fix.")
				eq(t, "ThinkingBlocks", m.ThinkingBlocks, 0)
				eq(t, "HasBreakdown (absent)", m.Usage.HasBreakdown, false)
				eq(t, "CacheWrite5m (no breakdown: all 5m)", m.Usage.CacheWrite5m(), int64(2000))
				eq(t, "Total", m.Usage.Total(), int64(32018))
			},
		},
		{
			name: "assistant streamed line with tool_use",
			line: `{"type":"assistant","uuid":"a-3","parentUuid":"a-2","requestId":"req_1","message":{"model":"claude-opus-4-5-20251101","id":"msg_01","role":"assistant","content":[{"type":"tool_use","id":"toolu_01Bash","name":"Bash","input":{"command":"go test ./...","description":"run tests","subagent_type":"ignored for Bash"},"caller":{"type":"direct"}}],"stop_reason":"tool_use","usage":{"input_tokens":10,"output_tokens":120}}}`,
			check: func(t *testing.T, r *Record) {
				m := r.Message
				eq(t, "StopReason", m.StopReason, "tool_use")
				if len(m.ToolUses) != 1 {
					t.Fatalf("ToolUses = %+v", m.ToolUses)
				}
				eq(t, "ToolUse", m.ToolUses[0], ToolUse{ID: "toolu_01Bash", Name: "Bash"})
				eq(t, "OtherBlocks", m.OtherBlocks, 0)
			},
		},
		{
			name: "progress with an embedded assistant envelope",
			line: `{"parentUuid":"p-0","isSidechain":false,"type":"progress","data":{"message":{"type":"assistant","message":{"model":"claude-haiku-4-5-20251001","id":"msg_sub","type":"message","role":"assistant","content":[{"type":"tool_use","id":"toolu_sub","name":"Read","input":{"file_path":"/x"}}],"stop_reason":"tool_use","usage":{"input_tokens":3,"cache_creation_input_tokens":100,"cache_read_input_tokens":2000,"output_tokens":40}},"requestId":"req_sub","uuid":"emb-a","timestamp":"2026-05-14T18:47:58.000Z"},"normalizedMessages":[],"type":"agent_progress","prompt":"Read the file","agentId":"a28c6c6"},"toolUseID":"agent_msg_014","parentToolUseID":"toolu_01Task","uuid":"p-1","timestamp":"2026-05-14T18:47:58.001Z"}`,
			check: func(t *testing.T, r *Record) {
				eq(t, "Kind", r.Kind, KindProgress)
				eq(t, "UUID", r.UUID, "p-1")
				eq(t, "ProgressAgentID", r.Rare().ProgressAgentID, "a28c6c6")
				eq(t, "ToolUseID", r.ToolUseID, "agent_msg_014")
				eq(t, "ParentToolUseID", r.ParentToolUseID, "toolu_01Task")
				eq(t, "HasMessage (outer)", r.HasMessage, false)
				if !r.HasEmbedded() {
					t.Fatal("HasEmbedded = false")
				}
				e := r.Embedded
				eq(t, "Embedded.Kind", e.Kind, KindAssistant)
				eq(t, "Embedded.UUID", e.UUID, "emb-a")
				eq(t, "Embedded.RequestID", e.RequestID, "req_sub")
				eq(t, "Embedded.Timestamp", e.Timestamp, mustTime(t, "2026-05-14T18:47:58Z"))
				eq(t, "Embedded.Message.ID", e.Message.ID, "msg_sub")
				eq(t, "Embedded.Message.Model", e.Message.Model, "claude-haiku-4-5-20251001")
				eq(t, "Embedded.Message.Usage", e.Message.Usage, Usage{Input: 3, Output: 40, CacheRead: 2000, CacheCreation: 100})
				if len(e.Message.ToolUses) != 1 || e.Message.ToolUses[0].ID != "toolu_sub" {
					t.Errorf("Embedded ToolUses = %+v", e.Message.ToolUses)
				}
			},
		},
		{
			name: "progress with an embedded user envelope",
			line: `{"type":"progress","data":{"message":{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_sub","content":"file text","is_error":true}]},"uuid":"emb-u","timestamp":"2026-05-14T18:47:59.000Z"},"type":"agent_progress","agentId":"a28c6c6"},"parentToolUseID":"toolu_01Task","uuid":"p-2"}`,
			check: func(t *testing.T, r *Record) {
				if !r.HasEmbedded() {
					t.Fatal("HasEmbedded = false")
				}
				e := r.Embedded
				eq(t, "Embedded.Kind", e.Kind, KindUser)
				eq(t, "Embedded.UUID", e.UUID, "emb-u")
				if len(e.Message.ToolResults) != 1 || e.Message.ToolResults[0] != (ToolResult{ToolUseID: "toolu_sub", IsError: true}) {
					t.Errorf("Embedded ToolResults = %+v", e.Message.ToolResults)
				}
				eq(t, "outer ToolResults", len(r.Message.ToolResults), 0)
			},
		},
		{
			name: "progress without a message has no embedded record",
			line: `{"type":"progress","data":{"type":"bash_progress","output":"building\n","fullOutput":"building\n","elapsedTimeSeconds":3,"totalLines":1},"toolUseID":"bash-progress-0","parentToolUseID":"toolu_bash","uuid":"p-3"}`,
			check: func(t *testing.T, r *Record) {
				eq(t, "ProgressAgentID", r.Rare().ProgressAgentID, "")
				eq(t, "HasEmbedded", r.HasEmbedded(), false)
				eq(t, "ParentToolUseID", r.ParentToolUseID, "toolu_bash")
			},
		},
		{
			name: "system compact_boundary with compactMetadata",
			line: `{"parentUuid":null,"logicalParentUuid":"e6f9","isSidechain":false,"type":"system","subtype":"compact_boundary","content":"Conversation compacted","isMeta":false,"timestamp":"2026-05-06T00:49:58.710Z","uuid":"cb-1","level":"info","compactMetadata":{"trigger":"auto","preTokens":173429,"postTokens":7850,"durationMs":135906},"userType":"external","entrypoint":"cli","cwd":"X:\\03_ACG","sessionId":"s-2","version":"2.1.128","gitBranch":"dev","slug":"linear-dancing-wozniak"}`,
			check: func(t *testing.T, r *Record) {
				eq(t, "Kind", r.Kind, KindSystem)
				eq(t, "Subtype", r.Rare().Subtype, "compact_boundary")
				eq(t, "CompactTrigger", r.Rare().CompactTrigger, "auto")
				eq(t, "CompactPreTokens", r.Rare().CompactPreTokens, int64(173429))
				eq(t, "DurationMs (metadata durationMs is not the record's)", r.Rare().DurationMs, int64(0))
				eq(t, "Level", r.Rare().Level, "info")
				eq(t, "Cwd (escaped backslash)", r.Cwd, `X:\03_ACG`)
				eq(t, "Slug", r.Slug, "linear-dancing-wozniak")
				eq(t, "UnknownFields", r.UnknownFields, 0)
			},
		},
		{
			name: "system microcompact_boundary with microcompactMetadata",
			line: `{"parentUuid":"342e","isSidechain":false,"type":"system","subtype":"microcompact_boundary","content":"Context microcompacted","isMeta":false,"timestamp":"2026-05-14T19:49:51.326Z","uuid":"mc-1","level":"info","microcompactMetadata":{"trigger":"manual","preTokens":22189,"tokensSaved":2000,"compactedToolIds":["t1","t2"],"clearedAttachmentUUIDs":[]}}`,
			check: func(t *testing.T, r *Record) {
				eq(t, "Subtype", r.Rare().Subtype, "microcompact_boundary")
				eq(t, "CompactTrigger", r.Rare().CompactTrigger, "manual")
				eq(t, "CompactPreTokens", r.Rare().CompactPreTokens, int64(22189))
			},
		},
		{
			name: "system api_error whose error is an object",
			line: `{"parentUuid":"f2a7","isSidechain":false,"userType":"external","type":"system","subtype":"api_error","level":"error","error":{"status":529,"headers":{},"error":{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}},"retryInMs":602.1275093184647,"retryAttempt":1,"maxRetries":10,"timestamp":"2026-05-08T21:02:39.816Z","uuid":"ae65"}`,
			check: func(t *testing.T, r *Record) {
				eq(t, "Kind", r.Kind, KindSystem)
				eq(t, "Subtype", r.Rare().Subtype, "api_error")
				eq(t, "Level", r.Rare().Level, "error")
				eq(t, "Error (object is not a string)", r.Rare().Error, "")
				eq(t, "UUID (after the error object)", r.UUID, "ae65")
				eq(t, "UnknownFields", r.UnknownFields, 0)
			},
		},
		{
			name: "system turn_duration reads durationMs",
			line: `{"type":"system","subtype":"turn_duration","durationMs":45678,"isMeta":false,"uuid":"td-1"}`,
			check: func(t *testing.T, r *Record) {
				eq(t, "DurationMs", r.Rare().DurationMs, int64(45678))
			},
		},
		{
			name: "synthetic assistant rate_limit line",
			line: `{"parentUuid":"33ae","isSidechain":false,"type":"assistant","uuid":"syn-1","timestamp":"2026-04-27T19:35:29.545Z","message":{"id":"c31d1760","container":null,"model":"<synthetic>","role":"assistant","stop_reason":"stop_sequence","stop_sequence":"","type":"message","usage":{"input_tokens":0,"output_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"server_tool_use":{"web_search_requests":0},"service_tier":null,"cache_creation":{"ephemeral_1h_input_tokens":0,"ephemeral_5m_input_tokens":0}},"content":[{"type":"text","text":"You've hit your limit · resets 3:40pm (America/Ciudad_Juarez)"}],"context_management":null},"error":"rate_limit","isApiErrorMessage":true,"apiErrorStatus":429,"userType":"external","entrypoint":"cli"}`,
			check: func(t *testing.T, r *Record) {
				eq(t, "IsSynthetic", r.IsSynthetic(), true)
				eq(t, "Model", r.Message.Model, SyntheticModel)
				eq(t, "Error", r.Rare().Error, "rate_limit")
				eq(t, "IsAPIErrorMessage", r.IsAPIErrorMessage, true)
				eq(t, "APIErrorStatus", r.Rare().APIErrorStatus, int64(429))
				eq(t, "StopReason", r.Message.StopReason, "stop_sequence")
				eq(t, "TextHead", r.Message.TextHead, "You've hit your limit · resets 3:40pm (America/Ciudad_Juarez)")
				eq(t, "HasBreakdown", r.Message.Usage.HasBreakdown, true)
				eq(t, "Total", r.Message.Usage.Total(), int64(0))
				eq(t, "UnknownFields", r.UnknownFields, 0)
			},
		},
		{
			name: "summary keeps leafUuid, not the summary text",
			line: `{"type":"summary","summary":"Fixing the flaky test","leafUuid":"leaf-1"}`,
			check: func(t *testing.T, r *Record) {
				eq(t, "Kind", r.Kind, KindSummary)
				eq(t, "Title", r.Rare().Title, "")
				eq(t, "UnknownFields", r.UnknownFields, 0)
			},
		},
		{
			name: "custom-title keeps the title",
			line: `{"type":"custom-title","customTitle":"Personal relationship tracking system","sessionId":"a683"}`,
			check: func(t *testing.T, r *Record) {
				eq(t, "Kind", r.Kind, KindCustomTitle)
				eq(t, "Title", r.Rare().Title, "Personal relationship tracking system")
				eq(t, "SessionID", r.SessionID, "a683")
			},
		},
		{
			name: "ai-title and agent-name fill Title",
			line: `{"type":"ai-title","aiTitle":"Refactor \u00e9l parser","sessionId":"s"}`,
			check: func(t *testing.T, r *Record) {
				eq(t, "Kind", r.Kind, KindAITitle)
				eq(t, "Title", r.Rare().Title, "Refactor él parser")
			},
		},
		{
			name: "file-history-snapshot with a huge snapshot is skipped",
			line: snapshotLine(2 << 20),
			check: func(t *testing.T, r *Record) {
				eq(t, "Kind", r.Kind, KindFileHistorySnapshot)
				eq(t, "Type", r.Type, "file-history-snapshot")
				eq(t, "UnknownFields", r.UnknownFields, 0)
				eq(t, "HasMessage", r.HasMessage, false)
				eq(t, "UUID", r.UUID, "")
				eq(t, "Timestamp (the snapshot's own is nested)", r.Timestamp.IsZero(), true)
			},
		},
		{
			name: "queue-operation",
			line: `{"type":"queue-operation","operation":"enqueue","timestamp":"2026-04-27T16:51:27.837Z","sessionId":"a8b4","content":"<task-notification>\n<task-id>bjhhgf62x</task-id>\n<tool-use-id>toolu_01HK8n4o3RcuzgR4YCeFbX8X</tool-use-id>\n<status>completed</status>\n</task-notification>"}`,
			check: func(t *testing.T, r *Record) {
				eq(t, "Kind", r.Kind, KindQueueOperation)
				eq(t, "SessionID", r.SessionID, "a8b4")
				eq(t, "Timestamp", r.Timestamp, mustTime(t, "2026-04-27T16:51:27.837Z"))
				eq(t, "UnknownFields", r.UnknownFields, 0)
			},
		},
		{
			name: "unknown type is kept by name",
			line: `{"type":"brand-new-record","uuid":"n-1","sessionId":"s","payload":{"a":[1,2,3]}}`,
			check: func(t *testing.T, r *Record) {
				eq(t, "Kind", r.Kind, KindOther)
				eq(t, "Known", r.Kind.Known(), false)
				eq(t, "Type", r.Type, "brand-new-record")
				eq(t, "UUID", r.UUID, "n-1")
				eq(t, "UnknownFields", r.UnknownFields, 1)
			},
		},
		{
			name: "unknown top-level fields are counted, known skipped ones are not",
			line: `{"type":"user","userType":"external","entrypoint":"cli","permissionMode":"default","newField":1,"another":{"nested":["x"]},"third":null,"uuid":"u-9","message":{"role":"user","content":"hi","unknownInMessage":true}}`,
			check: func(t *testing.T, r *Record) {
				eq(t, "UnknownFields", r.UnknownFields, 3)
				eq(t, "UUID", r.UUID, "u-9")
				eq(t, "TextHead", r.Message.TextHead, "hi")
			},
		},
		{
			name: "CRLF line ending is white space",
			line: "{\"type\":\"user\",\"uuid\":\"crlf\"}\r",
			check: func(t *testing.T, r *Record) {
				eq(t, "UUID", r.UUID, "crlf")
			},
		},
	})
}

// snapshotLine builds a file-history-snapshot line of at least n bytes,
// shaped like real ones: many tracked files, each a small object.
func snapshotLine(n int) string {
	var sb strings.Builder
	sb.Grow(n + 512)
	sb.WriteString(`{"type":"file-history-snapshot","messageId":"43ca1dc3-94bc-49c9-9181-e2b730a94469","snapshot":{"messageId":"d914f0cb-d37f-492a-95d7-a5eeeb4d1ea1","trackedFileBackups":{`)
	for i := 0; sb.Len() < n; i++ {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(`"database\\migrations\\2026_04_27_180002_create_frameworks_tables_`)
		sb.WriteString(strings.Repeat("x", i%7))
		sb.WriteString(itoa(i))
		sb.WriteString(`.php":{"backupFileName":"d0abb736210965e4@v2","version":2,"backupTime":"2026-04-27T18:01:28.452Z"}`)
	}
	sb.WriteString(`},"timestamp":"2026-04-27T18:01:28.452Z"},"isSnapshotUpdate":false}`)
	return sb.String()
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b [20]byte
	n := len(b)
	for i > 0 {
		n--
		b[n] = byte('0' + i%10)
		i /= 10
	}
	return string(b[n:])
}

func TestDecodeEveryKnownType(t *testing.T) {
	kinds := map[string]Kind{
		"user": KindUser, "assistant": KindAssistant, "system": KindSystem, "progress": KindProgress,
		"summary": KindSummary, "file-history-snapshot": KindFileHistorySnapshot, "queue-operation": KindQueueOperation,
		"custom-title": KindCustomTitle, "attachment": KindAttachment, "permission-mode": KindPermissionMode,
		"last-prompt": KindLastPrompt, "ai-title": KindAITitle, "agent-name": KindAgentName, "mode": KindMode,
		"started": KindStarted, "result": KindResult, "pr-link": KindPRLink, "User": KindOther, "": KindOther,
		"atis-latch": KindNotCounted, "bridge-session": KindNotCounted, "file-history-delta": KindNotCounted,
		"fork-context-ref": KindNotCounted, "frame-link": KindNotCounted, "agent-setting": KindNotCounted,
	}
	dec := NewDecoder(Options{})
	var r Record
	for typ, want := range kinds {
		if err := dec.Decode([]byte(`{"type":"`+typ+`"}`), &r); err != nil {
			t.Fatalf("%q: %v", typ, err)
		}
		if r.Kind != want || r.Type != typ || r.Kind.Known() != (want != KindOther) {
			t.Errorf("type %q: Kind=%v Type=%q, want Kind=%v", typ, r.Kind, r.Type, want)
		}
	}
	// A missing or non-string type is an unknown kind with no name.
	for _, line := range []string{`{}`, `{"type":null}`, `{"type":7}`, `{"type":{"x":"user"}}`} {
		if err := dec.Decode([]byte(line), &r); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		if r.Kind != KindOther || r.Type != "" {
			t.Errorf("%s: Kind=%v Type=%q", line, r.Kind, r.Type)
		}
	}
}

func TestDecodeTaskInputInEitherKeyOrder(t *testing.T) {
	cases := []struct {
		name, block, wantName, wantType, wantDesc string
	}{
		{"Task, subagent_type before description", `{"type":"tool_use","id":"toolu_1","name":"Task","input":{"subagent_type":"Explore","description":"Find the parser","prompt":"long prompt"}}`, "Task", "Explore", "Find the parser"},
		{"Agent, description before subagent_type", `{"type":"tool_use","id":"toolu_1","name":"Agent","input":{"description":"Build views","prompt":"You are building \"views\"","subagent_type":"general-purpose"}}`, "Agent", "general-purpose", "Build views"},
		{"input before name and type", `{"input":{"prompt":"p","description":"Late name","subagent_type":"Plan"},"id":"toolu_1","name":"Task","type":"tool_use"}`, "Task", "Plan", "Late name"},
		{"escaped description", `{"type":"tool_use","id":"toolu_1","name":"Task","input":{"description":"Fix \"quoted\" caf\u00e9","subagent_type":"x\\y"}}`, "Task", `x\y`, `Fix "quoted" café`},
		{"missing subagent_type", `{"type":"tool_use","id":"toolu_1","name":"Task","input":{"description":"only desc"}}`, "Task", "", "only desc"},
		{"non-string fields are ignored", `{"type":"tool_use","id":"toolu_1","name":"Agent","input":{"description":{"a":1},"subagent_type":null}}`, "Agent", "", ""},
		{"other tools keep no subagent fields", `{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"description":"ls","subagent_type":"Explore"}}`, "Bash", "", ""},
		{"input that is not an object", `{"type":"tool_use","id":"toolu_1","name":"Task","input":"oops"}`, "Task", "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := decodeOK(t, Options{}, `{"type":"assistant","message":{"id":"m","content":[`+tc.block+`]}}`)
			if len(r.Message.ToolUses) != 1 {
				t.Fatalf("ToolUses = %+v", r.Message.ToolUses)
			}
			eq(t, "ToolUse", r.Message.ToolUses[0], ToolUse{ID: "toolu_1", Name: tc.wantName, SubagentType: tc.wantType, Description: tc.wantDesc})
		})
	}
	t.Run("run_in_background", func(t *testing.T) {
		for block, want := range map[string]bool{
			`{"type":"tool_use","id":"t","name":"Agent","input":{"run_in_background":true,"subagent_type":"Explore"}}`: true,
			`{"type":"tool_use","id":"t","name":"Task","input":{"subagent_type":"Explore","run_in_background":false}}`: false,
			`{"type":"tool_use","id":"t","name":"Task","input":{"run_in_background":"true"}}`:                          false,
			`{"type":"tool_use","id":"t","name":"Bash","input":{"run_in_background":true}}`:                            false,
		} {
			r := decodeOK(t, Options{}, `{"type":"assistant","message":{"content":[`+block+`]}}`)
			eq(t, block, r.Message.ToolUses[0].Background, want)
		}
	})
	t.Run("long description is cut at 256 bytes on a rune boundary", func(t *testing.T) {
		desc := strings.Repeat("a", 255) + "éé"
		r := decodeOK(t, Options{}, `{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t","name":"Task","input":{"description":"`+desc+`"}}]}}`)
		eq(t, "Description", r.Message.ToolUses[0].Description, strings.Repeat("a", 255))
	})
}

func TestDecodeNumbers(t *testing.T) {
	cases := []struct {
		name string
		val  string
		want int64
		// usage is what the token counts read: they take only whole
		// numbers from 0 to MaxUsageTokens, and are all zero otherwise
		// (TestDecodeNumbersWithExponentsAndBigIntegers has the rule).
		usage int64
	}{
		{"integer", `1234`, 1234, 1234},
		{"zero", `0`, 0, 0},
		{"negative", `-42`, -42, 0},
		{"fraction is truncated", `12.9`, 12, 0},
		{"negative fraction is truncated toward zero", `-12.9`, -12, 0},
		{"null is zero", `null`, 0, 0},
		{"string is zero", `"77"`, 0, 0},
		{"bool is zero", `true`, 0, 0},
		{"object is zero", `{"n":5}`, 0, 0},
		{"18-digit integer", `461168601842738790`, 461168601842738790, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			line := `{"type":"assistant","apiErrorStatus":` + tc.val + `,"durationMs":` + tc.val + `,"compactMetadata":{"preTokens":` + tc.val + `},"message":{"usage":{"input_tokens":` + tc.val + `,"output_tokens":` + tc.val + `,"cache_read_input_tokens":` + tc.val + `,"cache_creation_input_tokens":` + tc.val + `,"cache_creation":{"ephemeral_5m_input_tokens":` + tc.val + `,"ephemeral_1h_input_tokens":` + tc.val + `}}},"uuid":"after"}`
			r := decodeOK(t, Options{}, line)
			u := r.Message.Usage
			for name, got := range map[string]int64{"Input": u.Input, "Output": u.Output, "CacheRead": u.CacheRead, "CacheCreation": u.CacheCreation, "Ephemeral5m": u.Ephemeral5m, "Ephemeral1h": u.Ephemeral1h} {
				eq(t, name, got, tc.usage)
			}
			for name, got := range map[string]int64{"APIErrorStatus": r.Rare().APIErrorStatus, "DurationMs": r.Rare().DurationMs, "CompactPreTokens": r.Rare().CompactPreTokens} {
				eq(t, name, got, tc.want)
			}
			eq(t, "UUID after the numbers", r.UUID, "after")
		})
	}
}

// TestDecodeNumbers: readInt ignores exponents (1e3 reads as 1,
// 1.7e12 epoch milliseconds as 1) and stops accumulating digits once the
// value reaches (1<<62)/10, so integers from about 4.6e18 up (valid int64
// up to 9.2e18) lose their trailing digits: 5000000000000000000 reads as
// 500000000000000000, and larger numbers do not saturate.
func TestDecodeNumbersWithExponentsAndBigIntegers(t *testing.T) {
	cases := []struct {
		name    string
		val     string
		want    int64
		problem UsageProblem
	}{
		{"exponent", `1e3`, 1000, ""},
		{"exponent with fraction", `1.5E+3`, 1500, ""},
		{"whole number with a fraction part", `12.0`, 12, ""},
		{"minus zero", `-0`, 0, ""},
		{"null", `null`, 0, ""},
		{"the cap", `100000000`, MaxUsageTokens, ""},
		{"over the cap", `100000001`, 0, UsageTooLarge},
		{"large int64", `5000000000000000000`, 0, UsageTooLarge},
		{"beyond int64", `99999999999999999999`, 0, UsageTooLarge},
		{"huge float", `1e308`, 0, UsageTooLarge},
		{"negative", `-40`, 0, UsageNegative},
		{"fraction", `1.5`, 0, UsageNotInteger},
		{"string", `"12"`, 0, UsageNotInteger},
		{"bool", `true`, 0, UsageNotInteger},
		{"object", `{"n":1}`, 0, UsageNotInteger},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := decodeOK(t, Options{}, `{"type":"assistant","message":{"usage":{"output_tokens":7,"input_tokens":`+tc.val+`,"cache_creation":{"ephemeral_1h_input_tokens":3}}}}`)
			eq(t, "Input", r.Message.Usage.Input, tc.want)
			eq(t, "Problem", r.Message.Usage.Problem, tc.problem)
			if tc.problem != "" && r.Message.Usage != (Usage{Problem: tc.problem}) {
				t.Errorf("a rejected usage still counts: %+v", r.Message.Usage)
			}
			if tc.problem == "" && (r.Message.Usage.Output != 7 || r.Message.Usage.Ephemeral1h != 3) {
				t.Errorf("a valid usage lost its other counts: %+v", r.Message.Usage)
			}
		})
	}
	t.Run("epoch milliseconds with exponent", func(t *testing.T) {
		r := decodeOK(t, Options{}, `{"type":"user","timestamp":1.7e12}`)
		eq(t, "Timestamp", r.Timestamp, time.UnixMilli(1_700_000_000_000).UTC())
	})
}

func TestDecodeStringEscapes(t *testing.T) {
	runCases(t, Options{}, []decodeCase{
		{
			name: "escaped quote and backslash in model",
			line: `{"type":"assistant","message":{"model":"claude-\"q\"-\\x","id":"msg_\u00e9"}}`,
			check: func(t *testing.T, r *Record) {
				eq(t, "Model", r.Message.Model, `claude-"q"-\x`)
				eq(t, "ID", r.Message.ID, "msg_é")
			},
		},
		{
			name: "unicode escape and surrogate pair in model",
			line: `{"type":"assistant","message":{"model":"mod\u00e9l-\ud83d\ude00","id":"m"}}`,
			check: func(t *testing.T, r *Record) {
				eq(t, "Model", r.Message.Model, "modél-😀")
			},
		},
		{
			name: "lone surrogate becomes U+FFFD like encoding/json",
			line: `{"type":"assistant","message":{"model":"a\ud83db","id":"\ude00\u0041"}}`,
			check: func(t *testing.T, r *Record) {
				eq(t, "Model", r.Message.Model, "a\uFFFDb")
				eq(t, "ID", r.Message.ID, "\uFFFDA")
			},
		},
		{
			name: "escaped quote right before the closing quote",
			line: `{"uuid":"ends with \"","type":"user","parentUuid":"p\"","message":{"content":"say \"hi\""}}`,
			check: func(t *testing.T, r *Record) {
				eq(t, "UUID", r.UUID, `ends with "`)
				eq(t, "ParentUUID", r.ParentUUID, `p"`)
				eq(t, "Type", r.Type, "user")
				eq(t, "TextHead", r.Message.TextHead, `say "hi"`)
			},
		},
		{
			name: "backslash runs before the closing quote",
			line: `{"uuid":"a\\","parentUuid":"b\\\\","sessionId":"c\\\"","type":"user","message":{"content":"C:\\\\"}}`,
			check: func(t *testing.T, r *Record) {
				eq(t, "UUID (one escaped backslash)", r.UUID, `a\`)
				eq(t, "ParentUUID (two escaped backslashes)", r.ParentUUID, `b\\`)
				eq(t, "SessionID (escaped backslash then escaped quote)", r.SessionID, `c\"`)
				eq(t, "Type", r.Type, "user")
				eq(t, "TextHead", r.Message.TextHead, `C:\\`)
			},
		},
		{
			name: "control escapes in text head",
			line: `{"type":"user","message":{"content":[{"type":"text","text":"line1\nline2\ttab\r\b\f\/slash"}]}}`,
			check: func(t *testing.T, r *Record) {
				eq(t, "TextHead", r.Message.TextHead, "line1\nline2\ttab\r\b\f/slash")
			},
		},
		{
			name: "escaped tool ids and names",
			line: `{"type":"assistant","message":{"content":[{"type":"tool_use","id":"toolu_\"x\\","name":"mcp__srv__t\u00f6ol","input":{}}]}}`,
			check: func(t *testing.T, r *Record) {
				eq(t, "ToolUse", r.Message.ToolUses[0], ToolUse{ID: `toolu_"x\`, Name: "mcp__srv__töol"})
			},
		},
		{
			name: "escaped tool_use_id",
			line: `{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"toolu_\u0041\\\"","is_error":true}]}}`,
			check: func(t *testing.T, r *Record) {
				eq(t, "ToolResult", r.Message.ToolResults[0], ToolResult{ToolUseID: `toolu_A\"`, IsError: true})
			},
		},
		{
			name: "escaped interned fields",
			line: `{"type":"user","cwd":"C:\\Users\\\u00e9","version":"2.\u0031","gitBranch":"feat/\"x\"","sessionId":"s\\1","slug":"a\/b"}`,
			check: func(t *testing.T, r *Record) {
				eq(t, "Cwd", r.Cwd, `C:\Users\é`)
				eq(t, "Version", r.Version, "2.1")
				eq(t, "GitBranch", r.GitBranch, `feat/"x"`)
				eq(t, "SessionID", r.SessionID, `s\1`)
				eq(t, "Slug", r.Slug, "a/b")
			},
		},
		{
			name: "raw non-ASCII text is kept as is",
			line: `{"type":"user","message":{"content":"日本語のテキスト 😀"}}`,
			check: func(t *testing.T, r *Record) {
				eq(t, "TextHead", r.Message.TextHead, "日本語のテキスト 😀")
			},
		},
	})
}

// TestDecodeEscapedType: the type value (and keys, and block
// types) are compared before unescaping, so "us\u0065r" gets Type "user"
// but Kind KindOther; encoding/json treats it as "user".
func TestDecodeEscapedType(t *testing.T) {
	r := decodeOK(t, Options{}, `{"type":"us\u0065r","\u0075uid":"u","message":{"content":[{"type":"t\u0065xt","text":"hi"}]}}`)
	eq(t, "Type", r.Type, "user")
	eq(t, "Kind", r.Kind, KindUser)
	eq(t, "UUID (escaped key)", r.UUID, "u")
	eq(t, "TextBlocks (escaped block type)", r.Message.TextBlocks, 1)
	eq(t, "TextHead", r.Message.TextHead, "hi")
}

func TestDecodeTextHead(t *testing.T) {
	a := func(n int) string { return strings.Repeat("a", n) }
	cases := []struct {
		name, jsonText string
		wantHead       string
		wantCut        bool
	}{
		{"short", `short`, "short", false},
		{"exactly TextHeadMax", a(TextHeadMax), a(TextHeadMax), false},
		{"one byte over", a(TextHeadMax + 1), a(TextHeadMax), true},
		{"two-byte rune straddling the cut", a(TextHeadMax-1) + "é", a(TextHeadMax - 1), true},
		{"two-byte rune ending exactly at the cut", a(TextHeadMax-2) + "é", a(TextHeadMax-2) + "é", false},
		{"four-byte rune straddling the cut", a(TextHeadMax-3) + "😀", a(TextHeadMax - 3), true},
		{"escaped rune straddling the cut", a(TextHeadMax-1) + `\u00e9`, a(TextHeadMax - 1), true},
		{"escaped rune ending exactly at the cut", a(TextHeadMax-2) + `\u00e9`, a(TextHeadMax-2) + "é", false},
		{"escaped surrogate pair straddling the cut", a(TextHeadMax-2) + `\ud83d\ude00`, a(TextHeadMax - 2), true},
		{"escaped surrogate pair ending exactly at the cut", a(TextHeadMax-4) + `\ud83d\ude00`, a(TextHeadMax-4) + "😀", false},
		{"escapes shrink a long raw string to fit", strings.Repeat(`\"`, TextHeadMax), strings.Repeat(`"`, TextHeadMax), false},
		{"escapes shrink but one too many", strings.Repeat(`\"`, TextHeadMax+1), strings.Repeat(`"`, TextHeadMax), true},
		{"escape just past the cut", a(TextHeadMax) + `\n`, a(TextHeadMax), true},
		{"escape at the cut", a(TextHeadMax-1) + `\n` + "b", a(TextHeadMax-1) + "\n", true},
		{"long multibyte text", strings.Repeat("日", 100), strings.Repeat("日", TextHeadMax/3), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, line := range []string{
				`{"type":"user","message":{"content":"` + tc.jsonText + `"}}`,
				`{"type":"user","message":{"content":[{"type":"text","text":"` + tc.jsonText + `"},{"type":"text","text":"second"}]}}`,
			} {
				r := decodeOK(t, Options{}, line)
				eq(t, "TextHead", r.Message.TextHead, tc.wantHead)
				eq(t, "TextHeadCut", r.Message.TextHeadCut, tc.wantCut)
				if len(r.Message.TextHead) > TextHeadMax || !utf8.ValidString(r.Message.TextHead) {
					t.Errorf("TextHead is not a valid cut: %q", r.Message.TextHead)
				}
				eq(t, "FirstTextIs(head)", r.Message.FirstTextIs(tc.wantHead), !tc.wantCut)
			}
		})
	}
}

func TestDecodeFirstTextIsWarmup(t *testing.T) {
	cases := []struct {
		name    string
		content string
		want    bool
	}{
		{"string Warmup", `"Warmup"`, true},
		{"text block Warmup", `[{"type":"text","text":"Warmup"}]`, true},
		{"Warmup then more blocks", `[{"type":"text","text":"Warmup"},{"type":"text","text":"more"}]`, true},
		{"escaped Warmup", `"W\u0061rmup"`, true},
		{"Warmup with trailing space", `"Warmup "`, false},
		{"Warmup with newline", `"Warmup\n"`, false},
		{"lower case", `"warmup"`, false},
		{"prefix only", `"Warm"`, false},
		{"Warmup as second text", `[{"type":"text","text":"hi"},{"type":"text","text":"Warmup"}]`, false},
		{"Warmup after a tool result", `[{"type":"tool_result","tool_use_id":"t","content":"x"},{"type":"text","text":"Warmup"}]`, true},
		{"long text starting with Warmup", `"Warmup` + strings.Repeat("!", TextHeadMax) + `"`, false},
		{"no content", `null`, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := decodeOK(t, Options{}, `{"type":"user","isSidechain":true,"message":{"role":"user","content":`+tc.content+`}}`)
			eq(t, "FirstTextIs(Warmup)", r.Message.FirstTextIs("Warmup"), tc.want)
		})
	}
	t.Run("a text of exactly TextHeadMax bytes is exact, one more is not", func(t *testing.T) {
		s := strings.Repeat("w", TextHeadMax)
		r := decodeOK(t, Options{}, `{"type":"user","message":{"content":"`+s+`"}}`)
		eq(t, "FirstTextIs(96 bytes)", r.Message.FirstTextIs(s), true)
		r = decodeOK(t, Options{}, `{"type":"user","message":{"content":"`+s+`w"}}`)
		eq(t, "FirstTextIs(prefix of 97 bytes)", r.Message.FirstTextIs(s), false)
	})
}

func TestDecodeTimestamps(t *testing.T) {
	cases := []struct {
		name    string
		val     string
		want    time.Time
		wantRaw string
	}{
		{"fast form", `"2026-05-14T18:47:54.379Z"`, time.Date(2026, 5, 14, 18, 47, 54, 379e6, time.UTC), ""},
		{"positive offset", `"2026-05-14T20:47:54.379+02:00"`, time.Date(2026, 5, 14, 18, 47, 54, 379e6, time.UTC), ""},
		{"negative offset", `"2026-05-14T13:47:54.379-05:00"`, time.Date(2026, 5, 14, 18, 47, 54, 379e6, time.UTC), ""},
		{"no fraction", `"2026-05-14T18:47:54Z"`, time.Date(2026, 5, 14, 18, 47, 54, 0, time.UTC), ""},
		{"microseconds", `"2026-05-14T18:47:54.379123Z"`, time.Date(2026, 5, 14, 18, 47, 54, 379123000, time.UTC), ""},
		{"nanoseconds", `"2026-05-14T18:47:54.379123456Z"`, time.Date(2026, 5, 14, 18, 47, 54, 379123456, time.UTC), ""},
		{"leap day", `"2024-02-29T00:00:00.000Z"`, time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC), ""},
		{"epoch milliseconds", `1778784474379`, time.UnixMilli(1778784474379).UTC(), ""},
		{"epoch milliseconds with fraction", `1778784474379.6`, time.UnixMilli(1778784474379).UTC(), ""},
		{"unparsable text", `"yesterday at noon"`, time.Time{}, "yesterday at noon"},
		{"date only", `"2026-05-14"`, time.Time{}, "2026-05-14"},
		{"month 13", `"2026-13-14T18:47:54.379Z"`, time.Time{}, "2026-13-14T18:47:54.379Z"},
		{"hour 24", `"2026-05-14T24:47:54.379Z"`, time.Time{}, "2026-05-14T24:47:54.379Z"},
		{"fast-form shape with letters", `"2026-0x-14T18:47:54.379Z"`, time.Time{}, "2026-0x-14T18:47:54.379Z"},
		{"escaped unparsable text", `"not \"a\" time"`, time.Time{}, `not "a" time`},
		{"long unparsable text is cut at 64", `"` + strings.Repeat("t", 100) + `"`, time.Time{}, strings.Repeat("t", 64)},
		{"empty string", `""`, time.Time{}, ""},
		{"null", `null`, time.Time{}, ""},
		{"zero epoch", `0`, time.Time{}, ""},
		{"object", `{"t":1}`, time.Time{}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := decodeOK(t, Options{}, `{"type":"user","timestamp":`+tc.val+`,"uuid":"after"}`)
			if !r.Timestamp.Equal(tc.want) || r.Timestamp.Location() != time.UTC {
				t.Errorf("Timestamp = %v (%v), want %v UTC", r.Timestamp, r.Timestamp.Location(), tc.want)
			}
			eq(t, "TimestampRaw", r.Rare().TimestampRaw, tc.wantRaw)
			eq(t, "UUID", r.UUID, "after")
		})
	}
	t.Run("fast and slow path agree", func(t *testing.T) {
		// One decoder for all, as a worker reads a file: the fast path
		// keeps the last date it validated, so a date that follows a valid
		// one of the same month, and one that follows itself, are both
		// here, invalid ones included.
		d := NewDecoder(Options{})
		seq := []string{"2026-01-01T00:00:00.000Z", "2026-01-01T00:00:00.001Z", "1999-12-31T23:59:59.999Z",
			"2026-05-14T18:47:54.379Z", "2026-05-14T18:47:54.380Z", "2026-05-14T24:00:00.000Z",
			"2025-02-28T12:00:00.000Z", "2025-02-29T12:00:00.000Z", "2025-02-29T12:00:00.000Z",
			"2024-02-29T12:00:00.000Z", "2024-02-29T23:59:60.000Z", "2026-05-14T18:60:54.379Z",
			"2026-05-14T18:47:54.37xZ", "2026-04-31T00:00:00.000Z", "0000-01-01T00:00:00.000Z",
			"9999-12-31T23:59:59.999Z", "1969-12-31T23:59:59.999Z", "1969-12-31T23:59:59.999Z"}
		rng := rand.New(rand.NewPCG(25, 12))
		for range 20000 {
			// Random fields, now and then out of range.
			seq = append(seq, fmt.Sprintf("%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", 1960+rng.IntN(150), 1+rng.IntN(13),
				1+rng.IntN(31), rng.IntN(25), rng.IntN(61), rng.IntN(61), rng.IntN(1000)))
			if rng.IntN(3) == 0 { // the same day again
				seq = append(seq, seq[len(seq)-1][:11]+fmt.Sprintf("%02d:%02d:%02d.%03dZ", rng.IntN(24), rng.IntN(60), rng.IntN(60), rng.IntN(1000)))
			}
		}
		for _, s := range seq {
			fast, ok := d.parseTime([]byte(s))
			slow, err := time.Parse(time.RFC3339Nano, s)
			if ok != (err == nil) || ok && (!fast.Equal(slow) || fast.Location() != time.UTC) {
				t.Fatalf("%s: parseTime %v %v, time.Parse %v %v", s, fast, ok, slow, err)
			}
		}
	})
}

// TestDecodeRepeatedTimestampKeepsTheLast: a line with two timestamp keys
// is read as encoding/json reads it, the last value wins, so a record never
// carries both a parsed time and unparsable text.
func TestDecodeRepeatedTimestampKeepsTheLast(t *testing.T) {
	good := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		name, vals string
		want       time.Time
		wantRaw    string
	}{
		{"parsed then unparsable", `"2026-01-01T00:00:00.000Z","timestamp":"later"`, time.Time{}, "later"},
		{"unparsable then parsed", `"earlier","timestamp":"2026-01-01T00:00:00.000Z"`, good, ""},
		{"unparsable then epoch", `"earlier","timestamp":1767225600000`, good, ""},
		{"parsed then null keeps parsed", `"2026-01-01T00:00:00.000Z","timestamp":null`, good, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := decodeOK(t, Options{}, `{"type":"user","timestamp":`+tc.vals+`}`)
			if !r.Timestamp.Equal(tc.want) {
				t.Errorf("Timestamp = %v, want %v", r.Timestamp, tc.want)
			}
			eq(t, "TimestampRaw", r.Rare().TimestampRaw, tc.wantRaw)
		})
	}
}

// TestDecodeTimestampImpossibleDate: the fast path checks only
// day <= 31 and second < 61, and time.Date normalises, so Feb 30 becomes
// Mar 2 and second 60 the next minute, while the RFC 3339 path (time.Parse)
// rejects both.
func TestDecodeTimestampImpossibleDate(t *testing.T) {
	for _, s := range []string{"2025-02-30T00:00:00.000Z", "2025-04-31T12:00:00.000Z", "2025-02-28T23:59:60.000Z"} {
		r := decodeOK(t, Options{}, `{"type":"user","timestamp":"`+s+`"}`)
		if !r.Timestamp.IsZero() || r.Rare().TimestampRaw != s {
			t.Errorf("%s: Timestamp=%v TimestampRaw=%q, want zero and the raw text", s, r.Timestamp, r.Rare().TimestampRaw)
		}
	}
}

// contentLine has text in every place the Keep options govern.
const contentLine = `{"type":"assistant","message":{"id":"m","content":[` +
	`{"type":"thinking","thinking":"first thought","signature":"sig"},` +
	`{"type":"redacted_thinking","data":"opaque"},` +
	`{"type":"thinking","thinking":"second thought"},` +
	`{"type":"text","text":"hello world"},` +
	`{"type":"text","text":"caf\u00e9 \"quoted\""},` +
	`{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls -la"}},` +
	`{"type":"tool_result","tool_use_id":"t1","content":"line1\nline2"},` +
	`{"type":"tool_result","tool_use_id":"t2","content":[{"type":"text","text":"x"}]}` +
	`]}}`

func TestDecodeKeepOptions(t *testing.T) {
	type kept struct {
		text, thinking, input, result1, result2 string
	}
	get := func(r *Record) kept {
		m := r.Message
		if len(m.ToolUses) != 1 || len(m.ToolResults) != 2 {
			t.Fatalf("blocks: %+v %+v", m.ToolUses, m.ToolResults)
		}
		return kept{m.Text, m.Thinking, m.ToolUses[0].Input, m.ToolResults[0].Content, m.ToolResults[1].Content}
	}
	all := kept{
		text:     "hello world\ncafé \"quoted\"",
		thinking: "first thought\nsecond thought",
		input:    `{"command":"ls -la"}`,
		result1:  "line1\nline2",
		result2:  `[{"type":"text","text":"x"}]`,
	}
	cases := []struct {
		name string
		opts Options
		want kept
	}{
		{"nothing kept by default (privacy)", Options{}, kept{}},
		{"KeepText keeps only text", Options{KeepText: true}, kept{text: all.text}},
		{"KeepThinking keeps only thinking", Options{KeepThinking: true}, kept{thinking: all.thinking}},
		{"KeepToolIO keeps only tool input and results", Options{KeepToolIO: true}, kept{input: all.input, result1: all.result1, result2: all.result2}},
		{"all of them", Options{KeepText: true, KeepThinking: true, KeepToolIO: true}, all},
		{"MaxKeepBytes caps each field", Options{KeepText: true, KeepThinking: true, KeepToolIO: true, MaxKeepBytes: 8}, kept{
			text: "hello wo", thinking: "first th", input: `{"comman`, result1: "line1\nli", result2: `[{"type"`,
		}},
		{"MaxKeepBytes reaching into the second block", Options{KeepText: true, KeepThinking: true, MaxKeepBytes: 15}, kept{
			text: "hello world\ncaf", thinking: "first thought\ns",
		}},
		{"MaxKeepBytes never splits a rune", Options{KeepText: true, MaxKeepBytes: 16}, kept{text: "hello world\ncaf"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := decodeOK(t, tc.opts, contentLine)
			got := get(r)
			if got != tc.want {
				t.Errorf("kept\n got %#v\nwant %#v", got, tc.want)
			}
			for _, s := range []string{got.text, got.thinking, got.input, got.result1, got.result2} {
				if max := tc.opts.MaxKeepBytes; max > 0 && len(s) > max {
					t.Errorf("%q is longer than MaxKeepBytes %d", s, max)
				}
				if !utf8.ValidString(s) {
					t.Errorf("%q is not valid UTF-8", s)
				}
			}
			// The heads are kept whatever the options: the exporter needs
			// them to classify prompts.
			eq(t, "TextHead", r.Message.TextHead, "hello world")
			eq(t, "ThinkingBlocks", r.Message.ThinkingBlocks, 3)
			eq(t, "TextBlocks", r.Message.TextBlocks, 2)
		})
	}
	t.Run("KeepText on string content is capped", func(t *testing.T) {
		r := decodeOK(t, Options{KeepText: true, MaxKeepBytes: 5}, `{"type":"user","message":{"content":"\u00e9\u00e9\u00e9"}}`)
		eq(t, "Text", r.Message.Text, "éé")
		r = decodeOK(t, Options{}, `{"type":"user","message":{"content":"secret prompt"}}`)
		eq(t, "Text without KeepText", r.Message.Text, "")
	})
	t.Run("default MaxKeepBytes is 4096", func(t *testing.T) {
		r := decodeOK(t, Options{KeepText: true}, `{"type":"user","message":{"content":"`+strings.Repeat("x", 5000)+`"}}`)
		eq(t, "len(Text)", len(r.Message.Text), 4096)
	})
	t.Run("options reach embedded records", func(t *testing.T) {
		line := `{"type":"progress","data":{"type":"agent_progress","message":` + contentLine + `}}`
		r := decodeOK(t, Options{}, line)
		if !r.HasEmbedded() || r.Embedded.Message.Text != "" || r.Embedded.Message.Thinking != "" || r.Embedded.Message.ToolUses[0].Input != "" {
			t.Errorf("embedded record keeps text by default: %+v", r.Embedded.Message)
		}
		r = decodeOK(t, Options{KeepText: true}, line)
		eq(t, "Embedded Text", r.Embedded.Message.Text, all.text)
	})
}

// TestDecodeServerToolResultsInTheStream: a server_tool_use is marked
// Server; its result inside the assistant stream (…_tool_result) is a
// ToolResult, an error when its content's type ends in _error; other
// unknown blocks stay OtherBlocks.
func TestDecodeServerToolResultsInTheStream(t *testing.T) {
	cases := []struct {
		name, block string
		want        []ToolResult
		other       int
	}{
		{"web search result", `{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[{"type":"web_search_result","url":"u"}]}`,
			[]ToolResult{{ToolUseID: "srvtoolu_1", InStream: true}}, 0},
		{"web fetch error", `{"type":"web_fetch_tool_result","tool_use_id":"srvtoolu_2","content":{"type":"web_fetch_tool_result_error","error_code":"url_not_accessible"}}`,
			[]ToolResult{{ToolUseID: "srvtoolu_2", InStream: true, IsError: true}}, 0},
		{"advisor result", `{"tool_use_id":"srvtoolu_3","content":{"type":"advisor_result","text":"t"},"type":"advisor_tool_result"}`,
			[]ToolResult{{ToolUseID: "srvtoolu_3", InStream: true}}, 0},
		{"a gateway's tool_result in an assistant message", `{"type":"tool_result","tool_use_id":"call_1","content":"x","is_error":true}`,
			[]ToolResult{{ToolUseID: "call_1", IsError: true}}, 0},
		{"without tool_use_id it is another block", `{"type":"web_search_tool_result","content":[]}`, nil, 1},
		{"an unknown block", `{"type":"container_upload","file_id":"f"}`, nil, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := decodeOK(t, Options{}, `{"type":"assistant","message":{"id":"m","content":[`+tc.block+`]}}`)
			if !reflect.DeepEqual(r.Message.ToolResults, tc.want) {
				t.Errorf("ToolResults %+v, want %+v", r.Message.ToolResults, tc.want)
			}
			eq(t, "OtherBlocks", r.Message.OtherBlocks, tc.other)
		})
	}
	r := decodeOK(t, Options{}, `{"type":"assistant","message":{"content":[{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{}},{"type":"tool_use","id":"toolu_1","name":"Read","input":{}}]}}`)
	eq(t, "server_tool_use Server", r.Message.ToolUses[0].Server, true)
	eq(t, "tool_use Server", r.Message.ToolUses[1].Server, false)
}

func TestRecordTypesClaudeCodeWritesTodayAreNotUnknown(t *testing.T) {
	dec := NewDecoder(Options{})
	var r Record
	for _, tc := range []struct {
		line          string
		kind          Kind
		unknownFields int
	}{
		{`{"type":"bridge-session","sessionId":"s","bridgeUrl":"x","connectedAt":"t"}`, KindNotCounted, 0},
		{`{"sessionId":"s","atisState":{"a":1},"type":"atis-latch"}`, KindNotCounted, 0},
		{`{"type":"brand-new-record","sessionId":"s","payload":1}`, KindOther, 1},
		{`{"type":"assistant","advisorModel":"claude-opus-4-8","perTurnEffort":"high","sessionKind":"bg"}`, KindAssistant, 0},
		{`{"type":"assistant","somethingNew":1}`, KindAssistant, 1},
	} {
		if err := dec.Decode([]byte(tc.line), &r); err != nil {
			t.Fatalf("%s: %v", tc.line, err)
		}
		if r.Kind != tc.kind || r.UnknownFields != tc.unknownFields {
			t.Errorf("%s: kind %v, %d unknown fields; want %v, %d", tc.line, r.Kind, r.UnknownFields, tc.kind, tc.unknownFields)
		}
	}
}

// TestDecodeRareFieldsOnlyWhereALineHasThem: the rare fields are allocated
// for a line that carries one, never for the common lines, and a record
// reused for a common line holds none of an earlier line's; a repeated key
// replaces its earlier value, an empty one included.
func TestDecodeRareFieldsOnlyWhereALineHasThem(t *testing.T) {
	cases := []struct {
		name, line string
		rare       bool
		want       Rare
	}{
		{"assistant with usage", `{"type":"assistant","uuid":"a","effort":"high","message":{"id":"m","model":"claude-opus-4-5","usage":{"input_tokens":1}}}`, false, Rare{}},
		{"user with a tool result", `{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t","content":"ok"}]},"toolUseResult":{"stdout":"done"}}`, false, Rare{}},
		{"progress naming no agent", `{"type":"progress","toolUseID":"t","data":{"type":"agent_progress","agentId":""}}`, false, Rare{}},
		{"empty rare values", `{"type":"system","subtype":"","level":"","durationMs":0,"attributionSkill":""}`, false, Rare{}},
		{"attributed request", `{"type":"assistant","attributionSkill":"deep-research","attributionMcpServer":"github"}`, true, Rare{Skill: "deep-research", MCPServer: "github"}},
		{"turn duration", `{"type":"system","subtype":"turn_duration","durationMs":45678,"level":"info"}`, true, Rare{Subtype: "turn_duration", DurationMs: 45678, Level: "info"}},
		{"repeated key ends empty", `{"type":"system","subtype":"api_error","subtype":""}`, true, Rare{}},
		{"repeated number ends zero", `{"type":"system","durationMs":5,"durationMs":0}`, true, Rare{}},
		{"edit result", `{"type":"user","toolUseResult":{"type":"create","content":"a\nb"}}`, true, Rare{Edit: EditResult{Has: true, Created: true, Added: 2}}},
	}
	d := NewDecoder(Options{})
	var reused Record
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := decodeOK(t, Options{}, tc.line)
			if (r.rare != nil) != tc.rare {
				t.Errorf("rare fields allocated: %v, want %v", r.rare != nil, tc.rare)
			}
			if r.Rare() != tc.want {
				t.Errorf("Rare() = %+v, want %+v", r.Rare(), tc.want)
			}
			if err := d.Decode([]byte(`{"type":"system","subtype":"compact_boundary","compactMetadata":{"trigger":"auto","preTokens":9}}`), &reused); err != nil || reused.rare == nil {
				t.Fatalf("decode system line: %v, rare %v", err, reused.rare)
			}
			if err := d.Decode([]byte(tc.line), &reused); err != nil {
				t.Fatal(err)
			}
			if (reused.rare != nil) != tc.rare || reused.Rare() != tc.want {
				t.Errorf("reused record: rare %v, %+v; want %v, %+v", reused.rare != nil, reused.Rare(), tc.rare, tc.want)
			}
		})
	}
}

// TestDecodeIdsRepeatedFromTheLineBeforeShareItsString: a parentUuid that
// is the uuid of the line before, and a requestId, message id or tool use
// id that is the one of the line before, are that line's string, not a
// new one; any other value (escaped, changed, absent) reads as it is.
func TestDecodeIdsRepeatedFromTheLineBeforeShareItsString(t *testing.T) {
	d := NewDecoder(Options{})
	lines := []string{
		`{"type":"assistant","uuid":"u1","requestId":"req_1","message":{"id":"msg_1"}}`,
		`{"type":"assistant","parentUuid":"u1","uuid":"u2","requestId":"req_1","message":{"id":"msg_1"}}`,
		`{"type":"user","parentUuid":"u2","uuid":"u\u0033"}`,
		`{"type":"user","parentUuid":"u3","uuid":"u4","requestId":"req_2"}`,
		`{"type":"progress","parentUuid":"u9","uuid":"u5","toolUseID":"t1","parentToolUseID":"t0"}`,
		`{"type":"progress","parentUuid":"u5","uuid":"u6","toolUseID":"t1","parentToolUseID":"t0"}`,
		`{"type":"assistant","parentUuid":null,"uuid":"u7","requestId":"req_2","message":{"id":"msg_\u0032"}}`,
		`{"type":"assistant","parentUuid":"u7","uuid":"u8","requestId":"req_2","message":{"id":"msg_2"}}`,
	}
	recs := make([]Record, len(lines))
	for i, line := range lines {
		if err := d.Decode([]byte(line), &recs[i]); err != nil {
			t.Fatalf("line %d: %v", i, err)
		}
	}
	same := func(a, b string) bool { return a != "" && unsafe.StringData(a) == unsafe.StringData(b) }
	want := []struct{ parent, uuid, request, message, toolUse, parentToolUse string }{
		{"", "u1", "req_1", "msg_1", "", ""},
		{"u1", "u2", "req_1", "msg_1", "", ""},
		{"u2", "u3", "", "", "", ""},
		{"u3", "u4", "req_2", "", "", ""},
		{"u9", "u5", "", "", "t1", "t0"},
		{"u5", "u6", "", "", "t1", "t0"},
		{"", "u7", "req_2", "msg_2", "", ""},
		{"u7", "u8", "req_2", "msg_2", "", ""},
	}
	for i, w := range want {
		r := &recs[i]
		got := []string{r.ParentUUID, r.UUID, r.RequestID, r.Message.ID, r.ToolUseID, r.ParentToolUseID}
		if exp := []string{w.parent, w.uuid, w.request, w.message, w.toolUse, w.parentToolUse}; !slices.Equal(got, exp) {
			t.Errorf("line %d: %q, want %q", i, got, exp)
		}
	}
	for _, c := range []struct {
		what string
		a, b string
	}{
		{"parentUuid after the uuid before", recs[1].ParentUUID, recs[0].UUID},
		{"parentUuid after an escaped uuid", recs[3].ParentUUID, recs[2].UUID},
		{"parentUuid after a line between", recs[5].ParentUUID, recs[4].UUID},
		{"parentUuid after a null one", recs[7].ParentUUID, recs[6].UUID},
		{"requestId", recs[1].RequestID, recs[0].RequestID},
		{"requestId two lines on", recs[6].RequestID, recs[3].RequestID},
		{"message id", recs[1].Message.ID, recs[0].Message.ID},
		{"message id after an escaped one", recs[7].Message.ID, recs[6].Message.ID},
		{"toolUseID", recs[5].ToolUseID, recs[4].ToolUseID},
		{"parentToolUseID", recs[5].ParentToolUseID, recs[4].ParentToolUseID},
	} {
		if !same(c.a, c.b) {
			t.Errorf("%s: a new string, not the line before's", c.what)
		}
	}
}

// TestDecodeEmbeddedMessageNeverLeaksIntoALaterLine: a record reused for
// line after line keeps its embedded record for reuse, but a line without
// a data.message has none, and one with a message holds only its own.
func TestDecodeEmbeddedMessageNeverLeaksIntoALaterLine(t *testing.T) {
	d := NewDecoder(Options{})
	var r Record
	steps := []struct {
		line     string
		embedded bool
		uuid     string
		requests int
	}{
		{`{"type":"progress","data":{"message":{"type":"assistant","uuid":"e1","requestId":"q1","message":{"id":"m1","usage":{"input_tokens":5}}}}}`, true, "e1", 1},
		{`{"type":"user","uuid":"u1"}`, false, "", 0},
		{`{"type":"progress","data":{"agentId":"a1"}}`, false, "", 0},
		{`{"type":"progress","data":{"message":{"type":"user","uuid":"e2"}}}`, true, "e2", 0},
		{`{"type":"progress","data":{"message":{"type":"assistant","uuid":"e3","message":{"id":"m3"}},"x":`, false, "", 0},
		{`{"type":"progress","data":{"message":{"type":"system","uuid":"e4"}}}`, false, "e4", 0},
		{`{"type":"assistant","uuid":"u2"}`, false, "", 0},
	}
	for i, s := range steps {
		err := d.Decode([]byte(s.line), &r)
		if (err == nil) != (i != 4) {
			t.Fatalf("step %d: error %v", i, err)
		}
		if r.HasEmbedded() != s.embedded {
			t.Errorf("step %d: HasEmbedded %v, want %v", i, r.HasEmbedded(), s.embedded)
		}
		if r.Embedded == nil {
			t.Fatalf("step %d: the embedded record was let go", i)
		}
		got := 0
		if r.Embedded.Message.HasUsage {
			got = 1
		}
		if r.Embedded.UUID != s.uuid || got != s.requests || (s.uuid != "e1" && (r.Embedded.RequestID != "" || r.Embedded.Message.ID != "")) {
			t.Errorf("step %d: embedded uuid %q request %q message %q usage %v; want uuid %q and nothing of another line",
				i, r.Embedded.UUID, r.Embedded.RequestID, r.Embedded.Message.ID, r.Embedded.Message.HasUsage, s.uuid)
		}
	}
}

// TestIDsKeptFromEarlierLinesNeverChange: ids are made in shared blocks
// (idString); an id kept from one line must read the same after the
// decoder has made thousands more, across many blocks, whatever its
// length or escapes.
func TestIDsKeptFromEarlierLinesNeverChange(t *testing.T) {
	tests := []struct {
		name string
		uuid func(i int) string // as written in JSON
		want func(i int) string
	}{
		{"uuids", func(i int) string { return fmt.Sprintf("%08d-0000-4000-8000-%012d", i, i) },
			func(i int) string { return fmt.Sprintf("%08d-0000-4000-8000-%012d", i, i) }},
		{"longer than a block takes", func(i int) string { return strings.Repeat("x", idMax+1) + strconv.Itoa(i) },
			func(i int) string { return strings.Repeat("x", idMax+1) + strconv.Itoa(i) }},
		{"escaped", func(i int) string { return `u\"` + strconv.Itoa(i) }, func(i int) string { return `u"` + strconv.Itoa(i) }},
		{"short", strconv.Itoa, strconv.Itoa},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dec := NewDecoder(Options{})
			var kept []Record
			for i := range 5000 {
				line := fmt.Sprintf(`{"type":"assistant","uuid":"%s","requestId":"req_%d","message":{"id":"msg_%d","role":"assistant","model":"m",`+
					`"content":[{"type":"tool_use","id":"toolu_%d","name":"Read","input":{}}],"usage":{"input_tokens":1,"output_tokens":1}}}`,
					tt.uuid(i), i, i, i)
				var r Record
				if err := dec.Decode([]byte(line), &r); err != nil {
					t.Fatalf("line %d: %v", i, err)
				}
				kept = append(kept, r)
			}
			for i, r := range kept {
				if r.UUID != tt.want(i) || r.RequestID != "req_"+strconv.Itoa(i) || r.Message.ID != "msg_"+strconv.Itoa(i) ||
					len(r.Message.ToolUses) != 1 || r.Message.ToolUses[0].ID != "toolu_"+strconv.Itoa(i) {
					t.Fatalf("line %d now reads uuid %q request %q message %q tools %+v", i, r.UUID, r.RequestID, r.Message.ID, r.Message.ToolUses)
				}
			}
		})
	}
}
