package transcript

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/testonly/testbackend"
)

// fuzzSeedLines picks a few dozen small real lines of different kinds from
// the corpus: at most three per type/subtype (or progress data type). It
// fails when the corpus (testdata/corpus) is not there.
func fuzzSeedLines(tb testing.TB) [][]byte {
	root := testbackend.CorpusDir(tb)
	const maxSeeds, perKind, maxLen = 48, 3, 6000
	var seeds [][]byte
	count := map[string]int{}
	_ = filepath.WalkDir(root, func(p string, de fs.DirEntry, err error) error {
		if err != nil || de.IsDir() || !strings.HasSuffix(p, ".jsonl") {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return nil
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
		for sc.Scan() {
			line := sc.Bytes()
			if len(line) == 0 || len(line) > maxLen {
				continue
			}
			var head struct {
				Type, Subtype string
				Error         any
				Data          struct{ Type string }
				Message       struct {
					Content json.RawMessage
				}
			}
			if json.Unmarshal(line, &head) != nil {
				continue
			}
			key := head.Type + "/" + head.Subtype + "/" + head.Data.Type
			if len(head.Message.Content) > 0 {
				key += "/" + string(head.Message.Content[:1])
			}
			if head.Error != nil {
				key += "/error"
			}
			if count[key] >= perKind {
				continue
			}
			count[key]++
			seeds = append(seeds, bytes.Clone(line))
			if len(seeds) >= maxSeeds {
				return fs.SkipAll
			}
		}
		return nil
	})
	return seeds
}

func FuzzDecode(f *testing.F) {
	for _, line := range fuzzSeedLines(f) {
		f.Add(line)
	}
	for _, tc := range badLines {
		f.Add([]byte(tc.line))
	}
	for _, s := range []string{
		goodLine, contentLine, "", "  ", `{}`, `{"type":"user","message":{"content":"Warmup"}}`,
		`{"type":"progress","data":{"type":"agent_progress","agentId":"a","message":{"type":"assistant","uuid":"e","message":{"id":"m","model":"x","usage":{"input_tokens":1,"output_tokens":2}}}}}`,
		`{"type":"assistant","message":{"model":"mod\u00e9l-\ud83d\ude00","id":"a\\\"","usage":{"input_tokens":1.5,"output_tokens":-3,"cache_read_input_tokens":null,"cache_creation_input_tokens":1e2}}}`,
		`{"type":"user","timestamp":1778784474379,"message":{"content":[{"type":"tool_result","tool_use_id":"t\"","is_error":true}]}}`,
		`{"type":"assistant","message":{"content":[{"input":{"description":"d","subagent_type":"Explore"},"name":"Task","type":"tool_use","id":"t"}]}}`,
		`{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t","name":"Edit","input":{"file_path":"/r/a.go","old_string":"a\n\tb \"q\"\nc","new_string":"a\nB\u000ac\n","replace_all":true}}]}}`,
		`{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t","name":"MultiEdit","input":{"edits":[{"old_string":"x\\ny","new_string":"x\ny"},3,{"new_string":"\u00e9\r\n"}]}},{"type":"tool_use","id":"w","name":"Write","input":{"content":"a\n\nb"}}]}}`,
	} {
		f.Add([]byte(s))
	}
	// Hostile usage values (issue 11): rejected with a reason, nothing
	// counted (-0 and 0.0 are whole: read as 0).
	for _, v := range []string{"-40", "1e308", "-1e308", `"12"`, "true", "1.5", "99999999999999999999999",
		"9223372036854775807", "-9223372036854775808", "100000001", "1e9", "-0", "0.0", "[]", "{}"} {
		f.Add([]byte(`{"type":"assistant","uuid":"u","message":{"id":"m","model":"claude-opus-4-5","stop_reason":"end_turn","usage":{"input_tokens":` +
			v + `,"output_tokens":3,"cache_creation":{"ephemeral_5m_input_tokens":` + v + `}}}}`))
		// The same value as a web search count, an iteration's tokens, and
		// an iteration's own server tools (which nothing reads).
		f.Add([]byte(`{"type":"assistant","message":{"id":"m","usage":{"input_tokens":1,"server_tool_use":{"web_search_requests":` + v + `}}}}`))
		f.Add([]byte(`{"type":"assistant","message":{"id":"m","usage":{"input_tokens":1,"iterations":[{"type":"advisor_message","input_tokens":2},` +
			`{"type":"message","cache_creation":{"ephemeral_1h_input_tokens":` + v + `}}]}}}`))
		f.Add([]byte(`{"type":"assistant","message":{"id":"m","usage":{"input_tokens":1,"iterations":[{"type":"advisor_message","server_tool_use":{"web_search_requests":` + v + `}}]}}}`))
	}
	for _, s := range []string{"\xff\xfe{", "{\"type\":\"user\"", "\n", "\x00"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		orig := bytes.Clone(data)
		dec := NewDecoder(Options{})
		var r Record
		err := dec.Decode(data, &r)
		if !bytes.Equal(data, orig) {
			t.Fatal("Decode modified its input")
		}
		if err != nil {
			if !slices.Contains(Reasons(), ReasonOf(err)) {
				t.Fatalf("error without a known Reason: %v", err)
			}
			checkEmpty(t, &r)
		} else {
			checkInvariants(t, &r, Options{})
		}

		// Read again by the same decoder, which now keeps the run of
		// fields the input holds (run.go): the same record.
		var again Record
		errA := dec.Decode(data, &again)
		var alone Record
		errF := NewDecoder(Options{}).Decode(data, &alone)
		if ReasonOf(errA) != ReasonOf(errF) || (errA == nil) != (errF == nil) || !sameRecord(again, alone) {
			t.Fatalf("read again: %v %+v; alone: %v %+v", errA, again, errF, alone)
		}

		// The same input with every Keep option and a small cap: same
		// verdict, caps respected.
		keep := Options{KeepText: true, KeepThinking: true, KeepToolIO: true, MaxKeepBytes: 7}
		var rk Record
		errK := NewDecoder(keep).Decode(data, &rk)
		if ReasonOf(errK) != ReasonOf(err) || (errK == nil) != (err == nil) {
			t.Fatalf("Keep options change the verdict: %v vs %v", errK, err)
		}
		if errK == nil {
			checkInvariants(t, &rk, keep)
		}

		// The decoder and record keep working on the next line.
		if err := dec.Decode([]byte(goodLine), &r); err != nil {
			t.Fatalf("good line after fuzz input: %v", err)
		}
		checkGoodLine(t, &r)

		// Whenever encoding/json accepts the line as an object, the decoder
		// accepts it and agrees on the fields the exporter counts.
		ref, escType, ok := referenceObject(data)
		if !ok {
			return
		}
		if err != nil {
			t.Fatalf("encoding/json accepts the object, Decode says %v", err)
		}
		if err := dec.Decode(data, &r); err != nil {
			t.Fatalf("second decode: %v", err)
		}
		compareWithReference(t, ref, &r, escType, 0)
	})
}

