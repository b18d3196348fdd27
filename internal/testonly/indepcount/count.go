package indepcount

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Token types used as keys of Totals.Tokens[model].
const (
	TokInput        = "input"
	TokOutput       = "output"
	TokCacheRead    = "cache_read"
	TokCacheWrite5m = "cache_write_5m"
	TokCacheWrite1h = "cache_write_1h"
)

// Tool call outcomes used as keys of Totals.ToolCalls[name].
const (
	OutcomeOK         = "ok"
	OutcomeError      = "error"
	OutcomeUnanswered = "unanswered"
)

// SyntheticModel is the model name of messages Claude Code writes itself.
const SyntheticModel = "<synthetic>"

// Totals are the expected totals of one Claude config dir.
type Totals struct {
	Tokens              map[string]map[string]int64 // model -> type (input|output|cache_read|cache_write_5m|cache_write_1h) -> tokens
	Requests            map[string]int64            // model -> requests
	RequestsByStop      map[string]int64            // stop_reason ("none" when null/missing) -> requests
	ToolCalls           map[string]map[string]int64 // tool name -> outcome (ok|error|unanswered) -> calls
	ToolErrors          int64                       // calls with outcome error
	Compactions         map[string]int64            // trigger -> compactions
	CompactionPreTokens int64                       // sum of preTokens over counted compactions
	WebSearches         map[string]int64            // model -> usage.server_tool_use.web_search_requests of the winning lines (models with none left out)
	TokensBySpender     map[string]map[string]int64 // spender -> type -> tokens (advisor tokens included)
	AdvisorTokens       map[string]map[string]int64 // advisor model -> type -> tokens of advisor_message iterations
	CacheMisses         map[string]int64            // reason|model -> requests whose lines say why the prompt cache missed
	CacheMissTokens     map[string]int64            // reason|model -> cache_missed_input_tokens of those
	LinesOfCode         map[string]int64            // added|removed + "|" + tool + "|" + language (of the file extension) -> lines
	EditDecisions       map[string]int64            // tool|accept or reject|language -> calls
	Commits             int64                       // successful Bash calls running git commit (not --dry-run)
	PullRequestsCreated int64                       // successful Bash calls running gh pr create
	PullRequestsLinked  int64                       // distinct pull requests of pr-link records
	// By the UTC day each request was done (see byDay): output and
	// cache-read tokens (advisor inferences included). Requests without
	// a timestamp are in no day.
	OutputByDay       map[string]int64
	CacheReadByDay    map[string]int64
	Done              []DoneRequest // requests with a time, to be priced by the day
	SyntheticMessages int64         // distinct <synthetic> assistant message ids
	MalformedLines    int64         // lines that are not valid JSON objects (skipped)
	Files             int           // transcript files read
	Conflicts         []string      // notes where the rules had to pick between disagreeing copies
}

// candidate is one assistant line that may be the winner of its request.
type candidate struct {
	where      string // "file:line", for conflict notes
	model      string
	stop       string
	input      int64
	output     int64
	cacheRead  int64
	cacheTotal int64 // usage.cache_creation_input_tokens
	e5m        int64 // usage.cache_creation.ephemeral_5m_input_tokens
	e1h        int64 // usage.cache_creation.ephemeral_1h_input_tokens
	searches   int64 // usage.server_tool_use.web_search_requests
	advisor    []advisorIter
	speed, geo string // usage.speed, usage.inference_geo
}

// advisorIter is one usage.iterations[] entry of type advisor_message.
type advisorIter struct {
	model                                string
	input, output, cacheRead, cacheTotal int64
	e5m, e1h                             int64
}

// reqFirst is what the first line of a request says about it.
type reqFirst struct {
	file      string    // the file of its first line
	last      time.Time // the newest timestamp of its lines in that file: when it was done
	agent     string    // "" in the main thread
	missType  string    // first diagnostics.cache_miss_reason.type of any line
	missCount int64
}

func (c candidate) total() int64 {
	return c.input + c.output + c.cacheRead + c.cacheTotal
}

// toolUse is one distinct tool_use block id.
type toolUse struct {
	name string
	ext  string // edit tools: extension of file_path / notebook_path
	// Bash: the command commits / creates a pull request.
	commit, prCreate bool
	notebookLines    int64 // NotebookEdit: lines of new_source (0 for delete)
	// Edit, MultiEdit, Write: the lines the input adds and removes
	// (inputDiff), counted when the result has no patch.
	inputAdded, inputRemoved int64
}

