package transcript

import (
	"bytes"
	"errors"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"
	"unicode/utf8"
)

// Reason names why a line was skipped. Reasons are label values of the
// exporter's decode-error counter.
type Reason string

// Skip reasons.
const (
	ReasonInvalidJSON Reason = "invalid_json"
	ReasonInvalidUTF8 Reason = "invalid_utf8"
	ReasonNotObject   Reason = "not_object"
	ReasonTooLong     Reason = "too_long"
	ReasonTruncated   Reason = "truncated"
)

// Reasons lists every Reason, for pre-registering counters.
func Reasons() []Reason {
	return []Reason{ReasonInvalidJSON, ReasonInvalidUTF8, ReasonNotObject, ReasonTooLong, ReasonTruncated}
}

// DecodeError is returned for a line that cannot be used.
type DecodeError struct {
	Reason Reason
}

func (e *DecodeError) Error() string { return "decode line: " + string(e.Reason) }

// ReasonOf returns the skip reason of an error returned by Decode, or ""
// when err is nil or of another kind.
func ReasonOf(err error) Reason {
	var de *DecodeError
	if errors.As(err, &de) {
		return de.Reason
	}
	return ""
}

// DefaultMaxLineBytes is the default cap on one line: Claude Code writes
// single lines of many megabytes (file snapshots, large tool results).
const DefaultMaxLineBytes = 64 << 20

// Options says what the decoder keeps beyond the accounting fields. Text
// is kept only when the user opted in to capturing content.
type Options struct {
	// MaxLineBytes: longer lines are rejected with ReasonTooLong.
	MaxLineBytes int
	// KeepText keeps prompt and response text, KeepThinking thinking text,
	// KeepToolIO tool inputs and results; each capped at MaxKeepBytes.
	KeepText     bool
	KeepThinking bool
	KeepToolIO   bool
	MaxKeepBytes int
}

// Decoder decodes lines into Records. It is not safe for concurrent use;
// use one per goroutine. It interns strings that repeat on every line
// (types, models, paths, versions) so that they are allocated once.
type Decoder struct {
	opts   Options
	intern map[string]string
	// embedding is set while decoding a progress record's data.message:
	// envelopes are read one level deep, deeper ones are skipped.
	embedding bool
}

// internMax bounds the intern table; it is cleared when full.
const internMax = 8192

// NewDecoder returns a decoder with the given options; zero values take
// defaults.
func NewDecoder(opts Options) *Decoder {
	if opts.MaxLineBytes <= 0 {
		opts.MaxLineBytes = DefaultMaxLineBytes
	}
	if opts.MaxKeepBytes <= 0 {
		opts.MaxKeepBytes = 4096
	}
	return &Decoder{opts: opts, intern: make(map[string]string, 256)}
}

// Decode decodes one line (without its newline) into r, which is reset
// first. A nil error means r holds the record; a *DecodeError says why the
// line was skipped. Blank lines decode to a record of KindOther with an
// empty Type; callers skip them with IsBlank.
func (d *Decoder) Decode(line []byte, r *Record) error {
	r.reset()
	if len(line) > d.opts.MaxLineBytes {
		return &DecodeError{Reason: ReasonTooLong}
	}
	i := skipWS(line, 0)
	if i == len(line) {
		return nil // blank: an empty KindOther record, as documented
	}
	if line[i] != '{' {
		if !validUTF8(line) {
			return &DecodeError{Reason: ReasonInvalidUTF8}
		}
		if line[i] == '[' || line[i] == '"' || line[i] == 'n' || line[i] == 't' || line[i] == 'f' || line[i] == '-' || (line[i] >= '0' && line[i] <= '9') {
			if end, err := skipValue(line, i); err == nil && skipWS(line, end) == len(line) {
				return &DecodeError{Reason: ReasonNotObject}
			}
		}
		return &DecodeError{Reason: ReasonInvalidJSON}
	}
	if !validUTF8(line) {
		return &DecodeError{Reason: ReasonInvalidUTF8}
	}
	end, err := d.record(line, i, r)
	if err != nil || skipWS(line, end) != len(line) {
		r.reset()
		return &DecodeError{Reason: ReasonInvalidJSON}
	}
	if r.Kind == KindNotCounted {
		r.UnknownFields = 0 // a type read for nothing has no fields to miss
	}
	return nil
}

// IsBlank reports whether a line holds only white space.
func IsBlank(line []byte) bool { return skipWS(line, 0) == len(line) }

func (d *Decoder) internBytes(raw []byte, escaped bool) string {
	if escaped {
		return d.internString(string(appendUnescaped(nil, raw, -1)))
	}
	if s, ok := d.intern[string(raw)]; ok {
		return s
	}
	if len(d.intern) >= internMax {
		clear(d.intern)
	}
	s := string(raw)
	d.intern[s] = s
	return s
}

