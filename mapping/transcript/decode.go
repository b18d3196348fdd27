package transcript

import (
	"errors"
	"strings"
	"time"
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
	// diff is the scratch of the line diffs of edit inputs.
	diff diffScratch
	// unesc is the scratch strings are unescaped into before they are
	// interned or copied, so that each costs at most one allocation.
	unesc []byte
	// recent caches interned strings by length and end bytes (internBytes).
	recent [128]string
	// last holds the ids of the lines before, by field (see again).
	last lastIDs
	// ids is where the strings of ids are made (idString).
	ids strings.Builder
	// run is the run of fields last kept from the top of a line.
	run runState
	// lastUsage is the usage object read last (usageOnce).
	lastUsage lastUsage
	// lastDay is the date parseTime last validated, and its midnight.
	lastDay struct {
		date [10]byte
		unix int64
		ok   bool
	}
}

// lastIDs are the values the id fields last had: ids that are not
// interned but repeat from one line to the next.
type lastIDs struct {
	uuid, parent, request, message, toolUse, parentToolUse string
}

// recentMax is the longest string the decoder's recent cache holds.
const recentMax = 256

// internMax bounds the intern table; it is cleared when full (and keeps
// its room). The values that repeat are few (types, models, versions,
// working dirs); what fills it is a history's session ids, one per
// file: at 8,192 the tables of a backfill's decoders held 1.7 MB.
const internMax = 2048

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
func (d *Decoder) Decode(line []byte, r *Record) error { return d.DecodeChecked(line, 0, r) }

// DecodeChecked is Decode for a line whose first ascii bytes the caller
// knows to be ASCII (its reader found them so while finding the line's
// end): its UTF-8 is checked from there on. ascii must not count a byte at
// or above 0x80; out of [0, len(line)] it is clamped.
func (d *Decoder) DecodeChecked(line []byte, ascii int, r *Record) error {
	r.reset()
	ascii = min(max(ascii, 0), len(line))
	if len(line) > d.opts.MaxLineBytes {
		return &DecodeError{Reason: ReasonTooLong}
	}
	i := skipWS(line, 0)
	if i == len(line) {
		return nil // blank: an empty KindOther record, as documented
	}
	if line[i] != '{' {
		if !validUTF8(line[ascii:]) {
			return &DecodeError{Reason: ReasonInvalidUTF8}
		}
		if line[i] == '[' || line[i] == '"' || line[i] == 'n' || line[i] == 't' || line[i] == 'f' || line[i] == '-' || (line[i] >= '0' && line[i] <= '9') {
			if end, err := skipValue(line, i); err == nil && skipWS(line, end) == len(line) {
				return &DecodeError{Reason: ReasonNotObject}
			}
		}
		return &DecodeError{Reason: ReasonInvalidJSON}
	}
	if !validUTF8(line[ascii:]) {
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
		s := d.internBytes(d.unescape(raw), false)
		d.dropScratch()
		return s
	}
	if len(raw) == 0 {
		return ""
	}
	// Most interned values are the one the same field had on the line
	// before (a file's session id, working dir, version, model): a
	// direct-mapped cache of short ones answers them without hashing.
	slot := -1
	if len(raw) <= recentMax {
		slot = int((uint(len(raw))*0x9E37 ^ uint(raw[0])<<3 ^ uint(raw[len(raw)-1])) % uint(len(d.recent)))
		if s := d.recent[slot]; s == string(raw) {
			return s
		}
	}
	s, ok := d.intern[string(raw)]
	if !ok {
		if len(d.intern) >= internMax {
			clear(d.intern)
		}
		s = string(raw)
		d.intern[s] = s
	}
	if slot >= 0 {
		d.recent[slot] = s
	}
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
		return d.plain(raw, esc), next, nil
	}
	next, err := skipValue(b, i)
	return "", next, err
}

