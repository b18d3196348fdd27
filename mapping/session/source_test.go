package session

import (
	"strings"
	"testing"
)

// TestClassifySource pins how a transcript's place under projects/ tells
// what it is (design §1), for every layout and with either separator.
func TestClassifySource(t *testing.T) {
	tests := []struct {
		name string
		rel  string
		want Source
	}{
		{
			name: "session transcript",
			rel:  "X--02-JZS-06-CMMCUnlock/a8b4f8bf-44f6-4d91-aa8a-3ed5c907c0cc.jsonl",
			want: Source{Kind: SourceSession, Rel: "X--02-JZS-06-CMMCUnlock/a8b4f8bf-44f6-4d91-aa8a-3ed5c907c0cc.jsonl", ProjectDir: "X--02-JZS-06-CMMCUnlock", SessionID: "a8b4f8bf-44f6-4d91-aa8a-3ed5c907c0cc"},
		},
		{
			name: "new-layout subagent",
			rel:  "X--02-JZS-06-CMMCUnlock/a8b4f8bf-44f6-4d91-aa8a-3ed5c907c0cc/subagents/agent-a2244978809bf394d.jsonl",
			want: Source{Kind: SourceSubagent, Rel: "X--02-JZS-06-CMMCUnlock/a8b4f8bf-44f6-4d91-aa8a-3ed5c907c0cc/subagents/agent-a2244978809bf394d.jsonl", ProjectDir: "X--02-JZS-06-CMMCUnlock", SessionID: "a8b4f8bf-44f6-4d91-aa8a-3ed5c907c0cc", AgentID: "a2244978809bf394d"},
		},
		{
			name: "workflow subagent",
			rel:  "-Users-mark-PKM/9c2c55be-39e4-454e-a5eb-13d21063ffc0/subagents/workflows/wf_c823ff03-725/agent-ad05375a05aa61f4e.jsonl",
			want: Source{Kind: SourceSubagent, Rel: "-Users-mark-PKM/9c2c55be-39e4-454e-a5eb-13d21063ffc0/subagents/workflows/wf_c823ff03-725/agent-ad05375a05aa61f4e.jsonl", ProjectDir: "-Users-mark-PKM", SessionID: "9c2c55be-39e4-454e-a5eb-13d21063ffc0", AgentID: "ad05375a05aa61f4e", Workflow: "wf_c823ff03-725"},
		},
		{
			name: "legacy agent beside the sessions",
			rel:  "-home-aiscend-work-docs/agent-a24fba1.jsonl",
			want: Source{Kind: SourceLegacyAgent, Rel: "-home-aiscend-work-docs/agent-a24fba1.jsonl", ProjectDir: "-home-aiscend-work-docs", AgentID: "a24fba1"},
		},
		{
			name: "windows separators: session",
			rel:  `C--Users-emarquez\38c0a6cb-ccb1-44bd-aed1-31e5f8a3fbb7.jsonl`,
			want: Source{Kind: SourceSession, Rel: "C--Users-emarquez/38c0a6cb-ccb1-44bd-aed1-31e5f8a3fbb7.jsonl", ProjectDir: "C--Users-emarquez", SessionID: "38c0a6cb-ccb1-44bd-aed1-31e5f8a3fbb7"},
		},
		{
			name: "windows separators: subagent",
			rel:  `S--01-Repos-docs\b672292b-0f14-4bbc-9c74-3b4f16d2abff\subagents\agent-a28c6c6.jsonl`,
			want: Source{Kind: SourceSubagent, Rel: "S--01-Repos-docs/b672292b-0f14-4bbc-9c74-3b4f16d2abff/subagents/agent-a28c6c6.jsonl", ProjectDir: "S--01-Repos-docs", SessionID: "b672292b-0f14-4bbc-9c74-3b4f16d2abff", AgentID: "a28c6c6"},
		},
		{
			name: "windows separators: workflow",
			rel:  `P\S\subagents\workflows\wf_1\agent-a9.jsonl`,
			want: Source{Kind: SourceSubagent, Rel: "P/S/subagents/workflows/wf_1/agent-a9.jsonl", ProjectDir: "P", SessionID: "S", AgentID: "a9", Workflow: "wf_1"},
		},
		{
			name: "windows separators: legacy agent",
			rel:  `S--01-Repos-docs\agent-a28c6c6.jsonl`,
			want: Source{Kind: SourceLegacyAgent, Rel: "S--01-Repos-docs/agent-a28c6c6.jsonl", ProjectDir: "S--01-Repos-docs", AgentID: "a28c6c6"},
		},
		{
			name: "mixed separators",
			rel:  `P/S\subagents/agent-a1.jsonl`,
			want: Source{Kind: SourceSubagent, Rel: "P/S/subagents/agent-a1.jsonl", ProjectDir: "P", SessionID: "S", AgentID: "a1"},
		},
		{
			name: "other jsonl in a session dir",
			rel:  "P/S/notes.jsonl",
			want: Source{Kind: SourceOther, Rel: "P/S/notes.jsonl", ProjectDir: "P"},
		},
		{
			name: "non-agent file under subagents",
			rel:  "P/S/subagents/log.jsonl",
			want: Source{Kind: SourceOther, Rel: "P/S/subagents/log.jsonl", ProjectDir: "P"},
		},
		{
			name: "agent file in another subdirectory",
			rel:  "P/S/tool-results/agent-a1.jsonl",
			want: Source{Kind: SourceOther, Rel: "P/S/tool-results/agent-a1.jsonl", ProjectDir: "P"},
		},
		{
			name: "file at the projects root",
			rel:  "stray.jsonl",
			want: Source{Kind: SourceOther, Rel: "stray.jsonl", ProjectDir: "stray.jsonl"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := ClassifySource(tc.rel); got != tc.want {
				t.Errorf("ClassifySource(%q)\n got  %+v\n want %+v", tc.rel, got, tc.want)
			}
			if strings.Contains(tc.rel, "\\") {
				return
			}
			// A daemon classifies every file on each read and rescan.
			if n := testing.AllocsPerRun(10, func() { ClassifySource(tc.rel) }); n != 0 {
				t.Errorf("ClassifySource(%q) allocates %v times, want 0", tc.rel, n)
			}
		})
	}
}

