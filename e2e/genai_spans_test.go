package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/testonly/testbackend"
)

// outputMessagesSchema compiles the GenAI conventions' JSON schema for
// gen_ai.output.messages (testdata/genai, with its source and version)
// and checks that it rejects what Arize Phoenix rejects: a message
// without finish_reason.
func outputMessagesSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	path := filepath.Join(testbackend.RepoRoot(t), "testdata", "genai", "gen-ai-output-messages.json")
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("file:///gen-ai-output-messages.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("file:///gen-ai-output-messages.json")
	if err != nil {
		t.Fatal(err)
	}
	for payload, valid := range map[string]bool{
		`[{"role":"assistant","parts":[{"type":"text","content":"a"}],"finish_reason":"stop"}]`:                                       true,
		`[{"role":"assistant","parts":[{"type":"reasoning","content":"r"},{"type":"text","content":"a"}],"finish_reason":"unknown"}]`: true,
		`[{"role":"assistant","parts":[{"type":"text","content":"a"}]}]`:                                                              false,
		`[{"role":"assistant","finish_reason":"stop"}]`:                                                                               false,
		`[{"role":"assistant","parts":[{"type":"text","content":"a"}],"finish_reason":3}]`:                                            false,
	} {
		if err := validatePayload(sch, payload); (err == nil) != valid {
			t.Fatalf("schema self-check: %s valid=%v, got %v", payload, valid, err)
		}
	}
	return sch
}

func validatePayload(sch *jsonschema.Schema, payload string) error {
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(payload))
	if err != nil {
		return err
	}
	return sch.Validate(v)
}

// otlpJSONValue is an attribute value of the OTLP JSON encoding (int64 as
// a string).
type otlpJSONValue struct {
	StringValue string
	IntValue    string
	DoubleValue *float64
}

// TestSpansAddUpForGenAITools: what GenAI tools (Langfuse, Arize Phoenix)
// compute from the spans of every corpus and synthetic tree matches the
// counters. Langfuse sums gen_ai.usage.* over every span: the sum of
// gen_ai.usage.output_tokens equals the output token counter, and the sum
// of gen_ai.usage.cost (each request's cost, its advisor's inferences
// included) equals claude_transcript_cost_usd_total. Phoenix validates
// gen_ai.output.messages against the conventions' schema: every payload
// validates. The resource names openinference.project.name.
func TestSpansAddUpForGenAITools(t *testing.T) {
	sch := outputMessagesSchema(t)
	trees := append(testbackend.AllCorpusTrees(t), testbackend.SyntheticTrees(t)...)
	var payloads, unknown int
	for _, tree := range trees {
		t.Run(filepath.Base(tree), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			metricsFile := filepath.Join(t.TempDir(), "metrics.prom")
			cmd := exec.CommandContext(ctx, binary(t), "--oneshot", "--log.level=warn", "--claude.dir="+tree,
				"--traces.exporter=stdout", "--traces.since=0", "--traces.capture=responses,thinking",
				"--oneshot.metrics-file="+metricsFile)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("oneshot: %v\n%s", err, stderr.String())
			}
			type attr struct {
				Key   string
				Value otlpJSONValue
			}
			var outSum int64
			var costSum, oldCostSum float64
			chats, priced, treePayloads := 0, 0, 0
			sc := bufio.NewScanner(&stdout)
			sc.Buffer(nil, 1<<30)
			for sc.Scan() {
				var req struct {
					ResourceSpans []struct {
						Resource   struct{ Attributes []attr }
						ScopeSpans []struct {
							Spans []struct {
								Name       string
								Kind       int
								Attributes []attr
							}
						}
					}
				}
				if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
					t.Fatalf("span output: %v", err)
				}
				for _, rs := range req.ResourceSpans {
					project := ""
					for _, a := range rs.Resource.Attributes {
						if a.Key == "openinference.project.name" {
							project = a.Value.StringValue
						}
					}
					if project != "claude-code" {
						t.Errorf("resource openinference.project.name %q, want claude-code", project)
					}
					for _, ss := range rs.ScopeSpans {
						for _, s := range ss.Spans {
							chat := false
							for _, a := range s.Attributes {
								switch a.Key {
								case "gen_ai.operation.name":
									chat = a.Value.StringValue == "chat"
								case "gen_ai.usage.output_tokens":
									n, err := strconv.ParseInt(a.Value.IntValue, 10, 64)
									if err != nil {
										t.Fatalf("%s: %s %q", s.Name, a.Key, a.Value.IntValue)
									}
									outSum += n
								case "gen_ai.usage.cost":
									priced++
									costSum += *a.Value.DoubleValue
								case "claude_code.cost.usd":
									if strings.HasPrefix(s.Name, "chat") {
										oldCostSum += *a.Value.DoubleValue
									}
								case "gen_ai.output.messages":
									treePayloads++
									if err := validatePayload(sch, a.Value.StringValue); err != nil {
										t.Errorf("%s: gen_ai.output.messages does not validate: %v\n%s", s.Name, err, a.Value.StringValue)
									}
									if strings.Contains(a.Value.StringValue, `"finish_reason":"unknown"`) {
										unknown++
									}
								}
								if strings.HasPrefix(a.Key, "gen_ai.usage.") && (s.Kind != 3 || !strings.HasPrefix(s.Name, "chat")) {
									t.Errorf("%s (kind %d): %s on a span that is not a request", s.Name, s.Kind, a.Key)
								}
							}
							if chat {
								chats++
							}
						}
					}
				}
			}
			if err := sc.Err(); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(metricsFile)
			if err != nil {
				t.Fatal(err)
			}
			mfs := parseExposition(t, string(b))
			outCounter := sumBy(mfs, "claude_transcript_tokens_total", "type")["output"]
			var costCounter float64
			for _, v := range sumBy(mfs, "claude_transcript_cost_usd_total") {
				costCounter += v
			}
			if float64(outSum) != outCounter {
				t.Errorf("gen_ai.usage.output_tokens sums to %d over all spans, tokens_total{type=output} is %v", outSum, outCounter)
			}
			if math.Abs(costSum-costCounter) > 1e-9*math.Max(1, costCounter) || math.Abs(oldCostSum-costSum) > 1e-9*math.Max(1, costSum) {
				t.Errorf("gen_ai.usage.cost sums to %.9f (claude_code.cost.usd on chat spans %.9f), cost_usd_total is %.9f", costSum, oldCostSum, costCounter)
			}
			payloads += treePayloads
			t.Logf("%d chat spans (%d priced): output tokens %d (counter %v), $%.6f (counter $%.6f); %d output-message payloads valid",
				chats, priced, outSum, outCounter, costSum, costCounter, treePayloads)
		})
	}
	if payloads == 0 {
		t.Error("no gen_ai.output.messages payload on any tree")
	}
	t.Logf("%d gen_ai.output.messages payloads validated on %d trees (%d with finish_reason unknown)", payloads, len(trees), unknown)
}
