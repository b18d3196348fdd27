package claudedir_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/claudedir"
)

const corpus = "../../testdata/corpus"

// wantErr checks err against want: nil wants no error, otherwise
// errors.Is(err, want).
func wantErr(t *testing.T, err, want error) {
	t.Helper()
	switch {
	case want == nil && err != nil:
		t.Fatalf("err = %v, want none", err)
	case want != nil && !errors.Is(err, want):
		t.Fatalf("err = %v, want %v", err, want)
	}
}

// hostile are inputs that no kind of file accepts: the error every parser
// gives for them.
var hostile = []struct {
	name string
	in   string
	want error
}{
	{"empty", "", claudedir.ErrMalformed},
	{"white space only", " \t\r\n ", claudedir.ErrMalformed},
	{"byte order mark only", "\xef\xbb\xbf", claudedir.ErrMalformed},
	{"byte order mark and white space", "\xef\xbb\xbf \n", claudedir.ErrMalformed},
	{"not JSON", "lorem ipsum", claudedir.ErrMalformed},
	{"truncated object", `{"status":"pen`, claudedir.ErrMalformed},
	{"object without its brace", `{"status":"pending"`, claudedir.ErrMalformed},
	{"trailing garbage", `{"status":"pending"} x`, claudedir.ErrMalformed},
	{"two objects", `{"status":"pending"}{"status":"done"}`, claudedir.ErrMalformed},
	{"binary", "\x00\x01\x02\xff", claudedir.ErrMalformed},
	{"number", "42", claudedir.ErrShape},
	{"string", `"status"`, claudedir.ErrShape},
	{"null", "null", claudedir.ErrShape},
	{"true", "true", claudedir.ErrShape},
}

// objectHostile are the hostile inputs plus an array where an object is
// expected.
func objectHostile() []struct {
	name string
	in   string
	want error
} {
	out := append(hostile[:len(hostile):len(hostile)], []struct {
		name string
		in   string
		want error
	}{
		{"array where an object is expected", `[{"status":"pending"}]`, claudedir.ErrShape},
		{"empty array", `[]`, claudedir.ErrShape},
		{"truncated array", `[{"status":"pending"}`, claudedir.ErrMalformed},
	}...)
	return out
}