// again reads a string value as str does without interning, but answers
// with the string in last, or else prev, when the value is the same: ids
// that repeat from one line to the next are then allocated once (a line's
// parentUuid is most often the uuid of the line before it; the lines of
// one response share its requestId and message id; a run of progress
// lines, its tool use ids). The value read is left in last.
func (d *Decoder) again(b []byte, i int, last *string, prev string) (string, int, error) {
	if i < len(b) && b[i] == '"' {
		raw, esc, next, err := readString(b, i)
		if err != nil {
			return "", 0, err
		}
		switch {
		case esc:
			*last = d.plain(raw, true)
		case *last == string(raw):
		case prev == string(raw):
			*last = prev
		default:
			*last = d.idString(raw)
		}
		return *last, next, nil
	}
	next, err := skipValue(b, i)
	return "", next, err
}

// checkedSkip skips the value at b[i] as str would read it, without
// making a string: a string is checked as a read one is (a raw control
// character makes the line invalid JSON, as encoding/json has it), any
// other value only delimited.
func checkedSkip(b []byte, i int) (int, error) {
	if i < len(b) && b[i] == '"' {
		_, _, next, err := readString(b, i)
		return next, err
	}
	return skipValue(b, i)
}

// idChunk is the size of the blocks idString makes id strings in; idMax
// the longest id made in one (longer ones are allocated alone).
const (
	idChunk = 1 << 10
	idMax   = 64
)

// idString returns raw as a string. Ids (a line's uuid, a message's,
// request's and tool call's) were a third of the one-shot's allocations,
// one each: they are written one after another into a block of idChunk
// bytes instead, each string a part of it, and a new block is started
// when one is full. A strings.Builder only ever appends, so a string it
// returned never changes. A block lives as long as any id in it: an id
// the assembly keeps (the last few uuids of a session, the ids of open
// requests and tools) keeps at most idChunk bytes.
func (d *Decoder) idString(raw []byte) string {
	if len(raw) > idMax {
		return string(raw)
	}
	if d.ids.Cap()-d.ids.Len() < len(raw) {
		d.ids = strings.Builder{}
		d.ids.Grow(idChunk)
	}
	start := d.ids.Len()
	d.ids.Write(raw)
	return d.ids.String()[start:]
}

// id is plain for an id: made by idString when it has no escapes.
func (d *Decoder) id(raw []byte, escaped bool) string {
	if escaped {
		return d.plain(raw, true)
	}
	return d.idString(raw)
}

// plain returns the string a JSON string's raw content stands for,
// unescaped when escaped is set.
func (d *Decoder) plain(raw []byte, escaped bool) string {
	if !escaped {
		return string(raw)
	}
	s := string(d.unescape(raw))
	d.dropScratch()
	return s
}

// unescape unescapes raw into the decoder's scratch; the result is valid
// until the next call.
func (d *Decoder) unescape(raw []byte) []byte {
	d.unesc = appendUnescaped(d.unesc[:0], raw, -1)
	return d.unesc
}

// maxScratch is the largest unescape scratch a decoder keeps.
const maxScratch = 64 << 10

// dropScratch lets go of a scratch grown for an unusually long string.
func (d *Decoder) dropScratch() {
	if cap(d.unesc) > maxScratch {
		d.unesc = nil
	}
}

