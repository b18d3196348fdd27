package session

import (
	"strings"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/transcript"
)

// SourceKind says what a transcript file is, from its place in the tree.
type SourceKind uint8

// Source kinds.
const (
	// SourceOther is any other *.jsonl under projects/: read, attributed
	// by the sessionId and agentId its records carry.
	SourceOther SourceKind = iota
	// SourceSession is <enc>/<session>.jsonl.
	SourceSession
	// SourceSubagent is <enc>/<session>/subagents/agent-<id>.jsonl (and
	// workflows below it), since Claude Code 2.1.2.
	SourceSubagent
	// SourceLegacyAgent is <enc>/agent-<id>.jsonl, beside the sessions.
	SourceLegacyAgent
)

// Source describes one transcript file.
type Source struct {
	Kind SourceKind
	// Rel is the path relative to the projects/ dir, with '/' separators.
	Rel string
	// ProjectDir is the encoded project directory name.
	ProjectDir string
	// SessionID is known from the layout for sessions and new-layout
	// subagents; legacy agents take it from their records.
	SessionID string
	AgentID   string
	Workflow  string
	// From the subagent's .meta.json, when present.
	AgentType   string
	Description string
	ToolUseID   string
}

// IsTranscriptName reports whether a file name is a transcript: *.jsonl
// and not a dot-file (.history.jsonl and the like are not transcripts).
func IsTranscriptName(name string) bool {
	return strings.HasSuffix(name, ".jsonl") && !strings.HasPrefix(name, ".")
}

// ClassifySource tells what a transcript file is from its path relative to
// projects/ (any separator). It is pure string work, and allocates nothing
// when rel has no backslash (a daemon classifies its files on every read
// and rescan).
func ClassifySource(rel string) Source {
	rel = strings.ReplaceAll(rel, "\\", "/")
	// The first five parts, how many there are, and the last.
	var parts [5]string
	n, rest := 0, rel
	for {
		part, after, more := strings.Cut(rest, "/")
		if n < len(parts) {
			parts[n] = part
		}
		n++
		if !more {
			break
		}
		rest = after
	}
	src := Source{Rel: rel, ProjectDir: parts[0]}
	stem := strings.TrimSuffix(rest, ".jsonl")
	switch {
	case n == 2 && strings.HasPrefix(stem, "agent-"):
		src.Kind = SourceLegacyAgent
		src.AgentID = strings.TrimPrefix(stem, "agent-")
	case n == 2:
		src.Kind = SourceSession
		src.SessionID = stem
	case n >= 4 && parts[2] == "subagents" && strings.HasPrefix(stem, "agent-"):
		src.Kind = SourceSubagent
		src.SessionID = parts[1]
		src.AgentID = strings.TrimPrefix(stem, "agent-")
		if n >= 6 && parts[3] == "workflows" {
			src.Workflow = parts[4]
		}
	}
	return src
}

// MetaPath returns the path of the .meta.json that may sit beside a
// subagent transcript, or "" for other sources.
func MetaPath(transcriptPath string) string {
	if !strings.HasSuffix(transcriptPath, ".jsonl") {
		return ""
	}
	base := transcriptPath[strings.LastIndexAny(transcriptPath, "/\\")+1:]
	if !strings.HasPrefix(base, "agent-") {
		return ""
	}
	return strings.TrimSuffix(transcriptPath, ".jsonl") + ".meta.json"
}

// IsInterruptMarker reports whether a user record is the marker Claude
// Code writes when the human interrupts a request.
func IsInterruptMarker(r *transcript.Record) bool {
	return r.Kind == transcript.KindUser && strings.HasPrefix(r.Message.TextHead, "[Request interrupted by user")
}

// IsHumanPrompt reports whether a record is a prompt a human typed, per
// the rules of design §2.6: a user record in the main conversation with
// text (or an image), that is not meta, not a compact summary, not a tool
// result, and not a command, command output, task notification or
// interrupt marker.
func IsHumanPrompt(r *transcript.Record) bool {
	if r.Kind != transcript.KindUser || !r.HasMessage || r.IsSidechain || r.IsMeta ||
		r.IsCompactSummary || r.IsVisibleOnly {
		return false
	}
	m := &r.Message
	if len(m.ToolResults) > 0 || (m.TextBlocks == 0 && m.OtherBlocks == 0) {
		return false
	}
	if r.TaskResult != nil {
		return false
	}
	// Text Claude Code wrote, not the human: slash commands and their
	// output, background task notices, shell escapes, interrupt markers.
	plumbing := [...]string{
		"<command-name>", "<command-message>", "<command-args>", "<local-command-",
		"<task-notification", "<bash-input>", "<bash-stdout>", "<bash-stderr>",
		"<user-memory-input>", "<system-reminder>", "[Request interrupted by user",
	}
	text := strings.TrimLeft(m.TextHead, " \t\r\n")
	for _, p := range plumbing {
		if strings.HasPrefix(text, p) {
			return false
		}
	}
	return true
}

// IsTurnWork says a main-thread record is Claude at work in its turn, so
// that it extends the turn's measured active time: a request line (an API
// error's too), a tool result, a tool's progress, an API retry or a
// compaction. Prompts, summaries, titles, queue operations, snapshots and
// the output of commands typed later are not.
func IsTurnWork(r *transcript.Record) bool {
	switch r.Kind {
	case transcript.KindAssistant, transcript.KindProgress:
		return true
	case transcript.KindUser:
		return len(r.Message.ToolResults) > 0
	case transcript.KindSystem:
		sub := r.Rare().Subtype
		return sub == "api_error" || sub == "compact_boundary"
	}
	return false
}
