package metrics

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
	"unicode"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/session"
)

//go:embed prices.json
var embeddedPrices []byte

// Rates are USD per million tokens of each class, each given explicitly:
// a cache rate is never derived from the input rate.
type Rates struct {
	Input        float64 `json:"input"`
	Output       float64 `json:"output"`
	CacheRead    float64 `json:"cache_read"`
	CacheWrite5m float64 `json:"cache_write_5m"`
	CacheWrite1h float64 `json:"cache_write_1h"`
}

// cost is the USD cost of t's tokens at r (web searches apart).
func (r Rates) cost(t session.Tokens) float64 {
	return (float64(t.Input)*r.Input + float64(t.Output)*r.Output + float64(t.CacheRead)*r.CacheRead +
		float64(t.CacheWrite5m)*r.CacheWrite5m + float64(t.CacheWrite1h)*r.CacheWrite1h) / 1e6
}

// Price is one model's rates in force from a date.
type Price struct {
	// From is the first UTC day the rates apply (the first row also
	// applies to every request before it).
	From time.Time
	Rates
	// Fast multiplies every class for requests made with usage.speed
	// fast; 1 when fast mode bills the standard rate (or the model has
	// none).
	Fast float64
	// Long is the prompt-length tier: a request whose prompt (input +
	// cache read + cache writes) exceeds Long.Over tokens pays Long's
	// rates on all its tokens. Nil: no tier.
	Long *Tier
}

// Tier is a prompt-length tier of a Price.
type Tier struct {
	Over int64
	Rates
}

// Model is one model's dated prices.
type Model struct {
	// Rows are in date order.
	Rows []Price
	// GeoUS multiplies every class for requests served with
	// usage.inference_geo us; 0 when the model has no such premium.
	GeoUS float64
}

// Cost returns the USD cost of t at this price, without modifiers (the
// standard speed, global inference, no tier).
func (p Price) Cost(t session.Tokens) float64 {
	return p.Rates.cost(t) + float64(t.WebSearch)*WebSearchUSD
}

// WebSearchUSD is the price of one web search the API runs ($10 per
// 1,000 searches, any model; errors are not billed and not counted in
// web_search_requests).
const WebSearchUSD = 10.0 / 1000

// Prices is a dated price table (the --pricing.file format, version 2;
// see docs/pricing.md).
type Prices struct {
	Version int
	AsOf    string
	Source  string
	Models  map[string]*Model
	// Fallback prices the models this table lacks (a LiteLLM table given
	// as --pricing.file under the embedded one); nil: none.
	Fallback *Prices
}

// Modifiers are what a request says about how it was served that its
// price depends on.
type Modifiers struct {
	Speed string // usage.speed: "", standard, fast
	Geo   string // usage.inference_geo: "", global, us, not_available, ...
}

// DefaultPrices returns the embedded price table.
func DefaultPrices() *Prices {
	p, err := ParsePrices(embeddedPrices)
	if err != nil {
		panic("embedded prices.json: " + err.Error())
	}
	return p
}

// The file format. Every field is required unless marked optional, and
// no other field is allowed: a misspelt rate is an error, never a zero.
type (
	fileV2 struct {
		Version int                    `json:"version"`
		AsOf    string                 `json:"as_of"`
		Source  string                 `json:"source"`
		Note    string                 `json:"note,omitempty"`
		Models  map[string]fileModelV2 `json:"models"`
	}
	fileModelV2 struct {
		GeoUS *float64    `json:"geo_us,omitempty"`
		Rows  []fileRowV2 `json:"rows"`
	}
	fileRates struct {
		Input        *float64 `json:"input"`
		Output       *float64 `json:"output"`
		CacheRead    *float64 `json:"cache_read"`
		CacheWrite5m *float64 `json:"cache_write_5m"`
		CacheWrite1h *float64 `json:"cache_write_1h"`
	}
	fileRowV2 struct {
		From string `json:"from"`
		fileRates
		Fast *float64    `json:"fast,omitempty"`
		Long *fileTierV2 `json:"long_context,omitempty"`
	}
	fileTierV2 struct {
		PromptOver *int64 `json:"prompt_over"`
		fileRates
	}
	fileV1 struct {
		Version int                  `json:"version,omitempty"`
		AsOf    string               `json:"as_of"`
		Source  string               `json:"source"`
		Note    string               `json:"note,omitempty"`
		Models  map[string]fileRates `json:"models"`
	}
)

