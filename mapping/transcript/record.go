package transcript

import "time"

// Kind is the record type of a transcript line (its "type" field).
type Kind uint8

// Record kinds seen in real transcripts. KindOther covers every type this
// package does not know; Record.Type keeps its name for counting.
const (
	KindOther Kind = iota
	KindUser
	KindAssistant
	KindSystem
	KindProgress
	KindSummary
	KindFileHistorySnapshot
	KindQueueOperation
	KindCustomTitle
	KindAttachment
	KindPermissionMode
	KindLastPrompt
	KindAITitle
	KindAgentName
	KindMode
	KindStarted
	KindResult
	KindPRLink
	// KindNotCounted is a record type Claude Code writes that holds
	// nothing the exporter counts (bridge-session, atis-latch, ...): known,
	// so a healthy run's unknown_records_total stays for new types, and its
	// fields are not unknown fields either.
	KindNotCounted
)

// kindOf maps a raw "type" value to its Kind.
func kindOf(t []byte) Kind {
	switch string(t) {
	case "user":
		return KindUser
	case "assistant":
		return KindAssistant
	case "system":
		return KindSystem
	case "progress":
		return KindProgress
	case "summary":
		return KindSummary
	case "file-history-snapshot":
		return KindFileHistorySnapshot
	case "queue-operation":
		return KindQueueOperation
	case "custom-title":
		return KindCustomTitle
	case "attachment":
		return KindAttachment
	case "permission-mode":
		return KindPermissionMode
	case "last-prompt":
		return KindLastPrompt
	case "ai-title":
		return KindAITitle
	case "agent-name":
		return KindAgentName
	case "mode":
		return KindMode
	case "started":
		return KindStarted
	case "result":
		return KindResult
	case "pr-link":
		return KindPRLink
	case "atis-latch", "bridge-session", "file-history-delta", "fork-context-ref", "frame-link", "agent-setting":
		// Claude Code 2.1.1xx-2.1.26x (field notes 2026-11 §1): session
		// plumbing, no usage, prompts or tools.
		return KindNotCounted
	}
	return KindOther
}

// Known reports whether the kind is one this package recognises.
func (k Kind) Known() bool { return k != KindOther }

// SyntheticModel is the model name Claude Code writes on lines it made up
// itself (API errors, limit notices, "No response requested.").
const SyntheticModel = "<synthetic>"

// UsageProblem says why the usage of a line was rejected; "" when it was
// not. A rejected usage counts no tokens (its counts are zero), so that no
// line can lower a counter or blow it up.
type UsageProblem string

// Usage problems: every token count must be a whole number from 0 to
// MaxUsageTokens (null or absent counts as 0).
const (
	UsageNegative   UsageProblem = "negative"
	UsageTooLarge   UsageProblem = "too_large"
	UsageNotInteger UsageProblem = "not_integer"
)

// UsageProblems lists every UsageProblem, for pre-registering counters.
func UsageProblems() []UsageProblem {
	return []UsageProblem{UsageNegative, UsageTooLarge, UsageNotInteger}
}

// MaxUsageTokens caps one token count of one request. The largest real
// counts are a few million (a 1M-token context read from cache); a count
// above 100 million is a corrupt or hostile line.
const MaxUsageTokens = 100_000_000

// Usage is the token usage of one assistant line.
type Usage struct {
	Input         int64
	Output        int64
	CacheRead     int64
	CacheCreation int64 // cache_creation_input_tokens, all tiers
	// Ephemeral5m and Ephemeral1h are the cache_creation breakdown;
	// HasBreakdown says whether the object was present.
	Ephemeral5m  int64
	Ephemeral1h  int64
	HasBreakdown bool
	// WebSearchRequests is server_tool_use.web_search_requests: web
	// searches the API ran for the request (billed per search).
	WebSearchRequests int64
	// Speed is usage.speed (standard, fast) and Geo usage.inference_geo
	// (us, global, not_available, ...): price modifiers of the request.
	Speed string
	Geo   string
	// SpeedNull says usage.speed was null (Claude Code 2.1.x writes it so
	// on the lines it makes up itself; ccusage 20 rejects such lines).
	SpeedNull bool
	// Problem is set when a count was not a whole number from 0 to
	// MaxUsageTokens; every count is then zero.
	Problem UsageProblem
}

