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
	"testing"
	"time"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/testbackend"
)

// TestSpanCostsSumToTheCostCounter: the cost on each request's chat span
// (claude_code.cost.usd, its advisor's inferences included) sums to
// claude_transcript_cost_usd_total, on every corpus and synthetic tree:
// the trace and the counter price each request the same way.
func TestSpanCostsSumToTheCostCounter(t *testing.T) {
	trees := append(testbackend.CorpusTrees(t), testbackend.SyntheticTrees(t)...)
	for _, tree := range trees {
		t.Run(filepath.Base(tree), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			metricsFile := filepath.Join(t.TempDir(), "metrics.prom")
			cmd := exec.CommandContext(ctx, binary(t), "--oneshot", "--log.level=warn", "--claude.dir="+tree,
				"--traces.exporter=stdout", "--traces.since=0", "--oneshot.metrics-file="+metricsFile)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("oneshot: %v\n%s", err, stderr.String())
			}
			type attr struct {
				Key   string
				Value struct {
					StringValue string
					DoubleValue *float64
				}
			}
			var spanSum float64
			chats, priced := 0, 0
			sc := bufio.NewScanner(&stdout)
			sc.Buffer(nil, 1<<30)
			for sc.Scan() {
				var req struct {
					ResourceSpans []struct {
						ScopeSpans []struct {
							Spans []struct{ Attributes []attr }
						}
					}
				}
				if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
					t.Fatalf("span output: %v", err)
				}
				for _, rs := range req.ResourceSpans {
					for _, ss := range rs.ScopeSpans {
						for _, s := range ss.Spans {
							chat := false
							var cost *float64
							for _, a := range s.Attributes {
								if a.Key == "gen_ai.operation.name" && a.Value.StringValue == "chat" {
									chat = true
								}
								if a.Key == "claude_code.cost.usd" {
									cost = a.Value.DoubleValue
								}
							}
							if chat {
								chats++
								if cost != nil {
									priced++
									spanSum += *cost
								}
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
			var counter float64
			for _, v := range sumBy(parseExposition(t, string(b)), "claude_transcript_cost_usd_total") {
				counter += v
			}
			if math.Abs(spanSum-counter) > 1e-9*math.Max(1, counter) {
				t.Errorf("chat spans' cost sums to %.9f, cost_usd_total is %.9f", spanSum, counter)
			}
			t.Logf("%d chat spans (%d priced): $%.6f; counter $%.6f", chats, priced, spanSum, counter)
		})
	}
}
