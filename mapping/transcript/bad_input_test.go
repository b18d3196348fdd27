package transcript

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"
)

// goodLine is decoded after every bad line with the same Decoder and
// Record: a bad line must leave nothing behind.
const goodLine = `{"parentUuid":"u-0","isSidechain":true,"type":"assistant","uuid":"u-1","timestamp":"2026-05-14T18:47:56.001Z","requestId":"req_1","message":{"model":"claude-opus-4-5-20251101","id":"msg_01","role":"assistant","content":[{"type":"text","text":"Done."},{"type":"tool_use","id":"toolu_1","name":"Read","input":{"file_path":"/x"}}],"stop_reason":"tool_use","usage":{"input_tokens":10,"cache_creation_input_tokens":20,"cache_read_input_tokens":30,"output_tokens":40}}}`

func checkGoodLine(t *testing.T, r *Record) {
	t.Helper()
	m := &r.Message
	if r.Kind != KindAssistant || r.UUID != "u-1" || r.ParentUUID != "u-0" || !r.IsSidechain || r.RequestID != "req_1" ||
		m.ID != "msg_01" || m.Model != "claude-opus-4-5-20251101" || m.StopReason != "tool_use" ||
		m.Usage != (Usage{Input: 10, CacheCreation: 20, CacheRead: 30, Output: 40}) ||
		m.TextBlocks != 1 || m.TextHead != "Done." || len(m.ToolUses) != 1 || m.ToolUses[0] != (ToolUse{ID: "toolu_1", Name: "Read"}) ||
		len(m.ToolResults) != 0 || r.HasEmbedded() || r.UnknownFields != 0 || r.Rare().Error != "" ||
		!r.Timestamp.Equal(time.Date(2026, 5, 14, 18, 47, 56, 1e6, time.UTC)) {
		t.Fatalf("good line decoded wrongly after a bad one: %+v", r)
	}
}

// checkEmpty: a rejected line leaves the record reset.
func checkEmpty(t *testing.T, r *Record) {
	t.Helper()
	if r.Kind != KindOther || r.Type != "" || r.UUID != "" || r.HasMessage || r.Message.ID != "" ||
		len(r.Message.ToolUses) != 0 || r.HasEmbedded() || r.UnknownFields != 0 || !r.Timestamp.IsZero() || r.rare != nil {
		t.Errorf("record not reset after a rejected line: %+v", r)
	}
}

type badLine struct {
	name   string
	line   string
	reason Reason
}