func TestParseTaskReadsIDAndStatus(t *testing.T) {
	long := strings.Repeat("x", 1<<20)
	tests := []struct {
		name   string
		in     string
		want   claudedir.Task
		wantEr error
	}{
		{"pending", `{"id":"1","status":"pending"}`, claudedir.Task{ID: "1", Status: "pending"}, nil},
		{"in progress", `{"id":"2","status":"in_progress","blocks":[],"blockedBy":["1"]}`, claudedir.Task{ID: "2", Status: "in_progress"}, nil},
		{"completed with text", `{"id":"3","subject":"s","description":"d","activeForm":"a","status":"completed"}`, claudedir.Task{ID: "3", Status: "completed"}, nil},
		{"pretty printed with a byte order mark", "\xef\xbb\xbf\n{\n  \"id\": \"4\",\n  \"status\": \"deleted\"\n}\n", claudedir.Task{ID: "4", Status: "deleted"}, nil},
		{"leading white space then a byte order mark", " \n\xef\xbb\xbf{\"id\":\"5\",\"status\":\"pending\"}", claudedir.Task{ID: "5", Status: "pending"}, nil},
		{"status missing is unknown", `{"id":"6"}`, claudedir.Task{ID: "6", Status: claudedir.Unknown}, nil},
		{"status empty is unknown", `{"id":"7","status":""}`, claudedir.Task{ID: "7", Status: claudedir.Unknown}, nil},
		{"status null is unknown", `{"id":"8","status":null}`, claudedir.Task{ID: "8", Status: claudedir.Unknown}, nil},
		{"status a number is unknown", `{"id":"9","status":5}`, claudedir.Task{ID: "9", Status: claudedir.Unknown}, nil},
		{"status an object is unknown", `{"id":"10","status":{"a":1}}`, claudedir.Task{ID: "10", Status: claudedir.Unknown}, nil},
		{"status an array is unknown", `{"id":"11","status":["done"]}`, claudedir.Task{ID: "11", Status: claudedir.Unknown}, nil},
		{"status upper case is other", `{"id":"12","status":"Completed"}`, claudedir.Task{ID: "12", Status: claudedir.Other}, nil},
		{"status with a space is other", `{"id":"13","status":"in progress"}`, claudedir.Task{ID: "13", Status: claudedir.Other}, nil},
		{"status huge is other", `{"id":"14","status":"` + long + `"}`, claudedir.Task{ID: "14", Status: claudedir.Other}, nil},
		{"status with a newline escape is other", `{"id":"15","status":"done\nx"}`, claudedir.Task{ID: "15", Status: claudedir.Other}, nil},
		{"status non-ASCII is other", `{"id":"16","status":"términé"}`, claudedir.Task{ID: "16", Status: claudedir.Other}, nil},
		{"id a number is empty", `{"id":16,"status":"pending"}`, claudedir.Task{Status: "pending"}, nil},
		{"empty object", `{}`, claudedir.Task{Status: claudedir.Unknown}, nil},
		{"unknown members are ignored", `{"future":{"x":[1,2,3]},"status":"pending"}`, claudedir.Task{Status: "pending"}, nil},
		{"invalid escape in a string", `{"id":"1","status":"\x"}`, claudedir.Task{}, claudedir.ErrMalformed},
	}
	for _, h := range objectHostile() {
		tests = append(tests, struct {
			name   string
			in     string
			want   claudedir.Task
			wantEr error
		}{h.name, h.in, claudedir.Task{}, h.want})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := claudedir.ParseTask([]byte(tt.in))
			wantErr(t, err, tt.wantEr)
			if got != tt.want {
				t.Fatalf("ParseTask = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// expectEnum is an independent statement of the label rule: a lower-case
// token of at most 32 bytes stays, "" is unknown, anything else is other.
func expectEnum(v string) string {
	if v == "" {
		return claudedir.Unknown
	}
	if regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,31}$`).MatchString(v) {
		return v
	}
	return claudedir.Other
}

func TestParseTaskGivesTheStatusOfEveryCorpusTaskFile(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join(corpus, "mathcomp", "tasks", "*", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Fatal("no task files in the corpus")
	}
	for _, p := range paths {
		t.Run(filepath.Base(filepath.Dir(p))+"/"+filepath.Base(p), func(t *testing.T) {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			var raw map[string]any
			if err := json.Unmarshal(b, &raw); err != nil {
				t.Fatal(err)
			}
			status, _ := raw["status"].(string)
			id, _ := raw["id"].(string)
			got, err := claudedir.ParseTask(b)
			if err != nil {
				t.Fatalf("ParseTask: %v", err)
			}
			if want := (claudedir.Task{ID: id, Status: expectEnum(status)}); got != want {
				t.Fatalf("ParseTask = %+v, want %+v", got, want)
			}
			if got.Status != status {
				t.Fatalf("status %q became %q: the corpus only holds Claude Code's own statuses", status, got.Status)
			}
		})
	}
}

func TestParseTodosReadsEachTodosStatus(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		want   []string
		wantEr error
	}{
		{"empty array", `[]`, []string{}, nil},
		{"empty array with white space", " [ ]\n", []string{}, nil},
		{"empty array with a byte order mark", "\xef\xbb\xbf[]", []string{}, nil},
		{"three todos", `[{"content":"a","status":"in_progress","activeForm":"A"},{"content":"b","status":"pending"},{"content":"c","status":"completed"}]`,
			[]string{"in_progress", "pending", "completed"}, nil},
		{"a todo without status", `[{"content":"a"}]`, []string{claudedir.Unknown}, nil},
		{"a todo whose status is a number", `[{"status":5},{"status":"pending"}]`, []string{claudedir.Unknown, "pending"}, nil},
		{"a todo whose status is not a token", `[{"status":"Done!"},{"status":"` + strings.Repeat("a", 33) + `"}]`, []string{claudedir.Other, claudedir.Other}, nil},
		{"a status of 32 bytes stays", `[{"status":"` + strings.Repeat("a", 32) + `"}]`, []string{strings.Repeat("a", 32)}, nil},
		{"object where an array is expected", `{"status":"pending"}`, nil, claudedir.ErrShape},
		{"empty object where an array is expected", `{}`, nil, claudedir.ErrShape},
		{"a todo that is a number", `[1]`, nil, claudedir.ErrShape},
		{"a todo that is a string", `["pending"]`, nil, claudedir.ErrShape},
		{"a todo that is null", `[null]`, nil, claudedir.ErrShape},
		{"a todo that is an array", `[[{"status":"pending"}]]`, nil, claudedir.ErrShape},
		{"truncated array", `[{"status":"pending"},`, nil, claudedir.ErrMalformed},
		{"truncated todo", `[{"status":"pend`, nil, claudedir.ErrMalformed},
	}
	for _, h := range hostile {
		tests = append(tests, struct {
			name   string
			in     string
			want   []string
			wantEr error
		}{h.name, h.in, nil, h.want})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := claudedir.ParseTodos([]byte(tt.in))
			wantErr(t, err, tt.wantEr)
			if fmt.Sprint(got) != fmt.Sprint(tt.want) || (tt.wantEr == nil && got == nil) {
				t.Fatalf("ParseTodos = %#v, want %#v", got, tt.want)
			}
		})
	}
}

func TestParseTodosGivesTheStatusesOfEveryCorpusTodosFile(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join(corpus, "*", "todos", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	aistrad, empty := 0, 0
	for _, p := range paths {
		if strings.Contains(p, string(filepath.Separator)+"aistrad"+string(filepath.Separator)) {
			aistrad++
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var raw []map[string]any
		if err := json.Unmarshal(b, &raw); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if len(raw) == 0 {
			empty++
		}
		want := make([]string, 0, len(raw))
		for _, todo := range raw {
			s, _ := todo["status"].(string)
			want = append(want, expectEnum(s))
		}
		got, err := claudedir.ParseTodos(b)
		if err != nil {
			t.Errorf("%s: ParseTodos: %v", p, err)
			continue
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: ParseTodos = %v, want %v", p, got, want)
		}
	}
	if aistrad == 0 || empty == 0 {
		t.Fatalf("corpus todos: %d from aistrad, %d empty; want some of each", aistrad, empty)
	}
}

func TestParsePromptReadsProjectSessionTimeAndCommand(t *testing.T) {
	ms := time.Date(2025, 11, 1, 13, 35, 0, 2_000_000, time.UTC)
	tests := []struct {
		name   string
		in     string
		want   claudedir.Prompt
		wantEr error
	}{
		{"a prompt", `{"display":"fix the build","pastedContents":{},"timestamp":1762004100002,"project":"/home/me/p","sessionId":"s1"}`,
			claudedir.Prompt{Project: "/home/me/p", SessionID: "s1", Time: ms}, nil},
		{"an old line without session", `{"display":"hi","pastedContents":{},"timestamp":1762004100002,"project":"/p"}`,
			claudedir.Prompt{Project: "/p", Time: ms}, nil},
		{"a built-in command with a trailing space", `{"display":"/model ","timestamp":1762004100002,"project":"/p"}`,
			claudedir.Prompt{Project: "/p", Time: ms, Command: "model"}, nil},
		{"a built-in command with arguments", `{"display":"/compact keep the API","project":"/p"}`,
			claudedir.Prompt{Project: "/p", Command: "compact"}, nil},
		{"a custom command is other", `{"display":"/lorem ipsum dolor","project":"/p"}`,
			claudedir.Prompt{Project: "/p", Command: claudedir.Other}, nil},
		{"a path is a prompt", `{"display":"/1W1l/pzTUaqJ/notes.md look at this","project":"/p"}`,
			claudedir.Prompt{Project: "/p"}, nil},
		{"display missing", `{"project":"/p"}`, claudedir.Prompt{Project: "/p"}, nil},
		{"display a number", `{"display":5,"project":"/p"}`, claudedir.Prompt{Project: "/p"}, nil},
		{"project a number is empty", `{"display":"x","project":5}`, claudedir.Prompt{}, nil},
		{"project null is empty", `{"display":"x","project":null}`, claudedir.Prompt{}, nil},
		{"session an object is empty", `{"display":"x","sessionId":{"id":"s"}}`, claudedir.Prompt{}, nil},
		{"timestamp an RFC 3339 string", `{"display":"x","timestamp":"2025-11-01T13:35:00.002Z"}`, claudedir.Prompt{Time: ms}, nil},
		{"timestamp an RFC 3339 string with an offset", `{"display":"x","timestamp":"2025-11-01T15:35:00.002+02:00"}`, claudedir.Prompt{Time: ms}, nil},
		{"timestamp a fractional ms number", `{"display":"x","timestamp":1762004100002.7}`, claudedir.Prompt{Time: ms}, nil},
		{"timestamp in exponent notation", `{"display":"x","timestamp":1.762004100002e12}`, claudedir.Prompt{Time: ms}, nil},
		{"timestamp garbage string", `{"display":"x","timestamp":"yesterday"}`, claudedir.Prompt{}, nil},
		{"timestamp ms as a string", `{"display":"x","timestamp":"1762004100002"}`, claudedir.Prompt{}, nil},
		{"timestamp zero", `{"display":"x","timestamp":0}`, claudedir.Prompt{}, nil},
		{"timestamp negative", `{"display":"x","timestamp":-1762004100002}`, claudedir.Prompt{}, nil},
		{"timestamp far future", `{"display":"x","timestamp":1e20}`, claudedir.Prompt{}, nil},
		{"timestamp out of float range", `{"display":"x","timestamp":1e400}`, claudedir.Prompt{}, nil},
		{"timestamp null", `{"display":"x","timestamp":null}`, claudedir.Prompt{}, nil},
		{"timestamp an object", `{"display":"x","timestamp":{"ms":1}}`, claudedir.Prompt{}, nil},
		{"timestamp true", `{"display":"x","timestamp":true}`, claudedir.Prompt{}, nil},
		{"huge display", `{"display":"/` + strings.Repeat("a", 1<<20) + `","project":"/p"}`, claudedir.Prompt{Project: "/p"}, nil},
	}
	for _, h := range objectHostile() {
		tests = append(tests, struct {
			name   string
			in     string
			want   claudedir.Prompt
			wantEr error
		}{h.name, h.in, claudedir.Prompt{}, h.want})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := claudedir.ParsePrompt([]byte(tt.in))
			wantErr(t, err, tt.wantEr)
			if got.Project != tt.want.Project || got.SessionID != tt.want.SessionID ||
				got.Command != tt.want.Command || !got.Time.Equal(tt.want.Time) {
				t.Fatalf("ParsePrompt = %+v, want %+v", got, tt.want)
			}
			if !got.Time.IsZero() && got.Time.Location() != time.UTC {
				t.Fatalf("time %v is not in UTC", got.Time)
			}
		})
	}
}

// corpusBuiltins are the built-in command names that the corpus's history
// holds (the anonymizer kept them); every other name there is a custom
// command the anonymizer filled with lorem text.
var corpusBuiltins = map[string]bool{
	"agents": true, "clear": true, "compact": true, "config": true, "context": true, "exit": true,
	"hooks": true, "init": true, "login": true, "logout": true, "mcp": true, "memory": true,
	"mobile": true, "model": true, "plan": true, "plugin": true, "rate-limit-options": true,
	"release-notes": true, "resume": true, "review": true, "rewind": true, "skills": true,
	"stats": true, "status": true, "statusline": true, "theme": true, "usage": true,
}

// expectCommand is an independent statement of the command rule for the
// corpus: "/" then a name of letters, digits and "-_:." (not first) that
// ends the text or is followed by white space.
func expectCommand(display string) (string, bool) {
	m := regexp.MustCompile(`^/([A-Za-z0-9][A-Za-z0-9_:.-]{0,63})(?:[ \t\r\n]|$)`).FindStringSubmatch(display)
	if m == nil {
		return "", false
	}
	if corpusBuiltins[m[1]] {
		return m[1], true
	}
	return claudedir.Other, true
}

func TestParsePromptReadsEveryCorpusHistoryLine(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join(corpus, "*", "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines, commands, others, slashPrompts := 0, map[string]int{}, 0, 0
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 64<<20)
		for n := 1; sc.Scan(); n++ {
			lines++
			var raw struct {
				Display   string `json:"display"`
				Project   string `json:"project"`
				SessionID string `json:"sessionId"`
				Timestamp int64  `json:"timestamp"`
			}
			if err := json.Unmarshal(sc.Bytes(), &raw); err != nil {
				t.Fatalf("%s:%d: %v", p, n, err)
			}
			got, err := claudedir.ParsePrompt(sc.Bytes())
			if err != nil {
				t.Errorf("%s:%d: ParsePrompt: %v", p, n, err)
				continue
			}
			want := claudedir.Prompt{Project: raw.Project, SessionID: raw.SessionID, Time: time.UnixMilli(raw.Timestamp).UTC()}
			want.Command, _ = expectCommand(raw.Display)
			if got.Project != want.Project || got.SessionID != want.SessionID || !got.Time.Equal(want.Time) || got.Command != want.Command {
				t.Errorf("%s:%d: ParsePrompt = %+v, want %+v (display %.40q)", p, n, got, want, raw.Display)
			}
			switch {
			case got.Command == claudedir.Other:
				others++
				if !strings.HasPrefix(raw.Display, "/l") {
					t.Errorf("%s:%d: %.40q is other but is not a filled custom command", p, n, raw.Display)
				}
			case got.Command != "":
				commands[got.Command]++
			case strings.HasPrefix(raw.Display, "/"):
				slashPrompts++
			}
		}
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	if lines < 6000 || others == 0 || commands["compact"] == 0 || commands["model"] == 0 || commands["rate-limit-options"] == 0 {
		t.Fatalf("corpus history: %d lines, %d other commands, built-ins %v; want thousands of lines with compact, model and rate-limit-options and custom commands",
			lines, others, commands)
	}
	t.Logf("%d lines: %d built-in commands %v, %d custom, %d prompts starting with a slash", lines, len(commands), commands, others, slashPrompts)
}

func TestCommandTellsSlashCommandsFromPrompts(t *testing.T) {
	tests := []struct {
		text   string
		want   string
		wantOK bool
	}{
		{"/compact", "compact", true},
		{"/compact ", "compact", true},
		{"/compact keep the API", "compact", true},
		{"/compact\tkeep", "compact", true},
		{"/compact\nkeep", "compact", true},
		{"/compact\r\n", "compact", true},
		{"/model opus", "model", true},
		{"/rate-limit-options", "rate-limit-options", true},
		{"/pr_comments", "pr_comments", true},
		{"/add-dir ../x", "add-dir", true},
		{"/usage    \n", "usage", true},
		{"/lorem", claudedir.Other, true},
		{"/lorem ipsum dolor", claudedir.Other, true},
		{"/l", claudedir.Other, true},
		{"/l\n", claudedir.Other, true},
		{"/Compact", claudedir.Other, true},
		{"/COMPACT", claudedir.Other, true},
		{"/my-plugin:deploy now", claudedir.Other, true},
		{"/plugin:compact", claudedir.Other, true},
		{"/compact.", claudedir.Other, true},
		{"/v1.2", claudedir.Other, true},
		{"/9", claudedir.Other, true},
		{"/home", claudedir.Other, true},
		{"/" + strings.Repeat("a", 64), claudedir.Other, true},
		{"/" + strings.Repeat("a", 65), "", false},
		{"/home/me/notes.md", "", false},
		{"/1W1l/pzTUaqJ", "", false},
		{"/1W1l/pzTUaqJ look here", "", false},
		{"/compact/", "", false},
		{"/", "", false},
		{"/ compact", "", false},
		{"//compact", "", false},
		{"/-compact", "", false},
		{"/_x", "", false},
		{"/:x", "", false},
		{"/.x", "", false},
		{"/compact!", "", false},
		{"/café", "", false},
		{"/compact,please", "", false},
		{" /compact", "", false},
		{"compact", "", false},
		{"please /compact", "", false},
		{"", "", false},
		{"\\compact", "", false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%.30q", tt.text), func(t *testing.T) {
			got, ok := claudedir.Command(tt.text)
			if got != tt.want || ok != tt.wantOK {
				t.Fatalf("Command(%q) = %q, %v; want %q, %v", tt.text, got, ok, tt.want, tt.wantOK)
			}
			if ok && got != claudedir.Other && !claudedir.IsBuiltinCommand(got) {
				t.Fatalf("Command(%q) = %q, which is not a built-in", tt.text, got)
			}
		})
	}
}

func TestEnumKeepsOnlyShortLowerCaseTokens(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"", claudedir.Unknown},
		{"pending", "pending"},
		{"in_progress", "in_progress"},
		{"sdk-ts", "sdk-ts"},
		{"claude-vscode", "claude-vscode"},
		{"v2.1", "v2.1"},
		{"0", "0"},
		{"a", "a"},
		{strings.Repeat("a", 32), strings.Repeat("a", 32)},
		{strings.Repeat("a", 33), claudedir.Other},
		{strings.Repeat("a", 1<<20), claudedir.Other},
		{"Pending", claudedir.Other},
		{"PENDING", claudedir.Other},
		{"_pending", claudedir.Other},
		{"-x", claudedir.Other},
		{".x", claudedir.Other},
		{"in progress", claudedir.Other},
		{" pending", claudedir.Other},
		{"pending ", claudedir.Other},
		{"pending\n", claudedir.Other},
		{"a:b", claudedir.Other},
		{"a/b", claudedir.Other},
		{"a\"b", claudedir.Other},
		{"a{b}", claudedir.Other},
		{"términé", claudedir.Other},
		{"\x00", claudedir.Other},
		{"pending\x00", claudedir.Other},
		{"\xff", claudedir.Other},
		{claudedir.Unknown, claudedir.Unknown},
		{claudedir.Other, claudedir.Other},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%.40q", tt.in), func(t *testing.T) {
			if got := claudedir.Enum(tt.in); got != tt.want {
				t.Fatalf("Enum(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if got := claudedir.Enum(tt.in); got != expectEnum(tt.in) {
				t.Fatalf("Enum(%q) = %q, the independent rule says %q", tt.in, got, expectEnum(tt.in))
			}
		})
	}
}

