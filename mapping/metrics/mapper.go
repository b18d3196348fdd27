package metrics

import (
	"strings"
	"time"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/limits"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/session"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/transcript"
)

// Token types: the values of the "type" label.
const (
	TypeInput        = "input"
	TypeOutput       = "output"
	TypeCacheRead    = "cache_read"
	TypeCacheWrite5m = "cache_write_5m"
	TypeCacheWrite1h = "cache_write_1h"
)

// TokenTypes lists the token types in exposition order.
func TokenTypes() []string {
	return []string{TypeInput, TypeOutput, TypeCacheRead, TypeCacheWrite5m, TypeCacheWrite1h}
}

// TokenCounts are a request's tokens by type: n[i] of TokenTypes()[i].
type TokenCounts [5]int64

// Observer receives observations with final label values. exporter/prom
// implements it; tests use fakes.
type Observer interface {
	// AddRequestTokens counts a request's tokens of every type (a zero
	// count too: it makes the series), under who spent them (spender),
	// and again by the skill, plugin, effort and speed it was made with
	// (attributed). One call for the five types: their series differ
	// only in their type, and are looked up together.
	AddRequestTokens(model, project, spender string, attributed Attributes, n TokenCounts)
	AddRequest(model, stopReason, project string)
	// AddCost counts under who spent it too, and AddAttributedCost by
	// the attributes, as AddRequestTokens does.
	AddCost(model, project, spender string, usd float64)
	AddAttributedCost(a Attributes, project string, usd float64)
	// AddCacheMiss counts a prompt-cache miss by reason and the input
	// tokens it re-billed.
	AddCacheMiss(reason, model, project string, missedTokens int64)
	AddUnpricedTokens(model string, n int64)
	AddWebSearches(model, project string, n int64)
	AddToolCall(tool, outcome, project string)
	// AddLinesOfCode counts lines an edit tool added or removed (typ
	// added or removed); AddEditDecision an edit tool call the user
	// accepted or rejected; AddCommit a git commit run by a shell call;
	// AddPullRequest a pull request, by how it was seen (source
	// gh_pr_create or pr_link).
	AddLinesOfCode(typ, tool, language, project string, n int64)
	AddEditDecision(tool, decision, language, project string)
	AddCommit(project string)
	AddPullRequest(source, project string)
	ObserveToolDuration(tool string, seconds float64)
	AddCompaction(trigger, project string)
	ObserveCompactionPreTokens(trigger string, tokens float64)
	AddSubagent(agentType, project string)
	AddWarmupAgent(project string)
	AddSession(project string)
	AddTurn(project string)
	// AddActiveTime adds seconds of active time: typ is cli (Claude
	// working on a turn) or user (the user between turns).
	AddActiveTime(typ, project string, seconds float64)
	AddAPIError(kind, project string)
	BlockObserver
	// Activity reports a session's newest record time, for the active
	// sessions gauge and the last-activity gauge.
	Activity(sessionID, project string, t time.Time)
}

// Timed is implemented by observers that keep when each observation
// happened (the one-shot history export): the mapper calls At with the
// time of each unit before its observations. The time is the unit's own
// (a request's is the line that completed it), never a clock's.
type Timed interface {
	At(t time.Time)
}

// Exemplar names the span of the request whose tokens and cost the
// observations that follow count: the trace and span ids as hex.
type Exemplar struct {
	TraceID, SpanID string
}

// Exemplary is implemented by observers that attach exemplars to the
// token and cost counters: the mapper calls Exemplar with the request's
// span (Config.Exemplar) before the request's observations, and with the
// zero Exemplar after them.
type Exemplary interface {
	Exemplar(e Exemplar)
}

// Attributes are the label values of the attributed series: what a
// request was made with. NoneValue stands for absent.
type Attributes struct {
	Skill, Plugin, MCPServer, Effort, Speed string
}

// NoneValue is the label value of an attribute a request did not have.
const NoneValue = "none"

