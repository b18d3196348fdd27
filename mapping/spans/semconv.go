package spans

// The one table of attribute, span and event names. The gen_ai.* names
// follow the OpenTelemetry GenAI semantic conventions v1.41; a rename in
// the conventions is a one-line change here. Raw Anthropic counts and
// everything specific to Claude Code live under claude_code.*.
const (
	// GenAI semantic conventions.
	AttrOperationName         = "gen_ai.operation.name"
	AttrProviderName          = "gen_ai.provider.name"
	AttrRequestModel          = "gen_ai.request.model"
	AttrResponseModel         = "gen_ai.response.model"
	AttrResponseID            = "gen_ai.response.id"
	AttrResponseFinishReasons = "gen_ai.response.finish_reasons"
	AttrUsageInputTokens      = "gen_ai.usage.input_tokens"
	AttrUsageOutputTokens     = "gen_ai.usage.output_tokens"
	AttrUsageCacheReadTokens  = "gen_ai.usage.cache_read.input_tokens"
	AttrUsageCacheWriteTokens = "gen_ai.usage.cache_creation.input_tokens"
	// gen_ai.usage.cost: the request's estimated cost in USD. Not in the
	// conventions yet; Langfuse takes a supplied cost from it.
	AttrUsageCost          = "gen_ai.usage.cost"
	AttrToolName           = "gen_ai.tool.name"
	AttrToolCallID         = "gen_ai.tool.call.id"
	AttrToolType           = "gen_ai.tool.type"
	AttrAgentID            = "gen_ai.agent.id"
	AttrAgentName          = "gen_ai.agent.name"
	AttrAgentDescription   = "gen_ai.agent.description"
	AttrConversationID     = "gen_ai.conversation.id"
	AttrInputMessages      = "gen_ai.input.messages"
	AttrOutputMessages     = "gen_ai.output.messages"
	AttrSystemInstructions = "gen_ai.system_instructions"
	AttrToolCallArguments  = "gen_ai.tool.call.arguments"
	AttrToolCallResult     = "gen_ai.tool.call.result"
	// session.id (general session conventions): GenAI tools such as
	// Langfuse and Phoenix group traces by it.
	AttrSessionID = "session.id"
	// input.value and output.value (OpenInference): the first input and
	// last output GenAI tools (Phoenix, Langfuse) show for a trace and a
	// session, read from the root span. Plain text, with capture only.
	AttrInputValue  = "input.value"
	AttrOutputValue = "output.value"
	// ResourceProjectName (OpenInference, a resource attribute): the
	// project Arize Phoenix files spans under ("default" without it).
	ResourceProjectName = "openinference.project.name"
	AttrErrorType       = "error.type"
	AttrHTTPStatusCode  = "http.response.status_code"

	// Claude Code: raw counts and transcript facts. Root and turn spans
	// carry their totals under claude_code.usage.* only (input, output,
	// cache read, cache writes by TTL); chat spans carry the first and the
	// cache writes beside gen_ai.usage.*.
	AttrRawInputTokens       = "claude_code.usage.input_tokens"
	AttrTotalOutputTokens    = "claude_code.usage.output_tokens"
	AttrTotalCacheReadTokens = "claude_code.usage.cache_read_tokens"
	AttrCacheWrite5mTokens   = "claude_code.usage.cache_write_5m_tokens"
	AttrCacheWrite1hTokens   = "claude_code.usage.cache_write_1h_tokens"
	AttrRequestID            = "claude_code.request.id"
	AttrRequestInterrupted   = "claude_code.request.interrupted"
	AttrSessionTitle         = "claude_code.session.title"
	AttrSessionTurns         = "claude_code.session.turns"
	// The project in the form of the metrics' project label: the
	// working directory's basename by default, the full path on request.
	AttrProject             = "claude_code.project"
	AttrPromptNumber        = "claude_code.prompt.number"
	AttrCostUSD             = "claude_code.cost.usd"
	AttrUnpricedTokens      = "claude_code.cost.unpriced_tokens"
	AttrGitBranch           = "claude_code.git.branch"
	AttrVersion             = "claude_code.version"
	AttrSlug                = "claude_code.slug"
	AttrPromptID            = "claude_code.prompt.id"
	AttrTurnRequests        = "claude_code.turn.requests"
	AttrToolOutcome         = "claude_code.tool.outcome"
	AttrToolSubagentType    = "claude_code.tool.subagent_type"
	AttrAgentWarmup         = "claude_code.agent.warmup"
	AttrAgentBackground     = "claude_code.agent.background"
	AttrAgentStandIn        = "claude_code.agent.stand_in"
	AttrCompactionTrigger   = "claude_code.compaction.trigger"
	AttrCompactionPreTokens = "claude_code.compaction.pre_tokens"
	AttrAPIErrorKind        = "claude_code.api_error.kind"
	AttrEventsDropped       = "claude_code.events.dropped"
	// Who spent a request and how it was made (see session.Attribution),
	// why its prompt cache missed, and its advisor's tokens.
	AttrSpender           = "claude_code.spender"
	AttrSpeed             = "claude_code.request.speed"
	AttrEffort            = "claude_code.request.effort"
	AttrSkill             = "claude_code.skill.name"
	AttrPlugin            = "claude_code.plugin.name"
	AttrMCPServer         = "claude_code.mcp_server.name"
	AttrCacheMissReason   = "claude_code.cache_miss.reason"
	AttrCacheMissTokens   = "claude_code.cache_miss.input_tokens"
	AttrAdvisorModel      = "claude_code.advisor.model"
	AttrAdvisorOutput     = "claude_code.advisor.output_tokens"
	AttrAdvisorInputTotal = "claude_code.advisor.input_tokens"

	// Captured content (opt-in per kind with --traces.capture, each cut to
	// --traces.capture-max-bytes) goes in the GenAI attributes above:
	// prompts in gen_ai.input.messages (turn span), responses and
	// thinking in gen_ai.output.messages (chat span, thinking as a
	// reasoning part), tool input and output in gen_ai.tool.call.arguments
	// and gen_ai.tool.call.result (tool span). The transcript keeps no
	// system prompt: gen_ai.system_instructions is never set.
	AttrErrorText = "claude_code.api_error.text"

	// Attribute values.
	ProviderAnthropic  = "anthropic"
	OperationSession   = "invoke_agent" // the root: the whole agent session
	OperationCompact   = "chat"         // a compaction is a summarising request
	OperationChat      = "chat"
	OperationTool      = "execute_tool"
	OperationAgent     = "invoke_agent"
	ToolTypeFunction   = "function"
	MainAgentName      = "claude-code"
	DefaultAgentType   = "general-purpose" // what Claude Code runs an Agent/Task call without subagent_type as
	ErrorTypeToolError = "tool_error"

	// Span names (chat, execute_tool and invoke_agent spans add the model,
	// tool or agent name after a space; the root adds the project and the
	// session id's first 8 characters, a turn its prompt number).
	SpanSession    = "session"
	SpanTurn       = "turn"
	SpanCompaction = "compaction"

	// Event names.
	EventAPIError    = "claude_code.api_error"
	EventInterrupted = "claude_code.request.interrupted"
)