// checkInvariants holds for every accepted line.
func checkInvariants(t *testing.T, r *Record, opts Options) {
	t.Helper()
	check := func(r *Record) {
		m := &r.Message
		// Usage: every accepted count is a whole number from 0 to
		// MaxUsageTokens; a rejected usage names a known reason and
		// counts nothing.
		u := &m.Usage
		for _, n := range []int64{u.Input, u.Output, u.CacheRead, u.CacheCreation, u.Ephemeral5m, u.Ephemeral1h,
			u.CacheWrite5m(), u.CacheWrite1h()} {
			if n < 0 || n > MaxUsageTokens {
				t.Fatalf("usage count %d outside [0, %d] accepted: %+v", n, MaxUsageTokens, *u)
			}
		}
		if u.Problem != "" {
			if !slices.Contains(UsageProblems(), u.Problem) {
				t.Fatalf("usage rejected with unknown reason %q", u.Problem)
			}
			if *u != (Usage{Problem: u.Problem}) || len(m.Advisor) != 0 {
				t.Fatalf("rejected usage still counts: %+v %+v", *u, m.Advisor)
			}
		}
		if len(m.Advisor) > MaxAdvisorIterations {
			t.Fatalf("%d advisor iterations kept", len(m.Advisor))
		}
		for _, a := range m.Advisor {
			for _, n := range []int64{a.Input, a.Output, a.CacheRead, a.CacheCreation, a.Ephemeral5m, a.Ephemeral1h} {
				if n < 0 || n > MaxUsageTokens {
					t.Fatalf("advisor count %d outside [0, %d] accepted: %+v", n, MaxUsageTokens, a)
				}
			}
		}
		for _, s := range []string{r.Rare().Skill, r.Rare().Plugin, r.Effort, u.Speed, u.Geo, m.CacheMiss} {
			if len(s) > LabelMax || !utf8.ValidString(s) {
				t.Fatalf("label value %q longer than %d or not UTF-8", s, LabelMax)
			}
		}
		if m.CacheMissTokens < 0 || m.CacheMissTokens > MaxUsageTokens {
			t.Fatalf("cache-missed tokens %d accepted", m.CacheMissTokens)
		}
		if len(m.TextHead) > TextHeadMax || !utf8.ValidString(m.TextHead) || (m.TextHeadCut && len(m.TextHead) < TextHeadMax-3) {
			t.Fatalf("bad TextHead %q (cut %v)", m.TextHead, m.TextHeadCut)
		}
		if len(r.Rare().Title) > 256 || len(r.Rare().TimestampRaw) > 64 || !utf8.ValidString(r.Rare().Title) || !utf8.ValidString(r.Rare().TimestampRaw) {
			t.Fatalf("bad Title %q or TimestampRaw %q", r.Rare().Title, r.Rare().TimestampRaw)
		}
		if !r.Timestamp.IsZero() && r.Rare().TimestampRaw != "" {
			t.Fatalf("both Timestamp and TimestampRaw set")
		}
		max := opts.MaxKeepBytes
		kept := []string{m.Text, m.Thinking}
		for _, u := range m.ToolUses {
			kept = append(kept, u.Input)
			if len(u.Description) > 256 || !utf8.ValidString(u.Description) {
				t.Fatalf("bad Description %q", u.Description)
			}
		}
		for _, res := range m.ToolResults {
			kept = append(kept, res.Content)
		}
		for _, s := range kept {
			if max == 0 && s != "" {
				t.Fatalf("text kept without a Keep option: %q", s)
			}
			if len(s) > max || !utf8.ValidString(s) {
				t.Fatalf("kept text %q breaks the cap %d or UTF-8", s, max)
			}
		}
	}
	check(r)
	if r.HasEmbedded() {
		check(r.Embedded)
	}
}