// firstResult is what the first tool_result of a call says beyond is_error.
type firstResult struct {
	rejected       bool
	hasEdit        bool
	added, removed int64
	prURL          string // the last pull request URL in a shell result's stdout
	seq            int    // lineSeq of its line
}

// counter holds everything collected while reading the files; the totals are
// computed from it at the end.
type counter struct {
	requestOrder []string               // message ids in order of first appearance
	requests     map[string][]candidate // message id -> all its lines, in file order

	syntheticKeys map[string]bool

	toolUseOrder []string
	toolUses     map[string]toolUse
	// tool_use_id -> is_error value of every tool_result block seen, in order.
	toolResults     map[string][]bool
	toolResultOrder []string
	firstResults    map[string]firstResult
	prKeys          map[string]int // pull request key -> lineSeq of its first pr-link
	lineSeq         int            // lines read so far, across files
	created         []firstResult  // results of successful gh pr create calls

	compactionUUIDs map[string]bool

	first map[string]*reqFirst // message id -> its first line's facts
	// Subagents: agent id -> type from its .meta.json; tool_use id ->
	// subagent type of Task/Agent calls; agent id -> tool_use id (from
	// toolUseResult.agentId or a progress record); agent id -> whether
	// its first prompt is "Warmup" (absent until its first prompt).
	metaType  map[string]string
	taskType  map[string]string
	agentTool map[string]string
	warmup    map[string]bool
	// embedded is set while a progress record's message is read: a copy
	// of a subagent's line, never a thread that outranks another.
	embedded bool

	t *Totals
}

// Count reads every transcript file under claudeDir/projects and returns the
// totals defined by the rules in the package tests and the brief:
//
//  1. Transcript files are the regular files under projects/ (any depth)
//     named *.jsonl and not starting with "."; read in sorted path order.
//     Blank lines are ignored; lines that are not JSON objects are counted
//     in MalformedLines and skipped.
//  2. Carriers are top-level records of type assistant or user, plus the
//     object data.message of a progress record when its type is assistant or
//     user.
//  3. Requests are assistant carriers with a non-empty message.id and a
//     model other than <synthetic>, grouped globally by message.id; the line
//     with the highest output_tokens wins, then the highest total, then the
//     first in file order.
//  4. Tokens come from the winner's usage (see addRequest).
//  5. <synthetic> assistant carriers count distinct ids (uuid when no id).
//  6. Tool calls are tool_use and server_tool_use blocks unique by id;
//     outcome from the result blocks with that tool_use_id: tool_result
//     blocks (in user records, or in assistant records from gateways) and
//     a server tool's in-stream "…_tool_result" block (an error when its
//     content's type ends in "_error").
//  7. Compactions are top-level system/compact_boundary records unique by
//     uuid.
func Count(claudeDir string) (*Totals, error) {
	files, err := transcriptFiles(filepath.Join(claudeDir, "projects"))
	if err != nil {
		return nil, err
	}
	c := &counter{
		requests:        map[string][]candidate{},
		syntheticKeys:   map[string]bool{},
		toolUses:        map[string]toolUse{},
		toolResults:     map[string][]bool{},
		compactionUUIDs: map[string]bool{},
		first:           map[string]*reqFirst{},
		firstResults:    map[string]firstResult{},
		prKeys:          map[string]int{},
		metaType:        map[string]string{},
		taskType:        map[string]string{},
		agentTool:       map[string]string{},
		warmup:          map[string]bool{},
		t: &Totals{
			TokensBySpender: map[string]map[string]int64{},
			LinesOfCode:     map[string]int64{},
			EditDecisions:   map[string]int64{},
			AdvisorTokens:   map[string]map[string]int64{},
			CacheMisses:     map[string]int64{},
			CacheMissTokens: map[string]int64{},
			Tokens:          map[string]map[string]int64{},
			Requests:        map[string]int64{},
			RequestsByStop:  map[string]int64{},
			ToolCalls:       map[string]map[string]int64{},
			Compactions:     map[string]int64{},
			WebSearches:     map[string]int64{},
			OutputByDay:     map[string]int64{},
			CacheReadByDay:  map[string]int64{},
		},
	}
	for _, path := range files {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		c.t.Files++
		rel, err := filepath.Rel(claudeDir, path)
		if err != nil {
			rel = path
		}
		agent := fileAgent(path)
		if agent != "" {
			c.readMeta(strings.TrimSuffix(path, ".jsonl")+".meta.json", agent)
		}
		lines := bytes.Split(data, []byte("\n"))
		var side []string
		if agent == "" {
			side = sidechainAgents(lines)
		}
		for i, line := range lines {
			a := agent
			if side != nil && side[i] != "" {
				a = side[i]
				if tool, ok := strings.CutPrefix(a, "side-"); ok && c.agentTool[a] == "" {
					c.agentTool[a] = tool
				}
			}
			c.line(fmt.Sprintf("%s:%d", filepath.ToSlash(rel), i+1), a, line)
		}
	}
	c.finish()
	return c.t, nil
}

