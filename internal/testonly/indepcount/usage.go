package indepcount

// addTokens adds one usage to m[key] by type.
func addTokens(m map[string]map[string]int64, key string, input, output, cacheRead, cacheTotal, e5m, e1h int64) {
	if m[key] == nil {
		m[key] = map[string]int64{}
	}
	tok := m[key]
	tok[TokInput] += input
	tok[TokOutput] += output
	tok[TokCacheRead] += cacheRead
	tok[TokCacheWrite1h] += e1h
	tok[TokCacheWrite5m] += max(cacheTotal, e5m+e1h) - e1h
}

// advisorIters reads the advisor_message entries of usage.iterations;
// false when one of their counts is not a valid count (the whole usage
// then counts nothing).
func advisorIters(usage map[string]any) ([]advisorIter, bool) {
	its, _ := usage["iterations"].([]any)
	var out []advisorIter
	for _, x := range its {
		it, _ := x.(map[string]any)
		if str(it["type"]) != "advisor_message" {
			continue
		}
		breakdown, _ := it["cache_creation"].(map[string]any)
		if !validUsage(it, breakdown) {
			return nil, false
		}
		out = append(out, advisorIter{model: str(it["model"]), input: num(it["input_tokens"]), output: num(it["output_tokens"]),
			cacheRead: num(it["cache_read_input_tokens"]), cacheTotal: num(it["cache_creation_input_tokens"]),
			e5m: num(breakdown["ephemeral_5m_input_tokens"]), e1h: num(breakdown["ephemeral_1h_input_tokens"])})
	}
	return out, true
}

// addRequest counts one request under the winner's model and stop reason.
func addRequest(t *Totals, w candidate) {
	t.Requests[w.model]++
	t.RequestsByStop[w.stop]++
	if t.Tokens[w.model] == nil {
		t.Tokens[w.model] = map[string]int64{}
	}
	tok := t.Tokens[w.model]
	tok[TokInput] += w.input
	tok[TokOutput] += w.output
	tok[TokCacheRead] += w.cacheRead
	tok[TokCacheWrite1h] += w.e1h
	tok[TokCacheWrite5m] += max(w.cacheTotal, w.e5m+w.e1h) - w.e1h
	if w.searches > 0 {
		t.WebSearches[w.model] += w.searches
	}
}

// maxTokens is the largest token count one request may report; a usage
// with any count that is not a whole number from 0 to maxTokens counts no
// tokens at all (the rule the exporter documents for hostile lines).
const maxTokens = 100_000_000

// validCount reports whether a count is null/absent or a whole number from
// 0 to maxTokens.
func validCount(v any) bool {
	if v == nil {
		return true
	}
	f, isNum := v.(float64)
	return isNum && f >= 0 && f <= maxTokens && f == float64(int64(f))
}

// validUsage reports whether every token count present is null or a whole
// number from 0 to maxTokens.
func validUsage(usage, breakdown map[string]any) bool {
	ok := validCount
	for _, k := range []string{"input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"} {
		if !ok(usage[k]) {
			return false
		}
	}
	return ok(breakdown["ephemeral_5m_input_tokens"]) && ok(breakdown["ephemeral_1h_input_tokens"])
}