// AdvisorUsage is one advisor_message iteration: a model and its counts
// (see Message.Advisor).
type AdvisorUsage struct {
	Model         string
	Input         int64
	Output        int64
	CacheRead     int64
	CacheCreation int64
	Ephemeral5m   int64
	Ephemeral1h   int64
}

// Total is the sum used to break ties between copies of a request.
func (u Usage) Total() int64 { return u.Input + u.Output + u.CacheRead + u.CacheCreation }

// CacheWrite1h is the 1-hour tier of the cache writes.
func (u Usage) CacheWrite1h() int64 { return u.Ephemeral1h }

// CacheWrite5m is the 5-minute tier: everything written that is not 1h. An
// absent breakdown means all of it (5m was the only tier then); a breakdown
// that sums to less than cache_creation_input_tokens leaves the remainder
// in 5m, so no written token is lost.
func (u Usage) CacheWrite5m() int64 {
	total := u.CacheCreation
	if s := u.Ephemeral5m + u.Ephemeral1h; s > total {
		total = s
	}
	return total - u.Ephemeral1h
}

// ToolUse is one tool_use content block.
type ToolUse struct {
	ID   string
	Name string
	// SubagentType and Description are read from the input of Task/Agent
	// calls only.
	SubagentType string
	Description  string
	// Server says it is a server_tool_use block: a tool run by the API
	// (web search, web fetch, advisor, a gateway's tools), answered by a
	// result block inside the same assistant message stream.
	Server bool
	// Background says a Task/Agent call asked to run in the background
	// (run_in_background: true): its result comes back at once and the
	// subagent works on after it.
	Background bool
	// Input is the raw JSON input, kept only when Options.KeepToolIO is set.
	Input string
	// Ext is the lower-case extension of the file an edit tool (Edit,
	// MultiEdit, Write, NotebookEdit) names ("dockerfile" and "makefile"
	// for those names); never the path.
	Ext string
	// NotebookLines is the number of lines of a NotebookEdit's
	// new_source (0 for edit_mode delete).
	NotebookLines int64
	// InputLines are the lines an Edit, MultiEdit or Write input says it
	// adds and removes (see InputLines), counted while decoding: no text
	// of the input is kept.
	InputLines InputLines
	// Shell says what a Bash call's command does (see ShellFacts).
	Shell ShellFacts
}

// ShellFacts are what a shell command does that the exporter counts.
type ShellFacts uint8

// Shell facts: a git commit (not --dry-run), a gh pr create.
const (
	ShellCommit ShellFacts = 1 << iota
	ShellPRCreate
)

// EditResult is what an edit tool's toolUseResult says it changed: lines
// added and removed by its structuredPatch, or, for a created file
// (type create), the lines of its content as added.
type EditResult struct {
	Has            bool
	Created        bool
	Added, Removed int64
}

// InputLines are the lines an edit tool's input adds and removes, for a
// call whose result holds no patch (Claude Code 2.1.2xx writes no
// toolUseResult in subagent transcripts). The rule:
//
//   - Edit: the lines of a line diff of old_string to new_string, as a
//     patch shows them: removed = lines of old_string, added = lines of
//     new_string, each less the longest common subsequence of lines (the
//     patch's context). A text's lines are those of its unescaped text
//     split at newlines, a last line without one counting; "" has none.
//     With replace_all the replacement counts once: how many places it
//     changed is not in the transcript.
//   - MultiEdit: the sum of that over its edits[].
//   - Write: every line of content added, none removed: whether it
//     replaced a file, and what was in it, is not in the transcript.
//
// Bounds (never met by real edits, which diff at most a few hundred lines):
// a pair of texts with more than MaxDiffLines lines together counts all
// of them; the lines left after dropping the common leading and trailing
// lines are diffed while the pairs of lines compared stay within
// MaxDiffCells for the whole call (a MultiEdit's edits share it, in
// order), else counted all, undiffed.
//
// Has says the input named something to count: a string old_string or
// new_string, an edits array, a string content.
type InputLines struct {
	Has            bool
	Added, Removed int64
}

