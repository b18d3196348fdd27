package otlp_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/exporter/otlp"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/testonly/testbackend"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/spans"
)

// chatSpans makes n chat spans with the attributes the mapping puts on
// them, in sessions of 500.
func chatSpans(n int) []spans.Span {
	out := make([]spans.Span, n)
	for i := range out {
		sid := fmt.Sprintf("session-%d", i/500)
		msg := fmt.Sprintf("msg_%08d", i)
		out[i] = spans.Span{
			TraceID: spans.SessionTraceID(sid), SpanID: spans.RequestSpanID(sid, msg), ParentSpanID: spans.RootSpanID(sid),
			Name: "chat claude-opus-4-5", Kind: spans.KindClient, Start: t0.Add(time.Duration(i) * time.Second), End: t0.Add(time.Duration(i)*time.Second + 900*time.Millisecond),
			Attrs: []spans.Attr{
				spans.String(spans.AttrOperationName, "chat"), spans.String(spans.AttrProviderName, "anthropic"),
				spans.String(spans.AttrConversationID, sid), spans.String(spans.AttrRequestModel, "claude-opus-4-5"),
				spans.String(spans.AttrResponseModel, "claude-opus-4-5"), spans.String(spans.AttrResponseID, msg),
				spans.Strings(spans.AttrResponseFinishReasons, "tool_use"), spans.Int(spans.AttrUsageInputTokens, 45000),
				spans.Int(spans.AttrUsageOutputTokens, 700), spans.Int(spans.AttrUsageCacheReadTokens, 44000),
				spans.Int(spans.AttrUsageCacheWriteTokens, 990), spans.Int(spans.AttrRawInputTokens, 10),
				spans.Int(spans.AttrCacheWrite5mTokens, 990), spans.Int(spans.AttrCacheWrite1hTokens, 0),
				spans.String(spans.AttrRequestID, "req_"+msg),
			},
		}
	}
	return out
}

// BenchmarkQueueToCollector measures export alone: spans through the
// queue and the SDK's gRPC exporter to a real local collector, each batch
// acknowledged (--otlp.batch-size 512).
func BenchmarkQueueToCollector(b *testing.B) {
	c := testbackend.StartCollector(b)
	in := chatSpans(20000)
	res, err := otlp.NewResource(context.Background(), "bench", false)
	if err != nil {
		b.Fatal(err)
	}
	var n int
	b.ResetTimer()
	for b.Loop() {
		exp, err := otlp.NewGRPC(context.Background(), otlp.GRPCConfig{Endpoint: c.Endpoint(), Insecure: true}, res)
		if err != nil {
			b.Fatal(err)
		}
		q := otlp.NewQueue(exp, otlp.QueueConfig{BatchSize: 512, Endpoint: c.Endpoint()})
		for _, s := range in {
			if err := q.Enqueue(context.Background(), s); err != nil {
				b.Fatal(err)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		if err := q.Close(ctx); err != nil {
			b.Fatal(err)
		}
		cancel()
		n += len(in)
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "spans/s")
}
