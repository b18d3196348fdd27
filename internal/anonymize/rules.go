package anonymize

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"sort"
	"unicode/utf8"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/claudedir"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/metrics"
)

// Stats counts what a transform did.
type Stats struct {
	Files     int64 // files written
	Lines     int64 // JSON documents: transcript lines and .json files
	Bytes     int64 // bytes of the files written (equal to the bytes read)
	Malformed int64 // documents that are not JSON, kept as defects
	Text      int64 // strings replaced by text filler
	Paths     int64 // strings replaced run by run (paths, cwd, branches)
	Keys      int64 // object keys replaced (paths used as keys)
	Kept      int64 // strings kept: ids, types, models, enums, markers
}

// Add adds o to s.
func (s *Stats) Add(o Stats) {
	s.Files += o.Files
	s.Lines += o.Lines
	s.Bytes += o.Bytes
	s.Malformed += o.Malformed
	s.Text += o.Text
	s.Paths += o.Paths
	s.Keys += o.Keys
	s.Kept += o.Kept
}

// Anonymizer rewrites JSON documents in place. It remembers the path runs
// it has mapped, so one Anonymizer must see a whole tree for the mapping to
// be consistent across files. It is not safe for concurrent use.
type Anonymizer struct {
	key       []byte
	runs      map[string]string
	used      map[string]struct{}
	names     map[string]string // skill and command names (fillName)
	usedNames map[string]struct{}
	drives    map[byte]byte // drive letters, lower case (driveLetter)
	p         parser
	stats     Stats
}

// New returns an Anonymizer whose path filler is keyed by key.
func New(key []byte) *Anonymizer {
	return &Anonymizer{
		key:       append([]byte(nil), key...),
		runs:      make(map[string]string),
		used:      make(map[string]struct{}),
		names:     make(map[string]string),
		usedNames: make(map[string]struct{}),
	}
}

// Stats returns what has been done so far.
func (a *Anonymizer) Stats() Stats { return a.stats }

// Document rewrites one JSON document in place: a transcript line without
// its newline, or a whole .json file. The length never changes.
func (a *Anonymizer) Document(b []byte) {
	a.stats.Lines++
	if len(bytes.TrimSpace(b)) == 0 {
		return
	}
	root, err := a.p.parse(b)
	if err != nil {
		a.stats.Malformed++
		fillMalformed(b)
		return
	}
	a.walk(b, root, ctx{record: true})
}

// ctx is what a value's place says about it.
type ctx struct {
	key       string // the member name it is under (arrays pass theirs on)
	parentTyp string // the "type" of the object holding it
	record    bool   // the value is a transcript record (top level, or embedded in progress data)
	inRecord  bool   // the value is a member of a record
	data      bool   // the value is a progress record's "data" object
	synthetic bool   // inside a message Claude Code made up (API error, limit notice)
	toolInput bool   // inside a tool_use block's input
}

func (a *Anonymizer) walk(b []byte, i int32, c ctx) {
	n := &a.p.nodes[i]
	switch n.kind {
	case '"':
		a.str(b, n.start, n.end, c)
	case '[':
		for _, k := range n.kids {
			a.walk(b, k, c)
		}
	case '{':
		a.object(b, n.kids, c)
	}
}

func (a *Anonymizer) object(b []byte, kids []int32, c ctx) {
	typ := ""
	synthetic := c.synthetic
	for j := 0; j+1 < len(kids); j += 2 {
		k, v := &a.p.nodes[kids[j]], &a.p.nodes[kids[j+1]]
		switch string(b[k.start:k.end]) {
		case "type":
			if v.kind == '"' {
				typ = string(b[v.start:v.end])
			}
		case "model":
			if v.kind == '"' && string(b[v.start:v.end]) == "<synthetic>" {
				synthetic = true
			}
		case "isApiErrorMessage":
			if c.record && v.kind == 'v' && string(b[v.start:v.end]) == "true" {
				synthetic = true
			}
		}
	}
	for j := 0; j+1 < len(kids); j += 2 {
		k := &a.p.nodes[kids[j]]
		key := string(b[k.start:k.end])
		if !isIdentifier(b[k.start:k.end]) {
			a.stats.Keys++
			a.fillPath(b[k.start:k.end])
		}
		a.walk(b, kids[j+1], ctx{
			key:       key,
			parentTyp: typ,
			record:    c.data && key == "message",
			inRecord:  c.record,
			data:      c.record && key == "data",
			synthetic: synthetic,
			toolInput: c.toolInput || key == "input" && toolTypes[typ],
		})
	}
}

