package transcript

// The message object of a record and its usage: ids, model, stop reason,
// cache-miss diagnostics, the usage object with its cache breakdown and
// iterations, and the content array's walk.

import (
	"bytes"
	"math"
	"strconv"
)

func (d *Decoder) message(b []byte, v int, m *Message) (int, error) {
	return objectFields(b, v, func(key []byte, v int) (int, error) {
		var next int
		var err error
		switch string(key) {
		case "id":
			m.ID, next, err = d.again(b, v, &d.last.message, "")
		case "model":
			m.Model, next, err = d.str(b, v, true)
		case "stop_reason":
			m.StopReason, next, err = d.str(b, v, true)
		case "usage":
			if v < len(b) && b[v] == '{' {
				m.HasUsage = true
				if m.Usage == (Usage{}) && len(m.Advisor) == 0 {
					return d.usageOnce(b, v, m)
				}
				return d.usage(b, v, &m.Usage, &m.Advisor) // a repeated key: merged
			}
			return skipValue(b, v)
		case "content":
			return d.content(b, v, m)
		case "diagnostics":
			return d.diagnostics(b, v, m)
		default:
			return skipValue(b, v)
		}
		return next, err
	})
}

// diagnostics reads message.diagnostics.cache_miss_reason.
func (d *Decoder) diagnostics(b []byte, v int, m *Message) (int, error) {
	if v >= len(b) || b[v] != '{' {
		return skipValue(b, v)
	}
	return objectFields(b, v, func(key []byte, v int) (int, error) {
		if string(key) != "cache_miss_reason" || v >= len(b) || b[v] != '{' {
			return skipValue(b, v)
		}
		var reason string
		var tokens int64
		end, err := objectFields(b, v, func(key []byte, v int) (int, error) {
			var next int
			var err error
			switch string(key) {
			case "type":
				reason, next, err = d.label(b, v)
			case "cache_missed_input_tokens":
				// A count that is not one is read as 0: the miss still
				// counts, its size is unknown.
				tokens, _, next, err = readCount(b, v)
			default:
				return skipValue(b, v)
			}
			return next, err
		})
		if reason != "" {
			m.CacheMiss, m.CacheMissTokens = reason, tokens
		}
		return end, err
	})
}

// usageMax is the longest usage object usageOnce keeps.
const usageMax = 2048

// lastUsage is the usage object usageOnce read last: its bytes and what
// they decode to.
type lastUsage struct {
	bytes []byte
	u     Usage
	adv   []AdvisorUsage
}

// usageOnce reads the usage object at b[v] into m, which holds no usage
// yet. The lines of one response repeat its usage byte for byte (two in
// five assistant lines hold the usage of the one before): when b holds
// the object read last, its values are taken instead of reading it again.
// A JSON object ends where its bytes say, so the same bytes are the same
// object, and with m empty they decode to the same values.
func (d *Decoder) usageOnce(b []byte, v int, m *Message) (int, error) {
	last := &d.lastUsage
	if n := len(last.bytes); n != 0 && len(b)-v >= n && string(b[v:v+n]) == string(last.bytes) {
		m.Usage = last.u
		m.Advisor = append(m.Advisor[:0], last.adv...)
		return v + n, nil
	}
	end, err := d.usage(b, v, &m.Usage, &m.Advisor)
	if err == nil && end-v <= usageMax {
		last.bytes = append(last.bytes[:0], b[v:end]...)
		last.u = m.Usage
		last.adv = append(last.adv[:0], m.Advisor...)
	}
	return end, err
}

func (d *Decoder) usage(b []byte, v int, u *Usage, adv *[]AdvisorUsage) (int, error) {
	end, err := objectFields(b, v, func(key []byte, v int) (int, error) {
		switch string(key) {
		case "input_tokens":
			return countInto(b, v, &u.Input, &u.Problem)
		case "output_tokens":
			return countInto(b, v, &u.Output, &u.Problem)
		case "cache_read_input_tokens":
			return countInto(b, v, &u.CacheRead, &u.Problem)
		case "cache_creation_input_tokens":
			return countInto(b, v, &u.CacheCreation, &u.Problem)
		case "cache_creation":
			u.HasBreakdown = v < len(b) && b[v] == '{'
			return cacheBreakdown(b, v, &u.Problem, &u.Ephemeral5m, &u.Ephemeral1h)
		case "server_tool_use":
			if v < len(b) && b[v] == '{' {
				return objectFields(b, v, func(key []byte, v int) (int, error) {
					if string(key) == "web_search_requests" {
						return countInto(b, v, &u.WebSearchRequests, &u.Problem)
					}
					return skipValue(b, v)
				})
			}
			return skipValue(b, v)
		case "speed":
			var next int
			var err error
			u.SpeedNull = v < len(b) && b[v] == 'n'
			u.Speed, next, err = d.label(b, v)
			return next, err
		case "inference_geo":
			var next int
			var err error
			u.Geo, next, err = d.label(b, v)
			return next, err
		case "iterations":
			if v < len(b) && b[v] == '[' {
				*adv = (*adv)[:0]
				return arrayElems(b, v, func(v int) (int, error) {
					return d.iteration(b, v, adv, &u.Problem)
				})
			}
			return skipValue(b, v)
		}
		return skipValue(b, v)
	})
	if u.Problem != "" {
		*u = Usage{Problem: u.Problem}
		*adv = (*adv)[:0]
	}
	return end, err
}