// record decodes the object at b[i] into r. It serves top-level lines and
// the envelopes embedded in progress records.
func (d *Decoder) record(b []byte, i int, r *Record) (int, error) {
	// rs follows the run of fields fn reads (run.go): the top of a line
	// takes and keeps runs, an embedded envelope reads every key.
	rs := runScan{d: d, r: r}
	fn := func(key []byte, v int) (int, error) {
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
			var x string
			x, next, err = d.str(b, v, true)
			setRare(r, x, func(m *Rare) *string { return &m.Subtype })
		case "uuid":
			r.UUID, next, err = d.again(b, v, &d.last.uuid, "")
		case "parentUuid":
			r.ParentUUID, next, err = d.again(b, v, &d.last.parent, d.last.uuid)
		case "logicalParentUuid":
			next, err = checkedSkip(b, v)
		case "sessionId":
			rs.rk = runSessionID
			r.SessionID, next, err = d.str(b, v, true)
		case "agentId":
			rs.rk = runAgentID
			r.AgentID, next, err = d.str(b, v, true)
		case "requestId":
			r.RequestID, next, err = d.again(b, v, &d.last.request, "")
		case "promptId":
			next, err = checkedSkip(b, v)
		case "timestamp":
			next, err = d.timestamp(b, v, r)
		case "isSidechain":
			rs.rk = runIsSidechain
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
			var x string
			x, next, err = d.str(b, v, true)
			setRare(r, x, func(m *Rare) *string { return &m.Error })
		case "apiErrorStatus":
			var n int64
			n, next, err = readInt(b, v)
			setRare(r, n, func(m *Rare) *int64 { return &m.APIErrorStatus })
		case "level":
			var x string
			x, next, err = d.str(b, v, true)
			setRare(r, x, func(m *Rare) *string { return &m.Level })
		case "cwd":
			rs.rk = runCwd
			r.Cwd, next, err = d.str(b, v, true)
		case "gitBranch":
			rs.rk = runGitBranch
			r.GitBranch, next, err = d.str(b, v, true)
		case "version":
			rs.rk = runVersion
			r.Version, next, err = d.str(b, v, true)
		case "slug":
			rs.rk = runSlug
			r.Slug, next, err = d.str(b, v, true)
		case "userType", "entrypoint":
			rs.rk = runUserType
			return skipValue(b, v)
		case "message":
			if v < len(b) && b[v] == '{' {
				r.HasMessage = true
				return d.message(b, v, &r.Message)
			}
			return skipValue(b, v)
		case "sourceToolUseID":
			next, err = checkedSkip(b, v)
		case "toolUseResult":
			return d.toolUseResult(b, v, r)
		case "compactMetadata", "microcompactMetadata":
			return d.compactMetadata(b, v, r)
		case "durationMs":
			var n int64
			n, next, err = readInt(b, v)
			setRare(r, n, func(m *Rare) *int64 { return &m.DurationMs })
		case "content":
			if v < len(b) && b[v] == '"' {
				// Not kept; checked as when its head was (readLong).
				_, n, e := readLong(b, v)
				if e != nil {
					return 0, e
				}
				return n, nil
			}
			return skipValue(b, v)
		case "data":
			return d.progressData(b, v, r)
		case "parentToolUseID":
			r.ParentToolUseID, next, err = d.again(b, v, &d.last.parentToolUse, "")
		case "toolUseID":
			r.ToolUseID, next, err = d.again(b, v, &d.last.toolUse, "")
		case "leafUuid":
			next, err = checkedSkip(b, v)
		case "attributionSkill":
			var x string
			x, next, err = d.label(b, v)
			setRare(r, x, func(m *Rare) *string { return &m.Skill })
		case "attributionPlugin":
			var x string
			x, next, err = d.label(b, v)
			setRare(r, x, func(m *Rare) *string { return &m.Plugin })
		case "effort":
			r.Effort, next, err = d.label(b, v)
		case "attributionMcpServer":
			var x string
			x, next, err = d.label(b, v)
			setRare(r, x, func(m *Rare) *string { return &m.MCPServer })
		case "prUrl":
			var x string
			x, next, err = d.capped(b, v, 512)
			setRare(r, x, func(m *Rare) *string { return &m.PRURL })
		case "prRepository":
			var x string
			x, next, err = d.capped(b, v, 512)
			setRare(r, x, func(m *Rare) *string { return &m.PRRepo })
		case "prNumber":
			if v < len(b) && b[v] >= '0' && b[v] <= '9' {
				var n int64
				n, next, err = readInt(b, v)
				setRare(r, n, func(m *Rare) *int64 { return &m.PRNumber })
			} else {
				next, err = skipValue(b, v)
			}
		case "customTitle", "aiTitle", "agentName":
			if v < len(b) && b[v] == '"' {
				raw, n, e := readLong(b, v)
				if e != nil {
					return 0, e
				}
				t, _ := headOf(raw, 256)
				setRare(r, t, func(m *Rare) *string { return &m.Title })
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
	}
	if d.embedding {
		return objectFields(b, i, fn)
	}
	return fields(b, i, fn, &rs)
}

// setRare stores v in the rare field of r that field picks. A zero value
// allocates nothing on a record without rare fields (they read as zero
// already), and replaces an earlier value on one with them: a repeated key
// replaces the earlier value, as encoding/json does.
func setRare[T comparable](r *Record, v T, field func(*Rare) *T) {
	var zero T
	if v != zero || r.rare != nil {
		*field(r.more()) = v
	}
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
		if t, ok := d.parseTime(raw); ok && !esc {
			r.Timestamp = t
			setRare(r, "", func(m *Rare) *string { return &m.TimestampRaw })
		} else {
			r.Timestamp = time.Time{}
			h, _ := head(raw, esc, 64)
			setRare(r, h, func(m *Rare) *string { return &m.TimestampRaw })
		}
		return next, nil
	}
	if v < len(b) && (b[v] == '-' || (b[v] >= '0' && b[v] <= '9')) {
		// Epoch milliseconds, as history.jsonl writes them.
		ms, next, err := readInt(b, v)
		if err == nil && ms > 0 {
			r.Timestamp = time.UnixMilli(ms).UTC()
			setRare(r, "", func(m *Rare) *string { return &m.TimestampRaw })
		}
		return next, err
	}
	return skipValue(b, v)
}