// referenceObject decodes data with encoding/json when it is a valid,
// valid-UTF-8 JSON object without duplicate or escaped keys (JSON leaves
// duplicate keys undefined; escaped keys are a known divergence, see
// TestDecodeEscapedType). escType says some "type" value has
// escapes, which the decoder does not match either.
func referenceObject(data []byte) (ref map[string]any, escType, ok bool) {
	if !utf8.Valid(data) || !json.Valid(data) {
		return nil, false, false
	}
	i := skipWS(data, 0)
	if i == len(data) || data[i] != '{' {
		return nil, false, false
	}
	w := walkKeys(data, i)
	if w.dup || w.escapedKey || w.err {
		return nil, false, false
	}
	jd := json.NewDecoder(bytes.NewReader(data))
	jd.UseNumber()
	if err := jd.Decode(&ref); err != nil {
		return nil, false, false
	}
	return ref, w.escapedType, true
}

type keyWalk struct {
	dup, escapedKey, escapedType, err bool
}

// walkKeys walks a valid JSON value with the package's own scanner and
// reports duplicate keys, escaped keys and escaped "type" values.
func walkKeys(b []byte, i int) keyWalk {
	var w keyWalk
	var walk func(i int) (int, error)
	walk = func(i int) (int, error) {
		i = skipWS(b, i)
		if i >= len(b) {
			return 0, errSyntax
		}
		switch b[i] {
		case '{':
			seen := map[string]bool{}
			return objectFields(b, i, func(key []byte, v int) (int, error) {
				if bytes.IndexByte(key, '\\') >= 0 {
					w.escapedKey = true
				}
				k := string(appendUnescaped(nil, key, -1))
				if seen[k] {
					w.dup = true
				}
				seen[k] = true
				if k == "type" && v < len(b) && b[v] == '"' {
					if raw, _, _, err := readString(b, v); err == nil && bytes.IndexByte(raw, '\\') >= 0 {
						w.escapedType = true
					}
				}
				return walk(v)
			})
		case '[':
			return arrayElems(b, i, walk)
		}
		return skipValue(b, i)
	}
	if _, err := walk(i); err != nil {
		w.err = true
	}
	return w
}