// transcriptFiles lists the transcript files under projectsDir, sorted by path.
func transcriptFiles(projectsDir string) ([]string, error) {
	info, err := os.Stat(projectsDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		return nil, nil
	}
	var files []string
	err = filepath.WalkDir(projectsDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.Type().IsRegular() && strings.HasSuffix(name, ".jsonl") && !strings.HasPrefix(name, ".") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	return files, nil
}

// fileAgent is the agent id a subagent file's name gives
// (agent-<id>.jsonl), "" for any other file.
func fileAgent(path string) string {
	name := filepath.Base(path)
	if !strings.HasPrefix(name, "agent-") {
		return ""
	}
	return strings.TrimSuffix(strings.TrimPrefix(name, "agent-"), ".jsonl")
}

// readMeta reads the agentType of a subagent's .meta.json, when there is one.
func (c *counter) readMeta(path, agent string) {
	b, err := os.ReadFile(path)
	if err != nil {
		return
	}
	var m map[string]any
	if json.Unmarshal(b, &m) == nil && str(m["agentType"]) != "" {
		c.metaType[agent] = str(m["agentType"])
	}
}

// line handles one line of a transcript file; agent is the file's agent
// id ("" for a session file).
func (c *counter) line(where, agent string, line []byte) {
	if len(bytes.TrimSpace(line)) == 0 {
		return
	}
	c.lineSeq++
	var v any
	if err := json.Unmarshal(line, &v); err != nil {
		c.t.MalformedLines++
		return
	}
	rec, ok := v.(map[string]any)
	if !ok {
		c.t.MalformedLines++
		return
	}

	switch str(rec["type"]) {
	case "assistant", "user":
		c.carrier(where, agent, rec, stamp(rec, nil))
	case "progress":
		if data, ok := rec["data"].(map[string]any); ok {
			if inner, ok := data["message"].(map[string]any); ok {
				if t := str(inner["type"]); t == "assistant" || t == "user" {
					inAgent := str(data["agentId"])
					if inAgent == "" {
						inAgent = str(inner["agentId"])
					}
					if tool := str(rec["parentToolUseID"]); inAgent != "" && tool != "" && c.agentTool[inAgent] == "" {
						c.agentTool[inAgent] = tool
					}
					c.embedded = true
					c.carrier(where, inAgent, inner, stamp(inner, rec))
					c.embedded = false
				}
			}
		}
	case "system":
		if str(rec["subtype"]) == "compact_boundary" {
			c.compaction(rec)
		}
	case "pr-link":
		key := prKey(str(rec["prUrl"]), str(rec["prRepository"]), num(rec["prNumber"]))
		if _, seen := c.prKeys[key]; key != "" && !seen {
			c.prKeys[key] = c.lineSeq
		}
	}
}

// result records one tool result block for a tool_use id.
func (c *counter) result(id string, isError bool) {
	if _, seen := c.toolResults[id]; !seen {
		c.toolResultOrder = append(c.toolResultOrder, id)
	}
	c.toolResults[id] = append(c.toolResults[id], isError)
}

// carrier handles one assistant or user record (top-level or embedded),
// read in the thread of agent ("" for the main thread).
// stamp is a record's timestamp (RFC 3339), else its outer record's; the
// zero time when neither has one.
func stamp(rec, outer map[string]any) time.Time {
	for _, r := range []map[string]any{rec, outer} {
		if s, ok := r["timestamp"].(string); ok {
			if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
				return t.UTC()
			}
		}
	}
	return time.Time{}
}

