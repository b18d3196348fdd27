package transcript

import (
	"slices"
	"strings"
	"testing"
)

// TestDecodeAccountingFields reads the fields that price a request or say
// who spent it: usage.speed and inference_geo, advisor iterations,
// diagnostics.cache_miss_reason, attributionSkill/Plugin and effort.
func TestDecodeAccountingFields(t *testing.T) {
	type want struct {
		speed, geo, miss, skill, plugin, effort, mcp string
		missTokens                                   int64
		advisor                                      []AdvisorUsage
		problem                                      UsageProblem
		input                                        int64
	}
	const pre = `{"type":"assistant","uuid":"u","message":{"id":"m","model":"claude-opus-4-7","usage":`
	cases := []struct {
		name string
		line string
		want want
	}{
		{"modifiers", pre + `{"input_tokens":5,"speed":"fast","inference_geo":"us"}}}`,
			want{speed: "fast", geo: "us", input: 5}},
		{"message iterations are never kept", pre + `{"input_tokens":5,"iterations":[{"type":"message","input_tokens":5}]}}}`,
			want{input: 5}},
		{"advisor iterations are kept with their model", pre + `{"input_tokens":5,"iterations":[{"type":"message","input_tokens":5},` +
			`{"type":"advisor_message","model":"claude-opus-5","input_tokens":100,"output_tokens":20,"cache_read_input_tokens":7,` +
			`"cache_creation_input_tokens":9,"cache_creation":{"ephemeral_5m_input_tokens":4,"ephemeral_1h_input_tokens":5}}]}}}`,
			want{input: 5, advisor: []AdvisorUsage{{Model: "claude-opus-5", Input: 100, Output: 20, CacheRead: 7, CacheCreation: 9, Ephemeral5m: 4, Ephemeral1h: 5}}}},
		{"type after the counts", pre + `{"iterations":[{"output_tokens":3,"model":"a","type":"advisor_message"}]}}}`,
			want{advisor: []AdvisorUsage{{Model: "a", Output: 3}}}},
		{"a bad advisor count rejects the usage", pre + `{"input_tokens":5,"iterations":[{"type":"advisor_message","model":"a","output_tokens":-3}]}}}`,
			want{problem: UsageNegative}},
		{"iterations not an array", pre + `{"input_tokens":5,"iterations":{"type":"advisor_message"}}}}`, want{input: 5}},
		{"iteration not an object", pre + `{"input_tokens":5,"iterations":[1,"x",null]}}}`, want{input: 5}},
		{"cache miss with tokens", pre + `{"input_tokens":5},"diagnostics":{"cache_miss_reason":{"type":"messages_changed","cache_missed_input_tokens":74704}}}}`,
			want{input: 5, miss: "messages_changed", missTokens: 74704}},
		{"cache miss without tokens", pre + `{},"diagnostics":{"cache_miss_reason":{"type":"previous_message_not_found"}}}}`,
			want{miss: "previous_message_not_found"}},
		{"cache miss with a bad token count keeps the reason", pre + `{},"diagnostics":{"cache_miss_reason":{"cache_missed_input_tokens":-5,"type":"unavailable"}}}}`,
			want{miss: "unavailable"}},
		{"diagnostics without a reason type", pre + `{},"diagnostics":{"cache_miss_reason":{"cache_missed_input_tokens":5}}}}`, want{}},
		{"diagnostics of other shapes", pre + `{},"diagnostics":[1]}}`, want{}},
		{"attribution", `{"type":"assistant","attributionSkill":"deep-research","attributionPlugin":"p@m","effort":"high","attributionMcpServer":"Drafts","message":{"id":"m"}}`,
			want{skill: "deep-research", plugin: "p@m", effort: "high", mcp: "Drafts"}},
		{"attribution not strings", `{"type":"assistant","attributionSkill":7,"attributionPlugin":null,"effort":{"x":1},"message":{"id":"m"}}`, want{}},
		{"long names are cut", `{"type":"assistant","attributionSkill":"` + strings.Repeat("s", 500) + `","message":{"id":"m"}}`,
			want{skill: strings.Repeat("s", LabelMax)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := decodeOK(t, Options{}, tc.line)
			m := &r.Message
			eq(t, "Speed", m.Usage.Speed, tc.want.speed)
			eq(t, "Geo", m.Usage.Geo, tc.want.geo)
			eq(t, "CacheMiss", m.CacheMiss, tc.want.miss)
			eq(t, "CacheMissTokens", m.CacheMissTokens, tc.want.missTokens)
			eq(t, "Skill", r.Rare().Skill, tc.want.skill)
			eq(t, "Plugin", r.Rare().Plugin, tc.want.plugin)
			eq(t, "Effort", r.Effort, tc.want.effort)
			eq(t, "MCPServer", r.Rare().MCPServer, tc.want.mcp)
			eq(t, "Problem", m.Usage.Problem, tc.want.problem)
			eq(t, "Input", m.Usage.Input, tc.want.input)
			if !slices.Equal(m.Advisor, tc.want.advisor) {
				t.Errorf("Advisor = %+v, want %+v", m.Advisor, tc.want.advisor)
			}
			if r.UnknownFields != 0 {
				t.Errorf("UnknownFields = %d", r.UnknownFields)
			}
		})
	}
}

// TestDecoderReuseDropsAdvisorIterations: a record decoded after a line
// with advisor iterations carries none of them.
func TestDecoderReuseDropsAdvisorIterations(t *testing.T) {
	d := NewDecoder(Options{})
	var r Record
	first := `{"type":"assistant","message":{"id":"m","usage":{"iterations":[{"type":"advisor_message","model":"a","output_tokens":3}]}}}`
	if err := d.Decode([]byte(first), &r); err != nil || len(r.Message.Advisor) != 1 {
		t.Fatalf("first: %v %+v", err, r.Message.Advisor)
	}
	if err := d.Decode([]byte(`{"type":"assistant","message":{"id":"n","usage":{"output_tokens":1}}}`), &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Message.Advisor) != 0 {
		t.Errorf("Advisor carried over: %+v", r.Message.Advisor)
	}
}