// keepAnywhere are keys whose string values the exporter (or a later
// reader of the corpus) needs verbatim and which hold no personal text:
// ids, links, timestamps, types and enums. A value is still kept only if
// it looks like a token (isToken).
var keepAnywhere = map[string]bool{
	"type": true, "subtype": true, "role": true, "model": true, "stop_reason": true,
	"stop_sequence": true, "status": true, "id": true, "uuid": true, "sessionId": true,
	"session_id": true, "parentUuid": true, "leafUuid": true, "logicalParentUuid": true,
	"messageId": true, "requestId": true, "tool_use_id": true, "toolUseID": true,
	"toolUseId": true, "parentToolUseID": true, "sourceToolUseID": true,
	"sourceToolAssistantUUID": true, "taskId": true, "task_id": true,
	"backgroundTaskId": true, "promptId": true, "timestamp": true, "backupTime": true,
	"created": true, "modified": true, "subagent_type": true, "agentType": true,
	"trigger": true, "service_tier": true, "speed": true, "inference_geo": true,
	"hookEvent": true, "hookName": true, "tool_name": true, "kind": true,
	"contentHash": true, "backupFileName": true, "cache_miss_reason": true,
	"addedTypes": true, "attributionAgent": true,
	"attributionPlugin": true, "attributionMcpServer": true, "attributionMcpTool": true,
	"effort": true, "version": true, "userType": true, "entrypoint": true,
	"permissionMode": true, "operation": true, "level": true, "slug": true,
	"edit_mode": true,
}

// nameKeys hold a skill or slash command name: built-in ones are kept,
// custom ones replaced through the key (fillName).
var nameKeys = map[string]bool{"attributionSkill": true, "skill": true, "commandName": true}

// urlKeys hold a pull request's URL or repository (pr-link records).
var urlKeys = map[string]bool{"prUrl": true, "prRepository": true}

// keepInRecord are kept only at a record's top level, where the exporter
// reads them; elsewhere the same names hold free text.
var keepInRecord = map[string]bool{
	"error": true,
}

// pathKeys hold paths, working directories and branches: filled run by
// run, so equal paths stay equal and different ones different.
var pathKeys = map[string]bool{
	"cwd": true, "project": true, "projectPath": true, "file_path": true, "filePath": true,
	"notebook_path": true, "path": true, "filename": true, "filenames": true,
	"fullPath": true, "displayPath": true, "gitBranch": true, "originalCwd": true,
}

// toolTypes are the content blocks whose "name" is a tool name.
var toolTypes = map[string]bool{"tool_use": true, "server_tool_use": true, "mcp_tool_use": true}