// parseTime parses RFC 3339 timestamps, with a fast path for the
// millisecond UTC form Claude Code writes ("2025-11-04T09:15:02.123Z").
// The fast path keeps the last date it validated: lines of a file share
// their day, so most timestamps cost their digits, not a time.Date.
func (d *Decoder) parseTime(raw []byte) (time.Time, bool) {
	if len(raw) == 24 && raw[4] == '-' && raw[7] == '-' && raw[10] == 'T' && raw[13] == ':' &&
		raw[16] == ':' && raw[19] == '.' && raw[23] == 'Z' {
		h, ok1 := digits(raw[11:13])
		mi, ok2 := digits(raw[14:16])
		s, ok3 := digits(raw[17:19])
		ms, ok4 := digits(raw[20:23])
		if ok1 && ok2 && ok3 && ok4 && h < 24 && mi < 60 && s < 60 {
			if day, ok := d.day(raw[:10]); ok {
				return time.Unix(day+int64(h*3600+mi*60+s), int64(ms)*1e6).UTC(), true
			}
		}
	}
	t, err := time.Parse(time.RFC3339Nano, string(raw))
	if err != nil {
		return time.Time{}, false
	}
	return t.UTC(), true
}

// day returns the Unix time of midnight UTC of date ("2025-11-04"), or
// false when it is not a valid date in that form.
func (d *Decoder) day(date []byte) (int64, bool) {
	if d.lastDay.ok && string(date) == string(d.lastDay.date[:]) {
		return d.lastDay.unix, true
	}
	y, ok1 := digits(date[0:4])
	mo, ok2 := digits(date[5:7])
	dd, ok3 := digits(date[8:10])
	if !ok1 || !ok2 || !ok3 || mo < 1 || mo > 12 || dd < 1 || dd > 31 {
		return 0, false
	}
	t := time.Date(y, time.Month(mo), dd, 0, 0, 0, 0, time.UTC)
	if t.Day() != dd { // 2025-02-30
		return 0, false
	}
	copy(d.lastDay.date[:], date)
	d.lastDay.unix, d.lastDay.ok = t.Unix(), true
	return d.lastDay.unix, true
}

// digits parses a run of ASCII digits.
func digits(s []byte) (int, bool) {
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

func (d *Decoder) compactMetadata(b []byte, v int, r *Record) (int, error) {
	if v >= len(b) || b[v] != '{' {
		return skipValue(b, v)
	}
	return objectFields(b, v, func(key []byte, v int) (int, error) {
		var next int
		var err error
		switch string(key) {
		case "trigger":
			var x string
			x, next, err = d.str(b, v, true)
			setRare(r, x, func(m *Rare) *string { return &m.CompactTrigger })
		case "preTokens":
			var n int64
			n, next, err = readInt(b, v)
			setRare(r, n, func(m *Rare) *int64 { return &m.CompactPreTokens })
		default:
			return skipValue(b, v)
		}
		return next, err
	})
}