// countInto reads the count at b[v] into *p and notes its problem in
// *problem unless one is noted already. (A function, not a closure: a
// pointer handed to a func value escapes, and an iteration's counts would
// be on the heap.)
func countInto(b []byte, v int, p *int64, problem *UsageProblem) (int, error) {
	n, pr, next, err := readCount(b, v)
	*p = n
	if *problem == "" {
		*problem = pr
	}
	return next, err
}

// cacheBreakdown reads a usage's cache_creation object: the 5-minute and
// 1-hour tiers, judged as countInto does.
func cacheBreakdown(b []byte, v int, problem *UsageProblem, e5m, e1h *int64) (int, error) {
	if v >= len(b) || b[v] != '{' {
		return skipValue(b, v)
	}
	return objectFields(b, v, func(key []byte, v int) (int, error) {
		switch string(key) {
		case "ephemeral_5m_input_tokens":
			return countInto(b, v, e5m, problem)
		case "ephemeral_1h_input_tokens":
			return countInto(b, v, e1h, problem)
		}
		return skipValue(b, v)
	})
}

// iteration reads one usage.iterations[] entry and keeps it when its type
// is advisor_message. Its counts are judged like the top-level ones: a
// count that is not one rejects the whole usage.
func (d *Decoder) iteration(b []byte, v int, adv *[]AdvisorUsage, problem *UsageProblem) (int, error) {
	if v >= len(b) || b[v] != '{' {
		return skipValue(b, v)
	}
	var it AdvisorUsage
	var typ string
	end, err := objectFields(b, v, func(key []byte, v int) (int, error) {
		var next int
		var err error
		switch string(key) {
		case "type":
			typ, next, err = d.label(b, v)
		case "model":
			it.Model, next, err = d.label(b, v)
		case "input_tokens":
			return countInto(b, v, &it.Input, problem)
		case "output_tokens":
			return countInto(b, v, &it.Output, problem)
		case "cache_read_input_tokens":
			return countInto(b, v, &it.CacheRead, problem)
		case "cache_creation_input_tokens":
			return countInto(b, v, &it.CacheCreation, problem)
		case "cache_creation":
			return cacheBreakdown(b, v, problem, &it.Ephemeral5m, &it.Ephemeral1h)
		default:
			return skipValue(b, v)
		}
		return next, err
	})
	if err == nil && typ == "advisor_message" && len(*adv) < MaxAdvisorIterations {
		*adv = append(*adv, it)
	}
	return end, err
}

// MaxAdvisorIterations bounds the advisor iterations kept from one line;
// a real request makes a handful.
const MaxAdvisorIterations = 64

// readCount reads a token count: a whole number from 0 to MaxUsageTokens,
// or null (0). Anything else is read as 0 with the problem it has.
func readCount(b []byte, i int) (int64, UsageProblem, int, error) {
	if i < len(b) && b[i] == 'n' {
		end, err := skipValue(b, i)
		return 0, "", end, err
	}
	if i >= len(b) || !(b[i] == '-' || b[i] >= '0' && b[i] <= '9') {
		end, err := skipValue(b, i)
		return 0, UsageNotInteger, end, err
	}
	end, err := skipNumber(b, i)
	if err != nil {
		return 0, "", end, err
	}
	digits := b[i:end]
	if !allDigits(digits) && bytes.ContainsAny(digits, ".eE-") {
		// Judge the value, not its spelling: 1e3 and 1500.0 are whole,
		// -0 is zero; 1.5 and -40 are not counts.
		f, _ := strconv.ParseFloat(string(digits), 64)
		switch {
		case f != math.Trunc(f) || math.IsNaN(f):
			return 0, UsageNotInteger, end, nil
		case f < 0:
			return 0, UsageNegative, end, nil
		case f > MaxUsageTokens:
			return 0, UsageTooLarge, end, nil
		}
		return int64(f), "", end, nil
	}
	if len(digits) > 9 {
		return 0, UsageTooLarge, end, nil
	}
	var n int64
	for _, c := range digits {
		n = n*10 + int64(c-'0')
	}
	if n > MaxUsageTokens {
		return 0, UsageTooLarge, end, nil
	}
	return n, "", end, nil
}

// content decodes message.content: a string or an array of blocks.
func (d *Decoder) content(b []byte, v int, m *Message) (int, error) {
	if v < len(b) && b[v] == '"' {
		raw, next, err := readLong(b, v)
		if err != nil {
			return 0, err
		}
		m.ContentIsString = true
		m.TextBlocks = 1
		m.TextHead, m.TextHeadCut = headOf(raw, TextHeadMax)
		if d.opts.KeepText {
			m.Text, _ = headOf(raw, d.opts.MaxKeepBytes)
		}
		return next, nil
	}
	if v >= len(b) || b[v] != '[' {
		return skipValue(b, v)
	}
	return arrayElems(b, v, func(v int) (int, error) {
		if v >= len(b) || b[v] != '{' {
			return skipValue(b, v)
		}
		return d.block(b, v, m)
	})
}

type span struct {
	start, end int
	esc        bool
	set        bool
}

func (s span) raw(b []byte) []byte { return b[s.start:s.end] }