func (a *Anonymizer) str(b []byte, start, end int, c ctx) {
	s := b[start:end]
	switch {
	case c.synthetic && (c.key == "text" || c.key == "content"):
		// Claude Code's own words; a parenthesis may hold the user's
		// time zone ("resets 4pm (Europe/Paris)") and is filled.
		a.stats.Kept++
		a.fillParens(s)
		return
	case keepAnywhere[c.key] && isToken(s, c.key == "model"):
		a.stats.Kept++
		return
	case c.key == "agentId" && isToken(s, false):
		a.stats.Kept++
		a.fillID(s)
		return
	case nameKeys[c.key] && isToken(s, false):
		a.stats.Kept++
		a.fillName(s)
		return
	case c.key == "state" && claudedir.Enum(string(s)) == string(s):
		// A background job's state (jobs/<id>/state.json, timeline).
		a.stats.Kept++
		return
	case c.key == "lines" && len(s) > 0 && (s[0] == '+' || s[0] == '-' || s[0] == ' '):
		// A structuredPatch line: its prefix says added, removed or
		// context, which lines of code count.
		a.stats.Text++
		a.fillText(s[1:])
		return
	case c.toolInput && codeKeys[c.key] && utf8.Valid(s):
		// An edit's text: lines of code count the lines a diff of
		// old_string and new_string shows, so equal lines must stay
		// equal and different ones different (fillCode).
		a.stats.Text++
		a.fillCode(s)
		return
	case c.key == "command" && utf8.Valid(s):
		// A shell command: its words decide commits and pull requests.
		a.stats.Paths++
		a.fillShell(s)
		return
	case urlKeys[c.key] && utf8.Valid(s):
		a.stats.Paths++
		a.fillURL(s)
		return
	case c.key == "stdout" && bytes.Contains(s, []byte("/pull/")):
		// A shell call's output: text, but a pull request URL in it
		// tells a new pull request from one seen before.
		orig := append([]byte(nil), s...)
		a.stats.Text++
		a.fillText(s)
		a.fillPRURLs(s, orig)
		return
	case c.inRecord && keepInRecord[c.key] && isPhrase(s):
		a.stats.Kept++
		return
	case c.key == "name" && toolTypes[c.parentTyp] && isToken(s, false):
		a.stats.Kept++
		return
	case c.inRecord && c.key == "display" && commandPrefix(s) > 0:
		// A prompt history line that is a slash command stays one: a
		// built-in command keeps its name ("/compact"), any other its
		// slash ("/lorem"); the rest is filled.
		n := commandPrefix(s)
		a.stats.Kept++
		a.fillText(s[n:])
		return
	case pathKeys[c.key] && utf8.Valid(s):
		a.stats.Paths++
		a.fillPath(s)
		return
	}
	a.stats.Text++
	a.fillText(s)
}

// codeKeys are the members of an edit tool's input whose lines the lines
// of code rule diffs or counts (Edit, MultiEdit's edits, Write,
// NotebookEdit).
var codeKeys = map[string]bool{"old_string": true, "new_string": true, "content": true, "new_source": true}

// fillCode fills an edit's text so that a line-by-line diff of the copy
// shows what the original's shows: every run of letters, digits and
// non-ASCII longer than one character goes through the key (mapRun: the
// same run, the same filler; different runs, different fillers), one
// ASCII letter or digit, punctuation, white space and escapes stay. Two
// lines are then equal in the copy exactly when they were in the original.
func (a *Anonymizer) fillCode(s []byte) {
	for i := 0; i < len(s); {
		j := runEnd(s, i, len(s))
		switch {
		case j == i:
			if s[i] == '\\' && i+1 < len(s) {
				i += 2
				if s[i-1] == 'u' {
					i += 4 // a \uXXXX escape of a control or ASCII character
				}
			} else {
				i++
			}
			continue
		case j-i > 1 || s[i] >= utf8.RuneSelf:
			copy(s[i:j], a.mapRun(s[i:j]))
		}
		i = j
	}
}

// commandPrefix returns, for a text that starts with a slash command, the
// length of what is kept of it: the built-in name with its slash ("/model"
// of "/model opus"), or just the slash of any other command. It returns 0
// for other texts ("/home/me/notes.md").
func commandPrefix(s []byte) int {
	if len(s) < 2 || s[0] != '/' {
		return 0
	}
	n := 1
	for n < len(s) && n <= 64 && (isToken(s[n:n+1], false) && s[n] != '<' && s[n] != '>' && s[n] != '+') {
		n++
	}
	if n < len(s) && s[n] != ' ' && !(s[n] == '\\' && n+1 < len(s) && (s[n+1] == 'n' || s[n+1] == 't')) {
		return 0
	}
	if n == 1 || s[1] == '-' || s[1] == '_' || s[1] == '.' || s[1] == ':' {
		return 0
	}
	if !claudedir.IsBuiltinCommand(string(s[1:n])) {
		return 1
	}
	return n
}