func (d *Decoder) internString(s string) string {
	if v, ok := d.intern[s]; ok {
		return v
	}
	if len(d.intern) >= internMax {
		clear(d.intern)
	}
	d.intern[s] = s
	return s
}

// label reads a short name that may become a label value: a string cut
// at LabelMax bytes and interned; null and non-strings give "".
func (d *Decoder) label(b []byte, i int) (string, int, error) {
	if i < len(b) && b[i] == '"' {
		raw, esc, next, err := readString(b, i)
		if err != nil {
			return "", 0, err
		}
		if !esc && len(raw) <= LabelMax {
			return d.internBytes(raw, false), next, nil
		}
		s, _ := head(raw, esc, LabelMax)
		return d.internString(s), next, nil
	}
	next, err := skipValue(b, i)
	return "", next, err
}

// capped reads a string cut at max bytes; null and non-strings give "".
func (d *Decoder) capped(b []byte, i, max int) (string, int, error) {
	if i < len(b) && b[i] == '"' {
		raw, esc, next, err := readString(b, i)
		if err != nil {
			return "", 0, err
		}
		s, _ := head(raw, esc, max)
		return s, next, nil
	}
	next, err := skipValue(b, i)
	return "", next, err
}

// str reads a string value (null and non-strings give ""); when intern is
// set the value is interned.
func (d *Decoder) str(b []byte, i int, intern bool) (string, int, error) {
	if i < len(b) && b[i] == '"' {
		raw, esc, next, err := readString(b, i)
		if err != nil {
			return "", 0, err
		}
		if intern {
			return d.internBytes(raw, esc), next, nil
		}
		if !esc {
			return string(raw), next, nil
		}
		return string(appendUnescaped(nil, raw, -1)), next, nil
	}
	next, err := skipValue(b, i)
	return "", next, err
}

// record decodes the object at b[i] into r. It serves top-level lines and
// the envelopes embedded in progress records.
func (d *Decoder) record(b []byte, i int, r *Record) (int, error) {
	return objectFields(b, i, func(key []byte, v int) (int, error) {
		var err error
		var next int
		switch string(key) {
		case "type":
			var raw []byte
			var esc bool
			if v < len(b) && b[v] == '"' {
				raw, esc, next, err = readString(b, v)
				if err == nil {
					r.Type = d.internBytes(raw, esc)
					r.Kind = kindOf([]byte(r.Type))
				}
				return next, err
			}
			return skipValue(b, v)
		case "subtype":
			r.Subtype, next, err = d.str(b, v, true)
		case "uuid":
			r.UUID, next, err = d.str(b, v, false)
		case "parentUuid":
			r.ParentUUID, next, err = d.str(b, v, false)
		case "logicalParentUuid":
			r.LogicalParentUUID, next, err = d.str(b, v, false)
		case "sessionId":
			r.SessionID, next, err = d.str(b, v, true)
		case "agentId":
			r.AgentID, next, err = d.str(b, v, true)
		case "requestId":
			r.RequestID, next, err = d.str(b, v, false)
		case "promptId":
			r.PromptID, next, err = d.str(b, v, false)
		case "timestamp":
			next, err = d.timestamp(b, v, r)
		case "isSidechain":
			r.IsSidechain, next, err = readBool(b, v)
		case "isMeta":
			r.IsMeta, next, err = readBool(b, v)
		case "isCompactSummary":
			r.IsCompactSummary, next, err = readBool(b, v)
		case "isApiErrorMessage":
			r.IsAPIErrorMessage, next, err = readBool(b, v)
		case "isVisibleInTranscriptOnly":
			r.IsVisibleOnly, next, err = readBool(b, v)
		case "error":
			r.Error, next, err = d.str(b, v, true)
		case "apiErrorStatus":
			r.APIErrorStatus, next, err = readInt(b, v)
		case "level":
			r.Level, next, err = d.str(b, v, true)
		case "cwd":
			r.Cwd, next, err = d.str(b, v, true)
		case "gitBranch":
			r.GitBranch, next, err = d.str(b, v, true)
		case "version":
			r.Version, next, err = d.str(b, v, true)
		case "slug":
			r.Slug, next, err = d.str(b, v, true)
		case "message":
			if v < len(b) && b[v] == '{' {
				r.HasMessage = true
				return d.message(b, v, &r.Message)
			}
			return skipValue(b, v)
		case "sourceToolUseID":
			r.SourceToolUseID, next, err = d.str(b, v, false)
		case "toolUseResult":
			return d.toolUseResult(b, v, r)
		case "compactMetadata", "microcompactMetadata":
			return d.compactMetadata(b, v, r)
		case "durationMs":
			r.DurationMs, next, err = readInt(b, v)
		case "content":
			if v < len(b) && b[v] == '"' {
				raw, n, e := readLong(b, v)
				if e != nil {
					return 0, e
				}
				r.ContentHead, _ = headOf(raw, TextHeadMax)
				return n, nil
			}
			return skipValue(b, v)
		case "data":
			return d.progressData(b, v, r)
		case "parentToolUseID":
			r.ParentToolUseID, next, err = d.str(b, v, false)
		case "toolUseID":
			r.ToolUseID, next, err = d.str(b, v, false)
		case "leafUuid":
			r.LeafUUID, next, err = d.str(b, v, false)
		case "attributionSkill":
			r.Skill, next, err = d.label(b, v)
		case "attributionPlugin":
			r.Plugin, next, err = d.label(b, v)
		case "effort":
			r.Effort, next, err = d.label(b, v)
		case "attributionMcpServer":
			r.MCPServer, next, err = d.label(b, v)
		case "prUrl":
			r.PRURL, next, err = d.capped(b, v, 512)
		case "prRepository":
			r.PRRepo, next, err = d.capped(b, v, 512)
		case "prNumber":
			if v < len(b) && b[v] >= '0' && b[v] <= '9' {
				r.PRNumber, next, err = readInt(b, v)
			} else {
				next, err = skipValue(b, v)
			}
		case "customTitle", "aiTitle", "agentName":
			if v < len(b) && b[v] == '"' {
				raw, n, e := readLong(b, v)
				if e != nil {
					return 0, e
				}
				r.Title, _ = headOf(raw, 256)
				return n, nil
			}
			return skipValue(b, v)
		default:
			if !knownSkippedKey(key) {
				r.UnknownFields++
			}
			return skipValue(b, v)
		}
		return next, err
	})
}

