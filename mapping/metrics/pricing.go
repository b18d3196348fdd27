package metrics

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/session"
)

//go:embed prices.json
var embeddedPrices []byte

// Price is USD per million tokens of each type.
type Price struct {
	Input        float64 `json:"input"`
	Output       float64 `json:"output"`
	CacheRead    float64 `json:"cache_read"`
	CacheWrite5m float64 `json:"cache_write_5m"`
	CacheWrite1h float64 `json:"cache_write_1h"`
}

// Cost returns the USD cost of t at this price.
func (p Price) Cost(t session.Tokens) float64 {
	return (float64(t.Input)*p.Input+float64(t.Output)*p.Output+float64(t.CacheRead)*p.CacheRead+
		float64(t.CacheWrite5m)*p.CacheWrite5m+float64(t.CacheWrite1h)*p.CacheWrite1h)/1e6 +
		float64(t.WebSearch)*WebSearchUSD
}

// WebSearchUSD is the price of one web search the API runs ($10 per
// 1,000 searches, any model; errors are not billed and not counted in
// web_search_requests).
const WebSearchUSD = 10.0 / 1000

// Prices is a dated price table.
type Prices struct {
	AsOf   string           `json:"as_of"`
	Source string           `json:"source"`
	Models map[string]Price `json:"models"`
}

// DefaultPrices returns the embedded price table.
func DefaultPrices() *Prices {
	p, err := ParsePrices(embeddedPrices)
	if err != nil {
		panic("embedded prices.json: " + err.Error())
	}
	return p
}

// ParsePrices parses a price table in the format of the embedded
// prices.json (the --pricing.file format).
func ParsePrices(b []byte) (*Prices, error) {
	var p Prices
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("parse price table: %w", err)
	}
	if len(p.Models) == 0 {
		return nil, fmt.Errorf("parse price table: no models")
	}
	norm := make(map[string]Price, len(p.Models))
	for k, v := range p.Models {
		if v.Input < 0 || v.Output < 0 || v.CacheRead < 0 || v.CacheWrite5m < 0 || v.CacheWrite1h < 0 {
			return nil, fmt.Errorf("parse price table: negative price for %q", k)
		}
		norm[NormalizeModel(k)] = v
	}
	p.Models = norm
	return &p, nil
}

// NormalizeModel maps the spellings of a model id seen in transcripts
// (dated ids, gateway spellings such as claude-opus-4.6-1m, provider
// prefixes such as us.anthropic.) to the form of the price table.
func NormalizeModel(model string) string {
	m := strings.ToLower(strings.TrimSpace(model))
	if i := strings.LastIndex(m, "/"); i >= 0 {
		m = m[i+1:]
	}
	if i := strings.Index(m, "claude-"); i > 0 {
		m = m[i:]
	}
	if i := strings.Index(m, ":"); i >= 0 {
		m = m[:i]
	}
	m = strings.TrimSuffix(m, "[1m]")
	m = strings.ReplaceAll(m, ".", "-")
	m = strings.TrimSuffix(m, "-v1")
	m = strings.TrimSuffix(m, "-1m")
	// A trailing -YYYYMMDD date.
	if i := strings.LastIndex(m, "-"); i >= 0 && len(m)-i-1 == 8 && allDigits(m[i+1:]) {
		m = m[:i]
	}
	return m
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// Lookup returns the price of a model: an exact match after
// normalisation, else the longest table entry the model extends with a
// non-version suffix (claude-opus-4-5-thinking matches claude-opus-4-5;
// claude-opus-5-5 does not match claude-opus-5).
func (p *Prices) Lookup(model string) (Price, bool) {
	m := NormalizeModel(model)
	if pr, ok := p.Models[m]; ok {
		return pr, true
	}
	best, bestLen := Price{}, 0
	for k, pr := range p.Models {
		if len(k) > bestLen && len(m) > len(k)+1 && strings.HasPrefix(m, k) && m[len(k)] == '-' &&
			(m[len(k)+1] < '0' || m[len(k)+1] > '9') {
			best, bestLen = pr, len(k)
		}
	}
	return best, bestLen > 0
}