// Config of the mapper.
type Config struct {
	Project ProjectLabel
	Prices  *Prices
	// MaxValues bounds the distinct values of each free-text label
	// (model, tool, project, agent_type, kind); values past the bound
	// are reported as "other". Zero: DefaultMaxValues.
	MaxValues int
	// MaxAttribution bounds the distinct skill and plugin names (the
	// first names seen keep their own value, later ones are "other").
	// Zero: DefaultMaxAttribution.
	MaxAttribution int
	// LimitZones resolve the zones of limit notices' reset times (zero:
	// a wall-time reset is unknown). The daemon passes time.LoadLocation
	// and the machine's zone, where Claude Code wrote the notice.
	LimitZones limits.Zones
	// Exemplar returns the span of a request when one was sent (the
	// exporter names only spans that left it), for an Exemplary observer.
	// Nil: no exemplars.
	Exemplar func(r *session.Request) (Exemplar, bool)
}

// DefaultMaxAttribution is the default bound of skill and plugin names
// (--metrics.attribution-limit).
const DefaultMaxAttribution = 20

// DefaultMaxValues is the default per-label bound.
const DefaultMaxValues = 256

// OtherValue replaces label values past the bound.
const OtherValue = "other"

// Mapper turns session units into observations with bounded label sets.
// It implements session.Sink. Session ids never become labels.
type Mapper struct {
	cfg    Config
	obs    Observer
	timed  Timed     // obs, when it keeps times
	ex     Exemplary // obs, when it takes exemplars and Config.Exemplar is set
	limits map[string]*limiter
	// projects is the basename label given to each working dir, owners
	// the working dir each label was given to: two dirs never share a
	// label, and a label once given never changes (it is saved in the
	// state file: ProjectLabels, RestoreProjectLabels).
	projects, owners map[string]string
	// byCwd is the label of each working dir as written, so that the
	// path is folded (projectKey) once, not on every observation.
	byCwd map[string]string
	// prices prices requests, each model name looked up once.
	prices *PriceMemo
}

// NewMapper returns a mapper sending observations to obs.
func NewMapper(cfg Config, obs Observer) *Mapper {
	if cfg.Project == "" {
		cfg.Project = ProjectBasename
	}
	if cfg.Prices == nil {
		cfg.Prices = DefaultPrices()
	}
	if cfg.MaxValues <= 0 {
		cfg.MaxValues = DefaultMaxValues
	}
	if cfg.MaxAttribution <= 0 {
		cfg.MaxAttribution = DefaultMaxAttribution
	}
	timed, _ := obs.(Timed)
	var ex Exemplary
	if cfg.Exemplar != nil {
		ex, _ = obs.(Exemplary)
	}
	return &Mapper{cfg: cfg, obs: obs, timed: timed, ex: ex, limits: map[string]*limiter{},
		projects: map[string]string{}, owners: map[string]string{}, byCwd: map[string]string{},
		prices: cfg.Prices.Memo()}
}

// at tells a timed observer when the next observations happened.
func (m *Mapper) at(t time.Time) {
	if m.timed != nil {
		m.timed.At(t)
	}
}

// firstKnown is the first of ts that is not zero.
func firstKnown(ts ...time.Time) time.Time {
	for _, t := range ts {
		if !t.IsZero() {
			return t
		}
	}
	return time.Time{}
}

type limiter struct {
	max  int
	seen map[string]struct{}
	// last is the value let through last: request after request passes
	// the same model, stop reason, speed (most often the very same
	// string, which compares by its pointer), so it is not hashed again.
	last string
}

// bound returns v, or OtherValue once the label has max other values.
func (m *Mapper) bound(label, v string) string {
	l := m.limits[label]
	if l == nil {
		max := m.cfg.MaxValues
		if label == "skill" || label == "plugin" || label == "mcp_server" {
			max = m.cfg.MaxAttribution
		}
		l = &limiter{max: max, seen: map[string]struct{}{}}
		m.limits[label] = l
	}
	// ("" is last before any value was let through: it takes the set.)
	if v == l.last && v != "" {
		return v
	}
	if _, ok := l.seen[v]; ok {
		l.last = v
		return v
	}
	if len(l.seen) >= l.max {
		return OtherValue
	}
	l.seen[v] = struct{}{}
	l.last = v
	return v
}