func (c *counter) carrier(where, agent string, rec map[string]any, ts time.Time) {
	msg, _ := rec["message"].(map[string]any) // nil when absent; lookups on nil maps are fine
	content, _ := msg["content"].([]any)

	if str(rec["type"]) == "user" {
		var blocks []map[string]any
		for _, b := range content {
			if block, ok := b.(map[string]any); ok && str(block["type"]) == "tool_result" {
				blocks = append(blocks, block)
			}
		}
		for _, block := range blocks {
			id := str(block["tool_use_id"])
			if _, seen := c.firstResults[id]; seen || id == "" {
				continue
			}
			f := firstResult{rejected: rejection(block["content"]), seq: c.lineSeq}
			if tr, ok := rec["toolUseResult"].(map[string]any); ok && len(blocks) == 1 {
				f.hasEdit, f.added, f.removed = editOf(tr)
				f.prURL = lastPRURL(str(tr["stdout"]))
			}
			c.firstResults[id] = f
		}
		if tr, ok := rec["toolUseResult"].(map[string]any); ok && str(tr["agentId"]) != "" {
			for _, b := range content {
				if block, ok := b.(map[string]any); ok && str(block["type"]) == "tool_result" {
					c.agentTool[str(tr["agentId"])] = str(block["tool_use_id"])
				}
			}
		}
		if _, known := c.warmup[agent]; agent != "" && !known && !hasToolResult(content) {
			c.warmup[agent] = firstText(msg["content"]) == "Warmup"
		}
		for _, b := range content {
			block, ok := b.(map[string]any)
			if !ok || str(block["type"]) != "tool_result" {
				continue
			}
			c.result(str(block["tool_use_id"]), block["is_error"] == true)
		}
		return
	}

	// Assistant carrier: tool calls first (every assistant carrier has them).
	// A server-side tool (server_tool_use) is a call too; its result comes
	// inside the assistant stream: a block whose type ends in
	// "_tool_result" (an error when its content's type ends in "_error"),
	// or, from some gateways, a tool_result block.
	for _, b := range content {
		block, ok := b.(map[string]any)
		if !ok {
			continue
		}
		switch typ := str(block["type"]); {
		case typ == "tool_use" || typ == "server_tool_use":
			id := str(block["id"])
			if _, seen := c.toolUses[id]; seen {
				continue
			}
			c.toolUseOrder = append(c.toolUseOrder, id)
			c.toolUses[id] = toolUse{name: str(block["name"])}
			input, _ := block["input"].(map[string]any)
			switch name := str(block["name"]); name {
			case "Edit", "MultiEdit", "Write", "NotebookEdit":
				u := c.toolUses[id]
				path := str(input["file_path"])
				if path == "" {
					path = str(input["notebook_path"])
				}
				u.ext = extension(path)
				if name == "NotebookEdit" && str(input["edit_mode"]) != "delete" {
					u.notebookLines = lineCount(str(input["new_source"]))
				}
				u.inputAdded, u.inputRemoved = inputDiff(name, input)
				c.toolUses[id] = u
			case "Bash":
				u := c.toolUses[id]
				u.commit, u.prCreate = shellCounts(str(input["command"]))
				c.toolUses[id] = u
			}
			if name := str(block["name"]); name == "Task" || name == "Agent" {
				input, _ := block["input"].(map[string]any)
				typ := str(input["subagent_type"])
				if typ == "" {
					typ = "general-purpose"
				}
				c.taskType[id] = typ
			}
		case typ == "tool_result":
			c.result(str(block["tool_use_id"]), block["is_error"] == true)
		case strings.HasSuffix(typ, "_tool_result") && str(block["tool_use_id"]) != "":
			inner, _ := block["content"].(map[string]any)
			c.result(str(block["tool_use_id"]), strings.HasSuffix(str(inner["type"]), "_error"))
		}
	}

	model := str(msg["model"])
	id := str(msg["id"])
	if model == SyntheticModel {
		if id != "" {
			c.syntheticKeys["id:"+id] = true
		} else if uuid := str(rec["uuid"]); uuid != "" {
			c.syntheticKeys["uuid:"+uuid] = true
		} else {
			// Neither id nor uuid: nothing to dedup by, each line counts.
			c.syntheticKeys["line:"+where] = true
		}
		return
	}
	if id == "" {
		return
	}

	usage, _ := msg["usage"].(map[string]any)
	breakdown, _ := usage["cache_creation"].(map[string]any)
	server, _ := usage["server_tool_use"].(map[string]any)
	stop, ok := msg["stop_reason"].(string)
	if !ok {
		stop = "none" // null, missing (or not a string)
	}
	cand := candidate{where: where, model: model, stop: stop, speed: str(usage["speed"]), geo: str(usage["inference_geo"])}
	if validUsage(usage, breakdown) && validCount(server["web_search_requests"]) {
		cand.input = num(usage["input_tokens"])
		cand.output = num(usage["output_tokens"])
		cand.cacheRead = num(usage["cache_read_input_tokens"])
		cand.cacheTotal = num(usage["cache_creation_input_tokens"])
		cand.e5m = num(breakdown["ephemeral_5m_input_tokens"])
		cand.e1h = num(breakdown["ephemeral_1h_input_tokens"])
		cand.searches = num(server["web_search_requests"])
		var ok bool
		if cand.advisor, ok = advisorIters(usage); !ok {
			cand = candidate{where: where, model: model, stop: stop, speed: cand.speed, geo: cand.geo}
		}
	}
	if _, seen := c.requests[id]; !seen {
		c.requestOrder = append(c.requestOrder, id)
		c.first[id] = &reqFirst{agent: agent, file: fileOf(where)}
	} else if f := c.first[id]; !c.embedded && readerRank(agent, c.metaType[agent]) > readerRank(f.agent, c.metaType[f.agent]) {
		// A fork's copy of its parent's history was read before the
		// parent: the request is the parent's.
		f.agent = agent
	}
	if f := c.first[id]; f.file == fileOf(where) && ts.After(f.last) {
		f.last = ts
	}
	if f := c.first[id]; f.missType == "" {
		diag, _ := msg["diagnostics"].(map[string]any)
		miss, _ := diag["cache_miss_reason"].(map[string]any)
		if typ := str(miss["type"]); typ != "" {
			f.missType = typ
			if validCount(miss["cache_missed_input_tokens"]) {
				f.missCount = num(miss["cache_missed_input_tokens"])
			}
		}
	}
	c.requests[id] = append(c.requests[id], cand)
}