var badLines = []badLine{
	// Invalid JSON: truncated objects (a half-written last line).
	{"truncated object", `{"type":"user","uuid":"u-1"`, ReasonInvalidJSON},
	{"truncated in a key", `{"type":"user","uu`, ReasonInvalidJSON},
	{"truncated after a colon", `{"type":"user","uuid":`, ReasonInvalidJSON},
	{"truncated after a comma", `{"type":"user",`, ReasonInvalidJSON},
	{"truncated in the message content", `{"type":"assistant","message":{"id":"m","content":[{"type":"text","text":"hi"}`, ReasonInvalidJSON},
	{"truncated in a skipped value", `{"type":"file-history-snapshot","snapshot":{"trackedFileBackups":{"a":[1,2`, ReasonInvalidJSON},
	{"truncated in a number", `{"type":"assistant","message":{"usage":{"input_tokens":12`, ReasonInvalidJSON},
	{"truncated in a literal", `{"type":"user","isMeta":tr`, ReasonInvalidJSON},
	{"lone open brace", `{`, ReasonInvalidJSON},
	// Invalid JSON: trailing garbage.
	{"trailing word", `{"type":"user"} x`, ReasonInvalidJSON},
	{"trailing brace", `{"type":"user"}}`, ReasonInvalidJSON},
	{"trailing comma", `{"type":"user"},`, ReasonInvalidJSON},
	{"two records glued together", `{"type":"user","uuid":"a"}{"type":"user","uuid":"b"}`, ReasonInvalidJSON},
	// Invalid JSON: brackets.
	{"unbalanced array in a skipped value", `{"type":"user","x":[[1]}`, ReasonInvalidJSON},
	{"unbalanced object in a skipped value", `{"type":"user","x":{"a":{}}`, ReasonInvalidJSON},
	{"mismatched kinds in a skipped value", `{"type":"user","x":[1}]}`, ReasonInvalidJSON},
	{"mismatched kinds, object closed by bracket", `{"type":"user","x":{"a":1]}`, ReasonInvalidJSON},
	{"mismatched kinds in content", `{"type":"user","message":{"content":[}]}}`, ReasonInvalidJSON},
	{"mismatched kinds in a tool input", `{"type":"assistant","message":{"content":[{"type":"tool_use","name":"Task","input":{"a":[}]}]}}`, ReasonInvalidJSON},
	{"closing bracket for the line", `{"type":"user"]`, ReasonInvalidJSON},
	// Invalid JSON: strings.
	{"unterminated string", `{"type":"user","uuid":"abc}`, ReasonInvalidJSON},
	{"string ended by an escaped quote", `{"type":"user","uuid":"abc\"}`, ReasonInvalidJSON},
	{"unterminated string in a skipped value", `{"type":"user","toolUseResult":{"stdout":"abc}}`, ReasonInvalidJSON},
	{"unterminated key", `{"type":"user","uuid`, ReasonInvalidJSON},
	// Invalid JSON: structure.
	{"missing colon", `{"type" "user"}`, ReasonInvalidJSON},
	{"missing comma", `{"type":"user" "uuid":"a"}`, ReasonInvalidJSON},
	{"unquoted key", `{type:"user"}`, ReasonInvalidJSON},
	{"single quotes", `{'type':'user'}`, ReasonInvalidJSON},
	{"bad literal", `{"type":"user","isMeta":tru}`, ReasonInvalidJSON},
	{"bad null", `{"type":"user","parentUuid":nul}`, ReasonInvalidJSON},
	{"value missing", `{"type":"user","uuid":}`, ReasonInvalidJSON},
	{"leading garbage", `x{"type":"user"}`, ReasonInvalidJSON},
	{"byte order mark", "\xef\xbb\xbf{\"type\":\"user\"}", ReasonInvalidJSON},
	// Invalid JSON: control characters outside strings.
	{"control character between tokens", "{\"type\":\"user\",\x01\"uuid\":\"a\"}", ReasonInvalidJSON},
	{"control character in a skipped value", "{\"type\":\"user\",\"x\":[1,\x02 2]}", ReasonInvalidJSON},
	{"form feed as white space", "{\"type\":\"user\",\f\"uuid\":\"a\"}", ReasonInvalidJSON},
	// Known keys whose values no counter reads are checked as if read.
	{"control character in a dropped string (promptId)", "{\"type\":\"user\",\"promptId\":\"p\x01\"}", ReasonInvalidJSON},
	{"unterminated dropped string (leafUuid)", `{"type":"summary","leafUuid":"abc}`, ReasonInvalidJSON},
	// Invalid UTF-8.
	{"invalid byte in a string", "{\"type\":\"user\",\"message\":{\"content\":\"\xff\xfe\"}}", ReasonInvalidUTF8},
	{"overlong encoding", "{\"type\":\"user\",\"uuid\":\"\xc0\xaf\"}", ReasonInvalidUTF8},
	{"UTF-8 encoded surrogate", "{\"type\":\"user\",\"uuid\":\"\xed\xa0\x80\"}", ReasonInvalidUTF8},
	{"rune cut at the end of a string", "{\"type\":\"user\",\"message\":{\"content\":\"caf\xc3\"}}", ReasonInvalidUTF8},
	{"invalid UTF-8 in a skipped value", "{\"type\":\"file-history-snapshot\",\"snapshot\":{\"a\xff\":1}}", ReasonInvalidUTF8},
	{"invalid UTF-8 in a line that is not an object", "\xff\xff\xff", ReasonInvalidUTF8},
	// Binary junk.
	{"NUL bytes only", "\x00\x00\x00\x00\x00\x00", ReasonInvalidJSON},
	{"NUL bytes then a record (pre-allocated file after a crash)", "\x00\x00\x00\x00{\"type\":\"user\",\"uuid\":\"u\"}", ReasonInvalidJSON},
	{"a record then NUL bytes", "{\"type\":\"user\",\"uuid\":\"u\"}\x00\x00", ReasonInvalidJSON},
	{"NUL between tokens", "{\"type\":\"user\",\x00\"uuid\":\"u\"}", ReasonInvalidJSON},
	{"binary file header", "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", ReasonInvalidUTF8},
	{"gzip header", "\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03", ReasonInvalidUTF8},
	{"printable binary junk", "\x01\x02\x03abc\x7f", ReasonInvalidJSON},
	// JSON that is not an object.
	{"array", `[{"type":"user"}]`, ReasonNotObject},
	{"empty array", `[]`, ReasonNotObject},
	{"spaced array", "  [1, 2]\t", ReasonNotObject},
	{"string", `"just a string"`, ReasonNotObject},
	{"number", `42`, ReasonNotObject},
	{"negative exponent number", `-1.5e3`, ReasonNotObject},
	{"null", `null`, ReasonNotObject},
	{"true", `true`, ReasonNotObject},
	{"false", `false`, ReasonNotObject},
	{"truncated array", `[1,2`, ReasonInvalidJSON},
	{"unterminated string line", `"abc`, ReasonInvalidJSON},
	{"array with trailing garbage", `[1] [2]`, ReasonInvalidJSON},
	{"rare fields, then cut off", `{"type":"system","subtype":"turn_duration","durationMs":5,"level":"info","x":`, ReasonInvalidJSON},
}

