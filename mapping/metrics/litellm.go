package metrics

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// PricingFile is a --pricing.file read and resolved against the embedded
// table.
type PricingFile struct {
	// Prices is the table to price by.
	Prices *Prices
	// Source is what pricing_info's source label says: "file" for a
	// table in this project's format (it replaces the embedded one),
	// "builtin+litellm" for LiteLLM's file (under the embedded one).
	Source string
	// LiteLLM is the number of LiteLLM entries read as token prices, and
	// Skipped the number left out (not priced per token, or a price that
	// is not a usable number); both 0 for a file in this format.
	LiteLLM, Skipped int
}

// LoadPricingFile reads a --pricing.file. A table in this project's format
// (docs/pricing.md) replaces the embedded one. LiteLLM's
// model_prices_and_context_window.json, told apart by its shape (model
// names at the top level, each an object with per-token costs, no
// "models" or "version" field), goes under the embedded table: the
// embedded rows keep their dates and modifiers, and LiteLLM's entries
// price every model the embedded table lacks.
func LoadPricingFile(b []byte) (PricingFile, error) {
	if isLiteLLM(b) {
		lt, n, skipped, err := ParseLiteLLM(b)
		if err != nil {
			return PricingFile{}, err
		}
		p := DefaultPrices()
		p.Fallback = lt
		return PricingFile{Prices: p, Source: "builtin+litellm", LiteLLM: n, Skipped: skipped}, nil
	}
	p, err := ParsePrices(b)
	if err != nil {
		return PricingFile{}, err
	}
	return PricingFile{Prices: p, Source: "file"}, nil
}

// isLiteLLM tells LiteLLM's file from this project's format by its shape:
// no "models" or "version" field at the top level, and at least one
// top-level value that is an object with an input_cost_per_token or
// litellm_provider field.
func isLiteLLM(b []byte) bool {
	var top map[string]json.RawMessage
	if json.Unmarshal(b, &top) != nil {
		return false
	}
	if _, ok := top["models"]; ok {
		return false
	}
	if _, ok := top["version"]; ok {
		return false
	}
	for _, v := range top {
		var e map[string]json.RawMessage
		if json.Unmarshal(v, &e) != nil {
			continue
		}
		if _, ok := e["input_cost_per_token"]; ok {
			return true
		}
		if _, ok := e["litellm_provider"]; ok {
			return true
		}
	}
	return false
}

// liteEntry is the part of a LiteLLM entry a token price is made of
// (USD per token).
type liteEntry struct {
	Input        *float64 `json:"input_cost_per_token"`
	Output       *float64 `json:"output_cost_per_token"`
	CacheRead    *float64 `json:"cache_read_input_token_cost"`
	CacheWrite   *float64 `json:"cache_creation_input_token_cost"`
	CacheWrite1h *float64 `json:"cache_creation_input_token_cost_above_1hr"`
	Provider     string   `json:"litellm_provider"`
	Mode         string   `json:"mode"`
}

// tierKey matches LiteLLM's prompt-length tier fields, e.g.
// input_cost_per_token_above_200k_tokens.
var tierKey = regexp.MustCompile(`^input_cost_per_token_above_(\d+)k_tokens$`)

// ParseLiteLLM reads LiteLLM's model_prices_and_context_window.json into
// a table of one undated row per model: input_cost_per_token,
// output_cost_per_token, cache_read_input_token_cost,
// cache_creation_input_token_cost (5-minute writes) and
// cache_creation_input_token_cost_above_1hr (1-hour writes), per token,
// as USD per million. A class the entry does not price is billed as the
// entry says the provider bills it: cache reads and writes without a
// price of their own at the input rate, 1-hour writes without one at the
// 5-minute rate. The smallest *_above_<N>k_tokens tier becomes the
// prompt-length tier (classes it does not list keep the row's rate).
// Entries that are not priced per token (images, audio, embeddings) or
// whose prices are not numbers from 0 to 1 USD per token are left out
// and counted in skipped. Several entries naming one model (anthropic/x,
// bedrock's us.anthropic.x, vertex_ai/x) are resolved by rank: the
// fewest path segments, then no region prefix, then the model's own
// provider over resellers, then the first key in byte order.
func ParseLiteLLM(b []byte) (p *Prices, entries, skipped int, err error) {
	var top map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&top); err != nil {
		return nil, 0, 0, fmt.Errorf("LiteLLM price file: %w", err)
	}
	if dec.More() {
		return nil, 0, 0, errors.New("LiteLLM price file: data after the top-level object")
	}
	keys := make([]string, 0, len(top))
	for k := range top {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	p = &Prices{Version: 2, Source: "LiteLLM model_prices_and_context_window.json", Models: map[string]*Model{}}
	rank := map[string]liteRank{}
	for _, key := range keys {
		if key == "sample_spec" {
			continue
		}
		m, provider, ok := liteModel(top[key])
		if !ok {
			skipped++
			continue
		}
		name := NormalizeModel(key)
		if name == "" {
			skipped++
			continue
		}
		entries++
		r := rankOf(key, provider)
		if old, seen := rank[name]; seen && !r.less(old) {
			continue
		}
		rank[name] = r
		p.Models[name] = m
	}
	if len(p.Models) == 0 {
		return nil, 0, skipped, errors.New("LiteLLM price file: no entry priced per token")
	}
	return p, entries, skipped, nil
}

