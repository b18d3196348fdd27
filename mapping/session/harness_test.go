package session

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/transcript"
)

// This file holds the harness of the rule tests: line builders that write
// JSONL lines with the field sets real Claude Code lines carry, a Sink
// that records copies of every unit, and a feeder that decodes lines with
// transcript.NewDecoder (reusing one Record, as the daemon does) and
// hands them to an Assembler with `now` values the test controls.

// Ids and paths shaped like real ones.
const (
	sessA   = "a8b4f8bf-44f6-4d91-aa8a-3ed5c907c0cc"
	sessB   = "c001e9a4-06eb-4ec5-b06a-75d7038be965"
	projDir = "X--02-JZS-06-CMMCUnlock"
	cwdA    = `X:\02_JZS\06_CMMCUnlock`

	modelSonnet = "claude-sonnet-4-6"
	modelOpus   = "claude-opus-4-6"
	modelHaiku  = "claude-haiku-4-5-20251001"
)

// t0 is the base of every timestamp in the tests.
var t0 = time.Date(2026, 4, 27, 16, 40, 0, 0, time.UTC)

// at is t0 plus sec seconds.
func at(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }

// ts is the transcript form of at(sec).
func ts(sec int) string { return at(sec).Format("2006-01-02T15:04:05.000Z") }