// knownSkippedKey lists the top-level keys seen in real transcripts that
// the exporter does not need; any other key is counted as unknown.
func knownSkippedKey(key []byte) bool {
	switch string(key) {
	case "userType", "entrypoint", "permissionMode", "toolEndsTurn", "thinkingMetadata",
		"todos", "promptSource", "origin", "imagePasteIds", "mcpMeta", "planContent",
		"toolDenialKind", "sourceToolAssistantUUID", "attributionAgent",
		"attributionMcpTool", "snapshot", "messageId",
		"isSnapshotUpdate", "operation", "attachment", "lastPrompt", "mode", "key",
		"result", "summary", "retryInMs", "retryAttempt", "maxRetries", "messageCount",
		"hookCount", "hookInfos", "hookErrors", "preventedContinuation", "stopReason",
		"hasOutput", "hookAdditionalContext", "cause", "display", "pastedContents",
		"project", "normalizedMessages", "prompt", "isCompactBoundary", "compactSummary",
		"requestedModel", "costUSD", "durationMsAPI", "parentMessageUuid",
		"advisorModel", "perTurnEffort", "sessionKind":
		return true
	}
	return false
}

func (d *Decoder) timestamp(b []byte, v int, r *Record) (int, error) {
	if v < len(b) && b[v] == '"' {
		raw, esc, next, err := readString(b, v)
		if err != nil {
			return 0, err
		}
		// A repeated key replaces the earlier value, as encoding/json
		// does: the last timestamp is the record's, parsed or raw.
		if t, ok := parseTime(raw); ok && !esc {
			r.Timestamp, r.TimestampRaw = t, ""
		} else {
			r.Timestamp = time.Time{}
			r.TimestampRaw, _ = head(raw, esc, 64)
		}
		return next, nil
	}
	if v < len(b) && (b[v] == '-' || (b[v] >= '0' && b[v] <= '9')) {
		// Epoch milliseconds, as history.jsonl writes them.
		ms, next, err := readInt(b, v)
		if err == nil && ms > 0 {
			r.Timestamp, r.TimestampRaw = time.UnixMilli(ms).UTC(), ""
		}
		return next, err
	}
	return skipValue(b, v)
}

// parseTime parses RFC 3339 timestamps, with a fast path for the
// "2006-01-02T15:04:05.000Z" form Claude Code writes.
func parseTime(raw []byte) (time.Time, bool) {
	if len(raw) == 24 && raw[4] == '-' && raw[7] == '-' && raw[10] == 'T' && raw[13] == ':' &&
		raw[16] == ':' && raw[19] == '.' && raw[23] == 'Z' {
		num := func(s []byte) (int, bool) {
			n := 0
			for _, c := range s {
				if c < '0' || c > '9' {
					return 0, false
				}
				n = n*10 + int(c-'0')
			}
			return n, true
		}
		y, ok1 := num(raw[0:4])
		mo, ok2 := num(raw[5:7])
		dd, ok3 := num(raw[8:10])
		h, ok4 := num(raw[11:13])
		mi, ok5 := num(raw[14:16])
		s, ok6 := num(raw[17:19])
		ms, ok7 := num(raw[20:23])
		if ok1 && ok2 && ok3 && ok4 && ok5 && ok6 && ok7 && mo >= 1 && mo <= 12 && dd >= 1 && dd <= 31 && h < 24 && mi < 60 && s < 61 {
			if t := time.Date(y, time.Month(mo), dd, h, mi, s, ms*1e6, time.UTC); t.Day() == dd && s < 60 {
				return t, true
			}
		}
	}
	t, err := time.Parse(time.RFC3339Nano, string(raw))
	if err != nil {
		return time.Time{}, false
	}
	return t.UTC(), true
}