func (m *Mapper) model(s string) string {
	if s == "" {
		s = "unknown"
	}
	return m.bound("model", s)
}

// Session implements session.Sink.
func (m *Mapper) Session(s *session.Session) {
	m.at(firstKnown(s.Start, s.End))
	p := m.Project(s.Project)
	if !s.Ended {
		m.obs.AddSession(p)
	}
	if !s.End.IsZero() {
		m.obs.Activity(s.SessionID, p, s.End)
	}
}

// UserTimeCap bounds the user time counted between two turns: a longer
// gap is someone away, not at work, and counts as this much.
const UserTimeCap = 5 * time.Minute

// Active time types (the type label of active_time_seconds_total), as
// Claude Code's own active_time.total names them.
const (
	ActiveCLI  = "cli"
	ActiveUser = "user"
)

// Turn implements session.Sink. Active time: Claude's (cli) is the turn's
// (Claude Code's turn_duration where it wrote one, else measured; see
// session.Turn), added as the turn closes and again if it goes on after
// its session went idle; the user's is the gap from the previous turn's
// last work to this prompt, capped at UserTimeCap.
func (m *Mapper) Turn(t *session.Turn) {
	// A turn counts when it is over, as a live exporter counts it.
	m.at(firstKnown(t.Closed, t.End, t.Start))
	p := m.Project(t.Project)
	if !t.Again {
		m.obs.AddTurn(p)
	}
	if t.Active > 0 {
		m.obs.AddActiveTime(ActiveCLI, p, t.Active.Seconds())
	}
	if !t.Again && t.SincePrevious > 0 {
		m.obs.AddActiveTime(ActiveUser, p, min(t.SincePrevious, UserTimeCap).Seconds())
	}
}

// Request implements session.Sink.
func (m *Mapper) Request(r *session.Request) {
	m.at(RequestTime(r))
	p := m.Project(r.Project)
	model := m.model(r.Model)
	stop := r.StopReason
	if stop == "" {
		stop = "none"
	}
	m.obs.AddRequest(model, m.bound("stop_reason", stop), p)
	spender, attrs := m.spender(r.Spender), m.attributes(r.Attribution)
	at, mod := RequestTime(r), ModifiersOf(r.Attribution)
	if m.ex != nil {
		if e, ok := m.cfg.Exemplar(r); ok {
			m.ex.Exemplar(e)
			defer m.ex.Exemplar(Exemplar{})
		}
	}
	usd, ok := m.prices.RequestCost(r.Model, at, r.Tokens, mod)
	m.tokens(model, p, spender, attrs, r.Tokens, usd, ok)
	blockUSD := priced(usd, ok)
	for _, adv := range r.Advisor {
		usd, ok := m.prices.RequestCost(adv.Model, at, adv.Tokens, mod)
		m.tokens(m.model(adv.Model), p, spender, attrs, adv.Tokens, usd, ok)
		blockUSD += priced(usd, ok)
	}
	m.requestBlockUsage(r, blockUSD)
	if r.CacheMiss != "" {
		m.obs.AddCacheMiss(m.bound("reason", r.CacheMiss), model, p, r.CacheMissTokens)
	}
	if !r.End.IsZero() {
		m.obs.Activity(r.SessionID, p, r.End)
	}
}

// RequestTime is the time a request is priced at: the line that
// completed it.
func RequestTime(r *session.Request) time.Time {
	if !r.End.IsZero() {
		return r.End
	}
	return r.Start
}

// ModifiersOf are the price modifiers a request was made with.
func ModifiersOf(a session.Attribution) Modifiers {
	return Modifiers{Speed: a.Speed, Geo: a.Geo}
}