// Paths relative to projects/.
func sessionPath(id string) string { return projDir + "/" + id + ".jsonl" }
func subagentPath(sess, agent string) string {
	return projDir + "/" + sess + "/subagents/agent-" + agent + ".jsonl"
}
func legacyAgentPath(agent string) string { return projDir + "/agent-" + agent + ".jsonl" }

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func orNull(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// envelope is the set of fields every user/assistant/system line has.
func envelope(kind, uuid, parent, session string, sec int, agent string, sidechain bool) map[string]any {
	if session == "" {
		session = sessA
	}
	m := map[string]any{
		"parentUuid":  orNull(parent),
		"isSidechain": sidechain || agent != "",
		"userType":    "external",
		"entrypoint":  "cli",
		"cwd":         cwdA,
		"sessionId":   session,
		"version":     "2.1.119",
		"gitBranch":   "main",
		"type":        kind,
		"uuid":        uuid,
		"timestamp":   ts(sec),
	}
	if agent != "" {
		m["agentId"] = agent
	}
	return m
}

// A is an assistant line: one content block of one API response.
type A struct {
	UUID, Parent, Session string
	Sec                   int
	Msg, Req              string
	Model                 string // default modelSonnet
	Stop                  string // "" writes stop_reason null
	In, Out, Read, Write  int64
	// W5m and W1h are the cache_creation breakdown. When both are zero
	// and NoBreakdown is false, the breakdown puts all of Write in 5m,
	// as Claude Code writes it.
	W5m, W1h    int64
	NoBreakdown bool
	// Blocks is the raw content array; default one text block.
	Blocks string
	// Agent makes it a sidechain line of that subagent.
	Agent string
}

func (a A) String() string {
	m := envelope("assistant", a.UUID, a.Parent, a.Session, a.Sec, a.Agent, false)
	if a.Req != "" {
		m["requestId"] = a.Req
	}
	model := a.Model
	if model == "" {
		model = modelSonnet
	}
	usage := map[string]any{
		"input_tokens":                a.In,
		"cache_creation_input_tokens": a.Write,
		"cache_read_input_tokens":     a.Read,
		"output_tokens":               a.Out,
		"server_tool_use":             map[string]any{"web_search_requests": 0, "web_fetch_requests": 0},
		"service_tier":                "standard",
	}
	if !a.NoBreakdown {
		w5, w1 := a.W5m, a.W1h
		if w5 == 0 && w1 == 0 {
			w5 = a.Write
		}
		usage["cache_creation"] = map[string]any{"ephemeral_1h_input_tokens": w1, "ephemeral_5m_input_tokens": w5}
	}
	blocks := a.Blocks
	if blocks == "" {
		blocks = "[" + textB("Let me look at the repository first.") + "]"
	}
	m["message"] = map[string]any{
		"model":         model,
		"id":            a.Msg,
		"type":          "message",
		"role":          "assistant",
		"content":       json.RawMessage(blocks),
		"stop_reason":   orNull(a.Stop),
		"stop_sequence": nil,
		"usage":         usage,
	}
	return mustJSON(m)
}

// U is a user line: a prompt, a tool result or plumbing.
type U struct {
	UUID, Parent, Session string
	Sec                   int
	// Text is a string content; Blocks a raw content array (wins).
	Text                                         string
	Blocks                                       string
	Meta, CompactSummary, VisibleOnly, Sidechain bool
	// Agent makes it a sidechain line of that subagent.
	Agent string
	// ToolUseResult is the raw toolUseResult value.
	ToolUseResult string
}

func (u U) String() string {
	m := envelope("user", u.UUID, u.Parent, u.Session, u.Sec, u.Agent, u.Sidechain)
	var content any = u.Text
	if u.Blocks != "" {
		content = json.RawMessage(u.Blocks)
	}
	m["message"] = map[string]any{"role": "user", "content": content}
	if u.Meta {
		m["isMeta"] = true
	}
	if u.CompactSummary {
		m["isCompactSummary"] = true
	}
	if u.VisibleOnly {
		m["isVisibleInTranscriptOnly"] = true
	}
	if u.ToolUseResult != "" {
		m["toolUseResult"] = json.RawMessage(u.ToolUseResult)
	}
	return mustJSON(m)
}

// Syn is a <synthetic> assistant line (API error, limit notice, "No
// response requested.").
type Syn struct {
	UUID, Parent, Session string
	Sec                   int
	Msg                   string
	Text                  string
	Error                 string // the "error" field; "" omits it
	APIError              bool   // isApiErrorMessage
	Status                int64  // apiErrorStatus; 0 omits it
	Agent                 string
}

func (s Syn) String() string {
	m := envelope("assistant", s.UUID, s.Parent, s.Session, s.Sec, s.Agent, false)
	m["message"] = map[string]any{
		"id":            s.Msg,
		"container":     nil,
		"model":         transcript.SyntheticModel,
		"role":          "assistant",
		"stop_reason":   "stop_sequence",
		"stop_sequence": "",
		"type":          "message",
		"usage": map[string]any{
			"input_tokens": 0, "output_tokens": 0, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
			"cache_creation": map[string]any{"ephemeral_1h_input_tokens": 0, "ephemeral_5m_input_tokens": 0},
		},
		"content": json.RawMessage("[" + textB(s.Text) + "]"),
	}
	if s.Error != "" {
		m["error"] = s.Error
	}
	if s.APIError {
		m["isApiErrorMessage"] = true
	}
	if s.Status != 0 {
		m["apiErrorStatus"] = s.Status
	}
	return mustJSON(m)
}

// compactBoundary is a system compact_boundary line; meta is the raw
// compactMetadata ("" omits it).
func compactBoundary(uuid, session string, sec int, meta string) string {
	m := envelope("system", uuid, "", session, sec, "", false)
	m["logicalParentUuid"] = "e6f9f22d-08f3-449d-a972-a9ecc1e68e68"
	m["subtype"] = "compact_boundary"
	m["content"] = "Conversation compacted"
	m["isMeta"] = false
	m["level"] = "info"
	if meta != "" {
		m["compactMetadata"] = json.RawMessage(meta)
	}
	return mustJSON(m)
}

// microcompactBoundary is a system microcompact_boundary line.
func microcompactBoundary(uuid, session string, sec int) string {
	m := envelope("system", uuid, "", session, sec, "", false)
	m["subtype"] = "microcompact_boundary"
	m["content"] = "Context microcompacted"
	m["isMeta"] = false
	m["level"] = "info"
	m["microcompactMetadata"] = json.RawMessage(`{"trigger":"auto","preTokens":22189,"tokensSaved":2000,"compactedToolIds":[],"clearedAttachmentUUIDs":[]}`)
	return mustJSON(m)
}

// systemAPIError is a system api_error line (a retry Claude Code made).
func systemAPIError(uuid, parent, session string, sec int) string {
	m := envelope("system", uuid, parent, session, sec, "", false)
	m["subtype"] = "api_error"
	m["level"] = "error"
	m["error"] = json.RawMessage(`{}`)
	m["retryInMs"] = 602.1275093184647
	m["retryAttempt"] = 1
	m["maxRetries"] = 10
	return mustJSON(m)
}

// systemTurnDuration is the system turn_duration line Claude Code writes
// when a turn's response is complete.
func systemTurnDuration(uuid, parent string, sec int) string {
	m := envelope("system", uuid, parent, sessA, sec, "", false)
	m["subtype"] = "turn_duration"
	m["durationMs"] = 5123
	m["isMeta"] = false
	return mustJSON(m)
}

// progress is an agent_progress line of the parent transcript carrying a
// subagent's line (embedded: an A or U line) in data.message.
func progress(uuid, parent, session string, sec int, agentID, parentToolUseID, embedded string) string {
	m := envelope("progress", uuid, parent, session, sec, "", false)
	m["data"] = map[string]any{
		"message":            json.RawMessage(embedded),
		"normalizedMessages": []any{},
		"type":               "agent_progress",
		"prompt":             "Search for the table definition.",
		"agentId":            agentID,
	}
	m["toolUseID"] = "agent_msg_014MkeGvDcGMpYw8Gp3mkcJV"
	m["parentToolUseID"] = parentToolUseID
	return mustJSON(m)
}

// Content blocks.
func textB(s string) string { return mustJSON(map[string]any{"type": "text", "text": s}) }
func thinkingB() string {
	return `{"type":"thinking","thinking":"","signature":"EqcKClsIDRgCKkC03C5lLm2TJOZzTGuhEYSXp9md"}`
}
func imageB() string {
	return `{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}`
}
func toolUseB(id, name, input string) string {
	if input == "" {
		input = `{"command":"ls -la","description":"List files"}`
	}
	return `{"type":"tool_use","id":` + mustJSON(id) + `,"name":` + mustJSON(name) + `,"input":` + input + `,"caller":{"type":"direct"}}`
}
func taskUseB(id, subagentType, description string) string {
	return toolUseB(id, "Task", mustJSON(map[string]any{
		"description": description, "prompt": "Explore the repository and report.", "subagent_type": subagentType,
	}))
}
func toolResultB(id string, isError bool) string {
	return mustJSON(map[string]any{"tool_use_id": id, "type": "tool_result", "content": "total 4\ndrwxr-xr-x 1 eduar 197610 0 Apr 27 10:40 .", "is_error": isError})
}
func blocks(bs ...string) string { return "[" + strings.Join(bs, ",") + "]" }

// taskResult is the toolUseResult of a finished Task call.
func taskResult(agentID, agentType string) string {
	m := map[string]any{
		"status": "completed", "prompt": "Explore the repository and report.", "agentId": agentID,
		"content":         []any{map[string]any{"type": "text", "text": "Done."}},
		"totalDurationMs": 214675, "totalTokens": 71557, "totalToolUseCount": 18,
		"usage": map[string]any{"input_tokens": 11466, "output_tokens": 5179, "cache_read_input_tokens": 54912},
	}
	if agentType != "" {
		m["agentType"] = agentType
	}
	return mustJSON(m)
}

// unitLog is a Sink that keeps a copy of every unit and the order of
// emission.
type unitLog struct {
	sessions    []Session
	turns       []Turn
	requests    []Request
	updates     []RequestUpdate
	tools       []ToolCall
	agents      []Subagent
	compactions []Compaction
	errors      []APIError
	prs         []PullRequest
	order       []string
}

func (l *unitLog) Session(s *Session) {
	l.sessions = append(l.sessions, *s)
	l.order = append(l.order, fmt.Sprintf("session:%s:ended=%v", s.SessionID, s.Ended))
}
func (l *unitLog) Turn(t *Turn) {
	l.turns = append(l.turns, *t)
	l.order = append(l.order, "turn:"+t.PromptUUID)
}
func (l *unitLog) Request(r *Request) {
	c := *r
	c.ToolUseIDs = slices.Clone(r.ToolUseIDs)
	l.requests = append(l.requests, c)
	l.order = append(l.order, "request:"+r.MessageID)
}
func (l *unitLog) RequestUpdate(u *RequestUpdate) {
	l.updates = append(l.updates, *u)
	l.order = append(l.order, "update:"+u.MessageID)
}
func (l *unitLog) ToolCall(c *ToolCall) {
	l.tools = append(l.tools, *c)
	l.order = append(l.order, "tool:"+c.ToolUseID+":"+string(c.Outcome))
}
func (l *unitLog) Subagent(s *Subagent) {
	l.agents = append(l.agents, *s)
	l.order = append(l.order, "subagent:"+s.AgentID)
}
func (l *unitLog) Compaction(c *Compaction) {
	l.compactions = append(l.compactions, *c)
	l.order = append(l.order, "compaction:"+c.UUID)
}
func (l *unitLog) PullRequest(p *PullRequest) {
	l.prs = append(l.prs, *p)
	l.order = append(l.order, "pr")
}
func (l *unitLog) APIError(e *APIError) {
	l.errors = append(l.errors, *e)
	l.order = append(l.order, "api_error:"+e.Kind)
}

// requestsOf returns the Request units of a message id.
func (l *unitLog) requestsOf(msgID string) []Request {
	var out []Request
	for _, r := range l.requests {
		if r.MessageID == msgID {
			out = append(out, r)
		}
	}
	return out
}

// toolsOf returns the ToolCall units of a tool_use id.
func (l *unitLog) toolsOf(id string) []ToolCall {
	var out []ToolCall
	for _, c := range l.tools {
		if c.ToolUseID == id {
			out = append(out, c)
		}
	}
	return out
}

// agentsOf returns the Subagent units of an agent id.
func (l *unitLog) agentsOf(id string) []Subagent {
	var out []Subagent
	for _, s := range l.agents {
		if s.AgentID == id {
			out = append(out, s)
		}
	}
	return out
}

// sessionsOf returns the Session units of a session id.
func (l *unitLog) sessionsOf(id string) (starts, ends []Session) {
	for _, s := range l.sessions {
		if s.SessionID != id {
			continue
		}
		if s.Ended {
			ends = append(ends, s)
		} else {
			starts = append(starts, s)
		}
	}
	return starts, ends
}

// tokenSum is what a counter fed by Request and RequestUpdate units
// holds, per model.
func (l *unitLog) tokenSum() map[string]Tokens {
	out := map[string]Tokens{}
	add := func(model string, t Tokens) {
		s := out[model]
		s.Input += t.Input
		s.Output += t.Output
		s.CacheRead += t.CacheRead
		s.CacheWrite5m += t.CacheWrite5m
		s.CacheWrite1h += t.CacheWrite1h
		out[model] = s
	}
	for _, r := range l.requests {
		add(r.Model, r.Tokens)
	}
	for _, u := range l.updates {
		add(u.Model, u.Delta)
	}
	return out
}

// file is one transcript file: its path relative to projects/ and lines.
type file struct {
	path  string
	lines []string
}

// subagentMeta is what a subagent's .meta.json says; the daemon copies it
// into the Source.
type subagentMeta struct{ agentType, description, toolUseID string }

// feeder decodes lines and feeds them to an Assembler.
type feeder struct {
	t   *testing.T
	asm *Assembler
	log *unitLog
	dec *transcript.Decoder
	rec transcript.Record
	// metas completes the Source of files by path.
	metas map[string]subagentMeta
}

func newFeeder(t *testing.T, cfg Config) *feeder {
	t.Helper()
	l := &unitLog{}
	return &feeder{t: t, asm: New(cfg, l), log: l, dec: transcript.NewDecoder(transcript.Options{})}
}

// add feeds lines of the file at path (relative to projects/).
func (f *feeder) add(path string, now time.Time, lines ...string) {
	f.t.Helper()
	src := ClassifySource(path)
	f.addSrc(&src, now, lines...)
}

// addSrc feeds lines with a given Source (e.g. one completed from a
// subagent's .meta.json).
func (f *feeder) addSrc(src *Source, now time.Time, lines ...string) {
	f.t.Helper()
	for i, line := range lines {
		if err := f.dec.Decode([]byte(line), &f.rec); err != nil {
			f.t.Fatalf("line %d of %s does not decode: %v\n%s", i+1, src.Rel, err, line)
		}
		f.asm.Add(src, &f.rec, now)
	}
}

// files feeds whole files in order.
func (f *feeder) files(now time.Time, fs ...file) {
	f.t.Helper()
	for _, fl := range fs {
		src := ClassifySource(fl.path)
		if m, ok := f.metas[fl.path]; ok {
			src.AgentType, src.Description, src.ToolUseID = m.agentType, m.description, m.toolUseID
		}
		f.addSrc(&src, now, fl.lines...)
	}
}

func (f *feeder) flush(now time.Time, final bool) { f.asm.Flush(now, final) }

// run feeds the files at now and flushes finally; it returns the log.
func run(t *testing.T, fs ...file) (*unitLog, Stats) {
	t.Helper()
	return runWithMeta(t, nil, fs...)
}

// runWithMeta is run with .meta.json contents by transcript path.
func runWithMeta(t *testing.T, metas map[string]subagentMeta, fs ...file) (*unitLog, Stats) {
	t.Helper()
	f := newFeeder(t, Config{})
	f.metas = metas
	f.files(at(0), fs...)
	f.flush(at(0), true)
	return f.log, f.asm.Stats()
}

// one fails unless exactly one unit is in us, and returns it.
func one[T any](t *testing.T, what string, us []T) T {
	t.Helper()
	if len(us) != 1 {
		t.Fatalf("%s: got %d units, want exactly 1: %+v", what, len(us), us)
	}
	return us[0]
}