// isIdentifier reports whether an object key is a schema name (kept) and
// not data such as a file path (filled).
func isIdentifier(k []byte) bool {
	if len(k) == 0 || len(k) > 64 {
		return len(k) == 0
	}
	for i, c := range k {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '_', c == '$':
		case i > 0 && (c >= '0' && c <= '9' || c == '-'):
		default:
			return false
		}
	}
	return true
}

// isToken reports whether a value looks like an id, enum, timestamp or
// model name: short printable ASCII without spaces, escapes or path
// separators (a model name may hold '/' and '@', as gateway and Vertex
// names do).
func isToken(s []byte, model bool) bool {
	if len(s) > 128 {
		return false
	}
	for _, c := range s {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '_', c == '-', c == '.', c == ':', c == '+', c == '<', c == '>':
		case model && (c == '/' || c == '@'):
		default:
			return false
		}
	}
	return true
}

// isPhrase is isToken with spaces allowed (an error name such as
// "Invalid API key"), still without paths or addresses.
func isPhrase(s []byte) bool {
	if len(s) > 64 {
		return false
	}
	for _, c := range s {
		if c != ' ' && !isToken([]byte{c}, false) {
			return false
		}
	}
	return true
}

// lorem is the text filler; it restarts at every newline.
const lorem = "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor incididunt ut labore et dolore magna aliqua "

// markers are what Claude Code itself writes at the start of a text; the
// exporter tells prompts from plumbing by them, so they are kept.
var markers = []string{
	"<command-name>", "<command-message>", "<command-args>", "<local-command-stdout>",
	"<local-command-stderr>", "<local-command-caveat>", "<local-command-", "<task-notification>",
	"<bash-input>", "<bash-stdout>", "<bash-stderr>", "<user-memory-input>", "<system-reminder>",
	"[Request interrupted by user for tool use]", "[Request interrupted by user]",
	"[Request interrupted by user", "No response requested.",
	"This session is being continued from a previous conversation",
	"Caveat: The messages below were generated by the user while running local commands.",
	"The user doesn't want to proceed with this tool use.",
	"The user doesn't want to take this action right now.",
	"User rejected", "Warmup", "API Error",
}

// fillText replaces a string's content (raw, between its quotes) with
// lorem filler of the same byte length, keeping leading white space, a
// leading marker, escaped newlines, tabs and carriage returns, lone
// surrogates and control escapes, and turning invalid UTF-8 into 0xFF.
//
// A slash command header keeps its name: a built-in one as it is, a custom
// one (a skill, a project command) replaced through the key (fillName), so
// that the copy's commands stay apart and none becomes a built-in one.
func (a *Anonymizer) fillText(s []byte) {
	i := 0
	for i < len(s) && (s[i] == ' ' || s[i] == '\\' && i+1 < len(s) && (s[i+1] == 'n' || s[i+1] == 't' || s[i+1] == 'r')) {
		if s[i] == ' ' {
			i++
		} else {
			i += 2
		}
	}
	best := 0
	for _, m := range markers {
		if len(m) > best && bytes.HasPrefix(s[i:], []byte(m)) {
			best = len(m)
		}
	}
	if best > 0 && string(s[i:i+best]) == "<command-name>" {
		// Keep a slash command's name: "<command-name>/compact</command-name>".
		if j := bytes.Index(s[i+best:], []byte("</command-name>")); j > 0 && j <= 64 && isToken(bytes.TrimPrefix(s[i+best:i+best+j], []byte("/")), false) {
			cmd := bytes.TrimPrefix(s[i+best:i+best+j], []byte("/"))
			a.fillName(cmd)
			best += j + len("</command-name>")
		}
	}
	i += best
	col := 0
	for i < len(s) {
		c := s[i]
		switch {
		case c == '\\':
			switch s[i+1] {
			case 'n':
				i += 2
				col = 0
			case 'r', 't':
				i += 2
			case 'u':
				if v := hex4(s[i+2 : i+6]); v < 0x20 || v >= 0xD800 && v <= 0xDFFF {
					i += 6 // control characters and lone surrogates carry no text
					continue
				}
				for k := 0; k < 6; k++ {
					s[i] = lorem[col%len(lorem)]
					i++
					col++
				}
			default:
				s[i], s[i+1] = lorem[col%len(lorem)], lorem[(col+1)%len(lorem)]
				i += 2
				col += 2
			}
		case c < utf8.RuneSelf:
			s[i] = lorem[col%len(lorem)]
			i++
			col++
		default:
			r, size := utf8.DecodeRune(s[i:])
			if r == utf8.RuneError && size == 1 {
				s[i] = 0xFF
				i++
				continue
			}
			for k := 0; k < size; k++ {
				s[i] = lorem[col%len(lorem)]
				i++
				col++
			}
		}
	}
}