func TestDecodeBadLines(t *testing.T) {
	dec := NewDecoder(Options{})
	var r Record
	for _, tc := range badLines {
		t.Run(tc.name, func(t *testing.T) {
			// Prime the record so that a leak would show.
			if err := dec.Decode([]byte(goodLine), &r); err != nil {
				t.Fatal(err)
			}
			err := dec.Decode([]byte(tc.line), &r)
			if err == nil {
				t.Fatalf("accepted %q", tc.line)
			}
			if got := ReasonOf(err); got != tc.reason {
				t.Errorf("reason %q, want %q (line %q)", got, tc.reason, tc.line)
			}
			if err.Error() != "decode line: "+string(tc.reason) {
				t.Errorf("Error() = %q", err.Error())
			}
			checkEmpty(t, &r)
			if err := dec.Decode([]byte(goodLine), &r); err != nil {
				t.Fatalf("good line after a bad one: %v", err)
			}
			checkGoodLine(t, &r)
		})
	}
}

func TestDecodeBadLinesInAStream(t *testing.T) {
	// A file with every bad line between good ones, decoded in order with
	// one decoder and one record, as the exporter reads it.
	dec := NewDecoder(Options{})
	var r Record
	embedded := `{"type":"progress","data":{"type":"agent_progress","agentId":"ag","message":{"type":"user","uuid":"emb","message":{"content":[{"type":"tool_result","tool_use_id":"t","is_error":true}]}}},"uuid":"p"}`
	for i, tc := range badLines {
		if i%2 == 0 {
			if err := dec.Decode([]byte(embedded), &r); err != nil || !r.HasEmbedded() || r.Embedded.UUID != "emb" || len(r.Embedded.Message.ToolResults) != 1 {
				t.Fatalf("embedded line: %v %+v", err, r.Embedded)
			}
		}
		if err := dec.Decode([]byte(tc.line), &r); ReasonOf(err) != tc.reason {
			t.Fatalf("%s: reason %q, want %q", tc.name, ReasonOf(err), tc.reason)
		}
		checkEmpty(t, &r)
		if err := dec.Decode([]byte(goodLine), &r); err != nil {
			t.Fatalf("%s: next line: %v", tc.name, err)
		}
		checkGoodLine(t, &r)
	}
}

func TestReasonOf(t *testing.T) {
	if ReasonOf(nil) != "" || ReasonOf(os.ErrNotExist) != "" {
		t.Error("ReasonOf of a nil or foreign error is not empty")
	}
	seen := map[Reason]bool{}
	for _, r := range Reasons() {
		if r == "" || seen[r] {
			t.Errorf("bad or repeated reason %q", r)
		}
		seen[r] = true
	}
	for _, tc := range badLines {
		if !seen[tc.reason] {
			t.Errorf("%s: reason %q missing from Reasons()", tc.name, tc.reason)
		}
	}
}