func refString(v any) string {
	s, _ := v.(string)
	return s
}

// refInt returns what the decoder should read for a JSON value taken as an
// integer, and false when the comparison must be skipped: exponents and
// 19+ digit integers hit TestDecodeNumbers.
func refInt(v any) (int64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, true // null, strings, objects... read as 0
	}
	s := string(n)
	if strings.ContainsAny(s, ".eE") {
		// By value, as the decoder and refUsageBad judge it:
		// 1.9999999999999999 is 2 in float64 (FuzzDecode found it
		// cut to 1 here).
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || f != math.Trunc(f) || math.Abs(f) >= 1e18 {
			return 0, false
		}
		return int64(f), true
	}
	digits := strings.TrimPrefix(s, "-")
	if len(digits) >= 19 {
		return 0, false
	}
	x, err := strconv.ParseInt(s, 10, 64)
	return x, err == nil
}

// refUsageBad is the reference rule for rejecting a usage: a count that is
// present, not null, and not a whole number from 0 to MaxUsageTokens
// (by value: 1e3 is whole). Counts with duplicate keys are
// judged by the last value (encoding/json's view).
func refUsageBad(usage, cc map[string]any) bool {
	if refCountsBad(usage, cc) {
		return true
	}
	// The web searches a request made are a count too.
	if stu, ok := usage["server_tool_use"].(map[string]any); ok {
		if v, ok := stu["web_search_requests"]; ok && refCountBad(v) {
			return true
		}
	}
	// So are an iteration's (its tokens, not its own server tools): a bad
	// one rejects the whole usage.
	its, _ := usage["iterations"].([]any)
	for _, it := range its {
		if m, ok := it.(map[string]any); ok {
			icc, _ := m["cache_creation"].(map[string]any)
			if refCountsBad(m, icc) {
				return true
			}
		}
	}
	return false
}

// refCountsBad reports whether a usage's (or an iteration's) token counts
// hold one the decoder rejects.
func refCountsBad(usage, cc map[string]any) bool {
	for _, k := range []string{"input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"} {
		if v, ok := usage[k]; ok && refCountBad(v) {
			return true
		}
	}
	for _, k := range []string{"ephemeral_5m_input_tokens", "ephemeral_1h_input_tokens"} {
		if v, ok := cc[k]; ok && refCountBad(v) {
			return true
		}
	}
	return false
}

// refCountBad reports whether a count's value is not a whole number from
// 0 to MaxUsageTokens (null counts as none).
func refCountBad(v any) bool {
	if v == nil {
		return false
	}
	n, ok := v.(json.Number)
	if !ok {
		return true
	}
	x, err := strconv.ParseFloat(string(n), 64)
	return err != nil || x != math.Trunc(x) || x < 0 || x > MaxUsageTokens
}

