// Package claudedir reads the Claude dir's files beside the transcripts —
// tasks, todos, prompt history, live sessions and background jobs — into
// the few facts the exporter counts: statuses, states, projects and slash
// command names. It never keeps prompt, task or todo text.
//
// It is pure: bytes in, facts out. Every value that becomes a metric label
// goes through Enum or Command, so a hostile or future file cannot grow a
// label set past a handful of short tokens.
package claudedir

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Observer takes what the Claude dir's files say, as metrics.Observer
// takes what the transcripts say: the exporter's Prometheus collector
// (exporter/prom.ClaudeDir) implements it.
type Observer interface {
	// SetInventory replaces what the dir holds now (tasks, todos,
	// running sessions, jobs).
	SetInventory(inv Inventory)
	// AddPrompts counts prompts typed in a project (its label);
	// AddSlashCommands slash commands by name (a built-in's, or other).
	AddPrompts(project string, n int64)
	AddSlashCommands(command string, n int64)
	// AddFileErrors counts files and history lines skipped, by file kind
	// and reason.
	AddFileErrors(file, reason string, n int64)
}

// Errors name why a file or line was skipped (the reason label of
// claude_dir_errors_total).
var (
	// ErrMalformed: not JSON.
	ErrMalformed = errors.New("malformed")
	// ErrShape: JSON, but not the shape this kind of file has (another
	// version of Claude Code, or another file under the same name).
	ErrShape = errors.New("shape")
)

// Reason returns the label value for err: malformed, shape or unreadable.
func Reason(err error) string {
	switch {
	case errors.Is(err, ErrMalformed):
		return "malformed"
	case errors.Is(err, ErrShape):
		return "shape"
	}
	return "unreadable"
}

// Unknown is the label value of a missing status, state or kind.
const Unknown = "unknown"

// Other is the label value of a status, state or command that is not a
// short lower-case token (or, for commands, not a built-in one).
const Other = "other"

// Enum returns v as a label value when it looks like an enum written by
// Claude Code (a lower-case token of at most 32 bytes: "in_progress",
// "sdk-ts", "claude-vscode"), Unknown when it is empty and Other otherwise.
func Enum(v string) string {
	if v == "" {
		return Unknown
	}
	if len(v) > 32 {
		return Other
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case i > 0 && (c == '_' || c == '-' || c == '.'):
		default:
			return Other
		}
	}
	return v
}

// unmarshal decodes b into v, telling malformed bytes from a JSON value of
// another shape.
func unmarshal(b []byte, v any) error {
	if err := json.Unmarshal(b, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return fmt.Errorf("%w: %s", ErrShape, te.Error())
		}
		if !json.Valid(b) {
			return fmt.Errorf("%w: %s", ErrMalformed, err.Error())
		}
		return fmt.Errorf("%w: %s", ErrShape, err.Error())
	}
	return nil
}

// str is a JSON string member that tolerates any other JSON value (a
// number, null, an object from another version) as absent: a status field
// of an unexpected type is an unknown status, not a lost file.
type str string

func (s *str) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var v string
		if err := json.Unmarshal(b, &v); err != nil {
			return err
		}
		*s = str(v)
	}
	return nil
}

// trim drops a byte order mark and leading white space.
func trim(b []byte) []byte {
	return bytes.TrimLeft(bytes.TrimPrefix(bytes.TrimLeft(b, " \t\r\n"), []byte("\xef\xbb\xbf")), " \t\r\n")
}

// object checks that b holds a JSON object and returns it trimmed.
func object(b []byte) ([]byte, error) {
	t := trim(b)
	if len(t) == 0 {
		return nil, fmt.Errorf("%w: empty", ErrMalformed)
	}
	if t[0] != '{' {
		if !json.Valid(t) {
			return nil, fmt.Errorf("%w: not JSON", ErrMalformed)
		}
		return nil, fmt.Errorf("%w: not an object", ErrShape)
	}
	return t, nil
}

// decodeObject decodes b, which must hold a JSON object, into v.
func decodeObject(b []byte, v any) error {
	t, err := object(b)
	if err != nil {
		return err
	}
	return unmarshal(t, v)
}

// Task is one file of tasks/<session>/<id>.json.
type Task struct {
	ID     string
	Status string // Enum of "status": pending, in_progress, completed, ...
}