func TestParseLiveSessionReadsPidLabelsAndTimes(t *testing.T) {
	started := time.Date(2026, 1, 2, 3, 4, 5, 6_000_000, time.UTC)
	updated := time.Date(2026, 1, 2, 4, 0, 0, 0, time.UTC)
	full := `{"pid":4242,"sessionId":"0b5c","cwd":"/home/me/p","startedAt":1767323045006,"version":"2.1.40","kind":"interactive","entrypoint":"cli","name":"lorem","status":"busy","updatedAt":"2026-01-02T04:00:00Z"}`
	tests := []struct {
		name   string
		in     string
		want   claudedir.LiveSession
		wantEr error
	}{
		{"every member", full, claudedir.LiveSession{PID: 4242, SessionID: "0b5c", Kind: "interactive", Entrypoint: "cli", Status: "busy", StartedAt: started, UpdatedAt: updated}, nil},
		{"sdk entrypoint and bg kind", `{"pid":7,"kind":"bg","entrypoint":"sdk-ts","status":"idle"}`,
			claudedir.LiveSession{PID: 7, Kind: "bg", Entrypoint: "sdk-ts", Status: "idle"}, nil},
		{"empty object", `{}`, claudedir.LiveSession{Kind: claudedir.Unknown, Entrypoint: claudedir.Unknown, Status: claudedir.Unknown}, nil},
		{"labels that are not tokens", `{"pid":1,"kind":"Interactive","entrypoint":"claude vscode","status":"` + strings.Repeat("b", 100) + `"}`,
			claudedir.LiveSession{PID: 1, Kind: claudedir.Other, Entrypoint: claudedir.Other, Status: claudedir.Other}, nil},
		{"labels of another type", `{"pid":1,"kind":1,"entrypoint":["cli"],"status":false}`,
			claudedir.LiveSession{PID: 1, Kind: claudedir.Unknown, Entrypoint: claudedir.Unknown, Status: claudedir.Unknown}, nil},
		{"pid a string", `{"pid":"x"}`, claudedir.LiveSession{Kind: "unknown", Entrypoint: "unknown", Status: "unknown"}, nil},
		{"pid a numeric string", `{"pid":"4242"}`, claudedir.LiveSession{Kind: "unknown", Entrypoint: "unknown", Status: "unknown"}, nil},
		{"pid negative", `{"pid":-1}`, claudedir.LiveSession{Kind: "unknown", Entrypoint: "unknown", Status: "unknown"}, nil},
		{"pid zero", `{"pid":0}`, claudedir.LiveSession{Kind: "unknown", Entrypoint: "unknown", Status: "unknown"}, nil},
		{"pid fractional", `{"pid":1.5}`, claudedir.LiveSession{Kind: "unknown", Entrypoint: "unknown", Status: "unknown"}, nil},
		{"pid huge", `{"pid":1e20}`, claudedir.LiveSession{Kind: "unknown", Entrypoint: "unknown", Status: "unknown"}, nil},
		{"pid out of float range", `{"pid":1e400}`, claudedir.LiveSession{Kind: "unknown", Entrypoint: "unknown", Status: "unknown"}, nil},
		{"pid 2^31", `{"pid":2147483648}`, claudedir.LiveSession{Kind: "unknown", Entrypoint: "unknown", Status: "unknown"}, nil},
		{"pid 2^31-1", `{"pid":2147483647}`, claudedir.LiveSession{PID: 2147483647, Kind: "unknown", Entrypoint: "unknown", Status: "unknown"}, nil},
		{"pid in exponent notation", `{"pid":4.2e3}`, claudedir.LiveSession{PID: 4200, Kind: "unknown", Entrypoint: "unknown", Status: "unknown"}, nil},
		{"pid null", `{"pid":null}`, claudedir.LiveSession{Kind: "unknown", Entrypoint: "unknown", Status: "unknown"}, nil},
		{"pid an object", `{"pid":{"n":1}}`, claudedir.LiveSession{Kind: "unknown", Entrypoint: "unknown", Status: "unknown"}, nil},
		{"times as RFC 3339 strings", `{"startedAt":"2026-01-02T03:04:05.006Z","updatedAt":"2026-01-02T05:00:00+01:00"}`,
			claudedir.LiveSession{Kind: "unknown", Entrypoint: "unknown", Status: "unknown", StartedAt: started, UpdatedAt: updated}, nil},
		{"times garbage", `{"startedAt":"soon","updatedAt":[1]}`, claudedir.LiveSession{Kind: "unknown", Entrypoint: "unknown", Status: "unknown"}, nil},
		{"session id a number", `{"sessionId":12}`, claudedir.LiveSession{Kind: "unknown", Entrypoint: "unknown", Status: "unknown"}, nil},
	}
	for _, h := range objectHostile() {
		tests = append(tests, struct {
			name   string
			in     string
			want   claudedir.LiveSession
			wantEr error
		}{h.name, h.in, claudedir.LiveSession{}, h.want})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := claudedir.ParseLiveSession([]byte(tt.in))
			wantErr(t, err, tt.wantEr)
			if got.PID != tt.want.PID || got.SessionID != tt.want.SessionID || got.Kind != tt.want.Kind ||
				got.Entrypoint != tt.want.Entrypoint || got.Status != tt.want.Status ||
				!got.StartedAt.Equal(tt.want.StartedAt) || !got.UpdatedAt.Equal(tt.want.UpdatedAt) {
				t.Fatalf("ParseLiveSession = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestParseJobStateReadsState(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		want   claudedir.JobState
		wantEr error
	}{
		{"blocked", `{"state":"blocked","detail":"waiting for input","intent":"lorem"}`, claudedir.JobState{State: "blocked"}, nil},
		{"done with session", `{"state":"done","sessionId":"s1"}`, claudedir.JobState{State: "done", SessionID: "s1"}, nil},
		{"running", `{"state":"running"}`, claudedir.JobState{State: "running"}, nil},
		{"state missing", `{"detail":"x","intent":"y"}`, claudedir.JobState{State: claudedir.Unknown}, nil},
		{"state empty", `{"state":""}`, claudedir.JobState{State: claudedir.Unknown}, nil},
		{"state a number", `{"state":5}`, claudedir.JobState{State: claudedir.Unknown}, nil},
		{"state not a token", `{"state":"Blocked on review"}`, claudedir.JobState{State: claudedir.Other}, nil},
		{"state huge", `{"state":"` + strings.Repeat("z", 1<<16) + `"}`, claudedir.JobState{State: claudedir.Other}, nil},
		{"detail and intent of other types", `{"state":"done","detail":{"a":1},"intent":[1]}`, claudedir.JobState{State: "done"}, nil},
	}
	for _, h := range objectHostile() {
		tests = append(tests, struct {
			name   string
			in     string
			want   claudedir.JobState
			wantEr error
		}{h.name, h.in, claudedir.JobState{}, h.want})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := claudedir.ParseJobState([]byte(tt.in))
			wantErr(t, err, tt.wantEr)
			if got != tt.want {
				t.Fatalf("ParseJobState = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestParseJobEventReadsTimeAndState(t *testing.T) {
	at := time.Date(2026, 2, 3, 4, 5, 6, 700_000_000, time.UTC)
	tests := []struct {
		name   string
		in     string
		want   claudedir.JobEvent
		wantEr error
	}{
		{"blocked", `{"at":"2026-02-03T04:05:06.7Z","state":"blocked","detail":"d","text":"t"}`, claudedir.JobEvent{At: at, State: "blocked"}, nil},
		{"done", `{"at":"2026-02-03T04:05:06.7Z","state":"done"}`, claudedir.JobEvent{At: at, State: "done"}, nil},
		{"at in ms", `{"at":1770091506700,"state":"done"}`, claudedir.JobEvent{At: at, State: "done"}, nil},
		{"at with an offset", `{"at":"2026-02-03T05:05:06.7+01:00","state":"done"}`, claudedir.JobEvent{At: at, State: "done"}, nil},
		{"at garbage", `{"at":"tuesday","state":"done"}`, claudedir.JobEvent{State: "done"}, nil},
		{"at an object", `{"at":{},"state":"done"}`, claudedir.JobEvent{State: "done"}, nil},
		{"at missing", `{"state":"blocked"}`, claudedir.JobEvent{State: "blocked"}, nil},
		{"state missing", `{"at":"2026-02-03T04:05:06.7Z","text":"t"}`, claudedir.JobEvent{At: at, State: claudedir.Unknown}, nil},
		{"state a number", `{"state":5}`, claudedir.JobEvent{State: claudedir.Unknown}, nil},
		{"state not a token", `{"state":"DONE"}`, claudedir.JobEvent{State: claudedir.Other}, nil},
		{"text huge", `{"state":"done","text":"` + strings.Repeat("t", 1<<20) + `"}`, claudedir.JobEvent{State: "done"}, nil},
	}
	for _, h := range objectHostile() {
		tests = append(tests, struct {
			name   string
			in     string
			want   claudedir.JobEvent
			wantEr error
		}{h.name, h.in, claudedir.JobEvent{}, h.want})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := claudedir.ParseJobEvent([]byte(tt.in))
			wantErr(t, err, tt.wantEr)
			if got.State != tt.want.State || !got.At.Equal(tt.want.At) {
				t.Fatalf("ParseJobEvent = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestReasonNamesTheErrorsLabel(t *testing.T) {
	_, malformed := claudedir.ParseTask([]byte("{"))
	_, shape := claudedir.ParseTask([]byte("[]"))
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"malformed", claudedir.ErrMalformed, "malformed"},
		{"shape", claudedir.ErrShape, "shape"},
		{"wrapped malformed", fmt.Errorf("a.json: %w", claudedir.ErrMalformed), "malformed"},
		{"wrapped shape", fmt.Errorf("a.json: %w", claudedir.ErrShape), "shape"},
		{"from a parser, malformed", malformed, "malformed"},
		{"from a parser, shape", shape, "shape"},
		{"any other error", os.ErrPermission, "unreadable"},
		{"an error of the same text", errors.New("malformed"), "unreadable"},
		{"nil", nil, "unreadable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := claudedir.Reason(tt.err); got != tt.want {
				t.Fatalf("Reason(%v) = %q, want %q", tt.err, got, tt.want)
			}
		})
	}
}

func TestParsersGiveEveryHostileInputAReason(t *testing.T) {
	parsers := map[string]func([]byte) error{
		"task":     func(b []byte) error { _, err := claudedir.ParseTask(b); return err },
		"todos":    func(b []byte) error { _, err := claudedir.ParseTodos(b); return err },
		"prompt":   func(b []byte) error { _, err := claudedir.ParsePrompt(b); return err },
		"live":     func(b []byte) error { _, err := claudedir.ParseLiveSession(b); return err },
		"jobstate": func(b []byte) error { _, err := claudedir.ParseJobState(b); return err },
		"jobevent": func(b []byte) error { _, err := claudedir.ParseJobEvent(b); return err },
	}
	for _, h := range hostile {
		for name, parse := range parsers {
			t.Run(h.name+"/"+name, func(t *testing.T) {
				err := parse([]byte(h.in))
				if r := claudedir.Reason(err); r != claudedir.Reason(h.want) {
					t.Fatalf("%s(%q): err %v, reason %q, want %q", name, h.in, err, r, claudedir.Reason(h.want))
				}
			})
		}
	}
	// Every prefix of a valid file is malformed, never accepted as
	// something else, never a panic.
	valid := map[string]string{
		"task":     `{"id":"1","status":"pending","blocks":[]}`,
		"todos":    `[{"content":"a","status":"pending"},{"status":"done"}]`,
		"prompt":   `{"display":"/compact x","timestamp":1762004100002,"project":"/p"}`,
		"live":     `{"pid":42,"kind":"bg","startedAt":1,"updatedAt":"2026-01-01T00:00:00Z"}`,
		"jobstate": `{"state":"done","detail":"d"}`,
		"jobevent": `{"at":"2026-01-01T00:00:00Z","state":"blocked"}`,
	}
	for name, v := range valid {
		if err := parsers[name]([]byte(v)); err != nil {
			t.Fatalf("%s(%q) = %v, want no error", name, v, err)
		}
		for i := 1; i < len(v); i++ {
			if err := parsers[name]([]byte(v[:i])); !errors.Is(err, claudedir.ErrMalformed) {
				t.Errorf("%s(%q) = %v, want malformed", name, v[:i], err)
			}
		}
	}
}

func TestNewInventoryIsEmptyAndWritable(t *testing.T) {
	inv := claudedir.NewInventory()
	inv.Tasks["pending"]++
	inv.Todos["pending"]++
	inv.Jobs["done"]++
	inv.Live[claudedir.LiveKey{Entrypoint: "cli", Kind: "interactive", Status: "busy"}]++
	if len(inv.Tasks) != 1 || len(inv.Todos) != 1 || len(inv.Jobs) != 1 || len(inv.Live) != 1 || inv.Stale != 0 {
		t.Fatalf("inventory %+v", inv)
	}
}