func (d *Decoder) compactMetadata(b []byte, v int, r *Record) (int, error) {
	if v >= len(b) || b[v] != '{' {
		return skipValue(b, v)
	}
	r.HasCompact = true
	return objectFields(b, v, func(key []byte, v int) (int, error) {
		var next int
		var err error
		switch string(key) {
		case "trigger":
			r.CompactTrigger, next, err = d.str(b, v, true)
		case "preTokens":
			r.CompactPreTokens, next, err = readInt(b, v)
		default:
			return skipValue(b, v)
		}
		return next, err
	})
}

func (d *Decoder) toolUseResult(b []byte, v int, r *Record) (int, error) {
	if v < len(b) && b[v] == '"' {
		r.ToolUseResultIsString = true
		return skipValue(b, v)
	}
	if v >= len(b) || b[v] != '{' {
		return skipValue(b, v)
	}
	var tr TaskResult
	var created, patched bool
	var contentLines int64
	var edit EditResult
	end, err := objectFields(b, v, func(key []byte, v int) (int, error) {
		var next int
		var err error
		switch string(key) {
		case "type":
			if v < len(b) && b[v] == '"' {
				raw, _, n, e := readString(b, v)
				created = e == nil && string(raw) == "create"
				return n, e
			}
			return skipValue(b, v)
		case "content":
			if v < len(b) && b[v] == '"' {
				raw, n, e := readLong(b, v)
				if e != nil {
					return 0, e
				}
				contentLines = countLines(raw)
				return n, nil
			}
			return skipValue(b, v)
		case "structuredPatch":
			if v < len(b) && b[v] == '[' {
				patched = true
				return arrayElems(b, v, func(v int) (int, error) {
					return patchHunk(b, v, &edit)
				})
			}
			return skipValue(b, v)
		case "stdout":
			if v < len(b) && b[v] == '"' {
				// Skipped, not read: output is delimited, never validated.
				n, e := skipValue(b, v)
				if e == nil {
					if u := PullRequestURLIn(b[v+1 : n-1]); u != nil {
						r.OutputPRURL = string(u)
					}
				}
				return n, e
			}
			return skipValue(b, v)
		case "agentId":
			tr.AgentID, next, err = d.str(b, v, false)
		case "agentType":
			tr.AgentType, next, err = d.str(b, v, true)
		case "status":
			if v < len(b) && b[v] == '"' {
				tr.Status, next, err = d.str(b, v, true)
			} else {
				next, err = skipValue(b, v)
			}
		case "totalDurationMs":
			tr.TotalDurationMs, next, err = readInt(b, v)
		default:
			return skipValue(b, v)
		}
		return next, err
	})
	if err != nil {
		return 0, err
	}
	if tr.AgentID != "" {
		r.TaskResult = &tr
	}
	switch {
	case created:
		r.Edit = EditResult{Has: true, Created: true, Added: contentLines}
	case patched:
		edit.Has = true
		r.Edit = edit
	}
	return end, nil
}

// MaxPRURL bounds a pull request URL read from a shell call's output.
const MaxPRURL = 512

// PullRequestURLIn finds the last pull request URL in a shell command's
// output (JSON string text): http(s)://host/…/pull/<digits>, as gh pr
// create prints it, at most MaxPRURL bytes; nil when there is none.
func PullRequestURLIn(raw []byte) []byte {
	var found []byte
	for rest, off := raw, 0; ; {
		i := bytes.Index(rest, []byte("/pull/"))
		if i < 0 {
			return found
		}
		at := off + i
		end := at + len("/pull/")
		for end < len(raw) && raw[end] >= '0' && raw[end] <= '9' {
			end++
		}
		if end > at+len("/pull/") {
			if u := urlEndingAt(raw, at, end); u != nil {
				found = u
			}
		}
		off = at + len("/pull/")
		rest = raw[off:]
	}
}

// urlEndingAt is raw[start:end] when it is an http(s) URL whose path
// holds raw[at:] (no blank, quote, backslash or angle bracket in it).
func urlEndingAt(raw []byte, at, end int) []byte {
	for i := at - 1; i >= 0 && end-i <= MaxPRURL; i-- {
		switch raw[i] {
		case ' ', '\t', '\\', '"', '\'', '<', '>', '(', ')', '[', ']':
			return nil
		case 'h':
			if u := raw[i:end]; bytes.HasPrefix(u, []byte("https://")) || bytes.HasPrefix(u, []byte("http://")) {
				return u
			}
		}
	}
	return nil
}