func compareWithReference(t *testing.T, ref map[string]any, r *Record, escType bool, depth int) {
	t.Helper()
	if got, want := r.Type, refString(ref["type"]); got != want {
		t.Fatalf("type %q, encoding/json %q", got, want)
	}
	if !escType && r.Kind != kindOf([]byte(r.Type)) {
		t.Fatalf("Kind %v does not match type %q", r.Kind, r.Type)
	}
	if got, want := r.UUID, refString(ref["uuid"]); got != want {
		t.Fatalf("uuid %q, encoding/json %q", got, want)
	}
	for _, f := range []struct {
		key string
		got string
	}{{"parentUuid", r.ParentUUID}, {"sessionId", r.SessionID}, {"requestId", r.RequestID}, {"cwd", r.Cwd}, {"error", r.Rare().Error}} {
		if want := refString(ref[f.key]); f.got != want {
			t.Fatalf("%s %q, encoding/json %q", f.key, f.got, want)
		}
	}
	if want, _ := ref["isSidechain"].(bool); r.IsSidechain != want {
		t.Fatalf("isSidechain %v, encoding/json %v", r.IsSidechain, want)
	}
	msg, isObj := ref["message"].(map[string]any)
	if r.HasMessage != isObj {
		t.Fatalf("HasMessage %v, encoding/json message %T", r.HasMessage, ref["message"])
	}
	if isObj {
		compareMessage(t, msg, &r.Message, escType)
	}
	data, _ := ref["data"].(map[string]any)
	if data != nil {
		if got, want := r.Rare().ProgressAgentID, refString(data["agentId"]); got != want {
			t.Fatalf("data.agentId %q, encoding/json %q", got, want)
		}
	}
	emb, _ := data["message"].(map[string]any)
	embType := refString(emb["type"])
	if want := emb != nil && (embType == "user" || embType == "assistant"); !escType && r.HasEmbedded() != want {
		t.Fatalf("HasEmbedded %v, encoding/json data.message %v", r.HasEmbedded(), emb)
	}
	if r.HasEmbedded() && emb != nil && depth == 0 {
		compareWithReference(t, emb, r.Embedded, escType, depth+1)
	}
}

func compareMessage(t *testing.T, msg map[string]any, m *Message, escType bool) {
	t.Helper()
	if got, want := m.ID, refString(msg["id"]); got != want {
		t.Fatalf("message.id %q, encoding/json %q", got, want)
	}
	if got, want := m.Model, refString(msg["model"]); got != want {
		t.Fatalf("message.model %q, encoding/json %q", got, want)
	}
	if got, want := m.StopReason, refString(msg["stop_reason"]); got != want {
		t.Fatalf("message.stop_reason %q, encoding/json %q", got, want)
	}
	usage, isObj := msg["usage"].(map[string]any)
	if m.HasUsage != isObj {
		t.Fatalf("HasUsage %v, encoding/json usage %T", m.HasUsage, msg["usage"])
	}
	if isObj {
		cc, ccObj := usage["cache_creation"].(map[string]any)
		bad := refUsageBad(usage, cc)
		if got := m.Usage.Problem != ""; got != bad {
			t.Fatalf("usage problem %q, but the reference says rejected=%v: %v", m.Usage.Problem, bad, usage)
		}
		if bad {
			if m.Usage != (Usage{Problem: m.Usage.Problem}) {
				t.Fatalf("a rejected usage still counts: %+v", m.Usage)
			}
		} else {
			for _, f := range []struct {
				key string
				got int64
			}{
				{"input_tokens", m.Usage.Input}, {"output_tokens", m.Usage.Output},
				{"cache_read_input_tokens", m.Usage.CacheRead}, {"cache_creation_input_tokens", m.Usage.CacheCreation},
			} {
				if want, ok := refInt(usage[f.key]); ok && f.got != want {
					t.Fatalf("usage.%s = %d, encoding/json %v", f.key, f.got, usage[f.key])
				}
			}
			if m.Usage.HasBreakdown != ccObj {
				t.Fatalf("HasBreakdown %v, encoding/json %T", m.Usage.HasBreakdown, usage["cache_creation"])
			}
			if want, ok := refInt(cc["ephemeral_5m_input_tokens"]); ok && m.Usage.Ephemeral5m != want {
				t.Fatalf("ephemeral_5m %d, encoding/json %v", m.Usage.Ephemeral5m, cc["ephemeral_5m_input_tokens"])
			}
			if want, ok := refInt(cc["ephemeral_1h_input_tokens"]); ok && m.Usage.Ephemeral1h != want {
				t.Fatalf("ephemeral_1h %d, encoding/json %v", m.Usage.Ephemeral1h, cc["ephemeral_1h_input_tokens"])
			}
		}
	}
	switch c := msg["content"].(type) {
	case string:
		want, cut := c, false
		if len(want) > TextHeadMax {
			want, cut = string(cutUTF8([]byte(want), TextHeadMax)), true
		}
		if !m.ContentIsString || m.TextHead != want || m.TextHeadCut != cut || m.TextBlocks != 1 {
			t.Fatalf("string content head %q (cut %v), encoding/json %q (cut %v)", m.TextHead, m.TextHeadCut, want, cut)
		}
	case []any:
		if !escType {
			compareBlocks(t, c, m)
		}
	default:
		if m.ContentIsString || m.TextBlocks != 0 || len(m.ToolUses) != 0 || len(m.ToolResults) != 0 {
			t.Fatalf("content %T decoded as %+v", c, m)
		}
	}
}

