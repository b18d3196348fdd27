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
	AttrToolName              = "gen_ai.tool.name"
	AttrToolCallID            = "gen_ai.tool.call.id"
	AttrToolType              = "gen_ai.tool.type"
	AttrAgentID               = "gen_ai.agent.id"
	AttrAgentName             = "gen_ai.agent.name"
	AttrAgentDescription      = "gen_ai.agent.description"
	AttrConversationID        = "gen_ai.conversation.id"
	AttrErrorType             = "error.type"
	AttrHTTPStatusCode        = "http.response.status_code"

	// Claude Code: raw counts and transcript facts.
	AttrRawInputTokens      = "claude_code.usage.input_tokens"
	AttrCacheWrite5mTokens  = "claude_code.usage.cache_write_5m_tokens"
	AttrCacheWrite1hTokens  = "claude_code.usage.cache_write_1h_tokens"
	AttrRequestID           = "claude_code.request.id"
	AttrRequestInterrupted  = "claude_code.request.interrupted"
	AttrSessionID           = "claude_code.session.id"
	AttrSessionTitle        = "claude_code.session.title"
	AttrSessionTurns        = "claude_code.session.turns"
	AttrProjectPath         = "claude_code.project.path"
	AttrGitBranch           = "claude_code.git.branch"
	AttrVersion             = "claude_code.version"
	AttrSlug                = "claude_code.slug"
	AttrPromptID            = "claude_code.prompt.id"
	AttrTurnRequests        = "claude_code.turn.requests"
	AttrToolOutcome         = "claude_code.tool.outcome"
	AttrToolSubagentType    = "claude_code.tool.subagent_type"
	AttrAgentWarmup         = "claude_code.agent.warmup"
	AttrAgentStandIn        = "claude_code.agent.stand_in"
	AttrCompactionTrigger   = "claude_code.compaction.trigger"
	AttrCompactionPreTokens = "claude_code.compaction.pre_tokens"
	AttrAPIErrorKind        = "claude_code.api_error.kind"
	AttrEventsDropped       = "claude_code.events.dropped"

	// Captured content (opt-in per kind with --traces.capture, each cut to
	// --traces.capture-max-bytes). Plain strings rather than the
	// structured gen_ai.input.messages / gen_ai.output.messages: the
	// transcript keeps text per block, not the request's message list.
	AttrPrompt     = "claude_code.prompt"      // prompts: the human prompt, on the turn span
	AttrResponse   = "claude_code.response"    // responses: the request's text, on the chat span
	AttrThinking   = "claude_code.thinking"    // thinking: the request's thinking, on the chat span
	AttrToolInput  = "claude_code.tool.input"  // tools: tool_use input JSON, on the tool span
	AttrToolOutput = "claude_code.tool.output" // tools: tool_result content, on the tool span
	AttrErrorText  = "claude_code.api_error.text"

	// Attribute values.
	ProviderAnthropic  = "anthropic"
	OperationChat      = "chat"
	OperationTool      = "execute_tool"
	OperationAgent     = "invoke_agent"
	ToolTypeFunction   = "function"
	MainAgentName      = "claude-code"
	ErrorTypeToolError = "tool_error"

	// Span names (chat, execute_tool and invoke_agent spans add the model,
	// tool or agent name after a space).
	SpanSession    = "session"
	SpanCompaction = "compaction"

	// Event names.
	EventAPIError    = "claude_code.api_error"
	EventInterrupted = "claude_code.request.interrupted"
)