// DayTime is the start of a Unix day (the zero time for day 0, unknown).
func DayTime(day int32) time.Time {
	if day == 0 {
		return time.Time{}
	}
	return time.Unix(int64(day)*86400, 0).UTC()
}

// RequestUpdate implements session.Sink. The growth is priced as the
// whole request after it less the request before: a prompt-length tier
// crossed by the growth reprices all of the request's tokens.
func (m *Mapper) RequestUpdate(u *session.RequestUpdate) {
	// The growth belongs to the request's day: the line that grew it,
	// held within that day (a copy written later counts at the day's
	// last instant, never before the request).
	when := u.At
	if u.Day != 0 {
		start := DayTime(u.Day)
		end := start.Add(24*time.Hour - time.Millisecond)
		switch {
		case when.IsZero() || when.After(end):
			when = end
		case when.Before(start):
			when = start
		}
	}
	m.at(when)
	usd, ok := m.prices.UpdateCost(u.Model, DayTime(u.Day), u.Before, u.Delta, ModifiersOf(u.Attribution))
	m.tokens(m.model(u.Model), m.Project(u.Project), m.spender(u.Spender), m.attributes(u.Attribution), u.Delta, usd, ok)
	// The growth joins the request's block where the line that grew it
	// falls (a request's lines are seconds apart).
	m.obs.AddBlockUsage(when, false, blockTokens(u.Delta), priced(usd, ok))
}

// priced is a cost, 0 for a model without a price.
func priced(usd float64, ok bool) float64 {
	if !ok {
		return 0
	}
	return usd
}

// spender is the spender label: a subagent's type is bounded like every
// agent type.
func (m *Mapper) spender(s string) string {
	switch {
	case s == "":
		// Counted before the exporter recorded who spent requests.
		return "unknown"
	case strings.HasPrefix(s, session.SpenderSubagentPrefix):
		return session.SpenderSubagentPrefix + m.bound("agent_type", strings.TrimPrefix(s, session.SpenderSubagentPrefix))
	}
	return s
}

func (m *Mapper) attributes(a session.Attribution) Attributes {
	or := func(label, v string) string {
		if v == "" {
			return NoneValue
		}
		return m.bound(label, v)
	}
	speed := a.Speed
	if speed == "" {
		speed = "standard"
	}
	return Attributes{Skill: or("skill", a.Skill), Plugin: or("plugin", a.Plugin), MCPServer: or("mcp_server", a.MCPServer),
		Effort: or("effort", a.Effort),
		Speed:  m.bound("speed", speed)}
}

func (m *Mapper) tokens(model, project, spender string, attrs Attributes, t session.Tokens, usd float64, priced bool) {
	m.obs.AddRequestTokens(model, project, spender, attrs, TokenCounts{t.Input, t.Output, t.CacheRead, t.CacheWrite5m, t.CacheWrite1h})
	if t.WebSearch > 0 {
		m.obs.AddWebSearches(model, project, t.WebSearch)
	}
	if priced {
		m.obs.AddCost(model, project, spender, usd)
		m.obs.AddAttributedCost(attrs, project, usd)
	} else {
		m.obs.AddUnpricedTokens(model, t.Input+t.Output+t.CacheRead+t.CacheWrite5m+t.CacheWrite1h)
	}
}

// ToolCall implements session.Sink.
func (m *Mapper) ToolCall(c *session.ToolCall) {
	m.at(firstKnown(c.End, c.Start))
	tool := m.bound("tool", c.Name)
	p := m.Project(c.Project)
	m.obs.AddToolCall(tool, string(c.Outcome), p)
	if c.HasDuration && c.Outcome != session.OutcomeUnanswered {
		m.obs.ObserveToolDuration(tool, c.Duration().Seconds())
	}
	if c.Outcome == session.OutcomeUnanswered {
		return
	}
	if IsEditTool(c.Name) {
		lang := LanguageOf(c.Ext)
		if decision := EditDecision(c); decision != "" {
			m.obs.AddEditDecision(tool, decision, lang, p)
		}
		if added, removed := EditLines(c); added > 0 || removed > 0 {
			m.obs.AddLinesOfCode(LinesAdded, tool, lang, p, added)
			m.obs.AddLinesOfCode(LinesRemoved, tool, lang, p, removed)
		}
	}
	if c.Name == "Bash" && c.Outcome == session.OutcomeOK {
		if c.Shell&transcript.ShellCommit != 0 {
			m.obs.AddCommit(p)
		}
		if c.Shell&transcript.ShellPRCreate != 0 && !c.PRSeenBefore {
			m.obs.AddPullRequest(PRCreated, p)
		}
	}
}