func TestDecodeTooLong(t *testing.T) {
	line := `{"type":"user","uuid":"` + strings.Repeat("x", 40) + `"}` // 65 bytes
	dec := NewDecoder(Options{MaxLineBytes: len(line) - 1})
	var r Record
	if err := dec.Decode([]byte(`{"type":"user","uuid":"primed"}`), &r); err != nil {
		t.Fatal(err)
	}
	if err := dec.Decode([]byte(line), &r); ReasonOf(err) != ReasonTooLong {
		t.Fatalf("reason %q, want too_long", ReasonOf(err))
	}
	checkEmpty(t, &r)
	// Too long is decided on length alone: junk gets too_long as well.
	if err := dec.Decode(bytes.Repeat([]byte{0xff}, len(line)), &r); ReasonOf(err) != ReasonTooLong {
		t.Fatalf("junk: reason %q, want too_long", ReasonOf(err))
	}
	// A line of exactly MaxLineBytes is fine, and so is the next one.
	exact := line[:len(line)-3] + `"}`
	if len(exact) != len(line)-1 {
		t.Fatal("test bug")
	}
	if err := dec.Decode([]byte(exact), &r); err != nil || r.UUID != strings.Repeat("x", 39) {
		t.Fatalf("line of exactly MaxLineBytes: %v %q", err, r.UUID)
	}
	// The default limit is DefaultMaxLineBytes.
	def := NewDecoder(Options{})
	big := make([]byte, DefaultMaxLineBytes+1)
	for i := range big {
		big[i] = ' '
	}
	if err := def.Decode(big, &r); ReasonOf(err) != ReasonTooLong {
		t.Fatalf("default limit: reason %q, want too_long", ReasonOf(err))
	}
	if err := def.Decode([]byte(goodLine), &r); err != nil {
		t.Fatal(err)
	}
	checkGoodLine(t, &r)
}

func TestBlankLines(t *testing.T) {
	dec := NewDecoder(Options{})
	var r Record
	for _, line := range []string{"", " ", "\t", "\r", "  \t \r", strings.Repeat(" ", 1000)} {
		if !IsBlank([]byte(line)) {
			t.Errorf("IsBlank(%q) = false", line)
		}
		if err := dec.Decode([]byte(goodLine), &r); err != nil {
			t.Fatal(err)
		}
		err := dec.Decode([]byte(line), &r)
		// Blank lines are not records: whatever Decode says (see
		// TestBlankLineDecodesAsDocumented), nothing is left in r.
		if err != nil && ReasonOf(err) != ReasonNotObject {
			t.Errorf("Decode(%q): %v", line, err)
		}
		checkEmpty(t, &r)
		if err := dec.Decode([]byte(goodLine), &r); err != nil {
			t.Fatal(err)
		}
		checkGoodLine(t, &r)
	}
	for _, line := range []string{"{}", " x", "\x00", "\v", "\f", "\u00a0", "\ufeff", " {} "} {
		if IsBlank([]byte(line)) {
			t.Errorf("IsBlank(%q) = true", line)
		}
	}
}

// TestBlankLineDecodesAsDocumented: Decode's doc says "Blank lines
// decode to a record of KindOther with an empty Type; callers skip them
// with IsBlank", but Decode returns a not_object DecodeError for them.
func TestBlankLineDecodesAsDocumented(t *testing.T) {
	var r Record
	for _, line := range []string{"", "  \t\r"} {
		if err := NewDecoder(Options{}).Decode([]byte(line), &r); err != nil {
			t.Errorf("Decode(%q) = %v, want nil as documented", line, err)
		}
	}
}

// TestControlCharactersInReadStringsAreInvalid: JSON forbids raw bytes
// below 0x20 inside strings. Strings the decoder reads are checked and the
// line is invalid_json; strings it skips unread (tool output, snapshots)
// are only delimited, not validated, so that skipping stays a memchr.
func TestControlCharactersInReadStringsAreInvalid(t *testing.T) {
	for _, c := range []struct {
		line string
		want Reason
	}{
		{"{\"type\":\"user\",\"uuid\":\"a\x01b\"}", ReasonInvalidJSON},
		{"{\"type\":\"user\",\"message\":{\"content\":\"raw\ttab\"}}", ReasonInvalidJSON},
		{"{\"type\":\"user\",\"toolUseResult\":{\"stdout\":\"nul\x00byte\"}}", ""},
		{"{\"type\":\"user\",\"x\":[\"\x1f\"]}", ""},
	} {
		var r Record
		if err := NewDecoder(Options{}).Decode([]byte(c.line), &r); ReasonOf(err) != c.want {
			t.Errorf("%q: reason %q, want %q", c.line, ReasonOf(err), c.want)
		}
	}
}

