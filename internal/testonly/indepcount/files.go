package indepcount

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/claudedir"
)

// Files is the independent count of the Claude dir's files beside the
// transcripts.
type Files struct {
	Tasks    map[string]int64 // status
	Todos    map[string]int64 // status
	Prompts  map[string]int64 // project basename
	Commands map[string]int64 // built-in name or other
	Running  map[string]int64 // entrypoint|kind|status
	Stale    int64
	Jobs     map[string]int64 // state
	Errors   map[string]int64 // file|reason
}

var (
	enumRE    = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,31}$`)
	commandRE = regexp.MustCompile(`^/([A-Za-z0-9][A-Za-z0-9_:.-]{0,63})(?:[ \t\r\n]|$)`)
)

func enum(v any) string {
	s, _ := v.(string)
	switch {
	case s == "":
		return "unknown"
	case enumRE.MatchString(s):
		return s
	}
	return "other"
}

// CountFiles counts, with plain encoding/json and these rules:
//
//  1. tasks/<dir>/*.json (names not starting with "."): each JSON object
//     is a task of its "status"; anything else is an error of kind task.
//  2. todos/*.json: a JSON array of objects; each element a todo of its
//     "status". Not JSON: malformed; other JSON: shape.
//  3. history.jsonl and projects/<dir>/.history.jsonl: each non-blank
//     line that is a JSON object is a prompt; it is a slash command when
//     its "display" matches commandRE, counted under its name when
//     claudedir.IsBuiltinCommand, else "other"; otherwise a prompt of the
//     basename of "project".
//  4. sessions/*.json: an object; running unless alive(pid) is false for a
//     positive integer pid (then stale).
//  5. jobs/<dir>/: the "state" of state.json when it is a readable object
//     with a non-empty state, else the "state" of timeline.jsonl's last
//     object line, else unknown.
//
// Status, state, entrypoint and kind values go through the enum rule
// (lower-case token of at most 32 bytes, "" → unknown, else other).
func CountFiles(dir string, alive func(int) bool) (*Files, error) {
	f := &Files{Tasks: map[string]int64{}, Todos: map[string]int64{}, Prompts: map[string]int64{},
		Commands: map[string]int64{}, Running: map[string]int64{}, Jobs: map[string]int64{}, Errors: map[string]int64{}}
	obj := func(path, kind string) map[string]any {
		b, err := os.ReadFile(path)
		if err != nil {
			f.Errors[kind+"|unreadable"]++
			return nil
		}
		var v any
		if err := json.Unmarshal(bytes.TrimPrefix(b, []byte("\xef\xbb\xbf")), &v); err != nil {
			f.Errors[kind+"|malformed"]++
			return nil
		}
		m, ok := v.(map[string]any)
		if !ok {
			f.Errors[kind+"|shape"]++
		}
		return m
	}
	jsonFiles := func(d, suffix string) []string {
		ents, _ := os.ReadDir(d)
		var out []string
		for _, e := range ents {
			if !e.IsDir() && strings.HasSuffix(e.Name(), suffix) && !strings.HasPrefix(e.Name(), ".") {
				out = append(out, filepath.Join(d, e.Name()))
			}
		}
		return out
	}
	dirs := func(d string) []string {
		ents, _ := os.ReadDir(d)
		var out []string
		for _, e := range ents {
			if e.IsDir() {
				out = append(out, filepath.Join(d, e.Name()))
			}
		}
		return out
	}

	for _, d := range dirs(filepath.Join(dir, "tasks")) {
		for _, p := range jsonFiles(d, ".json") {
			if m := obj(p, "task"); m != nil {
				f.Tasks[enum(m["status"])]++
			}
		}
	}
	for _, p := range jsonFiles(filepath.Join(dir, "todos"), ".json") {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Errors["todos|unreadable"]++
			continue
		}
		var v any
		if err := json.Unmarshal(bytes.TrimPrefix(b, []byte("\xef\xbb\xbf")), &v); err != nil {
			f.Errors["todos|malformed"]++
			continue
		}
		arr, ok := v.([]any)
		if !ok {
			f.Errors["todos|shape"]++
			continue
		}
		statuses := []string{}
		for _, e := range arr {
			m, ok := e.(map[string]any)
			if !ok {
				statuses = nil
				break
			}
			statuses = append(statuses, enum(m["status"]))
		}
		if statuses == nil {
			f.Errors["todos|shape"]++
			continue
		}
		for _, s := range statuses {
			f.Todos[s]++
		}
	}
	histories := []string{filepath.Join(dir, "history.jsonl")}
	for _, d := range dirs(filepath.Join(dir, "projects")) {
		histories = append(histories, filepath.Join(d, ".history.jsonl"))
	}
	for _, p := range histories {
		for _, m := range f.objectLines(p, "history") {
			display, _ := m["display"].(string)
			if sm := commandRE.FindStringSubmatch(display); sm != nil {
				if claudedir.IsBuiltinCommand(sm[1]) {
					f.Commands[sm[1]]++
				} else {
					f.Commands["other"]++
				}
				continue
			}
			project, _ := m["project"].(string)
			f.Prompts[basename(project)]++
		}
	}
	for _, p := range jsonFiles(filepath.Join(dir, "sessions"), ".json") {
		m := obj(p, "live_session")
		if m == nil {
			continue
		}
		if pid, ok := m["pid"].(float64); ok && pid > 0 && pid == float64(int64(pid)) && pid < 1<<31 && alive != nil && !alive(int(pid)) {
			f.Stale++
			continue
		}
		f.Running[enum(m["entrypoint"])+"|"+enum(m["kind"])+"|"+enum(m["status"])]++
	}
	for _, d := range dirs(filepath.Join(dir, "jobs")) {
		state := "unknown"
		if _, err := os.Stat(filepath.Join(d, "state.json")); err == nil {
			if m := obj(filepath.Join(d, "state.json"), "job_state"); m != nil {
				state = enum(m["state"])
			}
		}
		if state == "unknown" {
			for _, m := range f.objectLines(filepath.Join(d, "timeline.jsonl"), "job_timeline") {
				state = enum(m["state"])
			}
		}
		f.Jobs[state]++
	}
	return f, nil
}

// objectLines are the JSON objects of a JSON-lines file, in order (none
// when it cannot be read); other non-blank lines are counted as errors of
// kind: malformed when not JSON, shape when JSON but not an object.
func (f *Files) objectLines(path, kind string) []map[string]any {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var out []map[string]any
	for _, line := range bytes.Split(b, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var v any
		if err := json.Unmarshal(line, &v); err != nil {
			f.Errors[kind+"|malformed"]++
			continue
		}
		m, ok := v.(map[string]any)
		if !ok {
			f.Errors[kind+"|shape"]++
			continue
		}
		out = append(out, m)
	}
	return out
}

// basename is the last element of a path written on Unix or Windows ("/"
// for the Unix root, "C:" for a drive's, "" for nothing).
func basename(p string) string {
	if p == "" {
		return ""
	}
	t := strings.TrimRight(p, `/\`)
	if t == "" {
		return "/"
	}
	if strings.HasSuffix(t, ":") && !strings.ContainsAny(t, `/\`) {
		return t
	}
	return t[strings.LastIndexAny(t, `/\`)+1:]
}
