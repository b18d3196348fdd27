package session

import (
	"slices"
	"time"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/transcript"
)

// The assembler emits units: each is complete when emitted and carries the
// ids that place it in the session tree (session → turn → request → tool →
// subagent → its requests and tools). Emission order follows the input,
// not the tree: consumers link units by id.

// Tokens is the usage of a request split the way it is billed and
// exported: input, output, cache reads, and cache writes by tier.
type Tokens struct {
	Input        int64
	Output       int64
	CacheRead    int64
	CacheWrite5m int64
	CacheWrite1h int64
	// WebSearch counts the web searches the API ran for the request
	// (usage.server_tool_use.web_search_requests): billed per search, not
	// a token type.
	WebSearch int64
}

// TokensOf splits a line's usage into exported token types.
func TokensOf(u transcript.Usage) Tokens {
	return Tokens{
		Input:        u.Input,
		Output:       u.Output,
		CacheRead:    u.CacheRead,
		CacheWrite5m: u.CacheWrite5m(),
		CacheWrite1h: u.CacheWrite1h(),
		WebSearch:    u.WebSearchRequests,
	}
}

// Sub returns t-o per type, with negative differences as zero: counters
// only grow.
func (t Tokens) Sub(o Tokens) Tokens {
	pos := func(a, b int64) int64 {
		if a > b {
			return a - b
		}
		return 0
	}
	return Tokens{
		Input:        pos(t.Input, o.Input),
		Output:       pos(t.Output, o.Output),
		CacheRead:    pos(t.CacheRead, o.CacheRead),
		CacheWrite5m: pos(t.CacheWrite5m, o.CacheWrite5m),
		CacheWrite1h: pos(t.CacheWrite1h, o.CacheWrite1h),
		WebSearch:    pos(t.WebSearch, o.WebSearch),
	}
}

// Add returns the per-type sum of t and o.
func (t Tokens) Add(o Tokens) Tokens {
	return Tokens{
		Input:        t.Input + o.Input,
		Output:       t.Output + o.Output,
		CacheRead:    t.CacheRead + o.CacheRead,
		CacheWrite5m: t.CacheWrite5m + o.CacheWrite5m,
		CacheWrite1h: t.CacheWrite1h + o.CacheWrite1h,
		WebSearch:    t.WebSearch + o.WebSearch,
	}
}

// Max returns the per-type maximum of t and o.
func (t Tokens) Max(o Tokens) Tokens {
	return Tokens{
		Input:        max(t.Input, o.Input),
		Output:       max(t.Output, o.Output),
		CacheRead:    max(t.CacheRead, o.CacheRead),
		CacheWrite5m: max(t.CacheWrite5m, o.CacheWrite5m),
		CacheWrite1h: max(t.CacheWrite1h, o.CacheWrite1h),
		WebSearch:    max(t.WebSearch, o.WebSearch),
	}
}

// IsZero reports whether every type is zero.
func (t Tokens) IsZero() bool { return t == Tokens{} }

// InputTotal is input + cache read + cache writes: what the GenAI
// semantic conventions call input tokens.
func (t Tokens) InputTotal() int64 { return t.Input + t.CacheRead + t.CacheWrite5m + t.CacheWrite1h }

// AdvisorTokensOf sums a line's advisor iterations by model, in the
// order the models first appear.
func AdvisorTokensOf(its []transcript.AdvisorUsage) []ModelTokens {
	var out []ModelTokens
	for _, it := range its {
		u := transcript.Usage{Input: it.Input, Output: it.Output, CacheRead: it.CacheRead,
			CacheCreation: it.CacheCreation, Ephemeral5m: it.Ephemeral5m, Ephemeral1h: it.Ephemeral1h}
		t := TokensOf(u)
		i := slices.IndexFunc(out, func(m ModelTokens) bool { return m.Model == it.Model })
		if i < 0 {
			out = append(out, ModelTokens{Model: it.Model, Tokens: t})
			continue
		}
		out[i].Tokens = out[i].Tokens.Add(t)
	}
	return out
}

// ModelTokens are tokens spent under one model.
type ModelTokens struct {
	Model  string
	Tokens Tokens
}

// Spenders: who spent a request's tokens (Attribution.Spender). A
// subagent's is SpenderSubagentPrefix and its agent type.
const (
	SpenderMain           = "main"
	SpenderWarmup         = "warmup"
	SpenderCompaction     = "compaction"
	SpenderInternal       = "internal"
	SpenderSubagentPrefix = "subagent:"
)

// Attribution says who spent a request and how it is priced: the values,
// besides project and model, that a request is counted under and that a
// later, better copy of it is counted under too.
type Attribution struct {
	// Spender is main, warmup, compaction, internal (other forks Claude
	// Code runs for itself) or subagent:<agent type>; "" for requests
	// restored from a state written before it was recorded.
	Spender string
	// Skill, Plugin and Effort are attributionSkill, attributionPlugin
	// and effort of the request's lines ("" when absent).
	Skill, Plugin, Effort string
	// MCPServer is attributionMcpServer ("" when absent).
	MCPServer string
	// Speed and Geo are usage.speed and usage.inference_geo.
	Speed, Geo string
}