func hex4(h []byte) rune {
	var v rune
	for _, c := range h {
		v <<= 4
		switch {
		case c >= '0' && c <= '9':
			v |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			v |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			v |= rune(c - 'A' + 10)
		}
	}
	return v
}

// fillPath replaces every run of letters, digits and non-ASCII in s (raw
// string content) with its keyed filler, keeping separators, escapes of
// punctuation, what the language of an edit is told by (keptName: the
// extension, a Makefile's or Dockerfile's name) and nothing else.
//
// A Windows path (X:\... or X:/...) is case-insensitive, as the exporter
// reads it (one working dir written S:\repo and s:\repo is one project):
// its drive letter becomes a letter of the same case, the same for both
// cases of one letter, and each run is filled as its lower case, so two
// spellings of one dir stay one dir in the copy.
func (a *Anonymizer) fillPath(s []byte) {
	windows := windowsPath(s)
	if windows {
		s[0] = a.driveLetter(s[0])
	}
	base := 0
	if k := bytes.LastIndexAny(s, `/\`); k >= 0 {
		base = k + 1
	}
	keepFrom, keepTo := keptName(s[base:])
	keepFrom += base
	keepTo += base
	i := 0
	for i < len(s) {
		j := runEnd(s, i, len(s))
		if j == i {
			if s[i] == '\\' && i+1 < len(s) {
				i += 2 // an escaped separator (\\, \/) or white space
			} else {
				i++
			}
			continue
		}
		switch {
		case windows && i == 0: // the drive letter, filled above
		case windows && (i < keepFrom || i >= keepTo):
			copy(s[i:j], a.mapRun(bytes.ToLower(s[i:j])))
		case i < keepFrom || i >= keepTo:
			copy(s[i:j], a.mapRun(s[i:j]))
		}
		i = j
	}
}

// windowsPath tells a path that starts with a drive letter and a
// separator (raw string content: the backslash is escaped), or the
// project folder Claude Code names after one (S:\repo is S--repo).
func windowsPath(s []byte) bool {
	return len(s) >= 3 && (s[0]|0x20 >= 'a' && s[0]|0x20 <= 'z') &&
		(s[1] == ':' && (s[2] == '\\' || s[2] == '/') || s[1] == '-' && s[2] == '-')
}

// driveLetter maps a drive letter to another letter of the same case: a
// keyed permutation of the 26 letters, so that different drives stay
// different and both cases of one drive stay one drive.
func (a *Anonymizer) driveLetter(c byte) byte {
	if a.drives == nil {
		letters := []byte("abcdefghijklmnopqrstuvwxyz")
		rank := make(map[byte]string, len(letters))
		for _, l := range letters {
			m := hmac.New(sha256.New, a.key)
			m.Write([]byte("drive:"))
			m.Write([]byte{l})
			rank[l] = string(m.Sum(nil))
		}
		perm := append([]byte(nil), letters...)
		sort.Slice(perm, func(i, j int) bool { return rank[perm[i]] < rank[perm[j]] })
		a.drives = make(map[byte]byte, len(letters))
		for i, l := range letters {
			a.drives[l] = perm[i]
		}
	}
	upper := c < 'a'
	d := a.drives[c|0x20]
	if upper {
		d &^= 0x20
	}
	return d
}

// wellKnownNames are the file names the exporter tells a language by
// (transcript.ExtOf), lower-case.
var wellKnownNames = []string{"dockerfile", "makefile", "gnumakefile"}

// keptName returns the part of a path's last element [from, to) that
// fillPath keeps: a Makefile's or Dockerfile's name ("Dockerfile" of
// "Dockerfile.prod" too), and the extension when it is short (at most 6
// letters and digits) or one the language table names (".properties",
// ".markdown"): the language label of lines of code and edit decisions is
// read from them. An empty range keeps nothing.
func keptName(name []byte) (from, to int) {
	lower := bytes.ToLower(name)
	for _, w := range wellKnownNames {
		if string(lower) == w || w == "dockerfile" && bytes.HasPrefix(lower, []byte("dockerfile.")) {
			return 0, len(name)
		}
	}
	dot := bytes.LastIndexByte(name, '.')
	if dot < 0 || dot == len(name)-1 {
		return 0, 0
	}
	ext := name[dot+1:]
	if !isAlnum(ext) || len(ext) > 16 || len(ext) > 6 && metrics.LanguageOf(string(bytes.ToLower(ext))) == metrics.OtherValue {
		return 0, 0
	}
	return dot + 1, len(name)
}

func isAlnum(s []byte) bool {
	for _, c := range s {
		if !isWordByte(c) {
			return false
		}
	}
	return true
}

// runEnd returns the end of the run of word bytes starting at i: ASCII
// letters and digits, non-ASCII bytes and \uXXXX escapes of non-ASCII.
func runEnd(s []byte, i, end int) int {
	for i < end {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c >= utf8.RuneSelf:
			i++
		case c == '\\' && i+5 < end && s[i+1] == 'u' && hex4(s[i+2:i+6]) >= utf8.RuneSelf:
			i += 6
		default:
			return i
		}
	}
	return i
}

const runAlphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

// mapRun returns the filler of a run: the same for the same run, different
// for different runs of the same length while any is free.
func (a *Anonymizer) mapRun(run []byte) string {
	if f, ok := a.runs[string(run)]; ok {
		return f
	}
	var f string
	for attempt := uint32(0); ; attempt++ {
		f = a.derive(run, attempt)
		// Never a word the shell rules compare with (fillShell).
		if _, taken := a.used[f]; !taken && !shellWords[f] && !optionRuns[f] || attempt == 255 {
			break
		}
	}
	a.runs[string(run)] = f
	a.used[f] = struct{}{}
	return f
}

func (a *Anonymizer) derive(run []byte, attempt uint32) string {
	out := make([]byte, 0, len(run))
	var ctr [8]byte
	binary.BigEndian.PutUint32(ctr[:4], attempt)
	for block := uint32(0); len(out) < len(run); block++ {
		binary.BigEndian.PutUint32(ctr[4:], block)
		m := hmac.New(sha256.New, a.key)
		m.Write(ctr[:])
		m.Write(run)
		for _, x := range m.Sum(nil) {
			if len(out) == len(run) {
				break
			}
			out = append(out, runAlphabet[int(x)%len(runAlphabet)])
		}
	}
	return string(out)
}

// fillParens fills what stands between parentheses.
func (a *Anonymizer) fillParens(s []byte) {
	for i := 0; i < len(s); i++ {
		if s[i] != '(' {
			continue
		}
		j := bytes.IndexByte(s[i+1:], ')')
		if j < 0 {
			j = len(s) - i - 1
		}
		// '(' and ')' are never part of an escape, so the inside is
		// whole escapes only.
		a.fillText(s[i+1 : i+1+j])
		i += j
	}
}

// fillMalformed keeps a line that is not JSON broken in the same way:
// punctuation, quotes, white space and digits stay, letters become 'x',
// valid non-ASCII becomes 'x' byte for byte and invalid UTF-8 becomes 0xFF.
func fillMalformed(b []byte) {
	for i := 0; i < len(b); {
		c := b[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
			b[i] = 'x'
			i++
		case c < utf8.RuneSelf:
			i++
		default:
			r, size := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && size == 1 {
				b[i] = 0xFF
				i++
				continue
			}
			for k := 0; k < size; k++ {
				b[i] = 'x'
				i++
			}
		}
	}
}