func compareBlocks(t *testing.T, blocks []any, m *Message) {
	t.Helper()
	var texts, uses, results int
	head, headSet := "", false
	for _, e := range blocks {
		b, ok := e.(map[string]any)
		if !ok {
			continue
		}
		switch typ := refString(b["type"]); typ {
		case "text":
			texts++
			if s, ok := b["text"].(string); ok && texts == 1 {
				head, headSet = s, true
			}
		case "tool_use", "server_tool_use":
			if uses >= len(m.ToolUses) {
				t.Fatalf("missing tool_use %d", uses)
			}
			got := m.ToolUses[uses]
			name := refString(b["name"])
			if got.ID != refString(b["id"]) || got.Name != name {
				t.Fatalf("tool_use %+v, encoding/json %v", got, b)
			}
			in, _ := b["input"].(map[string]any)
			if want := referenceInputLines(name, in); got.InputLines != want {
				t.Fatalf("%s input lines %+v, encoding/json and a plain diff %+v", name, got.InputLines, want)
			}
			if in, ok := b["input"].(map[string]any); ok && (name == "Task" || name == "Agent") {
				if got.SubagentType != refString(in["subagent_type"]) {
					t.Fatalf("subagent_type %q, encoding/json %v", got.SubagentType, in["subagent_type"])
				}
				if d := refString(in["description"]); len(d) <= 256 && got.Description != d {
					t.Fatalf("description %q, encoding/json %q", got.Description, d)
				}
			}
			uses++
		case "tool_result":
			if results >= len(m.ToolResults) {
				t.Fatalf("missing tool_result %d", results)
			}
			got := m.ToolResults[results]
			isErr, _ := b["is_error"].(bool)
			if got.ToolUseID != refString(b["tool_use_id"]) || got.IsError != isErr {
				t.Fatalf("tool_result %+v, encoding/json %v", got, b)
			}
			results++
		default:
			// A server tool's result in the assistant stream
			// (web_search_tool_result, ...): a result when it names the
			// call it answers; an error when its content is an object
			// whose type ends in _error.
			id, named := b["tool_use_id"].(string)
			if !strings.HasSuffix(typ, "_tool_result") || !named {
				break
			}
			if results >= len(m.ToolResults) {
				t.Fatalf("missing server tool result %d", results)
			}
			got := m.ToolResults[results]
			if got.ToolUseID != id || !got.InStream {
				t.Fatalf("server tool result %+v, encoding/json %v", got, b)
			}
			if c, ok := b["content"].(map[string]any); ok {
				if ct, ok := c["type"].(string); ok && got.IsError != strings.HasSuffix(ct, "_error") {
					t.Fatalf("server tool result %+v, encoding/json %v", got, b)
				}
			}
			results++
		}
	}
	if uses != len(m.ToolUses) || results != len(m.ToolResults) || texts != m.TextBlocks {
		t.Fatalf("blocks: %d text %d tool_use %d tool_result, encoding/json %d %d %d", m.TextBlocks, len(m.ToolUses), len(m.ToolResults), texts, uses, results)
	}
	if headSet {
		want, cut := head, false
		if len(want) > TextHeadMax {
			want, cut = string(cutUTF8([]byte(want), TextHeadMax)), true
		}
		if m.TextHead != want || m.TextHeadCut != cut {
			t.Fatalf("text head %q (cut %v), encoding/json %q (cut %v)", m.TextHead, m.TextHeadCut, want, cut)
		}
	}
}