// ParseTask reads a task file.
func ParseTask(b []byte) (Task, error) {
	var v struct {
		ID     str `json:"id"`
		Status str `json:"status"`
	}
	if err := decodeObject(b, &v); err != nil {
		return Task{}, err
	}
	return Task{ID: string(v.ID), Status: Enum(string(v.Status))}, nil
}

// ParseTodos reads a todos/<session>-agent-<agent>.json file: an array of
// todos. It returns each todo's status (Enum of "status").
func ParseTodos(b []byte) ([]string, error) {
	t := trim(b)
	if len(t) == 0 || t[0] != '[' {
		if len(t) == 0 || !json.Valid(t) {
			return nil, fmt.Errorf("%w: not JSON", ErrMalformed)
		}
		return nil, fmt.Errorf("%w: not an array", ErrShape)
	}
	var v []json.RawMessage
	if err := unmarshal(t, &v); err != nil {
		return nil, err
	}
	out := make([]string, 0, len(v))
	for _, raw := range v {
		var todo struct {
			Status str `json:"status"`
		}
		if _, err := object(raw); err != nil {
			return nil, fmt.Errorf("%w: a todo that is not an object", ErrShape)
		}
		if err := unmarshal(raw, &todo); err != nil {
			return nil, err
		}
		out = append(out, Enum(string(todo.Status)))
	}
	return out, nil
}

// Prompt is one line of history.jsonl: something the user typed.
type Prompt struct {
	Project   string    // the working directory it was typed in ("" when absent)
	SessionID string    // absent on old lines
	Time      time.Time // zero when absent
	// Command is the slash command's name when the prompt is one ("" for
	// a prompt): a built-in name, or Other for a custom, plugin or
	// mistyped command, whose name may say what the user works on.
	Command string
}

// ParsePrompt reads one history line. The typed text is looked at only for
// its leading slash command and is never kept.
func ParsePrompt(b []byte) (Prompt, error) {
	var v struct {
		Display   str             `json:"display"`
		Project   str             `json:"project"`
		SessionID str             `json:"sessionId"`
		Timestamp json.RawMessage `json:"timestamp"`
	}
	if err := decodeObject(b, &v); err != nil {
		return Prompt{}, err
	}
	p := Prompt{Project: string(v.Project), SessionID: string(v.SessionID), Time: epochOrISO(v.Timestamp)}
	if name, ok := Command(string(v.Display)); ok {
		p.Command = name
	}
	return p, nil
}

// epochOrISO reads a timestamp written as Unix milliseconds (history) or
// an RFC 3339 string (timelines); anything else is the zero time.
func epochOrISO(raw json.RawMessage) time.Time {
	if len(raw) == 0 {
		return time.Time{}
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return time.Time{}
		}
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return time.Time{}
		}
		return t.UTC()
	}
	var ms float64
	if json.Unmarshal(raw, &ms) != nil || ms <= 0 || ms > 1e14 {
		return time.Time{}
	}
	return time.UnixMilli(int64(ms)).UTC()
}

// Command reports whether a typed text is a slash command and returns its
// label value: the name of a built-in command, or Other. A text is a
// command when it starts with "/" and a name (letters, digits, "-", "_",
// ":", "."; a plugin's "plugin:command" too) that ends the text or is
// followed by white space: "/compact keep the API", but not
// "/home/me/notes.md" nor "/".
func Command(text string) (string, bool) {
	if !strings.HasPrefix(text, "/") {
		return "", false
	}
	name := text[1:]
	if i := strings.IndexAny(name, " \t\r\n"); i >= 0 {
		name = name[:i]
	}
	if name == "" || len(name) > 64 {
		return "", false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case i > 0 && (c == '-' || c == '_' || c == ':' || c == '.'):
		default:
			return "", false
		}
	}
	if builtin[name] {
		return name, true
	}
	return Other, true
}

// IsBuiltinCommand reports whether name (without its slash) is one of
// Claude Code's built-in commands.
func IsBuiltinCommand(name string) bool { return builtin[name] }