// TestIsTranscriptName pins which file names are read: *.jsonl that are
// not dot-files.
func TestIsTranscriptName(t *testing.T) {
	tests := []struct {
		name string
		want bool
	}{
		{"a8b4f8bf-44f6-4d91-aa8a-3ed5c907c0cc.jsonl", true},
		{"agent-a2244978809bf394d.jsonl", true},
		{".history.jsonl", false},
		{".a8b4f8bf.jsonl", false},
		{"agent-a2244978809bf394d.meta.json", false},
		{"sessions-index.json", false},
		{"toolu_01BbF142QTfQXKEudiVmQnXf.txt", false},
		{"a8b4f8bf.jsonl.tmp", false},
		{"a8b4f8bf.jsonl.bak", false},
		{"jsonl", false},
		{"", false},
	}
	for _, tc := range tests {
		if got := IsTranscriptName(tc.name); got != tc.want {
			t.Errorf("IsTranscriptName(%q) = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestMetaPath pins where a subagent's .meta.json is looked for.
func TestMetaPath(t *testing.T) {
	tests := []struct {
		path, want string
	}{
		{"/home/u/.claude/projects/P/S/subagents/agent-a22.jsonl", "/home/u/.claude/projects/P/S/subagents/agent-a22.meta.json"},
		{"/home/u/.claude/projects/P/S/subagents/workflows/wf_1/agent-a9.jsonl", "/home/u/.claude/projects/P/S/subagents/workflows/wf_1/agent-a9.meta.json"},
		{`C:\Users\e\.claude\projects\P\S\subagents\agent-a22.jsonl`, `C:\Users\e\.claude\projects\P\S\subagents\agent-a22.meta.json`},
		{"agent-a22.jsonl", "agent-a22.meta.json"},
		{"/home/u/.claude/projects/P/agent-a24fba1.jsonl", "/home/u/.claude/projects/P/agent-a24fba1.meta.json"},
		{"/home/u/.claude/projects/P/S.jsonl", ""},
		{"/home/u/.claude/projects/P/S/subagents/agent-a22.meta.json", ""},
		{"/home/u/.claude/projects/agent-dir/S.jsonl", ""},
		{"", ""},
	}
	for _, tc := range tests {
		if got := MetaPath(tc.path); got != tc.want {
			t.Errorf("MetaPath(%q) = %q, want %q", tc.path, got, tc.want)
		}
	}
}

// TestSourceOtherIsAttributedByItsRecords pins that a transcript outside
// the known layouts is still read: its records are attributed by the
// sessionId and agentId they carry, its requests count, and it starts no
// session.
func TestSourceOtherIsAttributedByItsRecords(t *testing.T) {
	log, _ := run(t, file{projDir + "/" + sessA + "/stray.jsonl", []string{
		U{UUID: "s0", Session: sessB, Sec: 1, Agent: "a77", Text: "Explore."}.String(),
		A{UUID: "s1", Parent: "s0", Session: sessB, Sec: 2, Msg: "msg_other", Agent: "a77", Out: 42, Stop: "end_turn"}.String(),
	}})
	r := one(t, "request", log.requestsOf("msg_other"))
	if r.SessionID != sessB || r.AgentID != "a77" || r.Tokens.Output != 42 {
		t.Errorf("request where %+v output %d, want session %s agent a77 output 42", r.Where, r.Tokens.Output, sessB)
	}
	if starts, _ := log.sessionsOf(sessB); len(starts) != 0 {
		t.Errorf("a stray file started session %s", sessB)
	}
}
