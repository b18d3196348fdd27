package metrics

import (
	"math"
	"testing"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/session"
)

func TestLookupMatchesTranscriptSpellingsOfModels(t *testing.T) {
	p := DefaultPrices()
	cases := []struct {
		model string
		input float64
		ok    bool
	}{
		{"claude-opus-4-6", 5, true},
		{"claude-sonnet-4-5-20250929", 3, true},
		{"claude-haiku-4-5-20251001", 1, true},
		{"claude-opus-4-1-20250805", 15, true},
		{"claude-opus-4-20250514", 15, true},
		{"claude-sonnet-4-20250514", 3, true},
		{"claude-opus-4.6-1m", 5, true},
		{"us.anthropic.claude-sonnet-4-5-20250929-v1:0", 3, true},
		{"anthropic/claude-opus-4-5", 5, true},
		{"claude-opus-4-5-thinking", 5, true},
		{"claude-sonnet-5", 2, true},
		{"claude-opus-5-5", 0, false}, // a newer version must not take an older price
		{"glm-4.7", 0, false},
		{"MiniMax-M2.1", 0, false},
		{"<synthetic>", 0, false},
		{"", 0, false},
	}
	for _, c := range cases {
		got, ok := p.Lookup(c.model)
		if ok != c.ok || got.Input != c.input {
			t.Errorf("Lookup(%q) = %v %v, want input %v %v", c.model, got.Input, ok, c.input, c.ok)
		}
	}
}

func TestCostUsesEveryTokenTypeAtItsPrice(t *testing.T) {
	p := Price{Input: 5, Output: 25, CacheRead: 0.5, CacheWrite5m: 6.25, CacheWrite1h: 10}
	got := p.Cost(session.Tokens{Input: 1e6, Output: 2e6, CacheRead: 4e6, CacheWrite5m: 1e6, CacheWrite1h: 1e6})
	want := 5 + 50 + 2 + 6.25 + 10.0
	if math.Abs(got-want) > 1e-9 {
		t.Fatalf("cost = %v, want %v", got, want)
	}
}

// Web search is billed per search ($10 per 1,000), on top of the tokens,
// whatever the model's token prices.
func TestCostAddsWebSearchesAtTenDollarsPerThousand(t *testing.T) {
	for _, tc := range []struct {
		p    Price
		tok  session.Tokens
		want float64
	}{
		{Price{Input: 3, Output: 15}, session.Tokens{Input: 1e6, WebSearch: 3}, 3 + 0.03},
		{Price{}, session.Tokens{WebSearch: 1000}, 10},
		{Price{Input: 3}, session.Tokens{Input: 1e6}, 3},
	} {
		if got := tc.p.Cost(tc.tok); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("cost of %+v at %+v = %v, want %v", tc.tok, tc.p, got, tc.want)
		}
	}
}

func TestParsePricesRejectsBadTables(t *testing.T) {
	for name, in := range map[string]string{
		"not json":       `{`,
		"no models":      `{"models":{}}`,
		"negative price": `{"models":{"claude-x":{"input":-1}}}`,
	} {
		if _, err := ParsePrices([]byte(in)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	p, err := ParsePrices([]byte(`{"as_of":"2030-01-01","models":{"Claude-Custom.1":{"input":1,"output":2}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if pr, ok := p.Lookup("claude-custom-1-20300101"); !ok || pr.Output != 2 {
		t.Fatalf("override table lookup = %v %v", pr, ok)
	}
}

func TestEmbeddedTableIsDated(t *testing.T) {
	p := DefaultPrices()
	if p.AsOf == "" || p.Source == "" {
		t.Fatal("embedded price table has no date or source")
	}
	for k, v := range p.Models {
		if v.Input <= 0 || v.Output <= 0 || v.CacheRead <= 0 || v.CacheWrite5m <= 0 || v.CacheWrite1h <= 0 {
			t.Errorf("%s: a price is missing: %+v", k, v)
		}
	}
}