// compaction handles one top-level system/compact_boundary record.
func (c *counter) compaction(rec map[string]any) {
	if uuid := str(rec["uuid"]); uuid != "" {
		if c.compactionUUIDs[uuid] {
			return
		}
		c.compactionUUIDs[uuid] = true
	}
	meta, _ := rec["compactMetadata"].(map[string]any)
	trigger := str(meta["trigger"])
	if trigger == "" {
		trigger = "unknown"
	}
	c.t.Compactions[trigger]++
	c.t.CompactionPreTokens += num(meta["preTokens"])
}

// finish turns what was collected into totals.
func (c *counter) finish() {
	t := c.t

	// Requests: pick the winner of every message id.
	for _, id := range c.requestOrder {
		lines := c.requests[id]
		win := lines[0]
		for _, l := range lines[1:] {
			if l.output > win.output || (l.output == win.output && l.total() > win.total()) {
				win = l
			}
		}
		// Conflict: lines tied with the winner on both keys but with another model.
		for _, l := range lines {
			if l.output == win.output && l.total() == win.total() && l.model != win.model {
				t.Conflicts = append(t.Conflicts, fmt.Sprintf(
					"request %s: tied lines disagree on model: %q (%s, used) vs %q (%s)",
					id, win.model, win.where, l.model, l.where))
			}
		}
		addRequest(t, win)
		f := c.first[id]
		spender := c.spender(f.agent)
		addTokens(t.TokensBySpender, spender, win.input, win.output, win.cacheRead, win.cacheTotal, win.e5m, win.e1h)
		for _, a := range win.advisor {
			addTokens(t.Tokens, a.model, a.input, a.output, a.cacheRead, a.cacheTotal, a.e5m, a.e1h)
			addTokens(t.AdvisorTokens, a.model, a.input, a.output, a.cacheRead, a.cacheTotal, a.e5m, a.e1h)
			addTokens(t.TokensBySpender, spender, a.input, a.output, a.cacheRead, a.cacheTotal, a.e5m, a.e1h)
		}
		c.byDay(f.last, win)
		if f.missType != "" {
			t.CacheMisses[f.missType+"|"+win.model]++
			t.CacheMissTokens[f.missType+"|"+win.model] += f.missCount
		}
	}

	sort.Slice(t.Done, func(i, j int) bool {
		a, b := t.Done[i], t.Done[j]
		if !a.At.Equal(b.At) {
			return a.At.Before(b.At)
		}
		if a.Model != b.Model {
			return a.Model < b.Model
		}
		if a.Output != b.Output {
			return a.Output < b.Output
		}
		return a.Input+a.CacheRead+a.CacheWrite5m+a.CacheWrite1h < b.Input+b.CacheRead+b.CacheWrite5m+b.CacheWrite1h
	})
	t.SyntheticMessages = int64(len(c.syntheticKeys))

	// Tool calls.
	for _, id := range c.toolUseOrder {
		results := c.toolResults[id]
		outcome := OutcomeOK
		if len(results) == 0 {
			outcome = OutcomeUnanswered
		}
		anyErr, anyOK := false, false
		for _, isErr := range results {
			if isErr {
				anyErr = true
			} else {
				anyOK = true
			}
		}
		if anyErr {
			outcome = OutcomeError
		}
		if anyErr && anyOK {
			t.Conflicts = append(t.Conflicts, fmt.Sprintf(
				"tool_use %s: %d tool_result copies disagree on is_error; counted as error", id, len(results)))
		}
		u := c.toolUses[id]
		name := u.name
		if t.ToolCalls[name] == nil {
			t.ToolCalls[name] = map[string]int64{}
		}
		t.ToolCalls[name][outcome]++
		c.edits(u, c.firstResults[id], outcome)
		if outcome == OutcomeError {
			t.ToolErrors++
		}
	}

	c.pullRequests()

	// Orphan tool results.
	orphanIDs, orphanBlocks := 0, 0
	for _, id := range c.toolResultOrder {
		if _, ok := c.toolUses[id]; !ok {
			orphanIDs++
			orphanBlocks += len(c.toolResults[id])
		}
	}
	if orphanIDs > 0 {
		t.Conflicts = append(t.Conflicts, fmt.Sprintf(
			"%d tool_result ids (%d blocks) have no tool_use anywhere; ignored", orphanIDs, orphanBlocks))
	}
}

