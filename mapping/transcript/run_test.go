package transcript

import (
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// sameRecord reports whether a and b hold the same values, an empty
// slice being the same as none (a record read into reuses its slices).
func sameRecord(a, b Record) bool {
	return reflect.DeepEqual(noEmptySlices(a), noEmptySlices(b))
}

func noEmptySlices(r Record) Record {
	m := &r.Message
	if len(m.ToolUses) == 0 {
		m.ToolUses = nil
	}
	if len(m.ToolResults) == 0 {
		m.ToolResults = nil
	}
	if len(m.Advisor) == 0 {
		m.Advisor = nil
	}
	if r.Embedded != nil {
		e := noEmptySlices(*r.Embedded)
		r.Embedded = &e
	}
	return r
}

// decodeFresh decodes line with a decoder that has read nothing before.
func decodeFresh(line []byte) (Record, error) {
	var r Record
	err := NewDecoder(Options{}).Decode(line, &r)
	return r, err
}

// decodesAsAlone decodes line with dec and fails unless the verdict and
// the record are those of a decoder that has read nothing before.
func decodesAsAlone(t *testing.T, dec *Decoder, line []byte, what string) {
	t.Helper()
	var got Record
	err := dec.Decode(line, &got)
	want, wantErr := decodeFresh(line)
	if (err == nil) != (wantErr == nil) || ReasonOf(err) != ReasonOf(wantErr) {
		t.Fatalf("%s: after the lines before: %v, alone: %v\n%.300s", what, err, wantErr, line)
	}
	if !sameRecord(got, want) {
		t.Fatalf("%s: after the lines before:\n%+v\nalone:\n%+v\n%.300s", what, got, want, line)
	}
}

// TestLinesDecodeAsAloneAfterAnyLineBefore decodes every corpus line with
// one decoder, which takes the run of fields the lines repeat from the
// line before (run.go), and compares each record whole with what a
// decoder that read nothing before makes of the line.
func TestLinesDecodeAsAloneAfterAnyLineBefore(t *testing.T) {
	dec := NewDecoder(Options{})
	lines, reused := 0, 0
	corpusLines(t, func(path string, line []byte) {
		lines++
		if len(dec.run.bytes) > 0 && strings.Contains(string(line), string(dec.run.bytes)) {
			reused++
		}
		decodesAsAlone(t, dec, line, path)
	})
	// The corpus's lines repeat their runs: most hold the one kept before.
	if lines == 0 || reused < lines/2 {
		t.Fatalf("%d of %d lines hold the kept run", reused, lines)
	}
}

// TestRunsAreTakenOnlyWhereTheyDecodeTheSame pairs a line that keeps a run
// with lines that hold it, or nearly, and checks that each decodes as it
// does alone.
func TestRunsAreTakenOnlyWhereTheyDecodeTheSame(t *testing.T) {
	const run = `"isSidechain":true,"userType":"external","cwd":"/w/app","sessionId":"s-1","version":"2.1.3","gitBranch":"main","slug":"a-b"`
	first := `{"parentUuid":null,` + run + `,"type":"user","uuid":"u1","message":{"role":"user","content":"hi"}}`
	for _, tc := range []struct{ name, line string }{
		{"the same run", `{"parentUuid":"u1",` + run + `,"type":"assistant","uuid":"u2","message":{"id":"m","model":"x","usage":{"input_tokens":1}}}`},
		{"the run first", `{` + run + `,"type":"user","uuid":"u2"}`},
		{"the run last", `{"type":"user",` + run + `}`},
		{"the run alone", `{` + run + `}`},
		{"a key after the run sets its field again", `{` + run + `,"cwd":"/other","sessionId":null,"isSidechain":false,"type":"user"}`},
		{"a key before the run is replaced by it", `{"cwd":"/before","slug":"s",` + run + `,"type":"user"}`},
		{"one byte differs", `{"parentUuid":"u1",` + strings.Replace(run, "main", "mainx", 1) + `,"type":"user"}`},
		{"a run key fewer", `{"parentUuid":"u1",` + strings.Replace(run, `,"slug":"a-b"`, ``, 1) + `,"type":"user"}`},
		{"a run key more", `{"parentUuid":"u1",` + run + `,"agentId":"ag1","type":"user"}`},
		{"blanks around the run", `{ "parentUuid" : "u1" , ` + run + ` , "type" : "user" }`},
		{"the run as a value", `{"parentUuid":"u1","x":"` + strings.ReplaceAll(run, `"`, `\"`) + `","type":"user"}`},
		{"the run in a message", `{"type":"user","message":{` + run + `}}`},
		{"the run in a progress envelope", `{"type":"progress","data":{"type":"agent_progress","message":{"type":"user",` + run + `}}}`},
		{"the run cut short", `{"parentUuid":"u1",` + run[:len(run)-3]},
		{"the run, then invalid JSON", `{"parentUuid":"u1",` + run + `,"type":}`},
		{"the run, then no comma", `{"parentUuid":"u1",` + run + ` "type":"user"}`},
		{"the run, then a raw control character", "{" + run + ",\"type\":\"us\x01er\"}"},
		{"the run inside a longer key", `{"parentUuid":"u1",` + strings.Replace(run, `"isSidechain"`, `"isSidechainX"`, 1) + `}`},
		{"an escaped key spelling a run key", `{"parentUuid":"u1","is\u0053idechain":true,"userType":"external","cwd":"/w/app","type":"user"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dec := NewDecoder(Options{})
			var r Record
			if err := dec.Decode([]byte(first), &r); err != nil {
				t.Fatal(err)
			}
			if string(dec.run.bytes) != run {
				t.Fatalf("kept run %q, want %q", dec.run.bytes, run)
			}
			for pass := range 2 { // the second with the line's own run kept
				decodesAsAlone(t, dec, []byte(tc.line), "pass "+strconv.Itoa(pass))
			}
		})
	}
}

// TestRunValuesFollowTheRecord: a run sets the fields of the record read
// after it as its own bytes would.
func TestRunValuesFollowTheRecord(t *testing.T) {
	dec := NewDecoder(Options{})
	run := `"isSidechain":true,"cwd":"/w","sessionId":"s","version":"v","gitBranch":"b","agentId":"a","slug":"g"`
	var r Record
	for _, line := range []string{`{"parentUuid":"x",` + run + `,"type":"user"}`, `{"parentUuid":"y",` + run + `,"type":"assistant"}`} {
		if err := dec.Decode([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		if !r.IsSidechain || r.Cwd != "/w" || r.SessionID != "s" || r.Version != "v" || r.GitBranch != "b" || r.AgentID != "a" || r.Slug != "g" {
			t.Fatalf("fields not set from the run: %+v", r)
		}
	}
}

// TestUsageIsTakenOnlyWhereItDecodesTheSame pairs a line whose usage is
// kept (usageOnce) with lines that hold it, or nearly, and checks that
// each decodes as it does alone.
func TestUsageIsTakenOnlyWhereItDecodesTheSame(t *testing.T) {
	usages := []string{
		`{"input_tokens":3,"cache_creation_input_tokens":120,"cache_read_input_tokens":4000,"cache_creation":{"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens":120},"output_tokens":7,"service_tier":"standard"}`,
		`{"input_tokens":1,"output_tokens":2,"iterations":[{"type":"advisor_message","model":"claude-opus-4-5","input_tokens":5,"output_tokens":6},{"type":"message","input_tokens":1}]}`,
		`{"input_tokens":-1,"output_tokens":2}`,
		`{"input_tokens":1,"iterations":[{"type":"advisor_message","input_tokens":1e400}]}`,
		`{"input_tokens":1,"speed":null,"inference_geo":"us","server_tool_use":{"web_search_requests":2}}`,
		`{}`,
	}
	line := func(id, usage string) string {
		return `{"type":"assistant","uuid":"u","message":{"id":"` + id + `","model":"claude-sonnet-4-5","usage":` + usage + `}}`
	}
	for i, u := range usages {
		for _, tc := range []struct{ name, line string }{
			{"the same usage", line("m2", u)},
			{"a count differs", line("m2", strings.Replace(u, "1", "9", 1))},
			{"the usage key twice", `{"type":"assistant","message":{"usage":{"output_tokens":99},"usage":` + u + `}}`},
			{"the same usage twice", `{"type":"assistant","message":{"usage":` + u + `,"usage":` + u + `}}`},
			{"the usage then another", `{"type":"assistant","message":{"usage":` + u + `,"usage":{"input_tokens":5}}}`},
			{"in a progress envelope", `{"type":"progress","data":{"type":"agent_progress","message":{"type":"assistant","message":{"id":"m","usage":` + u + `}}}}`},
			{"cut short", line("m2", u)[:len(line("m2", u))-4]},
			{"followed by no comma", `{"type":"assistant","message":{"usage":` + u + ` "id":"m"}}`},
			{"as a string", `{"type":"assistant","message":{"id":"` + strings.ReplaceAll(u, `"`, `\"`) + `","usage":{"input_tokens":4}}}`},
		} {
			t.Run(strconv.Itoa(i)+"/"+tc.name, func(t *testing.T) {
				dec := NewDecoder(Options{})
				var r Record
				if err := dec.Decode([]byte(line("m1", u)), &r); err != nil {
					t.Fatal(err)
				}
				if string(dec.lastUsage.bytes) != u {
					t.Fatalf("kept usage %q, want %q", dec.lastUsage.bytes, u)
				}
				for pass := range 2 { // the second with the line's own usage kept
					decodesAsAlone(t, dec, []byte(tc.line), "pass "+strconv.Itoa(pass))
				}
			})
		}
	}
}