// Edit decisions, lines-of-code types and pull-request sources: label
// values.
const (
	DecisionAccept = "accept"
	DecisionReject = "reject"
	LinesAdded     = "added"
	LinesRemoved   = "removed"
	PRCreated      = "gh_pr_create"
	PRLinked       = "pr_link"
)

// IsEditTool reports whether a tool edits files: its calls are edit
// decisions and its results lines of code.
func IsEditTool(name string) bool {
	switch name {
	case "Edit", "MultiEdit", "Write", "NotebookEdit":
		return true
	}
	return false
}

// EditDecision is the user's decision on an answered edit-tool call:
// reject when its result is Claude Code's refusal text, accept when it
// succeeded, none ("") for any other error. Claude Code checks an edit
// (file read first, text to replace found, …) before it asks the user,
// and a call cancelled with its siblings never reached the user: such
// calls count in tool_calls_total{outcome="error"} only.
func EditDecision(c *session.ToolCall) string {
	switch {
	case c.Rejected:
		return DecisionReject
	case c.Outcome == session.OutcomeOK:
		return DecisionAccept
	}
	return ""
}

// EditLines are the lines an edit tool call added and removed: from its
// result's structuredPatch (+ and - lines) or a created file's lines;
// without them (no toolUseResult: subagents of Claude Code 2.1.2xx), from
// its input: a NotebookEdit's new_source, an Edit, MultiEdit or Write by
// the rule of transcript.InputLines. Nothing for a rejected or failed
// call.
func EditLines(c *session.ToolCall) (added, removed int64) {
	if c.Rejected || c.Outcome != session.OutcomeOK {
		return 0, 0
	}
	switch {
	case c.Edit.Has:
		return c.Edit.Added, c.Edit.Removed
	case c.Name == "NotebookEdit":
		return c.NotebookLines, 0
	case c.InputLines.Has:
		return c.InputLines.Added, c.InputLines.Removed
	}
	return 0, 0
}

// PullRequest implements session.Sink.
func (m *Mapper) PullRequest(pr *session.PullRequest) {
	m.at(pr.At)
	m.obs.AddPullRequest(PRLinked, m.Project(pr.Project))
}

// Subagent implements session.Sink.
func (m *Mapper) Subagent(s *session.Subagent) {
	m.at(firstKnown(s.End, s.Start))
	p := m.Project(s.Project)
	if s.Warmup {
		m.obs.AddWarmupAgent(p)
		return
	}
	m.obs.AddSubagent(m.bound("agent_type", s.AgentType), p)
}

// Compaction implements session.Sink.
func (m *Mapper) Compaction(c *session.Compaction) {
	m.at(c.Time)
	trig := m.bound("trigger", c.Trigger)
	m.obs.AddCompaction(trig, m.Project(c.Project))
	// A context size outside [0, MaxUsageTokens] is not one (a negative
	// one would lower the histogram's sum): the compaction counts, its
	// size is not observed.
	if c.PreTokens >= 0 && c.PreTokens <= transcript.MaxUsageTokens {
		m.obs.ObserveCompactionPreTokens(trig, float64(c.PreTokens))
	}
}

// APIError implements session.Sink.
func (m *Mapper) APIError(e *session.APIError) {
	m.at(e.Time)
	m.obs.AddAPIError(m.bound("kind", e.Kind), m.Project(e.Project))
	m.apiErrorBlockUsage(e)
}