// hasToolResult reports whether content blocks hold a tool_result.
func hasToolResult(content []any) bool {
	for _, b := range content {
		if block, ok := b.(map[string]any); ok && str(block["type"]) == "tool_result" {
			return true
		}
	}
	return false
}

// firstText is a message content's first text: the string itself, or the
// first text block's text.
func firstText(content any) string {
	if s, ok := content.(string); ok {
		return s
	}
	blocks, _ := content.([]any)
	for _, b := range blocks {
		if block, ok := b.(map[string]any); ok && str(block["type"]) == "text" {
			return str(block["text"])
		}
	}
	return ""
}

// str returns v when it is a JSON string, "" otherwise.
func str(v any) string {
	s, _ := v.(string)
	return s
}

// num returns v as an integer when it is a JSON number, 0 otherwise
// (missing, null, or any other type).
func num(v any) int64 {
	f, _ := v.(float64)
	return int64(f)
}

// fileOf is the file part of a "file:line" place.
func fileOf(where string) string {
	if i := strings.LastIndexByte(where, ':'); i >= 0 {
		return where[:i]
	}
	return where
}

// byDay adds a request's output and cache-read tokens to the UTC day it
// was done (the newest timestamp of its lines in the file it first
// appeared in), and keeps the request in Done for pricing. Advisor
// inferences count on the same day.
func (c *counter) byDay(at time.Time, win candidate) {
	if at.IsZero() {
		return
	}
	day := at.UTC().Format("2006-01-02")
	t := c.t
	add := func(model string, input, output, cacheRead, cacheTotal, e5m, e1h, searches int64) {
		t.OutputByDay[day] += output
		t.CacheReadByDay[day] += cacheRead
		t.Done = append(t.Done, DoneRequest{At: at, Model: model, Speed: win.speed, Geo: win.geo,
			Input: input, Output: output, CacheRead: cacheRead,
			CacheWrite1h: e1h, CacheWrite5m: max(cacheTotal, e5m+e1h) - e1h, WebSearches: searches})
	}
	add(win.model, win.input, win.output, win.cacheRead, win.cacheTotal, win.e5m, win.e1h, win.searches)
	for _, a := range win.advisor {
		add(a.model, a.input, a.output, a.cacheRead, a.cacheTotal, a.e5m, a.e1h, 0)
	}
}

// DoneRequest is one counted request (or its advisor's inferences under
// the advisor's model) with the time it was done.
type DoneRequest struct {
	At                                                   time.Time
	Model, Speed, Geo                                    string
	Input, Output, CacheRead, CacheWrite5m, CacheWrite1h int64
	WebSearches                                          int64
}