func TestDecodeDeepNestingInSkippedValues(t *testing.T) {
	// Skipped values are walked with an explicit stack, not recursion: a
	// million nested arrays cost memory proportional to the depth only.
	const depth = 1 << 20
	line := `{"type":"user","x":` + strings.Repeat("[", depth) + strings.Repeat("]", depth) + `,"uuid":"deep"}`
	r := decodeOK(t, Options{}, line)
	eq(t, "UUID", r.UUID, "deep")
	bad := `{"type":"user","x":` + strings.Repeat("[", depth) + strings.Repeat("]", depth-1) + `}`
	var rr Record
	if err := NewDecoder(Options{}).Decode([]byte(bad), &rr); ReasonOf(err) != ReasonInvalidJSON {
		t.Fatalf("unbalanced deep nesting: reason %q", ReasonOf(err))
	}
	// A few levels of progress-in-progress decode.
	nested := strings.Repeat(`{"type":"progress","data":{"message":`, 50) + `{"type":"user","uuid":"inner"}` + strings.Repeat(`}}`, 50)
	r = decodeOK(t, Options{}, nested)
	eq(t, "Kind", r.Kind, KindProgress)
}

// TestDeeplyNestedProgress: record -> progressData -> record
// recurses once per data.message level, with no depth limit and about
// 800 bytes of stack per level. A 33 MB line (well under the 64 MB
// DefaultMaxLineBytes) of 1.5 million nested {"data":{"message":...}}
// exceeds Go's 1 GB stack limit, which is a fatal error, not a panic: the
// whole exporter dies. The test runs the decode in a child process.
func TestDeeplyNestedProgress(t *testing.T) {
	if os.Getenv("CTE_DEEP_NESTING_CHILD") == "1" {
		const depth = 1_500_000
		line := strings.Repeat(`{"data":{"message":`, depth) + `{"type":"user"}` + strings.Repeat(`}}`, depth)
		var r Record
		err := NewDecoder(Options{}).Decode([]byte(line), &r)
		os.Stdout.WriteString("decoded " + string(ReasonOf(err)) + "\n")
		return
	}
	if testing.Short() {
		t.Skip("slow")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestDeeplyNestedProgress$", "-test.count=1")
	cmd.Env = append(os.Environ(), "CTE_DEEP_NESTING_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("decoded")) {
		i := bytes.Index(out, []byte("fatal error"))
		if i < 0 {
			i = 0
		}
		t.Fatalf("decoding a deeply nested progress line killed the process: %v\n%.300s", err, out[i:])
	}
}

func TestDecodeHugeValidLines(t *testing.T) {
	const size = 20 << 20
	// Real tool output: code with escaped newlines, quotes, tabs and
	// backslashes.
	chunk := `func main() {\n\tfmt.Println(\"hello, \\\"world\\\"\")\n}\n// caf\u00e9 日本語\n`
	content := func(n int) string { return strings.Repeat(chunk, n/len(chunk)+1) }
	cases := []struct {
		name  string
		line  func(n int) string
		check func(t *testing.T, r *Record)
	}{
		{"file-history-snapshot of 20 MB", snapshotLine, func(t *testing.T, r *Record) {
			eq(t, "Kind", r.Kind, KindFileHistorySnapshot)
		}},
		{"tool_result with 20 MB content", func(n int) string {
			return `{"type":"user","uuid":"big","message":{"role":"user","content":[{"tool_use_id":"toolu_big","type":"tool_result","content":"` + content(n) + `","is_error":false}]},"toolUseResult":{"stdout":"` + content(1000) + `","stderr":"","interrupted":false}}`
		}, func(t *testing.T, r *Record) {
			eq(t, "UUID", r.UUID, "big")
			if len(r.Message.ToolResults) != 1 || r.Message.ToolResults[0].ToolUseID != "toolu_big" || r.Message.ToolResults[0].Content != "" {
				t.Errorf("ToolResults = %.200v", r.Message.ToolResults)
			}
		}},
		{"Write tool_use with 20 MB input", func(n int) string {
			return `{"type":"assistant","message":{"id":"m","model":"claude","content":[{"type":"tool_use","id":"toolu_w","name":"Write","input":{"file_path":"/x","content":"` + content(n) + `"}}],"usage":{"input_tokens":1,"output_tokens":2}},"uuid":"w"}`
		}, func(t *testing.T, r *Record) {
			eq(t, "UUID", r.UUID, "w")
			eq(t, "Output", r.Message.Usage.Output, int64(2))
			if len(r.Message.ToolUses) != 1 || r.Message.ToolUses[0].Input != "" {
				t.Errorf("ToolUses = %.200v", r.Message.ToolUses)
			}
		}},
		{"user prompt of 20 MB", func(n int) string {
			return `{"type":"user","uuid":"p","message":{"role":"user","content":"` + content(n) + `"}}`
		}, func(t *testing.T, r *Record) {
			eq(t, "TextHeadCut", r.Message.TextHeadCut, true)
			var full string
			if err := json.Unmarshal([]byte(`"`+content(4*len(chunk))+`"`), &full); err != nil {
				t.Fatal(err)
			}
			eq(t, "TextHead", r.Message.TextHead, string(cutUTF8([]byte(full), TextHeadMax)))
		}},
	}
	dec := NewDecoder(Options{})
	var r Record
	// best decodes line a few times and returns the fastest run.
	best := func(t *testing.T, line []byte, runs int) time.Duration {
		var min time.Duration
		for range runs {
			start := time.Now()
			if err := dec.Decode(line, &r); err != nil {
				t.Fatal(err)
			}
			if took := time.Since(start); min == 0 || took < min {
				min = took
			}
		}
		return min
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			line := []byte(tc.line(size))
			if len(line) < size {
				t.Fatalf("line is only %d bytes", len(line))
			}
			tBig := best(t, line, 1)
			tc.check(t, &r)
			// "Quickly" means linear: a 20 MB line costs about 20 times a
			// 1 MB line of the same shape. A ratio rather than a wall-clock
			// bound holds under -race and on a loaded machine. The slack
			// (8x, for caches and noise: 1 MB fits in cache, 20 MB does not)
			// is still below what quadratic work would show (20x).
			small := []byte(tc.line(1 << 20))
			tSmall := best(t, small, 3) * time.Duration(len(line)) / time.Duration(len(small))
			t.Logf("%d MB in %v (1 MB scaled up: %v, %.0f MB/s)", len(line)>>20, tBig, tSmall, float64(len(line))/tBig.Seconds()/1e6)
			if tBig > 8*tSmall+100*time.Millisecond {
				t.Errorf("decoding %d MB took %v, more than 8x the scaled 1 MB time %v", len(line)>>20, tBig, tSmall)
			}
			if err := dec.Decode([]byte(goodLine), &r); err != nil {
				t.Fatal(err)
			}
			checkGoodLine(t, &r)
		})
	}
}