// patchHunk counts the added (+) and removed (-) lines of one
// structuredPatch hunk.
func patchHunk(b []byte, v int, e *EditResult) (int, error) {
	if v >= len(b) || b[v] != '{' {
		return skipValue(b, v)
	}
	return objectFields(b, v, func(key []byte, v int) (int, error) {
		if string(key) != "lines" || v >= len(b) || b[v] != '[' {
			return skipValue(b, v)
		}
		return arrayElems(b, v, func(v int) (int, error) {
			if v+1 < len(b) && b[v] == '"' {
				switch b[v+1] {
				case '+':
					e.Added++
				case '-':
					e.Removed++
				}
			}
			return skipValue(b, v)
		})
	})
}

// countLines counts the lines of a JSON string's raw text: its \n
// escapes, plus a last line without one.
func countLines(raw []byte) int64 {
	var n int64
	last := byte(0)
	for i := 0; i < len(raw); i++ {
		if raw[i] == '\\' && i+1 < len(raw) {
			if raw[i+1] == 'n' {
				n++
				last = '\n'
			} else {
				last = raw[i+1]
			}
			i++
			continue
		}
		last = raw[i]
	}
	if len(raw) > 0 && last != '\n' {
		n++
	}
	return n
}

func (d *Decoder) progressData(b []byte, v int, r *Record) (int, error) {
	if v >= len(b) || b[v] != '{' {
		return skipValue(b, v)
	}
	return objectFields(b, v, func(key []byte, v int) (int, error) {
		var next int
		var err error
		switch string(key) {
		case "type":
			r.ProgressType, next, err = d.str(b, v, true)
		case "agentId":
			r.ProgressAgentID, next, err = d.str(b, v, true)
		case "message":
			if v < len(b) && b[v] == '{' && !d.embedding {
				if r.Embedded == nil {
					r.Embedded = &Record{}
				}
				d.embedding = true
				end, err := d.record(b, v, r.Embedded)
				d.embedding = false
				return end, err
			}
			return skipValue(b, v)
		default:
			return skipValue(b, v)
		}
		return next, err
	})
}

