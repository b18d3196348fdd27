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
	SyntheticMessages   int64                       // distinct <synthetic> assistant message ids
	MalformedLines      int64                       // lines that are not valid JSON objects (skipped)
	Files               int                         // transcript files read
	Conflicts           []string                    // notes where the rules had to pick between disagreeing copies
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
}

func (c candidate) total() int64 {
	return c.input + c.output + c.cacheRead + c.cacheTotal
}

// toolUse is one distinct tool_use block id.
type toolUse struct {
	name string
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

	compactionUUIDs map[string]bool

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
		t: &Totals{
			Tokens:         map[string]map[string]int64{},
			Requests:       map[string]int64{},
			RequestsByStop: map[string]int64{},
			ToolCalls:      map[string]map[string]int64{},
			Compactions:    map[string]int64{},
			WebSearches:    map[string]int64{},
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
		for i, line := range bytes.Split(data, []byte("\n")) {
			c.line(fmt.Sprintf("%s:%d", filepath.ToSlash(rel), i+1), line)
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

// line handles one line of a transcript file.
func (c *counter) line(where string, line []byte) {
	if len(bytes.TrimSpace(line)) == 0 {
		return
	}
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
		c.carrier(where, rec)
	case "progress":
		if data, ok := rec["data"].(map[string]any); ok {
			if inner, ok := data["message"].(map[string]any); ok {
				if t := str(inner["type"]); t == "assistant" || t == "user" {
					c.carrier(where, inner)
				}
			}
		}
	case "system":
		if str(rec["subtype"]) == "compact_boundary" {
			c.compaction(rec)
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

// carrier handles one assistant or user record (top-level or embedded).
func (c *counter) carrier(where string, rec map[string]any) {
	msg, _ := rec["message"].(map[string]any) // nil when absent; lookups on nil maps are fine
	content, _ := msg["content"].([]any)

	if str(rec["type"]) == "user" {
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
	cand := candidate{where: where, model: model, stop: stop}
	if validUsage(usage, breakdown) && validCount(server["web_search_requests"]) {
		cand.input = num(usage["input_tokens"])
		cand.output = num(usage["output_tokens"])
		cand.cacheRead = num(usage["cache_read_input_tokens"])
		cand.cacheTotal = num(usage["cache_creation_input_tokens"])
		cand.e5m = num(breakdown["ephemeral_5m_input_tokens"])
		cand.e1h = num(breakdown["ephemeral_1h_input_tokens"])
		cand.searches = num(server["web_search_requests"])
	}
	if _, seen := c.requests[id]; !seen {
		c.requestOrder = append(c.requestOrder, id)
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
	}

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
		name := c.toolUses[id].name
		if t.ToolCalls[name] == nil {
			t.ToolCalls[name] = map[string]int64{}
		}
		t.ToolCalls[name][outcome]++
		if outcome == OutcomeError {
			t.ToolErrors++
		}
	}

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

// addRequest counts one request under the winner's model and stop reason.
func addRequest(t *Totals, w candidate) {
	t.Requests[w.model]++
	t.RequestsByStop[w.stop]++
	if t.Tokens[w.model] == nil {
		t.Tokens[w.model] = map[string]int64{}
	}
	tok := t.Tokens[w.model]
	tok[TokInput] += w.input
	tok[TokOutput] += w.output
	tok[TokCacheRead] += w.cacheRead
	tok[TokCacheWrite1h] += w.e1h
	tok[TokCacheWrite5m] += max(w.cacheTotal, w.e5m+w.e1h) - w.e1h
	if w.searches > 0 {
		t.WebSearches[w.model] += w.searches
	}
}

// maxTokens is the largest token count one request may report; a usage
// with any count that is not a whole number from 0 to maxTokens counts no
// tokens at all (the rule the exporter documents for hostile lines).
const maxTokens = 100_000_000

// validCount reports whether a count is null/absent or a whole number from
// 0 to maxTokens.
func validCount(v any) bool {
	if v == nil {
		return true
	}
	f, isNum := v.(float64)
	return isNum && f >= 0 && f <= maxTokens && f == float64(int64(f))
}

// validUsage reports whether every token count present is null or a whole
// number from 0 to maxTokens.
func validUsage(usage, breakdown map[string]any) bool {
	ok := validCount
	for _, k := range []string{"input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"} {
		if !ok(usage[k]) {
			return false
		}
	}
	return ok(breakdown["ephemeral_5m_input_tokens"]) && ok(breakdown["ephemeral_1h_input_tokens"])
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