// ParsePrices parses and validates a price table: version 2 (dated rows,
// fast and regional multipliers, prompt-length tiers), or the version 1
// format of earlier releases (one undated price per model, no modifiers;
// deprecated). An error names the model, row and field.
func ParsePrices(b []byte) (*Prices, error) {
	var head struct {
		Version *int `json:"version"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return nil, fmt.Errorf("price table: %w", err)
	}
	version := 1
	if head.Version != nil {
		version = *head.Version
	}
	var p *Prices
	var err error
	switch version {
	case 1:
		p, err = parseV1(b)
	case 2:
		p, err = parseV2(b)
	default:
		return nil, fmt.Errorf("price table: version %d unknown (want 2, or 1 for the old format)", version)
	}
	if err != nil {
		return nil, fmt.Errorf("price table: %w", err)
	}
	return p, nil
}

func strictDecode(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

func parseV1(b []byte) (*Prices, error) {
	var f fileV1
	if err := strictDecode(b, &f); err != nil {
		return nil, err
	}
	p := &Prices{Version: 1, AsOf: f.AsOf, Source: f.Source, Models: map[string]*Model{}}
	if len(f.Models) == 0 {
		return nil, errors.New("no models")
	}
	for name, r := range f.Models {
		rates, err := r.rates()
		if err != nil {
			return nil, fmt.Errorf("model %q: %w", name, err)
		}
		if err := p.add(name, &Model{Rows: []Price{{Rates: rates, Fast: 1}}}); err != nil {
			return nil, err
		}
	}
	return p, nil
}

func parseV2(b []byte) (*Prices, error) {
	var f fileV2
	if err := strictDecode(b, &f); err != nil {
		return nil, err
	}
	if _, err := time.Parse(time.DateOnly, f.AsOf); err != nil {
		return nil, fmt.Errorf("as_of %q: want YYYY-MM-DD", f.AsOf)
	}
	if len(f.Models) == 0 {
		return nil, errors.New("no models")
	}
	p := &Prices{Version: 2, AsOf: f.AsOf, Source: f.Source, Models: map[string]*Model{}}
	for name, fm := range f.Models {
		m, err := fm.model()
		if err != nil {
			return nil, fmt.Errorf("model %q: %w", name, err)
		}
		if err := p.add(name, m); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// add adds a model under its normalised name.
func (p *Prices) add(name string, m *Model) error {
	k := NormalizeModel(name)
	if k == "" {
		return fmt.Errorf("model %q: empty name", name)
	}
	if _, dup := p.Models[k]; dup {
		return fmt.Errorf("model %q: listed twice (as %q after normalisation)", name, k)
	}
	p.Models[k] = m
	return nil
}

func (fm fileModelV2) model() (*Model, error) {
	m := &Model{}
	if fm.GeoUS != nil {
		if !validMult(*fm.GeoUS) {
			return nil, fmt.Errorf("geo_us %v: want a multiplier from 1 to 100", *fm.GeoUS)
		}
		m.GeoUS = *fm.GeoUS
	}
	if len(fm.Rows) == 0 {
		return nil, errors.New("rows: none")
	}
	for i, r := range fm.Rows {
		from, err := time.Parse(time.DateOnly, r.From)
		if err != nil {
			return nil, fmt.Errorf("row %d: from %q: want YYYY-MM-DD", i+1, r.From)
		}
		if i > 0 && !from.After(m.Rows[i-1].From) {
			return nil, fmt.Errorf("row %d: from %s is not after row %d's %s", i+1, r.From, i, fm.Rows[i-1].From)
		}
		rates, err := r.rates()
		if err != nil {
			return nil, fmt.Errorf("row %d (from %s): %w", i+1, r.From, err)
		}
		pr := Price{From: from, Rates: rates, Fast: 1}
		if r.Fast != nil {
			if !validMult(*r.Fast) {
				return nil, fmt.Errorf("row %d (from %s): fast %v: want a multiplier from 1 to 100", i+1, r.From, *r.Fast)
			}
			pr.Fast = *r.Fast
		}
		if r.Long != nil {
			if r.Long.PromptOver == nil || *r.Long.PromptOver <= 0 {
				return nil, fmt.Errorf("row %d (from %s): long_context: prompt_over missing or not positive", i+1, r.From)
			}
			lr, err := r.Long.rates()
			if err != nil {
				return nil, fmt.Errorf("row %d (from %s): long_context: %w", i+1, r.From, err)
			}
			// A longer prompt never costs less per token: the cost of a
			// request only grows with its counts.
			if lr.Input < rates.Input || lr.Output < rates.Output || lr.CacheRead < rates.CacheRead ||
				lr.CacheWrite5m < rates.CacheWrite5m || lr.CacheWrite1h < rates.CacheWrite1h {
				return nil, fmt.Errorf("row %d (from %s): long_context rates below the row's", i+1, r.From)
			}
			pr.Long = &Tier{Over: *r.Long.PromptOver, Rates: lr}
		}
		m.Rows = append(m.Rows, pr)
	}
	return m, nil
}

func validMult(x float64) bool { return x >= 1 && x <= 100 && !math.IsNaN(x) }

// rates checks that every class is given, finite and not negative.
func (r fileRates) rates() (Rates, error) {
	fields := []struct {
		name string
		v    *float64
	}{{"input", r.Input}, {"output", r.Output}, {"cache_read", r.CacheRead}, {"cache_write_5m", r.CacheWrite5m}, {"cache_write_1h", r.CacheWrite1h}}
	for _, f := range fields {
		switch {
		case f.v == nil:
			return Rates{}, fmt.Errorf("%s: missing (every class needs its own rate)", f.name)
		case *f.v < 0 || math.IsNaN(*f.v) || math.IsInf(*f.v, 0) || *f.v > 1e6:
			return Rates{}, fmt.Errorf("%s: %v is not a price in USD per million tokens", f.name, *f.v)
		}
	}
	return Rates{Input: *r.Input, Output: *r.Output, CacheRead: *r.CacheRead, CacheWrite5m: *r.CacheWrite5m, CacheWrite1h: *r.CacheWrite1h}, nil
}

// NormalizeModel maps the spellings of a model id seen in transcripts to
// the form of the price table, for the price lookup only (the model label
// keeps what the transcript says): lower case; a display name's spaces as
// dashes ("Claude Sonnet 4.6"); dots as dashes (claude-opus-4.6,
// glm-4.7); a provider or gateway path (anthropic/, zai/), a Bedrock
// region and vendor prefix (us.anthropic.), a Vertex @version and a
// Bedrock :revision removed; then the suffixes -vN, [1m], -1m, -latest
// and a -YYYYMMDD date removed.
func NormalizeModel(model string) string {
	m := strings.ToLower(strings.TrimSpace(model))
	if strings.IndexFunc(m, unicode.IsSpace) >= 0 {
		m = strings.Join(strings.Fields(m), "-")
	}
	if i := strings.LastIndex(m, "/"); i >= 0 {
		m = m[i+1:]
	}
	if i := strings.Index(m, "claude-"); i > 0 {
		m = m[i:]
	}
	if i := strings.IndexAny(m, ":@"); i >= 0 {
		m = m[:i]
	}
	m = strings.TrimSuffix(m, "[1m]")
	m = strings.ReplaceAll(m, ".", "-")
	// A Bedrock revision (-v1, -v2): Claude ids never end in a version
	// of that form (deepseek-v4 does: it stays).
	if i := strings.LastIndex(m, "-v"); i >= 0 && strings.HasPrefix(m, "claude-") && allDigits(m[i+2:]) {
		m = m[:i]
	}
	m = strings.TrimSuffix(m, "-1m")
	m = strings.TrimSuffix(m, "-latest")
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

// model returns a model's prices: from this table, else from its
// fallback (a LiteLLM table under the embedded one), else nil.
func (p *Prices) model(model string) *Model {
	m := NormalizeModel(model)
	for t := p; t != nil; t = t.Fallback {
		if pm := t.own(m); pm != nil {
			return pm
		}
	}
	return nil
}

// own returns a normalised model's prices from this table alone: an exact
// match, else the longest entry the model extends with a suffix that
// names neither a version (claude-opus-5-5 never takes claude-opus-5) nor
// another variant of the model (glm-4-7-flash never takes glm-4-7;
// claude-opus-4-5-thinking takes claude-opus-4-5).
func (p *Prices) own(m string) *Model {
	if pm, ok := p.Models[m]; ok {
		return pm
	}
	var best *Model
	bestLen := 0
	for k, pm := range p.Models {
		if len(k) > bestLen && len(m) > len(k)+1 && strings.HasPrefix(m, k) && m[len(k)] == '-' &&
			(m[len(k)+1] < '0' || m[len(k)+1] > '9') && !variantSuffix(m[len(k)+1:]) {
			best, bestLen = pm, len(k)
		}
	}
	return best
}

// variantSuffix reports whether the suffix after a listed id names
// another model of the family, priced apart (a smaller, faster or larger
// variant), rather than a way of calling the same model.
func variantSuffix(s string) bool {
	word, _, _ := strings.Cut(s, "-")
	switch word {
	case "air", "airx", "flash", "flashx", "lite", "mini", "nano", "turbo", "pro", "plus", "max",
		"lightning", "highspeed", "x", "coder", "vl", "speciale", "exp":
		return true
	}
	return false
}

// row is the price in force at t: the last row from on or before t (the
// first row before any; the newest for the zero time).
func (m *Model) row(t time.Time) Price {
	if t.IsZero() {
		return m.Rows[len(m.Rows)-1]
	}
	i := sort.Search(len(m.Rows), func(i int) bool { return m.Rows[i].From.After(t) })
	return m.Rows[max(i-1, 0)]
}

// Lookup returns the price of a model in force now (its newest row).
func (p *Prices) Lookup(model string) (Price, bool) {
	m := p.model(model)
	if m == nil {
		return Price{}, false
	}
	return m.row(time.Time{}), true
}

// RequestCost returns the list price in USD of one request of model made
// at t with tokens tok: the rates in force that day, the prompt-length
// tier when the request's prompt exceeds it, times the fast multiplier
// when it was served fast and the regional one when served in the US,
// plus its web searches. ok is false for a model the table lacks. The
// cost never falls when a count grows.
func (p *Prices) RequestCost(model string, t time.Time, tok session.Tokens, mod Modifiers) (usd float64, ok bool) {
	return p.model(model).requestCost(t, tok, mod)
}

// PriceMemo prices requests as its table does, looking each model name
// up once: NormalizeModel and the table's search, on every request, were
// 1 % of the CPU of the 1 GB one-shot (perf). A history holds a few dozen
// names; the memo is cleared at maxPriceMemo, so a hostile one costs
// lookups, not memory. Not safe for concurrent use: one per goroutine
// (the mapper and the span builder each keep one).
type PriceMemo struct {
	table  *Prices
	models map[string]*Model // nil: a model the table lacks
}

// maxPriceMemo bounds a PriceMemo.
const maxPriceMemo = 1024

// Memo returns a new PriceMemo over p.
func (p *Prices) Memo() *PriceMemo {
	return &PriceMemo{table: p, models: map[string]*Model{}}
}

func (pm *PriceMemo) model(name string) *Model {
	m, ok := pm.models[name]
	if !ok {
		if len(pm.models) >= maxPriceMemo {
			clear(pm.models)
		}
		m = pm.table.model(name)
		pm.models[name] = m
	}
	return m
}

// RequestCost is Prices.RequestCost.
func (pm *PriceMemo) RequestCost(model string, t time.Time, tok session.Tokens, mod Modifiers) (usd float64, ok bool) {
	return pm.model(model).requestCost(t, tok, mod)
}

// UpdateCost is Prices.UpdateCost.
func (pm *PriceMemo) UpdateCost(model string, t time.Time, before, delta session.Tokens, mod Modifiers) (float64, bool) {
	return pm.model(model).updateCost(t, before, delta, mod)
}

// requestCost is RequestCost for the prices of one model (nil: a model
// the table lacks).
func (m *Model) requestCost(t time.Time, tok session.Tokens, mod Modifiers) (usd float64, ok bool) {
	if m == nil {
		return 0, false
	}
	return m.cost(t, tok, mod), true
}

// cost is RequestCost for the model's own prices.
func (m *Model) cost(t time.Time, tok session.Tokens, mod Modifiers) float64 {
	pr := m.row(t)
	rates := pr.Rates
	if pr.Long != nil && tok.InputTotal() > pr.Long.Over {
		rates = pr.Long.Rates
	}
	mult := 1.0
	if mod.Speed == "fast" {
		mult *= pr.Fast
	}
	if mod.Geo == "us" && m.GeoUS > 0 {
		mult *= m.GeoUS
	}
	return mult*rates.cost(tok) + float64(tok.WebSearch)*WebSearchUSD
}

// UpdateCost is what a request's growth from before by delta adds to its
// cost: the whole request priced after, less before (a tier crossed by
// the growth reprices all its tokens).
func (p *Prices) UpdateCost(model string, t time.Time, before, delta session.Tokens, mod Modifiers) (float64, bool) {
	return p.model(model).updateCost(t, before, delta, mod)
}

// updateCost is UpdateCost for the prices of one model (nil: a model the
// table lacks).
func (m *Model) updateCost(t time.Time, before, delta session.Tokens, mod Modifiers) (float64, bool) {
	if m == nil {
		return 0, false
	}
	return max(m.cost(t, before.Add(delta), mod)-m.cost(t, before, mod), 0), true
}
