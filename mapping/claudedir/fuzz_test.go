package claudedir

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// validLabel reports whether v is a value Enum can return.
func validLabel(v string) bool {
	return v == Unknown || v == Other || Enum(v) == v && v != ""
}

// FuzzParse feeds any bytes to every parser: none panics, a failure is
// malformed or shape, and every label value is a short token, unknown or
// other.
func FuzzParse(f *testing.F) {
	for _, glob := range []string{"../../testdata/corpus/mathcomp/tasks/*/*.json", "../../testdata/synthetic/claudedir/*/*.json",
		"../../testdata/synthetic/claudedir/*/*/*.json", "../../testdata/synthetic/claudedir/jobs/*/timeline.jsonl"} {
		paths, _ := filepath.Glob(glob)
		for _, p := range paths {
			if b, err := os.ReadFile(p); err == nil {
				f.Add(b)
			}
		}
	}
	f.Add([]byte(`{"display":"/compact now","project":"/a/b","timestamp":1763900000000}`))
	f.Add([]byte(`[{"status":"pending"},{"status":5}]`))
	f.Add([]byte("\xef\xbb\xbf{\"pid\":12,\"kind\":\"bg\"}"))
	f.Fuzz(func(t *testing.T, b []byte) {
		checkErr := func(what string, err error) {
			if err != nil && !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrShape) {
				t.Fatalf("%s: error %v is neither malformed nor shape", what, err)
			}
		}
		if task, err := ParseTask(b); err == nil {
			if !validLabel(task.Status) {
				t.Fatalf("task status %q", task.Status)
			}
		} else {
			checkErr("task", err)
		}
		if todos, err := ParseTodos(b); err == nil {
			for _, s := range todos {
				if !validLabel(s) {
					t.Fatalf("todo status %q", s)
				}
			}
		} else {
			checkErr("todos", err)
		}
		if p, err := ParsePrompt(b); err == nil {
			if p.Command != "" && p.Command != Other && !IsBuiltinCommand(p.Command) {
				t.Fatalf("command %q is neither built in nor other", p.Command)
			}
		} else {
			checkErr("prompt", err)
		}
		if s, err := ParseLiveSession(b); err == nil {
			for _, v := range []string{s.Kind, s.Entrypoint, s.Status} {
				if !validLabel(v) {
					t.Fatalf("live session label %q", v)
				}
			}
			if s.PID < 0 {
				t.Fatalf("pid %d", s.PID)
			}
		} else {
			checkErr("live session", err)
		}
		if j, err := ParseJobState(b); err == nil {
			if !validLabel(j.State) {
				t.Fatalf("job state %q", j.State)
			}
		} else {
			checkErr("job state", err)
		}
		if e, err := ParseJobEvent(b); err == nil {
			if !validLabel(e.State) {
				t.Fatalf("job event state %q", e.State)
			}
		} else {
			checkErr("job event", err)
		}
		if name, ok := Command(string(b)); ok && name != Other && !IsBuiltinCommand(name) {
			t.Fatalf("Command(%q) = %q", b, name)
		}
	})
}