// ToolResult is one tool_result content block.
type ToolResult struct {
	ToolUseID string
	IsError   bool
	// InStream says it is a server tool's result block inside an
	// assistant message (…_tool_result).
	InStream bool
	// Rejected says the user refused the call: the result starts with
	// RejectionMarker.
	Rejected bool
	// Content is the result text, kept only when Options.KeepToolIO is set.
	Content string
}

// Message is the "message" object of a user or assistant line.
type Message struct {
	ID         string
	Model      string
	StopReason string // "" when null or absent
	Usage      Usage
	// Advisor holds the usage.iterations[] entries of type
	// advisor_message: the advisor tool's own inferences, excluded from
	// the top-level counts and billed under the advisor's model. Entries
	// of type message repeat the top-level numbers and are never kept. A
	// rejected usage (Usage.Problem) keeps none.
	Advisor []AdvisorUsage
	// CacheMiss is diagnostics.cache_miss_reason.type: why the prompt
	// cache missed ("" when the line says nothing), and CacheMissTokens
	// its cache_missed_input_tokens (0 when absent).
	CacheMiss       string
	CacheMissTokens int64

	// TextBlocks counts text blocks (a string content counts as one).
	TextBlocks int
	// OtherBlocks counts blocks that are neither text, tool_use,
	// tool_result nor thinking (images, documents, ...).
	OtherBlocks int
	// ThinkingBlocks counts thinking and redacted_thinking blocks.
	ThinkingBlocks int
	// TextHead is the start of the first text (unescaped, at most
	// TextHeadMax bytes): enough to tell prompts from plumbing.
	TextHead string
	// Text is the whole text (all text blocks joined by "\n"), kept only
	// when Options.KeepText is set.
	Text string
	// Thinking is the thinking text, kept only when Options.KeepThinking
	// is set.
	Thinking string

	ToolUses    []ToolUse
	ToolResults []ToolResult

	// The flags sit together (a bool among words takes a word).
	HasUsage bool
	// ContentIsString is set when content is a plain string (a typed
	// prompt); otherwise content is an array of blocks.
	ContentIsString bool
	// TextHeadCut says TextHead is shorter than the text.
	TextHeadCut bool
}

// FirstTextIs reports whether the first text is exactly s.
func (m *Message) FirstTextIs(s string) bool { return !m.TextHeadCut && m.TextHead == s }

// LabelMax bounds the short names a record carries (skill, plugin,
// effort, speed, geo, cache-miss reason): they become label values.
const LabelMax = 64

// TextHeadMax bounds Message.TextHead.
const TextHeadMax = 96

// TaskResult is what the toolUseResult of a Task/Agent call says about the
// subagent it ran.
type TaskResult struct {
	AgentID         string
	AgentType       string
	Status          string
	TotalDurationMs int64
}