// liteModel reads one entry; ok is false when it is not a usable token
// price.
func liteModel(raw json.RawMessage) (m *Model, provider string, ok bool) {
	var e liteEntry
	if json.Unmarshal(raw, &e) != nil || e.Input == nil || e.Output == nil {
		return nil, "", false
	}
	switch e.Mode {
	case "", "chat", "completion", "responses":
	default:
		return nil, "", false
	}
	perM := func(v *float64, or float64) (float64, bool) {
		if v == nil {
			return or, true
		}
		if math.IsNaN(*v) || *v < 0 || *v > 1 {
			return 0, false
		}
		return math.Round(*v*1e15) / 1e9, true // USD per million, rounded off float noise
	}
	var r Rates
	var good [5]bool
	r.Input, good[0] = perM(e.Input, 0)
	r.Output, good[1] = perM(e.Output, 0)
	r.CacheRead, good[2] = perM(e.CacheRead, r.Input)
	r.CacheWrite5m, good[3] = perM(e.CacheWrite, r.Input)
	r.CacheWrite1h, good[4] = perM(e.CacheWrite1h, r.CacheWrite5m)
	for _, g := range good {
		if !g {
			return nil, "", false
		}
	}
	price := Price{Rates: r, Fast: 1}
	if t, ok := liteTier(raw, r); ok {
		price.Long = t
	}
	return &Model{Rows: []Price{price}}, e.Provider, true
}

// liteTier reads the smallest prompt-length tier of an entry, if any.
func liteTier(raw json.RawMessage, base Rates) (*Tier, bool) {
	var fields map[string]json.RawMessage
	if json.Unmarshal(raw, &fields) != nil {
		return nil, false
	}
	over := int64(0)
	for k := range fields {
		if m := tierKey.FindStringSubmatch(k); m != nil {
			n, err := strconv.ParseInt(m[1], 10, 64)
			if err == nil && n > 0 && (over == 0 || n*1000 < over) {
				over = n * 1000
			}
		}
	}
	if over == 0 {
		return nil, false
	}
	suffix := fmt.Sprintf("_above_%dk_tokens", over/1000)
	rate := func(field string, or float64) float64 {
		var v float64
		if b, ok := fields[field+suffix]; ok && json.Unmarshal(b, &v) == nil && !math.IsNaN(v) && v >= 0 && v <= 1 {
			// A tier never bills a class below the row: the cost of a
			// request only grows with its counts.
			return max(math.Round(v*1e15)/1e9, or)
		}
		return or
	}
	t := &Tier{Over: over, Rates: Rates{
		Input:        rate("input_cost_per_token", base.Input),
		Output:       rate("output_cost_per_token", base.Output),
		CacheRead:    rate("cache_read_input_token_cost", base.CacheRead),
		CacheWrite5m: rate("cache_creation_input_token_cost", base.CacheWrite5m),
		CacheWrite1h: rate("cache_creation_input_token_cost_above_1hr", base.CacheWrite1h),
	}}
	return t, true
}

// liteRank orders LiteLLM entries that name the same model.
type liteRank struct {
	segments int  // path segments before the model (openrouter/z-ai/glm-4.7: 2)
	region   bool // a Bedrock region or vendor prefix (us.anthropic.)
	notOwn   bool // the entry's provider is not the model's maker
	key      string
}

func (a liteRank) less(b liteRank) bool {
	if a.segments != b.segments {
		return a.segments < b.segments
	}
	if a.region != b.region {
		return !a.region
	}
	if a.notOwn != b.notOwn {
		return !a.notOwn
	}
	return a.key < b.key
}

// makers are LiteLLM provider names of companies that sell their own
// models (not resellers or clouds).
var makers = map[string]bool{"anthropic": true, "openai": true, "deepseek": true, "zai": true, "minimax": true,
	"moonshot": true, "dashscope": true, "gemini": true, "xai": true, "mistral": true}

func rankOf(key, provider string) liteRank {
	k := strings.ToLower(key)
	last := k
	if i := strings.LastIndex(k, "/"); i >= 0 {
		last = k[i+1:]
	}
	return liteRank{
		segments: strings.Count(k, "/"),
		region:   strings.Index(last, "claude-") > 0,
		notOwn:   !makers[provider],
		key:      key,
	}
}
