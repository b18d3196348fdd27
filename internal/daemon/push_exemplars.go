package daemon

import (
	"context"
	"encoding/hex"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// exemplarIDs carries the exemplars of tokens_total and cost_usd_total
// into the OTLP push. The Prometheus bridge
// (go.opentelemetry.io/contrib/bridges/prometheus) turns an exemplar's
// trace_id and span_id labels into its ids, but keeps their hex text as
// the id bytes (32 and 16 bytes): an OTLP receiver rejects ids of the
// wrong length, and the OpenTelemetry Collector refuses the whole request.
// exemplarIDs decodes them to the 16 and 8 bytes OTLP wants, and drops an
// id that is not hex of that length (the exemplar's value and time stay).
type exemplarIDs struct{ sdkmetric.Producer }

// Produce implements sdkmetric.Producer.
func (p exemplarIDs) Produce(ctx context.Context) ([]metricdata.ScopeMetrics, error) {
	sms, err := p.Producer.Produce(ctx)
	for i := range sms {
		for j := range sms[i].Metrics {
			switch d := sms[i].Metrics[j].Data.(type) {
			case metricdata.Sum[float64]:
				for k := range d.DataPoints {
					fixExemplarIDs(d.DataPoints[k].Exemplars)
				}
			case metricdata.Histogram[float64]:
				for k := range d.DataPoints {
					fixExemplarIDs(d.DataPoints[k].Exemplars)
				}
			}
		}
	}
	return sms, err
}

func fixExemplarIDs(exs []metricdata.Exemplar[float64]) {
	for i := range exs {
		exs[i].TraceID = decodeID(exs[i].TraceID, 16)
		exs[i].SpanID = decodeID(exs[i].SpanID, 8)
	}
}

// decodeID returns the n bytes that id spells in hex; id itself when it
// is already n bytes; nil otherwise.
func decodeID(id []byte, n int) []byte {
	if len(id) == 2*n {
		if b, err := hex.DecodeString(string(id)); err == nil {
			return b
		}
	}
	if len(id) == n {
		return id
	}
	return nil
}