// Record is one decoded transcript line. Only the fields the exporter needs
// are kept; everything else is skipped without allocation.
type Record struct {
	Kind Kind
	// Type is the raw "type" value (kept for unknown kinds and counting).
	Type string

	UUID       string
	ParentUUID string
	SessionID  string
	AgentID    string
	RequestID  string
	Timestamp  time.Time

	IsSidechain       bool
	IsMeta            bool
	IsCompactSummary  bool
	IsAPIErrorMessage bool
	IsVisibleOnly     bool // isVisibleInTranscriptOnly
	// HasMessage says the line had a "message" object.
	HasMessage bool

	// Effort is the effort level (assistant lines of newer versions), cut
	// at LabelMax bytes.
	Effort string

	Cwd       string
	GitBranch string
	Version   string
	Slug      string

	Message Message

	// TaskResult is set when toolUseResult names a subagent.
	TaskResult *TaskResult

	// Progress records.
	ParentToolUseID string
	ToolUseID       string
	// Embedded is the message envelope a progress record carries
	// (data.message): a user or assistant record of a subagent, written
	// into the parent's file by older versions.
	Embedded *Record

	// UnknownFields counts top-level keys this decoder does not know.
	UnknownFields int

	// rare holds the fields few lines carry; nil when the line has none.
	rare *Rare
	// embedded says this line's data.message was decoded into Embedded.
	// Otherwise Embedded, kept for reuse, holds nothing: it is reset
	// with the record that used it, not on every reset (most records
	// never use theirs, and reading it cost a cache miss a line).
	embedded bool
}

// Rare holds the fields of a record that few lines carry (system, pr-link,
// title and progress records, attributed requests, edit results, bad
// timestamps). They live apart so that the records every line is decoded
// into stay small: batches of records are recycled whole and every
// collection scans them, so a record's size costs more than its bytes
// (bench/README.md, tenth session).
type Rare struct {
	Subtype string
	// TimestampRaw holds an unparsable timestamp (empty when Timestamp is
	// set or the field is absent).
	TimestampRaw string

	// Error is the string "error" field of synthetic assistant lines
	// (e.g. "rate_limit"); APIErrorStatus is apiErrorStatus.
	Error          string
	APIErrorStatus int64
	Level          string

	// Skill and Plugin are attributionSkill and attributionPlugin, each cut
	// at LabelMax bytes. MCPServer is attributionMcpServer: the MCP server
	// whose tool the request answers.
	Skill     string
	Plugin    string
	MCPServer string

	// Edit is what toolUseResult says an edit tool changed.
	Edit EditResult
	// OutputPRURL is the last pull request URL in a shell call's output
	// (toolUseResult.stdout; see PullRequestURLIn): where gh pr create
	// prints the pull request it opened.
	OutputPRURL string

	// PRURL, PRNumber and PRRepo are a pr-link record's pull request
	// (prUrl, prNumber, prRepository), each cut at 512 bytes.
	PRURL    string
	PRNumber int64
	PRRepo   string

	// System records.
	CompactTrigger   string
	CompactPreTokens int64
	DurationMs       int64
	// ProgressAgentID is a progress record's data.agentId.
	ProgressAgentID string

	// Title is a title record's customTitle, aiTitle or agentName.
	Title string
}

// Rare returns the record's rare fields, all zero when it has none.
func (r *Record) Rare() Rare {
	if r.rare == nil {
		return Rare{}
	}
	return *r.rare
}

// more returns the record's rare fields for writing, allocating them on
// first use.
func (r *Record) more() *Rare {
	if r.rare == nil {
		r.rare = new(Rare)
	}
	return r.rare
}

// reset clears r for reuse, keeping allocated slices.
func (r *Record) reset() {
	emb, used := r.Embedded, r.embedded
	uses := r.Message.ToolUses[:0]
	results := r.Message.ToolResults[:0]
	adv := r.Message.Advisor[:0]
	*r = Record{}
	r.Message.ToolUses = uses
	r.Message.ToolResults = results
	r.Message.Advisor = adv
	if emb != nil {
		if used {
			emb.reset()
		}
		r.Embedded = emb
	}
}

// HasEmbedded reports whether a progress record carried a message.
func (r *Record) HasEmbedded() bool {
	return r.embedded && (r.Embedded.Kind == KindUser || r.Embedded.Kind == KindAssistant)
}

// IsSynthetic reports whether an assistant record was made up by Claude
// Code rather than returned by the API.
func (r *Record) IsSynthetic() bool {
	return r.Kind == KindAssistant && r.Message.Model == SyntheticModel
}

// RejectionMarker starts the tool_result Claude Code writes when the user
// refuses a tool call.
const RejectionMarker = "The user doesn't want to proceed with this tool use"