// builtin are Claude Code's own slash commands and bundled skills
// (docs.claude.com "Slash commands", Claude Code 1.x–2.1.26x). Their names
// say nothing about the user's work; every other name may, so it is Other.
var builtin = map[string]bool{
	"add-dir": true, "agents": true, "bashes": true, "batch": true, "btw": true, "bug": true,
	"chrome": true, "clear": true, "color": true, "compact": true, "config": true, "context": true,
	"copy": true, "cost": true, "debug": true, "desktop": true, "diff": true, "doctor": true,
	"effort": true, "exit": true, "export": true, "extra-usage": true, "fast": true,
	"feedback": true, "fork": true, "help": true, "hooks": true, "ide": true, "init": true,
	"insights": true, "install-github-app": true, "install-slack-app": true, "keybindings": true,
	"login": true, "logout": true, "loop": true, "mcp": true, "memory": true,
	"migrate-installer": true, "mobile": true, "model": true, "output-style": true,
	"passes": true, "permissions": true, "plan": true, "plugin": true, "plugins": true,
	"pr-comments": true, "pr_comments": true, "privacy-settings": true, "quit": true,
	"rate-limit-options": true, "release-notes": true, "reload-plugins": true,
	"remote-control": true, "remote-env": true, "rename": true, "resume": true, "review": true,
	"rewind": true, "sandbox": true, "schedule": true, "security-review": true, "simplify": true,
	"skills": true, "stats": true, "status": true, "statusline": true, "stickers": true,
	"tasks": true, "terminal-setup": true, "theme": true, "todos": true, "upgrade": true,
	"usage": true, "vim": true,
}

// LiveSession is one sessions/<pid>.json file: a Claude Code process that
// is running now, or was when it last wrote the file.
type LiveSession struct {
	PID        int
	SessionID  string
	Kind       string // Enum: interactive, bg, ...
	Entrypoint string // Enum: cli, sdk-ts, claude-vscode, ...
	Status     string // Enum
	StartedAt  time.Time
	UpdatedAt  time.Time
}

// ParseLiveSession reads a live session file.
func ParseLiveSession(b []byte) (LiveSession, error) {
	var v struct {
		PID        json.RawMessage `json:"pid"`
		SessionID  str             `json:"sessionId"`
		Kind       str             `json:"kind"`
		Entrypoint str             `json:"entrypoint"`
		Status     str             `json:"status"`
		StartedAt  json.RawMessage `json:"startedAt"`
		UpdatedAt  json.RawMessage `json:"updatedAt"`
	}
	if err := decodeObject(b, &v); err != nil {
		return LiveSession{}, err
	}
	s := LiveSession{SessionID: string(v.SessionID), Kind: Enum(string(v.Kind)),
		Entrypoint: Enum(string(v.Entrypoint)), Status: Enum(string(v.Status)),
		StartedAt: epochOrISO(v.StartedAt), UpdatedAt: epochOrISO(v.UpdatedAt)}
	var pid float64
	if len(v.PID) > 0 && json.Unmarshal(v.PID, &pid) == nil && pid > 0 && pid < 1<<31 && pid == float64(int(pid)) {
		s.PID = int(pid)
	}
	return s, nil
}

// JobState is a jobs/<id>/state.json file.
type JobState struct {
	State     string // Enum of "state": blocked, done, ...; Unknown when absent
	SessionID string
}

// ParseJobState reads a job's state file.
func ParseJobState(b []byte) (JobState, error) {
	var v struct {
		State     str `json:"state"`
		SessionID str `json:"sessionId"`
	}
	if err := decodeObject(b, &v); err != nil {
		return JobState{}, err
	}
	return JobState{State: Enum(string(v.State)), SessionID: string(v.SessionID)}, nil
}

// JobEvent is one line of jobs/<id>/timeline.jsonl.
type JobEvent struct {
	At    time.Time
	State string // Enum
}

// ParseJobEvent reads one timeline line.
func ParseJobEvent(b []byte) (JobEvent, error) {
	var v struct {
		At    json.RawMessage `json:"at"`
		State str             `json:"state"`
	}
	if err := decodeObject(b, &v); err != nil {
		return JobEvent{}, err
	}
	return JobEvent{At: epochOrISO(v.At), State: Enum(string(v.State))}, nil
}

// LiveKey is the label set of a running session.
type LiveKey struct{ Entrypoint, Kind, Status string }

// Inventory is what the Claude dir holds at one moment: the gauges.
type Inventory struct {
	Tasks map[string]int  // by status
	Todos map[string]int  // by status
	Live  map[LiveKey]int // running sessions
	Stale int             // sessions/<pid>.json files whose process is gone
	Jobs  map[string]int  // by state
}

// NewInventory returns an empty inventory.
func NewInventory() Inventory {
	return Inventory{Tasks: map[string]int{}, Todos: map[string]int{}, Live: map[LiveKey]int{}, Jobs: map[string]int{}}
}
