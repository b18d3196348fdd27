package metrics

import (
	"encoding/json"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/session"
)

// litellmExcerpt is a verbatim excerpt of LiteLLM's
// model_prices_and_context_window.json (the 2026-07-24 snapshot of the
// shared prices folder): the gateway models' entries, resellers' entries
// of the same models, Claude entries (plain, Bedrock, Vertex, tiered),
// and entries that are not token prices.
func litellmExcerpt(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/litellm-excerpt-2026-07-24.json")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestNormalizeModelForms(t *testing.T) {
	cases := []struct{ in, want string }{
		{"claude-opus-4-6", "claude-opus-4-6"},
		{"Claude Sonnet 4.6", "claude-sonnet-4-6"},
		{"  Claude  Opus 4.6 ", "claude-opus-4-6"},
		{"claude-opus-4.6", "claude-opus-4-6"},
		{"claude-opus-4.6-1m", "claude-opus-4-6"},
		{"claude-sonnet-4-6[1m]", "claude-sonnet-4-6"},
		{"CLAUDE-HAIKU-4-5-20251001", "claude-haiku-4-5"},
		{"anthropic/claude-opus-4-5", "claude-opus-4-5"},
		{"us.anthropic.claude-sonnet-4-5-20250929-v1:0", "claude-sonnet-4-5"},
		{"anthropic.claude-3-5-haiku-20241022-v2:0", "claude-3-5-haiku"},
		{"global.anthropic.claude-opus-4-6-v1", "claude-opus-4-6"},
		{"claude-sonnet-4-5@20250929", "claude-sonnet-4-5"},
		{"vertex_ai/claude-opus-4-6@default", "claude-opus-4-6"},
		{"claude-3-5-sonnet-latest", "claude-3-5-sonnet"},
		{"zai/glm-4.7", "glm-4-7"},
		{"openrouter/z-ai/GLM-4.7", "glm-4-7"},
		{"MiniMax-M2.1", "minimax-m2-1"},
		{"deepseek-v4-flash", "deepseek-v4-flash"},
		{"deepseek-v4", "deepseek-v4"}, // a version, not a Bedrock revision
		{"qwen3.5", "qwen3-5"},
		{"<synthetic>", "<synthetic>"},
		{"", ""},
	}
	for _, c := range cases {
		if got := NormalizeModel(c.in); got != c.want {
			t.Errorf("NormalizeModel(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestLoadPricingFileTellsTheFormatsApartByShape(t *testing.T) {
	const rates = `"input":1,"output":2,"cache_read":0.1,"cache_write_5m":1.25,"cache_write_1h":2`
	cases := []struct {
		name, in, source, err string
	}{
		{"our format replaces the embedded table", `{"version":2,"as_of":"2030-01-01","source":"s","models":{"x-1":{"rows":[{"from":"2026-01-01",` + rates + `}]}}}`, "file", ""},
		{"version 1 is ours too", `{"as_of":"2030-01-01","source":"s","models":{"x-1":{` + rates + `}}}`, "file", ""},
		{"LiteLLM's file goes under it", string(litellmExcerpt(t)), "builtin+litellm", ""},
		{"a LiteLLM-shaped file with one entry", `{"m-1":{"input_cost_per_token":1e-6,"output_cost_per_token":2e-6,"litellm_provider":"p"}}`, "builtin+litellm", ""},
		{"a misspelt field of ours is still our error", `{"version":2,"as_of":"2030-01-01","source":"s","modles":{}}`, "", `unknown field "modles"`},
		{"LiteLLM's shape without a token price", `{"m-1":{"litellm_provider":"p","mode":"image_generation","input_cost_per_pixel":1e-8}}`, "", "no entry priced per token"},
		{"neither", `{"a":1}`, "", "unknown field"},
		{"not json", `{`, "", "unexpected"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, err := LoadPricingFile([]byte(tc.in))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if f.Source != tc.source {
				t.Errorf("source %q, want %q", f.Source, tc.source)
			}
			_, embedded := f.Prices.Lookup("claude-opus-4-6")
			if embedded != (tc.source == "builtin+litellm") {
				t.Errorf("embedded table kept: %v, want it only under a LiteLLM file", embedded)
			}
		})
	}
}

// TestLiteLLMEntriesBecomeRates: each class from its LiteLLM field, the
// classes an entry does not price as the provider bills them, tiers,
// entries that are no token price left out, and the entry of the model's
// own provider chosen among several naming the model.
func TestLiteLLMEntriesBecomeRates(t *testing.T) {
	p, entries, skipped, err := ParseLiteLLM(litellmExcerpt(t))
	if err != nil {
		t.Fatal(err)
	}
	// sample_spec is not an entry; speech, embedding and an unpriced
	// dashscope entry are skipped.
	if entries != 27 || skipped != 3 {
		t.Errorf("entries %d skipped %d, want 27 and 3", entries, skipped)
	}
	cases := []struct {
		name, model string
		want        Rates
	}{
		{"every class priced (MiniMax's own entry, not OpenRouter's 0.27)", "MiniMax-M2.1", Rates{Input: 0.3, Output: 1.2, CacheRead: 0.03, CacheWrite5m: 0.375, CacheWrite1h: 0.375}},
		{"cache writes priced 0 stay 0 (z.ai)", "glm-4.7", Rates{Input: 0.6, Output: 2.2, CacheRead: 0.11}},
		{"no cache prices: billed as input", "glm-4.5-air", Rates{Input: 0.2, Output: 1.1, CacheRead: 0.2, CacheWrite5m: 0.2, CacheWrite1h: 0.2}},
		{"the maker's plain entry over Azure's", "deepseek-v4-flash", Rates{Input: 0.14, Output: 0.28, CacheRead: 0.0028}},
		{"1-hour writes at their own price", "claude-sonnet-4-6", Rates{Input: 3, Output: 15, CacheRead: 0.3, CacheWrite5m: 3.75, CacheWrite1h: 6}},
		{"a reseller's entry when it is the only one", "MiniMax-M2.7", Rates{Input: 0.6, Output: 2.4, CacheRead: 0.6, CacheWrite5m: 0.6, CacheWrite1h: 0.6}},
		{"a dated reseller id", "qwen3.5-flash-02-23", Rates{Input: 0.1, Output: 0.4, CacheRead: 0.1, CacheWrite5m: 0.1, CacheWrite1h: 0.1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := p.Lookup(c.model)
			if !ok || !ratesNear(got.Rates, c.want) {
				t.Errorf("%s: %+v %v, want %+v", c.model, got.Rates, ok, c.want)
			}
		})
	}
	for _, gone := range []string{"speech-02-hd", "qwen3.5-plus", "text-embedding-3-small", "sample_spec"} {
		if _, ok := p.Lookup(gone); ok {
			t.Errorf("%s is priced: it is no token price", gone)
		}
	}
	// Tiers: all classes of the smallest threshold; one not listed keeps
	// the row's rate.
	s45 := p.model("claude-sonnet-4-5")
	if l := s45.Rows[0].Long; l == nil || l.Over != 200000 || !ratesNear(l.Rates, Rates{Input: 6, Output: 22.5, CacheRead: 0.6, CacheWrite5m: 7.5, CacheWrite1h: 12}) {
		t.Errorf("claude-sonnet-4-5 tier %+v", l)
	}
	m3 := p.model("MiniMax-M3")
	if l := m3.Rows[0].Long; l == nil || l.Over != 512000 || !ratesNear(l.Rates, Rates{Input: 0.6, Output: 2.4, CacheRead: 0.12, CacheWrite5m: 0.3, CacheWrite1h: 0.3}) {
		t.Errorf("MiniMax-M3 tier %+v", l)
	}
}

// TestLiteLLMFileGoesUnderTheEmbeddedTable: the embedded rows keep their
// dates and modifiers; LiteLLM prices what they lack; a model in neither
// is unpriced.
func TestLiteLLMFileGoesUnderTheEmbeddedTable(t *testing.T) {
	f, err := LoadPricingFile(litellmExcerpt(t))
	if err != nil {
		t.Fatal(err)
	}
	p := f.Prices
	out := session.Tokens{Output: 1e6}
	cases := []struct {
		name, model, at string
		mod             Modifiers
		want            float64
		ok              bool
	}{
		{"embedded fast multiplier kept", "claude-opus-4-8", "2026-11-20", Modifiers{Speed: "fast"}, 50, true},
		{"embedded row over LiteLLM's (MiniMax M2.7)", "MiniMax-M2.7", "2026-11-20", Modifiers{}, 1.2, true},
		{"a model only LiteLLM has", "MiniMax-M3", "2026-11-20", Modifiers{}, 1.2, true},
		{"LiteLLM has no modifiers", "MiniMax-M3", "2026-11-20", Modifiers{Speed: "fast", Geo: "us"}, 1.2, true},
		{"in neither", "kimi-k2", "2026-11-20", Modifiers{}, 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := p.RequestCost(c.model, day(c.at), out, c.mod)
			if ok != c.ok || math.Abs(got-c.want) > 1e-9 {
				t.Errorf("%s: %v %v, want %v %v", c.model, got, ok, c.want, c.ok)
			}
		})
	}
}

// TestEmbeddedGatewayRowsMatchLiteLLM checks each other-provider row of
// the embedded table against its maker's LiteLLM entry, every class
// (1-hour writes at the one cache-write price these providers list),
// with the exceptions docs/pricing.md names.
func TestEmbeddedGatewayRowsMatchLiteLLM(t *testing.T) {
	byKey := func(key string) Rates {
		m, _, ok := liteModel(lookupRaw(t, key))
		if !ok {
			t.Fatalf("excerpt entry %s unreadable", key)
		}
		return m.Rows[0].Rates
	}
	zeroWrites := func(r Rates) Rates { r.CacheWrite5m, r.CacheWrite1h = 0, 0; return r }
	cases := []struct {
		model, key string
		adjust     func(Rates) Rates // a documented exception
	}{
		{"deepseek-chat", "deepseek/deepseek-chat", nil},
		// DeepSeek bills no cache writes; this entry does not say so.
		{"deepseek-reasoner", "deepseek/deepseek-reasoner", zeroWrites},
		{"deepseek-v4-flash", "deepseek/deepseek-v4-flash", nil},
		{"deepseek-v4-pro", "deepseek/deepseek-v4-pro", nil},
		{"MiniMax-M2.1", "minimax/MiniMax-M2.1", nil},
		{"MiniMax-M2.5", "minimax/MiniMax-M2.5", nil},
		{"MiniMax-M2", "minimax/MiniMax-M2", nil},
		{"glm-4.7", "zai/glm-4.7", nil},
		{"glm-4.7-flash", "zai/glm-4.7-flash", nil},
		{"glm-4.6", "zai/glm-4.6", nil},
		// z.ai's cached-input price (0.03), newer than the snapshot's
		// entry, as ccusage 20.0.24 bills it; no cache-write price.
		{"glm-4.5-air", "zai/glm-4.5-air", func(r Rates) Rates { r.CacheRead = 0.03; return zeroWrites(r) }},
	}
	p := DefaultPrices()
	seen := map[string]bool{}
	for _, c := range cases {
		want := byKey(c.key)
		if c.adjust != nil {
			want = c.adjust(want)
		}
		got, ok := p.Lookup(c.model)
		if !ok || !ratesNear(got.Rates, want) {
			t.Errorf("%s: embedded %+v, LiteLLM %s %+v", c.model, got.Rates, c.key, want)
		}
		seen[NormalizeModel(c.model)] = true
	}
	// Rows with no maker's entry in the snapshot: ccusage 20.0.24's
	// figures (docs/pricing.md), checked against its recorded output by
	// the e2e test. Every other non-Claude row must be listed above.
	seen["minimax-m2-7"], seen["qwen3-5"] = true, true
	for k := range p.Models {
		if !strings.HasPrefix(k, "claude-") && !seen[k] {
			t.Errorf("%s: a non-Claude row not checked against LiteLLM", k)
		}
	}
}

func lookupRaw(t *testing.T, key string) []byte {
	t.Helper()
	var top map[string]json.RawMessage
	if err := json.Unmarshal(litellmExcerpt(t), &top); err != nil {
		t.Fatal(err)
	}
	raw, ok := top[key]
	if !ok {
		t.Fatalf("%s not in the excerpt", key)
	}
	return raw
}

func ratesNear(a, b Rates) bool {
	near := func(x, y float64) bool { return math.Abs(x-y) < 1e-9 }
	return near(a.Input, b.Input) && near(a.Output, b.Output) && near(a.CacheRead, b.CacheRead) &&
		near(a.CacheWrite5m, b.CacheWrite5m) && near(a.CacheWrite1h, b.CacheWrite1h)
}