func (d *Decoder) message(b []byte, v int, m *Message) (int, error) {
	return objectFields(b, v, func(key []byte, v int) (int, error) {
		var next int
		var err error
		switch string(key) {
		case "id":
			m.ID, next, err = d.str(b, v, false)
		case "model":
			m.Model, next, err = d.str(b, v, true)
		case "stop_reason":
			m.StopReason, next, err = d.str(b, v, true)
		case "usage":
			if v < len(b) && b[v] == '{' {
				m.HasUsage = true
				return d.usage(b, v, &m.Usage, &m.Advisor)
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

func (d *Decoder) usage(b []byte, v int, u *Usage, adv *[]AdvisorUsage) (int, error) {
	count := func(p *int64, v int) (int, error) {
		n, problem, next, err := readCount(b, v)
		*p = n
		if u.Problem == "" {
			u.Problem = problem
		}
		return next, err
	}
	end, err := objectFields(b, v, func(key []byte, v int) (int, error) {
		switch string(key) {
		case "input_tokens":
			return count(&u.Input, v)
		case "output_tokens":
			return count(&u.Output, v)
		case "cache_read_input_tokens":
			return count(&u.CacheRead, v)
		case "cache_creation_input_tokens":
			return count(&u.CacheCreation, v)
		case "cache_creation":
			u.HasBreakdown = v < len(b) && b[v] == '{'
			return cacheBreakdown(b, v, count, &u.Ephemeral5m, &u.Ephemeral1h)
		case "server_tool_use":
			if v < len(b) && b[v] == '{' {
				return objectFields(b, v, func(key []byte, v int) (int, error) {
					if string(key) == "web_search_requests" {
						return count(&u.WebSearchRequests, v)
					}
					return skipValue(b, v)
				})
			}
			return skipValue(b, v)
		case "speed":
			var next int
			var err error
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
					return d.iteration(b, v, adv, count)
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

// cacheBreakdown reads a usage's cache_creation object: the 5-minute and
// 1-hour tiers, judged by count.
func cacheBreakdown(b []byte, v int, count func(*int64, int) (int, error), e5m, e1h *int64) (int, error) {
	if v >= len(b) || b[v] != '{' {
		return skipValue(b, v)
	}
	return objectFields(b, v, func(key []byte, v int) (int, error) {
		switch string(key) {
		case "ephemeral_5m_input_tokens":
			return count(e5m, v)
		case "ephemeral_1h_input_tokens":
			return count(e1h, v)
		}
		return skipValue(b, v)
	})
}

// iteration reads one usage.iterations[] entry and keeps it when its type
// is advisor_message. Its counts are judged like the top-level ones: a
// count that is not one rejects the whole usage.
func (d *Decoder) iteration(b []byte, v int, adv *[]AdvisorUsage, count func(*int64, int) (int, error)) (int, error) {
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
			return count(&it.Input, v)
		case "output_tokens":
			return count(&it.Output, v)
		case "cache_read_input_tokens":
			return count(&it.CacheRead, v)
		case "cache_creation_input_tokens":
			return count(&it.CacheCreation, v)
		case "cache_creation":
			return cacheBreakdown(b, v, count, &it.Ephemeral5m, &it.Ephemeral1h)
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
	if bytes.ContainsAny(digits, ".eE-") {
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

// block decodes one content block. Keys can come in any order, so the
// fields are located first and interpreted once the type is known.
func (d *Decoder) block(b []byte, v int, m *Message) (int, error) {
	var typ, id, name, toolUseID, text, thinking span
	var input, content span
	isError := false
	end, err := objectFields(b, v, func(key []byte, v int) (int, error) {
		strSpan := func(s *span) (int, error) {
			if v < len(b) && b[v] == '"' {
				raw, esc, next, err := readString(b, v)
				if err != nil {
					return 0, err
				}
				*s = span{start: v + 1, end: v + 1 + len(raw), esc: esc, set: true}
				return next, nil
			}
			return skipValue(b, v)
		}
		// longSpan locates a string that may be huge (text, thinking)
		// without scanning it for escapes: only its head is ever read.
		longSpan := func(s *span) (int, error) {
			if v < len(b) && b[v] == '"' {
				raw, next, err := readLong(b, v)
				if err != nil {
					return 0, err
				}
				*s = span{start: v + 1, end: v + 1 + len(raw), set: true}
				return next, nil
			}
			return skipValue(b, v)
		}
		valSpan := func(s *span) (int, error) {
			next, err := skipValue(b, v)
			if err != nil {
				return 0, err
			}
			*s = span{start: v, end: next, set: true}
			return next, nil
		}
		switch string(key) {
		case "type":
			return strSpan(&typ)
		case "id":
			return strSpan(&id)
		case "name":
			return strSpan(&name)
		case "tool_use_id":
			return strSpan(&toolUseID)
		case "text":
			return longSpan(&text)
		case "thinking":
			return longSpan(&thinking)
		case "is_error":
			var next int
			var err error
			isError, next, err = readBool(b, v)
			return next, err
		case "input":
			return valSpan(&input)
		case "content":
			return valSpan(&content)
		}
		return skipValue(b, v)
	})
	if err != nil {
		return 0, err
	}
	typRaw := typ.raw(b)
	if typ.esc {
		typRaw = appendUnescaped(nil, typRaw, 64)
	}
	switch string(typRaw) {
	case "text":
		m.TextBlocks++
		if m.TextBlocks == 1 && text.set {
			m.TextHead, m.TextHeadCut = headOf(text.raw(b), TextHeadMax)
		}
		if d.opts.KeepText && text.set {
			m.Text = appendCapped(m.Text, text.raw(b), d.opts.MaxKeepBytes)
		}
	case "thinking", "redacted_thinking":
		m.ThinkingBlocks++
		if d.opts.KeepThinking && thinking.set {
			m.Thinking = appendCapped(m.Thinking, thinking.raw(b), d.opts.MaxKeepBytes)
		}
	case "tool_use", "server_tool_use":
		tu := ToolUse{Server: string(typRaw) == "server_tool_use"}
		if id.set {
			tu.ID = string(appendUnescaped(nil, id.raw(b), -1))
		}
		if name.set {
			tu.Name = d.internBytes(name.raw(b), name.esc)
		}
		if input.set {
			switch tu.Name {
			case "Task", "Agent":
				d.taskInput(b, input.start, &tu)
			case "Edit", "MultiEdit", "Write", "NotebookEdit":
				d.editInput(b, input.start, &tu)
			case "Bash":
				d.bashInput(b, input.start, &tu)
			}
			if d.opts.KeepToolIO {
				tu.Input = capString(string(input.raw(b)), d.opts.MaxKeepBytes)
			}
		}
		m.ToolUses = append(m.ToolUses, tu)
	case "tool_result":
		tr := ToolResult{IsError: isError}
		if toolUseID.set {
			tr.ToolUseID = string(appendUnescaped(nil, toolUseID.raw(b), -1))
		}
		if content.set {
			c := content.raw(b)
			tr.Rejected = bytes.Contains(c[:min(len(c), 256)], []byte(RejectionMarker))
		}
		if d.opts.KeepToolIO && content.set {
			c := content.raw(b)
			if len(c) > 0 && c[0] == '"' {
				tr.Content, _ = head(c[1:len(c)-1], true, d.opts.MaxKeepBytes)
			} else {
				tr.Content = capString(string(c), d.opts.MaxKeepBytes)
			}
		}
		m.ToolResults = append(m.ToolResults, tr)
	default:
		if !bytes.HasSuffix(typRaw, []byte("_tool_result")) || !toolUseID.set {
			m.OtherBlocks++
			break
		}
		// A server-side tool's result, inside the assistant stream
		// (web_search_tool_result, web_fetch_tool_result,
		// advisor_tool_result, …): it answers its server_tool_use. An
		// error is content of a type ending in _error.
		tr := ToolResult{InStream: true, ToolUseID: string(appendUnescaped(nil, toolUseID.raw(b), -1))}
		if content.set {
			tr.IsError = resultError(content.raw(b))
		}
		m.ToolResults = append(m.ToolResults, tr)
	}
	return end, nil
}

// resultError says a server tool result's content is an error: an object
// whose type ends in _error (web_search_tool_result_error, …).
func resultError(b []byte) bool {
	if len(b) == 0 || b[0] != '{' {
		return false
	}
	isErr := false
	_, _ = objectFields(b, 0, func(key []byte, v int) (int, error) {
		if string(key) == "type" && v < len(b) && b[v] == '"' {
			raw, _, next, err := readString(b, v)
			if err == nil {
				isErr = bytes.HasSuffix(raw, []byte("_error"))
			}
			return next, err
		}
		return skipValue(b, v)
	})
	return isErr
}

// taskInput reads subagent_type, description and run_in_background from a
// Task/Agent input.
// editInput reads an edit tool's input: the extension of the file it
// names, and a NotebookEdit's new_source line count.
func (d *Decoder) editInput(b []byte, v int, tu *ToolUse) {
	if v >= len(b) || b[v] != '{' {
		return
	}
	deleted := false
	_, _ = objectFields(b, v, func(key []byte, v int) (int, error) {
		switch string(key) {
		case "file_path", "notebook_path":
			if v < len(b) && b[v] == '"' {
				raw, esc, next, err := readString(b, v)
				if err == nil {
					if esc {
						raw = appendUnescaped(nil, raw, 4096)
					}
					tu.Ext = d.internString(ExtOf(raw))
				}
				return next, err
			}
		case "new_source":
			if v < len(b) && b[v] == '"' {
				raw, next, err := readLong(b, v)
				if err == nil {
					tu.NotebookLines = countLines(raw)
				}
				return next, err
			}
		case "edit_mode":
			if v < len(b) && b[v] == '"' {
				raw, _, next, err := readString(b, v)
				deleted = err == nil && string(raw) == "delete"
				return next, err
			}
		}
		return skipValue(b, v)
	})
	if deleted {
		tu.NotebookLines = 0
	}
}

// MaxShellCommand bounds the part of a shell command read for ShellFacts.
const MaxShellCommand = 64 << 10

// bashInput reads what a Bash call's command does.
func (d *Decoder) bashInput(b []byte, v int, tu *ToolUse) {
	if v >= len(b) || b[v] != '{' {
		return
	}
	_, _ = objectFields(b, v, func(key []byte, v int) (int, error) {
		if string(key) == "command" && v < len(b) && b[v] == '"' {
			raw, esc, next, err := readString(b, v)
			// Most commands neither commit nor open a pull request: skip
			// unescaping and splitting them.
			if err == nil && (bytes.Contains(raw, []byte("commit")) || bytes.Contains(raw, []byte("create"))) {
				if esc || len(raw) > MaxShellCommand {
					raw = appendUnescaped(nil, raw, MaxShellCommand)
				}
				tu.Shell = ShellFactsOf(string(raw))
			}
			return next, err
		}
		return skipValue(b, v)
	})
}

// ExtOf is the lower-case extension of a file path written on any OS
// ("dockerfile" and "makefile" for files so named; "" for none, or for
// one longer than 16 bytes).
func ExtOf(path []byte) string {
	name := path
	if i := bytes.LastIndexAny(name, `/\`); i >= 0 {
		name = name[i+1:]
	}
	lower := strings.ToLower(string(name))
	switch {
	case lower == "dockerfile" || strings.HasPrefix(lower, "dockerfile."):
		return "dockerfile"
	case lower == "makefile" || lower == "gnumakefile":
		return "makefile"
	}
	i := strings.LastIndexByte(lower, '.')
	if i < 0 || i == len(lower)-1 || len(lower)-i-1 > 16 {
		return ""
	}
	return lower[i+1:]
}

func (d *Decoder) taskInput(b []byte, v int, tu *ToolUse) {
	if v >= len(b) || b[v] != '{' {
		return
	}
	_, _ = objectFields(b, v, func(key []byte, v int) (int, error) {
		switch string(key) {
		case "subagent_type":
			s, next, err := d.str(b, v, true)
			tu.SubagentType = s
			return next, err
		case "run_in_background":
			if v+4 <= len(b) && string(b[v:v+4]) == "true" {
				tu.Background = true
			}
		case "description":
			if v < len(b) && b[v] == '"' {
				raw, esc, next, err := readString(b, v)
				if err == nil {
					tu.Description, _ = head(raw, esc, 256)
				}
				return next, err
			}
		}
		return skipValue(b, v)
	})
}

// readLong locates the string at b[i] (which must be a quote) without
// scanning all of it for escapes; only its head, where raw control
// characters make the line invalid, is checked. It returns the raw
// content and the index after the closing quote.
func readLong(b []byte, i int) ([]byte, int, error) {
	end, err := skipString(b, i+1)
	if err != nil {
		return nil, 0, err
	}
	raw := b[i+1 : end]
	if hasControl(raw[:min(len(raw), headScan(TextHeadMax))]) {
		return nil, 0, errSyntax
	}
	return raw, end + 1, nil
}

// headScan is how many raw bytes can unescape to max+4 bytes: an escape
// takes at most 6 raw bytes per output byte.
func headScan(max int) int { return 6 * (max + 4) }

// headOf is head for strings located by readLong: whether they hold
// escapes is learnt from the part that is read.
func headOf(raw []byte, max int) (string, bool) {
	prefix := raw[:min(len(raw), headScan(max))]
	if bytes.IndexByte(prefix, '\\') < 0 {
		return head(raw, false, max)
	}
	out := appendUnescaped(make([]byte, 0, max+4), prefix, max+4)
	if len(out) > max || len(prefix) < len(raw) {
		return string(cutUTF8(out, max)), true
	}
	return string(out), false
}

// head returns the unescaped string, cut to at most max bytes, and whether
// it was cut.
func head(raw []byte, esc bool, max int) (string, bool) {
	if !esc {
		if len(raw) <= max {
			return string(raw), false
		}
		return string(cutUTF8(raw, max)), true
	}
	// Unescape a little more than max (a rune is at most 4 bytes, and a
	// cut backs off to a rune start) to learn whether the text is longer.
	out := appendUnescaped(make([]byte, 0, min(len(raw), max+4)), raw, max+4)
	if len(out) > max {
		return string(cutUTF8(out, max)), true
	}
	return string(out), false
}

func appendCapped(cur string, raw []byte, max int) string {
	if len(cur) >= max {
		return cur
	}
	if cur != "" {
		cur += "\n"
	}
	s, _ := headOf(raw, max-len(cur))
	return cur + s
}

func capString(s string, max int) string {
	if len(s) <= max {
		return s
	}
	return string(cutUTF8([]byte(s), max))
}

// cutUTF8 cuts b to at most n bytes without splitting a rune.
func cutUTF8(b []byte, n int) []byte {
	if len(b) <= n {
		return b
	}
	for n > 0 && !utf8.RuneStart(b[n]) {
		n--
	}
	return b[:n]
}

// appendUnescaped appends the unescaped JSON string content raw to dst,
// stopping once dst has grown by max bytes (max < 0: no limit). Invalid
// escapes are copied as they are.
func appendUnescaped(dst, raw []byte, max int) []byte {
	start := len(dst)
	full := func() bool { return max >= 0 && len(dst)-start >= max }
	for i := 0; i < len(raw); {
		if full() {
			break
		}
		c := raw[i]
		if c != '\\' {
			j := i + 1
			for j < len(raw) && raw[j] != '\\' {
				j++
			}
			chunk := raw[i:j]
			if max >= 0 && len(dst)-start+len(chunk) > max {
				chunk = cutUTF8(chunk, max-(len(dst)-start))
				dst = append(dst, chunk...)
				break
			}
			dst = append(dst, chunk...)
			i = j
			continue
		}
		if i+1 >= len(raw) {
			dst = append(dst, c)
			break
		}
		switch raw[i+1] {
		case '"', '\\', '/':
			dst = append(dst, raw[i+1])
			i += 2
		case 'b':
			dst = append(dst, '\b')
			i += 2
		case 'f':
			dst = append(dst, '\f')
			i += 2
		case 'n':
			dst = append(dst, '\n')
			i += 2
		case 'r':
			dst = append(dst, '\r')
			i += 2
		case 't':
			dst = append(dst, '\t')
			i += 2
		case 'u':
			r, n := decodeU(raw[i:])
			if n == 0 {
				dst = append(dst, raw[i:i+2]...)
				i += 2
				continue
			}
			if max >= 0 && len(dst)-start+utf8.RuneLen(r) > max {
				return dst
			}
			dst = utf8.AppendRune(dst, r)
			i += n
		default:
			dst = append(dst, raw[i:i+2]...)
			i += 2
		}
	}
	return dst
}

// decodeU decodes \uXXXX (and a following low surrogate) at the start of
// s, returning the rune and the bytes used (0 when invalid).
func decodeU(s []byte) (rune, int) {
	if len(s) < 6 {
		return 0, 0
	}
	v, err := strconv.ParseUint(string(s[2:6]), 16, 32)
	if err != nil {
		return 0, 0
	}
	r := rune(v)
	if utf16.IsSurrogate(r) {
		if len(s) >= 12 && s[6] == '\\' && s[7] == 'u' {
			if v2, err := strconv.ParseUint(string(s[8:12]), 16, 32); err == nil {
				if dec := utf16.DecodeRune(r, rune(v2)); dec != utf8.RuneError {
					return dec, 12
				}
			}
		}
		return utf8.RuneError, 6
	}
	return r, 6
}