// Where says where a unit sits: its session, its subagent (empty in the
// main conversation), and its turn (the prompt uuid; empty before the
// first prompt and inside subagents).
type Where struct {
	SessionID string
	AgentID   string
	TurnID    string
	// Project is the session's working directory (raw; the metrics mapping
	// turns it into a label).
	Project string
}

// Request is one API request (one message.id), emitted when it is
// finalized. A later, better copy of the same request is emitted again as
// an Update with Delta set and First false.
type Request struct {
	Where
	MessageID  string
	RequestID  string
	Model      string
	StopReason string // "" when the transcript never said
	Tokens     Tokens
	Attribution
	// Advisor holds the tokens of the advisor tool's inferences in this
	// request, by the advisor's model: not in Tokens, billed apart.
	Advisor []ModelTokens
	// CacheMiss is why the prompt cache missed for this request ("" when
	// the transcript does not say) and CacheMissTokens the input tokens
	// the miss re-billed (0 when not said).
	CacheMiss       string
	CacheMissTokens int64
	// Start is the time of the record that triggered the request (its
	// parent), End the time of its last line.
	Start, End time.Time
	// UsageAt is the time of the line whose usage counts (the first line
	// with the best counts; zero when unknown): where usage-block tools
	// (ccusage) place the request.
	UsageAt time.Time
	// Interrupted is set when the user interrupted this request.
	Interrupted bool
	ToolUseIDs  []string
	// Text and Thinking are set only when capture is on.
	Text     string
	Thinking string
}

// RequestUpdate is emitted when a request's counts grow after it was
// first emitted (a better copy arrived later). Delta holds the per-type
// growth under the request's original labels: Model and Where.Project are
// those it was first counted under; the rest of Where is where the copy
// was read.
type RequestUpdate struct {
	Where
	MessageID string
	Model     string
	Delta     Tokens
	// Attribution is the request's, as first counted.
	Attribution
	// Before is what was counted before this update (Before + Delta is
	// the request's count now), and Day the UTC day of the request (Unix
	// days; 0 when unknown): a price that depends on the whole request
	// or its date is taken as price(Before+Delta) - price(Before).
	Before Tokens
	Day    int32
	// Advisor is set when the update is of the advisor's inferences in
	// the request (Model is then the advisor's).
	Advisor bool
	// At is the time of the line that grew the request (zero when it
	// has none).
	At time.Time
}

// Outcome of a tool call.
type Outcome string

// Tool call outcomes.
const (
	OutcomeOK         Outcome = "ok"
	OutcomeError      Outcome = "error"
	OutcomeUnanswered Outcome = "unanswered"
)

// ToolCall is one tool_use and its tool_result, emitted when the result
// arrives or, unanswered, when the session is flushed.
type ToolCall struct {
	Where
	ToolUseID string
	Name      string
	// MessageID is the request that issued the call.
	MessageID  string
	Outcome    Outcome
	Start, End time.Time
	// HasDuration says both times were known and End >= Start.
	HasDuration bool
	// SubagentType is the Task/Agent input's subagent_type; AgentID the
	// subagent it ran (when known).
	SubagentType string
	Description  string
	AgentID      string
	// Background says the call asked to run its subagent in the
	// background: its result returns at once, the subagent works on.
	Background bool
	Input      string // capture only
	Output     string // capture only
	// Ext is the extension of the file an edit tool names; NotebookLines
	// a NotebookEdit's new_source lines; InputLines what an Edit,
	// MultiEdit or Write input adds and removes (transcript.InputLines);
	// Shell what a Bash command does.
	Ext           string
	NotebookLines int64
	InputLines    transcript.InputLines
	Shell         transcript.ShellFacts
	// Rejected says the user refused the call; Edit is what an edit
	// tool's result says it changed.
	Rejected bool
	Edit     transcript.EditResult
	// PRSeenBefore says the pull request a successful gh pr create
	// printed was already counted: from a pr-link record or another gh
	// pr create call read before it.
	PRSeenBefore bool
}

// PullRequest is a pull request a session linked (a pr-link record),
// emitted once per pull request across all transcripts, and not when a
// gh pr create call read before it printed the same pull request.
type PullRequest struct {
	Where
	At time.Time
}

// Duration is End-Start when known.
func (c *ToolCall) Duration() time.Duration {
	if !c.HasDuration {
		return 0
	}
	return c.End.Sub(c.Start)
}