func TestDecodeSkipsWithoutAllocating(t *testing.T) {
	line := []byte(snapshotLine(1 << 20))
	dec := NewDecoder(Options{})
	var r Record
	allocs := testing.AllocsPerRun(20, func() {
		if err := dec.Decode(line, &r); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 2 {
		t.Errorf("decoding a 1 MB snapshot allocates %v times per line", allocs)
	}
	big := []byte(`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t","content":"` + strings.Repeat("x", 1<<20) + `"}]}}`)
	allocs = testing.AllocsPerRun(20, func() {
		if err := dec.Decode(big, &r); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 4 {
		t.Errorf("decoding a 1 MB tool result allocates %v times per line", allocs)
	}
}

// DecodeChecked decodes a line as Decode does for every count of its
// ASCII start the caller may pass (none, part, all of it, and counts out
// of range), good lines and bad: it skips the check of those bytes only,
// so invalid UTF-8 after them is still found.
func TestDecodeCheckedDecodesAsDecodeForAnyASCIIStart(t *testing.T) {
	lines := []string{goodLine,
		"{\"type\":\"user\",\"uuid\":\"u\",\"message\":{\"role\":\"user\",\"content\":\"caf\xc3\xa9 \xe2\x94\x80\xe2\x94\x80 \xf0\x9f\x9a\x80\"}}",
		"{\"type\":\"assistant\",\"message\":{\"id\":\"msg_1\",\"model\":\"m\",\"usage\":{\"output_tokens\":3},\"content\":[{\"type\":\"text\",\"text\":\"\xe2\x80\x94\"}]}}",
	}
	for _, tc := range badLines {
		lines = append(lines, tc.line)
	}
	for _, line := range lines {
		ref := NewDecoder(Options{})
		var want Record
		wantErr := ref.Decode([]byte(line), &want)
		prefix := 0
		for prefix < len(line) && line[prefix] < 0x80 {
			prefix++
		}
		for _, ascii := range []int{-5, 0, 1, prefix / 2, prefix - 1, prefix, len(line) + 3} {
			if ascii > prefix && prefix < len(line) {
				continue // a count the caller must not pass
			}
			dec := NewDecoder(Options{})
			var got Record
			err := dec.DecodeChecked([]byte(line), ascii, &got)
			if ReasonOf(err) != ReasonOf(wantErr) || (err == nil) != (wantErr == nil) {
				t.Fatalf("%q with %d ASCII bytes: error %v, Decode says %v", line, ascii, err, wantErr)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%q with %d ASCII bytes: record %+v, Decode makes %+v", line, ascii, got, want)
			}
		}
	}
}
