package spans

import (
	"encoding/json"
	"strings"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/metrics"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/session"
)

// Provider returns gen_ai.provider.name for a model: anthropic for a
// Claude model (its id, after the provider prefixes and gateway spellings
// the price table strips, starts with "claude"), else "" (omitted). A
// gateway model (glm, MiniMax, qwen, ...) names no provider that the
// GenAI conventions list: the request went to whatever endpoint Claude
// Code was pointed at.
func Provider(model string) string {
	if strings.HasPrefix(metrics.NormalizeModel(model), "claude") {
		return ProviderAnthropic
	}
	return ""
}

// usageAttrs appends the token counts of one request, t: the GenAI usage
// attributes (input tokens include cache reads and writes) and the raw
// Anthropic counts by type. Only chat spans carry gen_ai.usage.*: GenAI
// tools (Langfuse) add them up over every span of a trace, so a parent
// repeating its children's totals under the same keys would count them
// again.
func usageAttrs(attrs []Attr, t session.Tokens) []Attr {
	return append(attrs,
		Int(AttrUsageInputTokens, t.InputTotal()),
		Int(AttrUsageOutputTokens, t.Output),
		Int(AttrUsageCacheReadTokens, t.CacheRead),
		Int(AttrUsageCacheWriteTokens, t.CacheWrite5m+t.CacheWrite1h),
		Int(AttrRawInputTokens, t.Input),
		Int(AttrCacheWrite5mTokens, t.CacheWrite5m),
		Int(AttrCacheWrite1hTokens, t.CacheWrite1h),
	)
}

// totalUsageAttrs appends the token totals of a root or turn span, raw
// Anthropic counts by type under claude_code.usage.* (never
// gen_ai.usage.*: see usageAttrs).
func totalUsageAttrs(attrs []Attr, t session.Tokens) []Attr {
	return append(attrs,
		Int(AttrRawInputTokens, t.Input),
		Int(AttrTotalOutputTokens, t.Output),
		Int(AttrTotalCacheReadTokens, t.CacheRead),
		Int(AttrCacheWrite5mTokens, t.CacheWrite5m),
		Int(AttrCacheWrite1hTokens, t.CacheWrite1h),
	)
}

// totals sums the requests under a root or turn span: tokens by type,
// estimated cost, tokens of unpriced models and the provider they share.
type totals struct {
	tokens   session.Tokens
	requests int
	usd      float64
	unpriced int64
	prov     string
	mixed    bool

	// A turn's span, held until want requests were summed, and the time
	// range of the spans sent in the turn meanwhile (the span covers it).
	span   Span
	want   int
	held   bool
	extent timeRange

	// last is the text of the latest main-thread response summed (with
	// response capture only): the turn's output.value.
	last string
}

func (t *totals) add(b *Builder, r *session.Request, tok session.Tokens) {
	model := r.Model
	t.tokens = t.tokens.Add(tok)
	if b.cfg.Price != nil {
		if usd, ok := b.cfg.Price(model, tok, r); ok {
			t.usd += usd
		} else {
			t.unpriced += tok.InputTotal() + tok.Output
		}
	}
	p := Provider(model)
	if t.requests == 0 {
		t.prov = p
	} else if p != t.prov {
		t.mixed = true
	}
	t.requests++
}

// addAdvisor adds a request's advisor tokens: spent, not a request.
func (t *totals) addAdvisor(b *Builder, r *session.Request, adv session.ModelTokens) {
	t.tokens = t.tokens.Add(adv.Tokens)
	if b.cfg.Price != nil {
		if usd, ok := b.cfg.Price(adv.Model, adv.Tokens, r); ok {
			t.usd += usd
		} else {
			t.unpriced += adv.Tokens.InputTotal() + adv.Tokens.Output
		}
	}
}

// provider is the provider all the summed requests share, else "".
func (t *totals) provider() string {
	if t.mixed {
		return ""
	}
	return t.prov
}

// totalAttrs appends the token totals and, with a price table, the
// estimated cost (and the tokens it leaves out for want of a price).
func (b *Builder) totalAttrs(attrs []Attr, t *totals) []Attr {
	attrs = totalUsageAttrs(attrs, t.tokens)
	if b.cfg.Price != nil {
		attrs = append(attrs, Float(AttrCostUSD, t.usd))
		if t.unpriced > 0 {
			attrs = append(attrs, Int(AttrUnpricedTokens, t.unpriced))
		}
	}
	return attrs
}

// The JSON structure of gen_ai.input.messages and gen_ai.output.messages
// (GenAI semantic conventions: a list of messages, each a role and parts;
// an output message has a finish reason).
type (
	genaiMessage struct {
		Role         string      `json:"role"`
		Parts        []genaiPart `json:"parts"`
		FinishReason string      `json:"finish_reason,omitempty"` // required on output messages
	}
	genaiPart struct {
		Type    string `json:"type"`
		Content string `json:"content"`
	}
)

// Part types and roles.
const (
	PartText      = "text"
	PartReasoning = "reasoning"
	RoleUser      = "user"
	RoleAssistant = "assistant"
)

func marshalMessages(m []genaiMessage) string {
	b, err := json.Marshal(m)
	if err != nil { // strings only: cannot happen
		return "[]"
	}
	return string(b)
}

// inputMessages is gen_ai.input.messages for a human prompt.
func inputMessages(prompt string) string {
	return marshalMessages([]genaiMessage{{Role: RoleUser, Parts: []genaiPart{{Type: PartText, Content: prompt}}}})
}

// outputMessages is gen_ai.output.messages for a response: its thinking
// as a reasoning part, then its text.
func outputMessages(thinking, text, stopReason string) string {
	m := genaiMessage{Role: RoleAssistant, FinishReason: FinishReason(stopReason)}
	if thinking != "" {
		m.Parts = append(m.Parts, genaiPart{Type: PartReasoning, Content: thinking})
	}
	if text != "" {
		m.Parts = append(m.Parts, genaiPart{Type: PartText, Content: text})
	}
	return marshalMessages([]genaiMessage{m})
}

// FinishReasonUnknown is the finish reason of a response whose stop
// reason the transcript does not hold (a streamed line written before the
// response ended, an interrupted request). The conventions list no value
// for it (their enum is stop, length, content_filter, tool_call, error)
// but require finish_reason on every output message and accept any
// string: a tool that validates the payload (Arize Phoenix) drops all of
// it when one message lacks the field.
const FinishReasonUnknown = "unknown"

// FinishReason maps an Anthropic stop_reason to the GenAI conventions'
// finish reason (stop, length, tool_call, content_filter); others pass
// as they are, and none is FinishReasonUnknown.
func FinishReason(stop string) string {
	switch stop {
	case "":
		return FinishReasonUnknown
	case "end_turn", "stop_sequence", "pause_turn":
		return "stop"
	case "max_tokens", "model_context_window_exceeded":
		return "length"
	case "tool_use":
		return "tool_call"
	case "refusal":
		return "content_filter"
	}
	return stop
}