// Turn is one human prompt and what followed it, emitted when the next
// prompt arrives or its session closes. A turn whose session closed (idle)
// and that goes on afterwards (a permission answered an hour later, a
// Claude Code turn_duration record) is emitted again when it closes once
// more, with Again set and Active holding only what it adds.
//
// Active time (Claude's, "cli") is what Claude Code itself reports for the
// turn where it wrote one: the sum of its system turn_duration records
// (Reported). Elsewhere it is measured (Work): the time from the prompt
// through the turn's work records (requests, tool results, tool progress,
// API retries, compactions), each gap between two of them counted up to
// WorkGapCap, since a longer silence is someone waiting (a permission
// prompt, a question), not Claude at work. Records that are not the turn's
// work (a /context typed days later, queue operations, summaries) never
// extend it. The value is a function of the turn's records in file order,
// so the same bytes give the same value read at once, in pieces or live.
type Turn struct {
	Where
	PromptUUID string
	// Number is the prompt's place in its session: 1 for the first.
	Number int
	// Start is the prompt's time, End the turn's last work record's.
	Start, End time.Time
	Prompt     string // capture only
	Requests   int
	// Closed is when the turn was known to be over: the next prompt's
	// time, or its end plus the idle timeout when its session closed
	// (zero when unknown). A live exporter counts the turn then.
	Closed time.Time
	// SincePrevious is the time from the end of the session's previous
	// turn (its last work record) to this prompt; 0 for the first turn,
	// or when either time is unknown or out of order.
	SincePrevious time.Duration

	// Work is the measured active time so far (see above); Reported the
	// sum of the turn's turn_duration records, when HasReported.
	Work        time.Duration
	Reported    time.Duration
	HasReported bool
	// Active is the active time this emission adds: the turn's active
	// time (Reported if known, else Work) less what earlier emissions
	// counted (Counted), never below zero.
	Active  time.Duration
	Counted time.Duration
	// Again says the turn was emitted before: count only Active.
	Again bool
}

// WorkGapCap is the most one silence between two work records of a turn
// adds to its measured active time. Calibrated on the real turns for
// which Claude Code wrote turn_duration: with this cap the measured time
// of those turns is within 10 % of Claude Code's figure on every tree
// (mapping/session TestMeasuredActiveTimeNearClaudeCodes).
const WorkGapCap = 60 * time.Second

// ActiveTime is the turn's active time as known now: Claude Code's own
// figure where it wrote one, else the measured one.
func (t *Turn) ActiveTime() time.Duration {
	if t.HasReported {
		return t.Reported
	}
	return t.Work
}

// work notes a work record of the turn at time at.
func (t *Turn) work(at time.Time) {
	if at.IsZero() || !at.After(t.End) {
		return
	}
	if !t.End.IsZero() {
		t.Work += min(at.Sub(t.End), WorkGapCap)
	}
	t.End = at
}

// Session is emitted once when a session is first seen (Start set, End
// zero) and once when it is flushed (End set).
type Session struct {
	Where
	Cwd, GitBranch, Version, Slug, Title string
	Start, End                           time.Time
	Ended                                bool
	Turns                                int
}

// Subagent is a subagent run, emitted once: when its launching tool call
// completes, when its first prompt shows it is a Warmup agent, or when
// its session closes.
type Subagent struct {
	Where
	AgentType   string
	Description string
	// ToolUseID is the Task/Agent call that launched it ("" when unknown).
	ToolUseID string
	Warmup    bool
	// Background says its launching call ran it in the background: the
	// subagent's work goes on after the call returned.
	Background bool
	Start, End time.Time
	Ended      bool
}

// Compaction is one compact_boundary.
type Compaction struct {
	Where
	UUID      string
	Trigger   string
	PreTokens int64
	Time      time.Time
}

// KindRetry is the APIError kind of a retried request (an api_error
// system record).
const KindRetry = "retry"

// APIError is an API error, a limit notice or a retry, read from
// <synthetic> lines and system records.
type APIError struct {
	Where
	// ID is the line's message id, else its uuid ("" when it has none).
	ID     string
	Kind   string
	Status int64
	Time   time.Time
	// Text is the notice text, capture only.
	Text string
	// UsageEntry says ccusage reads the line as a usage entry (of no
	// tokens): a <synthetic> line with message.usage whose speed is not
	// null.
	UsageEntry bool
	// Head is the start of the notice text (at most
	// transcript.TextHeadMax bytes), always set for <synthetic> lines:
	// Claude Code's own wording, which limit notices are read from.
	Head string
}

// Sink receives units. Methods are called synchronously from Add and
// Flush; the units must not be retained past the call unless copied.
type Sink interface {
	Session(*Session)
	Turn(*Turn)
	Request(*Request)
	RequestUpdate(*RequestUpdate)
	ToolCall(*ToolCall)
	Subagent(*Subagent)
	Compaction(*Compaction)
	APIError(*APIError)
	PullRequest(*PullRequest)
}
