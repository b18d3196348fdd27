//go:build unix

package claudefiles

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/claudedir"
)

// op changes the tree under dir before a refresh.
type op func(t *testing.T, dir string)

func write(path, content string) op {
	return func(t *testing.T, dir string) {
		t.Helper()
		p := filepath.Join(dir, path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func appendTo(path, content string) op {
	return func(t *testing.T, dir string) {
		t.Helper()
		f, err := os.OpenFile(filepath.Join(dir, path), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString(content); err != nil {
			t.Fatal(err)
		}
	}
}

// truncate cuts a file to size bytes in place (same inode).
func truncate(path string, size int64) op {
	return func(t *testing.T, dir string) {
		t.Helper()
		if err := os.Truncate(filepath.Join(dir, path), size); err != nil {
			t.Fatal(err)
		}
	}
}

func remove(path string) op {
	return func(t *testing.T, dir string) {
		t.Helper()
		if err := os.RemoveAll(filepath.Join(dir, path)); err != nil {
			t.Fatal(err)
		}
	}
}

func mkdir(path string) op {
	return func(t *testing.T, dir string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(dir, path), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

func mkfifo(path string) op {
	return func(t *testing.T, dir string) {
		t.Helper()
		p := filepath.Join(dir, path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func symlink(target, path string) op {
	return func(t *testing.T, dir string) {
		t.Helper()
		p := filepath.Join(dir, path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
}

func all(ops ...op) op {
	return func(t *testing.T, dir string) {
		t.Helper()
		for _, o := range ops {
			o(t, dir)
		}
	}
}

// prompt is one history line (with its newline).
func prompt(display, project string) string {
	return promptIn(display, project, "s1")
}

func promptIn(display, project, session string) string {
	b, err := json.Marshal(map[string]any{"display": display, "pastedContents": map[string]any{},
		"timestamp": 1762004100002, "project": project, "sessionId": session})
	if err != nil {
		panic(err)
	}
	return string(b) + "\n"
}

// prompts is n history lines.
func prompts(n int, display, project string) string {
	return strings.Repeat(prompt(display, project), n)
}

// longPrompt is a well-formed history line of exactly size bytes with its
// newline.
func longPrompt(size int, project string) string {
	short := prompt("", project)
	return prompt(strings.Repeat("x", size-len(short)), project)
}

func task(id, status string) string {
	return fmt.Sprintf(`{"id":%q,"subject":"s","description":"d","activeForm":"a","status":%q,"blocks":[],"blockedBy":[]}`, id, status)
}

func todos(statuses ...string) string {
	var b strings.Builder
	b.WriteString("[")
	for i, s := range statuses {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"content":"c","status":%q,"activeForm":"a"}`, s)
	}
	b.WriteString("]")
	return b.String()
}

func session(pid int, kind, entrypoint, status string) string {
	return fmt.Sprintf(`{"pid":%d,"sessionId":"s%d","cwd":"/p","startedAt":1767323045006,"version":"2.1.40","kind":%q,"entrypoint":%q,"name":"n","status":%q,"updatedAt":1767323045006}`,
		pid, pid, kind, entrypoint, status)
}

func jobState(state string) string {
	return fmt.Sprintf(`{"state":%q,"detail":"d","intent":"i"}`, state)
}

func event(state string) string {
	return fmt.Sprintf(`{"at":"2026-02-03T04:05:06.7Z","state":%q,"detail":"d","text":"t"}`+"\n", state)
}

// inv builds an inventory; nil maps are empty.
type inv = claudedir.Inventory

type live = claudedir.LiveKey

type pk = PromptKey

type ek = ErrorKey

// step is one refresh after some changes.
type step struct {
	name  string
	do    op // nil: nothing changes
	final bool
	inv   inv
	delta Delta
}

type scenario struct {
	name  string
	cfg   Config // Roots are relative to the test's directory; none: the directory itself
	steps []step
}

func run(t *testing.T, tests []scenario) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := tt.cfg
			cfg.Roots = nil
			for _, r := range tt.cfg.Roots {
				cfg.Roots = append(cfg.Roots, filepath.Join(dir, r))
			}
			if len(cfg.Roots) == 0 {
				cfg.Roots = []string{dir}
			}
			r := New(cfg)
			for i, s := range tt.steps {
				if s.do != nil {
					s.do(t, dir)
				}
				gotInv, gotDelta := r.Refresh(s.final)
				if !equalInv(gotInv, s.inv) {
					t.Errorf("step %d (%s): inventory\n got %s\nwant %s", i, s.name, showInv(gotInv), showInv(s.inv))
				}
				if !equalDelta(gotDelta, s.delta) {
					t.Errorf("step %d (%s): delta\n got %s\nwant %s", i, s.name, showDelta(gotDelta), showDelta(s.delta))
				}
			}
		})
	}
}

func equalInv(a, b inv) bool {
	return maps.Equal(a.Tasks, b.Tasks) && maps.Equal(a.Todos, b.Todos) && maps.Equal(a.Live, b.Live) &&
		maps.Equal(a.Jobs, b.Jobs) && a.Stale == b.Stale
}

func equalDelta(a, b Delta) bool {
	return maps.Equal(a.Prompts, b.Prompts) && maps.Equal(a.Errors, b.Errors)
}

func sorted[K comparable, V any](m map[K]V) string {
	var s []string
	for k, v := range m {
		s = append(s, fmt.Sprintf("%v:%v", k, v))
	}
	sort.Strings(s)
	return "{" + strings.Join(s, " ") + "}"
}

func showInv(i inv) string {
	return fmt.Sprintf("tasks %s todos %s live %s stale %d jobs %s", sorted(i.Tasks), sorted(i.Todos), sorted(i.Live), i.Stale, sorted(i.Jobs))
}

func showDelta(d Delta) string {
	return fmt.Sprintf("prompts %s errors %s", sorted(d.Prompts), sorted(d.Errors))
}

// tree is a Claude dir with every kind of file.
var tree = all(
	write("tasks/s1/1.json", task("1", "pending")),
	write("tasks/s1/2.json", task("2", "completed")),
	write("tasks/s2/1.json", task("1", "in_progress")),
	write("tasks/s2/.lock", "garbage"),
	write("tasks/s2/.tmp.json", "garbage"),
	write("tasks/s2/notes.txt", "garbage"),
	write("tasks/loose.json", "garbage"),
	write("todos/a-agent-a.json", todos("in_progress", "pending", "pending")),
	write("todos/b-agent-b.json", "[]"),
	write("todos/readme.txt", "garbage"),
	mkdir("todos/dir.json"),
	write("sessions/100.json", session(100, "interactive", "cli", "busy")),
	write("sessions/200.json", session(200, "bg", "sdk-ts", "idle")),
	write("sessions/300.json", session(300, "interactive", "cli", "busy")),
	write("jobs/j1/state.json", jobState("blocked")),
	write("jobs/j1/timeline.jsonl", event("done")),
	write("jobs/j2/timeline.jsonl", event("blocked")+event("done")),
	mkdir("jobs/j3"),
	write("jobs/loose.json", "garbage"),
	write("history.jsonl", prompt("fix the build", "/p")+prompt("/compact keep the API", "/p")+
		prompt("/lorem ipsum", "/q")+prompt("/1W1l/pzTUaqJ/notes.md read this", "/p")),
	write("projects/-x/.history.jsonl", prompt("hello", "/x")),
	write("projects/-x/history.jsonl", "garbage\n"),
	write("projects/-x/0b5c.jsonl", "garbage\n"),
	write("sessions-index.json", "garbage"),
)

var treeInv = inv{
	Tasks: map[string]int{"pending": 1, "completed": 1, "in_progress": 1},
	Todos: map[string]int{"in_progress": 1, "pending": 2},
	Live:  map[live]int{{Entrypoint: "cli", Kind: "interactive", Status: "busy"}: 2, {Entrypoint: "sdk-ts", Kind: "bg", Status: "idle"}: 1},
	Jobs:  map[string]int{"blocked": 1, "done": 1, "unknown": 1},
}

var treeDelta = Delta{Prompts: map[pk]int64{{"/p", ""}: 2, {"/p", "compact"}: 1, {"/q", "other"}: 1, {"/x", ""}: 1}}

func TestRefreshInventoriesTheClaudeDir(t *testing.T) {
	run(t, []scenario{
		{name: "an empty dir", steps: []step{{name: "first"}, {name: "again"}}},
		{name: "a missing root", cfg: Config{Roots: []string{"nope"}}, steps: []step{{name: "first"}}},
		{name: "every kind of file", steps: []step{
			{name: "first", do: tree, inv: treeInv, delta: treeDelta},
			{name: "nothing changed", inv: treeInv},
			{name: "nothing changed, final", final: true, inv: treeInv},
		}},
		{name: "two roots add up", cfg: Config{Roots: []string{"a", "b"}}, steps: []step{
			{name: "first", do: all(
				write("a/tasks/s/1.json", task("1", "pending")),
				write("b/tasks/s/1.json", task("1", "pending")),
				write("a/history.jsonl", prompt("x", "/p")),
				write("b/history.jsonl", prompt("x", "/p")+prompt("/exit", "/p")),
			),
				inv:   inv{Tasks: map[string]int{"pending": 2}, Jobs: nil},
				delta: Delta{Prompts: map[pk]int64{{"/p", ""}: 2, {"/p", "exit"}: 1}}},
		}},
		{name: "deleted files leave the inventory", steps: []step{
			{name: "first", do: tree, inv: treeInv, delta: treeDelta},
			{name: "deleted", do: all(
				remove("tasks/s1/1.json"),
				remove("tasks/s2"),
				remove("todos/a-agent-a.json"),
				remove("sessions/300.json"),
				remove("jobs/j3"),
				remove("jobs/j1/state.json"),
			), inv: inv{
				Tasks: map[string]int{"completed": 1},
				Live:  map[live]int{{Entrypoint: "cli", Kind: "interactive", Status: "busy"}: 1, {Entrypoint: "sdk-ts", Kind: "bg", Status: "idle"}: 1},
				Jobs:  map[string]int{"done": 2},
			}},
			{name: "history deleted keeps its counts", do: remove("history.jsonl"), inv: inv{
				Tasks: map[string]int{"completed": 1},
				Live:  map[live]int{{Entrypoint: "cli", Kind: "interactive", Status: "busy"}: 1, {Entrypoint: "sdk-ts", Kind: "bg", Status: "idle"}: 1},
				Jobs:  map[string]int{"done": 2},
			}},
			{name: "everything deleted", do: all(remove("tasks"), remove("todos"), remove("sessions"), remove("jobs"), remove("projects"))},
			{name: "a deleted file that comes back is counted again", do: write("tasks/s1/1.json", task("1", "pending")),
				inv: inv{Tasks: map[string]int{"pending": 1}}},
		}},
		{name: "a changed file is read again", steps: []step{
			{name: "first", do: all(write("tasks/s/1.json", task("1", "pending")), write("todos/a.json", todos("pending"))),
				inv: inv{Tasks: map[string]int{"pending": 1}, Todos: map[string]int{"pending": 1}}},
			{name: "changed", do: all(write("tasks/s/1.json", task("1", "completed")), write("todos/a.json", todos("completed", "completed"))),
				inv: inv{Tasks: map[string]int{"completed": 1}, Todos: map[string]int{"completed": 2}}},
			{name: "replaced by another file of the same size", do: all(
				write("tasks/s/1.tmp", task("1", "cancelled")), func(t *testing.T, dir string) {
					if err := os.Rename(filepath.Join(dir, "tasks/s/1.tmp"), filepath.Join(dir, "tasks/s/1.json")); err != nil {
						t.Fatal(err)
					}
				}),
				inv: inv{Tasks: map[string]int{"cancelled": 1}, Todos: map[string]int{"completed": 2}}},
		}},
	})
}

func TestRefreshTellsLiveSessionsFromStaleOnes(t *testing.T) {
	dead := map[int]bool{200: true}
	var asked []int
	alive := func(pid int) bool {
		asked = append(asked, pid)
		return !dead[pid]
	}
	cli := live{Entrypoint: "cli", Kind: "interactive", Status: "busy"}
	sessions := all(
		write("sessions/100.json", session(100, "interactive", "cli", "busy")),
		write("sessions/200.json", session(200, "interactive", "cli", "busy")),
		write("sessions/zero.json", session(0, "interactive", "cli", "busy")),
		write("sessions/absent.json", `{"sessionId":"s","kind":"interactive","entrypoint":"cli","status":"busy"}`),
		write("sessions/negative.json", session(-1, "interactive", "cli", "busy")),
		write("sessions/string.json", `{"pid":"x","kind":"interactive","entrypoint":"cli","status":"busy"}`),
	)
	run(t, []scenario{
		{name: "a dead pid is stale, no pid is live", cfg: Config{Alive: alive}, steps: []step{
			{name: "first", do: sessions, inv: inv{Live: map[live]int{cli: 5}, Stale: 1}},
			{name: "again, unchanged files", inv: inv{Live: map[live]int{cli: 5}, Stale: 1}},
			{name: "a process ends without its file changing", do: func(*testing.T, string) { dead[100] = true },
				inv: inv{Live: map[live]int{cli: 4}, Stale: 2}},
		}},
		{name: "without Alive every process runs", steps: []step{
			{name: "first", do: sessions, inv: inv{Live: map[live]int{cli: 6}}},
		}},
	})
	for _, pid := range asked {
		if pid <= 0 {
			t.Errorf("Alive asked about pid %d", pid)
		}
	}
	if len(asked) == 0 {
		t.Error("Alive never asked")
	}
}

func TestRefreshGivesEveryJobAState(t *testing.T) {
	run(t, []scenario{
		{name: "state file, timeline or neither", steps: []step{
			{name: "first", do: all(
				write("jobs/state-wins/state.json", jobState("blocked")),
				write("jobs/state-wins/timeline.jsonl", event("done")),
				write("jobs/timeline-only/timeline.jsonl", event("blocked")+event("done")),
				write("jobs/timeline-last-valid/timeline.jsonl", event("blocked")+"not json\n"),
				write("jobs/timeline-blank-lines/timeline.jsonl", "\n"+event("blocked")+"\n  \n"),
				write("jobs/timeline-partial-last/timeline.jsonl", event("blocked")+event("done")[:20]),
				write("jobs/state-without-state/state.json", `{"detail":"d"}`),
				write("jobs/state-without-state/timeline.jsonl", event("done")),
				write("jobs/state-malformed/state.json", `{"state":`),
				write("jobs/state-malformed/timeline.jsonl", event("blocked")),
				write("jobs/state-malformed-alone/state.json", `[]`),
				mkdir("jobs/neither"),
				write("jobs/timeline-empty/timeline.jsonl", ""),
				write("jobs/state-odd/state.json", jobState("Waiting On CI")),
			),
				inv: inv{Jobs: map[string]int{"blocked": 5, "done": 2, "unknown": 3, "other": 1}},
				delta: Delta{Errors: map[ek]int64{
					{KindJobTimeline, "malformed"}: 2, {KindJobState, "malformed"}: 1, {KindJobState, "shape"}: 1,
				}}},
			{name: "nothing changed: errors are not counted again",
				inv: inv{Jobs: map[string]int{"blocked": 5, "done": 2, "unknown": 3, "other": 1}}},
			{name: "a timeline grows", do: appendTo("jobs/timeline-last-valid/timeline.jsonl", event("done")),
				inv: inv{Jobs: map[string]int{"blocked": 4, "done": 3, "unknown": 3, "other": 1}},
				// The whole timeline is read again, but its bad line
				// was counted already: the errors stay as they were.
			},
		}},
		{name: "a timeline line over MaxLineBytes is too long", cfg: Config{MaxLineBytes: 200}, steps: []step{
			{name: "first", do: write("jobs/j/timeline.jsonl", event("blocked")+
				`{"state":"done","text":"`+strings.Repeat("t", 300)+`"}`+"\n"),
				inv:   inv{Jobs: map[string]int{"blocked": 1}},
				delta: Delta{Errors: map[ek]int64{{KindJobTimeline, "too_long"}: 1}}},
		}},
	})
}

func TestRefreshCountsAnUnreadableFileOncePerVersion(t *testing.T) {
	run(t, []scenario{
		{name: "malformed and misshapen files", steps: []step{
			{name: "first", do: all(
				write("tasks/s/bad.json", `{"id":"1","status":`),
				write("tasks/s/array.json", `[`+task("1", "pending")+`]`),
				write("tasks/s/good.json", task("2", "pending")),
				write("todos/object.json", `{"status":"pending"}`),
				write("todos/bad.json", `[{`),
				write("todos/empty.json", ``),
				write("sessions/1.json", `[]`),
				write("sessions/2.json", "\xef\xbb\xbf"),
			),
				inv: inv{Tasks: map[string]int{"pending": 1}},
				delta: Delta{Errors: map[ek]int64{
					{KindTask, "malformed"}: 1, {KindTask, "shape"}: 1,
					{KindTodos, "shape"}: 1, {KindTodos, "malformed"}: 2,
					{KindLiveSession, "shape"}: 1, {KindLiveSession, "malformed"}: 1,
				}}},
			{name: "nothing changed", inv: inv{Tasks: map[string]int{"pending": 1}}},
			{name: "nothing changed, final", final: true, inv: inv{Tasks: map[string]int{"pending": 1}}},
			{name: "rewritten, still bad, another size", do: all(
				write("tasks/s/bad.json", `{"id":"1","status":"pend`),
				write("todos/object.json", `{"status":"in_progress"}`),
			),
				inv:   inv{Tasks: map[string]int{"pending": 1}},
				delta: Delta{Errors: map[ek]int64{{KindTask, "malformed"}: 1, {KindTodos, "shape"}: 1}}},
			{name: "fixed", do: all(
				write("tasks/s/bad.json", task("1", "completed")),
				write("todos/object.json", todos("pending")),
			),
				inv: inv{Tasks: map[string]int{"pending": 1, "completed": 1}, Todos: map[string]int{"pending": 1}}},
			{name: "broken again", do: write("tasks/s/bad.json", `{`),
				inv:   inv{Tasks: map[string]int{"pending": 1}, Todos: map[string]int{"pending": 1}},
				delta: Delta{Errors: map[ek]int64{{KindTask, "malformed"}: 1}}},
			{name: "a bad file deleted and written again is counted again", do: all(remove("tasks/s/bad.json")),
				inv: inv{Tasks: map[string]int{"pending": 1}, Todos: map[string]int{"pending": 1}}},
			{name: "back", do: write("tasks/s/bad.json", `{`),
				inv:   inv{Tasks: map[string]int{"pending": 1}, Todos: map[string]int{"pending": 1}},
				delta: Delta{Errors: map[ek]int64{{KindTask, "malformed"}: 1}}},
		}},
		{name: "a file over MaxFileBytes is too large", cfg: Config{MaxFileBytes: 100}, steps: []step{
			{name: "first", do: all(
				write("tasks/s/big.json", task("1", "pending")+strings.Repeat(" ", 100)),
				write("tasks/s/small.json", `{"status":"pending"}`),
				write("todos/big.json", todos("pending", "pending", "pending", "pending")),
				write("sessions/1.json", session(1, "interactive", "cli", "busy")),
				write("jobs/j/state.json", jobState("done")+strings.Repeat(" ", 100)),
				write("jobs/k/timeline.jsonl", strings.Repeat(event("done"), 3)),
			),
				inv: inv{Tasks: map[string]int{"pending": 1}, Jobs: map[string]int{"unknown": 2}},
				delta: Delta{Errors: map[ek]int64{
					{KindTask, "too_large"}: 1, {KindTodos, "too_large"}: 1, {KindLiveSession, "too_large"}: 1,
					{KindJobState, "too_large"}: 1, {KindJobTimeline, "too_large"}: 1,
				}}},
			{name: "nothing changed", inv: inv{Tasks: map[string]int{"pending": 1}, Jobs: map[string]int{"unknown": 2}}},
		}},
		{name: "FIFOs are not regular and never block", steps: []step{
			{name: "first", do: all(
				mkfifo("todos/x.json"),
				mkfifo("tasks/s/x.json"),
				mkfifo("sessions/1.json"),
				mkfifo("jobs/j/state.json"),
				mkfifo("jobs/k/timeline.jsonl"),
				mkfifo("history.jsonl"),
				mkfifo("projects/-x/.history.jsonl"),
			),
				inv: inv{Jobs: map[string]int{"unknown": 2}},
				delta: Delta{Errors: map[ek]int64{
					{KindTodos, "not_regular"}: 1, {KindTask, "not_regular"}: 1, {KindLiveSession, "not_regular"}: 1,
					{KindJobState, "not_regular"}: 1, {KindJobTimeline, "not_regular"}: 1, {KindHistory, "not_regular"}: 2,
				}}},
			{name: "nothing changed", inv: inv{Jobs: map[string]int{"unknown": 2}}},
			{name: "nothing changed, final", final: true, inv: inv{Jobs: map[string]int{"unknown": 2}}},
			{name: "replaced by regular files", do: all(
				remove("todos/x.json"), write("todos/x.json", todos("pending")),
				remove("history.jsonl"), write("history.jsonl", prompt("x", "/p")),
			),
				inv:   inv{Todos: map[string]int{"pending": 1}, Jobs: map[string]int{"unknown": 2}},
				delta: Delta{Prompts: map[pk]int64{{"/p", ""}: 1}}},
		}},
		{name: "a symlink loop is unreadable", steps: []step{
			{name: "first", do: all(symlink("loop.json", "todos/loop.json"), symlink("a.json", "tasks/s/b.json"), symlink("b.json", "tasks/s/a.json"),
				symlink("history.jsonl", "history.jsonl")),
				delta: Delta{Errors: map[ek]int64{{KindTodos, "unreadable"}: 1, {KindTask, "unreadable"}: 2, {KindHistory, "unreadable"}: 1}}},
			{name: "nothing changed"},
		}},
		{name: "a dangling symlink is a file that is gone", steps: []step{
			{name: "first", do: all(symlink("nowhere.json", "todos/x.json"), symlink("nowhere.jsonl", "history.jsonl"))},
		}},
		{name: "a symlink to a file is read", steps: []step{
			{name: "first", do: all(write("elsewhere/t.json", task("1", "pending")), symlink("../../elsewhere/t.json", "tasks/s/t.json")),
				inv: inv{Tasks: map[string]int{"pending": 1}}},
		}},
	})
}

func TestRefreshBoundsEachLabelsValues(t *testing.T) {
	var many []op
	want := map[string]int{claudedir.Other: 8}
	for i := 0; i < MaxLabelValues+8; i++ {
		s := fmt.Sprintf("s%02d", i)
		many = append(many, write(fmt.Sprintf("tasks/s/%02d.json", i), task("1", s)))
		if i < MaxLabelValues {
			want[s] = 1
		}
	}
	// A value seen before the limit keeps its name.
	many = append(many, write("tasks/s/99.json", task("1", "s05")))
	want["s05"]++
	later := maps.Clone(want)
	later[claudedir.Other]++
	later["s00"]++

	odd := live{Entrypoint: claudedir.Other, Kind: claudedir.Unknown, Status: claudedir.Other}
	run(t, []scenario{
		{name: "statuses past the limit are other", steps: []step{
			{name: "first", do: all(many...), inv: inv{Tasks: want}},
			{name: "again", inv: inv{Tasks: want}},
			{name: "a new value after the limit is other, an old one keeps its name", do: all(
				write("tasks/t/1.json", task("1", "brand_new")),
				write("tasks/t/2.json", task("1", "s00")),
			), inv: inv{Tasks: later}},
		}},
		{name: "labels that are not tokens are other, empty ones unknown", steps: []step{
			{name: "first", do: all(
				write("tasks/s/1.json", task("1", "In Progress")),
				write("tasks/s/2.json", `{"id":"2"}`),
				write("tasks/s/3.json", `{"id":"3","status":5}`),
				write("todos/a.json", todos(strings.Repeat("p", 33), "", "PENDING")),
				write("sessions/1.json", `{"entrypoint":"Claude VSCode","kind":"","status":"`+strings.Repeat("b", 1<<16)+`"}`),
				write("jobs/j/state.json", jobState("Done!")),
			), inv: inv{
				Tasks: map[string]int{claudedir.Other: 1, claudedir.Unknown: 2},
				Todos: map[string]int{claudedir.Other: 2, claudedir.Unknown: 1},
				Live:  map[live]int{odd: 1},
				Jobs:  map[string]int{claudedir.Other: 1},
			}},
		}},
	})
}

func TestRefreshCountsHistoryLinesOnce(t *testing.T) {
	const h = "history.jsonl"
	p, c, q := pk{"/p", ""}, pk{"/p", "compact"}, pk{"/q", ""}
	run(t, []scenario{
		{name: "appended lines are counted once", steps: []step{
			{name: "first", do: write(h, prompts(2, "x", "/p")), delta: Delta{Prompts: map[pk]int64{p: 2}}},
			{name: "nothing changed"},
			{name: "appended", do: appendTo(h, prompt("/compact", "/p")+prompt("y", "/q")),
				delta: Delta{Prompts: map[pk]int64{c: 1, q: 1}}},
			{name: "nothing changed, final", final: true},
			{name: "appended again", do: appendTo(h, prompt("z", "/p")), delta: Delta{Prompts: map[pk]int64{p: 1}}},
			{name: "the head grows past 1 KiB", do: appendTo(h, prompts(20, "z", "/p")), delta: Delta{Prompts: map[pk]int64{p: 20}}},
			{name: "and past it again", do: appendTo(h, prompts(20, "z", "/q")), delta: Delta{Prompts: map[pk]int64{q: 20}}},
		}},
		{name: "a partial last line waits for its newline", steps: []step{
			{name: "first", do: write(h, prompt("x", "/p")+strings.TrimSuffix(prompt("y", "/q"), "\n")),
				delta: Delta{Prompts: map[pk]int64{p: 1}}},
			{name: "still partial"},
			{name: "more of it, still partial", do: appendTo(h, " "),
				delta: Delta{}},
			{name: "its newline", do: appendTo(h, "\n"), delta: Delta{Prompts: map[pk]int64{q: 1}}},
			{name: "nothing changed"},
		}},
		{name: "a partial last line is counted by a final refresh", steps: []step{
			{name: "first", do: write(h, prompt("x", "/p")+strings.TrimSuffix(prompt("y", "/q"), "\n")),
				delta: Delta{Prompts: map[pk]int64{p: 1}}},
			{name: "final", final: true, delta: Delta{Prompts: map[pk]int64{q: 1}}},
			{name: "final again", final: true},
			{name: "not final"},
		}},
		{name: "a final first refresh counts the partial line", steps: []step{
			{name: "final", final: true, do: write(h, prompt("x", "/p")+strings.TrimSuffix(prompt("y", "/q"), "\n")),
				delta: Delta{Prompts: map[pk]int64{p: 1, q: 1}}},
		}},
		{name: "blank lines, CRLF and bad lines", steps: []step{
			{name: "first", do: write(h, "\n   \n"+strings.TrimSuffix(prompt("x", "/p"), "\n")+"\r\n"+
				"not json\n"+"[1,2]\n"+`{"display":"x","project":`+"\n"+prompt("/compact", "/p")),
				delta: Delta{Prompts: map[pk]int64{p: 1, c: 1}, Errors: map[ek]int64{
					{KindHistory, "malformed"}: 2, {KindHistory, "shape"}: 1}}},
			{name: "nothing changed"},
			{name: "appended", do: appendTo(h, "oops\n"+prompt("x", "/p")),
				delta: Delta{Prompts: map[pk]int64{p: 1}, Errors: map[ek]int64{{KindHistory, "malformed"}: 1}}},
		}},
		{name: "a history file rewritten with other content", steps: []step{
			{name: "first", do: write(h, prompts(3, "x", "/p")+prompt("/compact", "/p")),
				delta: Delta{Prompts: map[pk]int64{p: 3, c: 1}}},
			{name: "rewritten, shorter", do: write(h, promptIn("y", "/p", "s2")+prompt("/compact", "/p")+prompt("/compact", "/p")),
				delta: Delta{Prompts: map[pk]int64{c: 1}}},
			{name: "rewritten, longer", do: write(h, promptIn("z", "/q", "s3")+prompts(4, "x", "/p")+prompts(5, "w", "/q")),
				delta: Delta{Prompts: map[pk]int64{p: 1, q: 6}}},
			{name: "rewritten with less of everything", do: write(h, promptIn("v", "/p", "s4")),
				delta: Delta{}},
			{name: "deleted", do: remove(h)},
			{name: "back with what it held before", do: write(h, promptIn("z", "/q", "s3")+prompts(4, "x", "/p")+prompts(5, "w", "/q")),
				delta: Delta{}},
		}},
		// A rewrite is told from an append by the first KiB alone: one
		// that keeps it is read on from the old offset, mid-line.
		{name: "a history file rewritten with other content after its first KiB", steps: []step{
			{name: "first", do: write(h, prompts(20, "x", "/p")), delta: Delta{Prompts: map[pk]int64{p: 20}}},
			{name: "rewritten: the same first twelve lines (more than 1 KiB), then others, longer", do: write(h, prompts(12, "x", "/p")+prompts(15, "/compact", "/p")),
				delta: Delta{Prompts: map[pk]int64{c: 15}}},
		}},
		{name: "a history file truncated and refilled between refreshes", steps: []step{
			{name: "first", do: write(h, prompts(3, "x", "/p")), delta: Delta{Prompts: map[pk]int64{p: 3}}},
			// (Sizes differ from step to step: a file's time may not move.)
			{name: "truncated and refilled, shorter", do: all(truncate(h, 0), appendTo(h, prompts(2, "x", "/p")+prompt("yy", "/q"))),
				delta: Delta{Prompts: map[pk]int64{q: 1}}},
			{name: "truncated and refilled, longer", do: all(truncate(h, 0), appendTo(h, promptIn("y", "/q", "s9")+prompts(4, "x", "/p"))),
				delta: Delta{Prompts: map[pk]int64{p: 1}}},
		}},
		// Once a refresh has seen the file cut, the lines that come back
		// are counted as appended, not against what was counted before.
		{name: "a history file seen empty, then refilled", steps: []step{
			{name: "first", do: write(h, prompts(3, "x", "/p")), delta: Delta{Prompts: map[pk]int64{p: 3}}},
			{name: "truncated", do: truncate(h, 0)},
			{name: "refilled with fewer", do: appendTo(h, prompts(2, "x", "/p")+prompt("yy", "/q")),
				delta: Delta{Prompts: map[pk]int64{q: 1}}},
		}},
		// The file ends up holding the same three lines it held at first.
		{name: "a history file cut shorter, then refilled with what it held", steps: []step{
			{name: "first", do: write(h, prompts(3, "x", "/p")), delta: Delta{Prompts: map[pk]int64{p: 3}}},
			{name: "cut to its first line", do: truncate(h, int64(len(prompt("x", "/p"))))},
			{name: "the same two lines again", do: appendTo(h, prompts(2, "x", "/p"))},
		}},
		{name: "a line longer than MaxLineBytes and 64 KiB is skipped", cfg: Config{MaxLineBytes: 100 << 10}, steps: []step{
			{name: "first", do: write(h, prompt("x", "/p")+longPrompt(200<<10, "/long")+prompt("y", "/q")+
				longPrompt(80<<10, "/long80")+prompt("z", "/p")),
				delta: Delta{Prompts: map[pk]int64{p: 2, q: 1, {"/long80", ""}: 1}, Errors: map[ek]int64{{KindHistory, "too_long"}: 1}}},
			{name: "nothing changed"},
			{name: "a long line at the limit", do: appendTo(h, longPrompt(100<<10, "/limit")+prompt("x", "/p")),
				delta: Delta{Prompts: map[pk]int64{{"/limit", ""}: 1, p: 1}}},
			{name: "a long line a byte over the limit", do: appendTo(h, longPrompt(100<<10+2, "/over")+prompt("x", "/p")),
				delta: Delta{Prompts: map[pk]int64{p: 1}, Errors: map[ek]int64{{KindHistory, "too_long"}: 1}}},
			{name: "a long partial line", do: appendTo(h, strings.TrimSuffix(longPrompt(90<<10, "/partial"), "\n"))},
			{name: "still partial"},
			{name: "its newline", do: appendTo(h, "\n"), delta: Delta{Prompts: map[pk]int64{{"/partial", ""}: 1}}},
			{name: "a too long partial line", do: appendTo(h, strings.Repeat("x", 300<<10))},
			{name: "its end", do: appendTo(h, "\n"+prompt("x", "/p")),
				delta: Delta{Prompts: map[pk]int64{p: 1}, Errors: map[ek]int64{{KindHistory, "too_long"}: 1}}},
		}},
		{name: "a line longer than a small MaxLineBytes is skipped", cfg: Config{MaxLineBytes: 1000}, steps: []step{
			{name: "first", do: write(h, longPrompt(2000, "/long")+prompt("x", "/p")+longPrompt(70<<10, "/long")+prompt("y", "/q")),
				delta: Delta{Prompts: map[pk]int64{p: 1, q: 1}, Errors: map[ek]int64{{KindHistory, "too_long"}: 2}}},
		}},
		// A line's '\r' before its '\n' is not its content: the cap
		// applies to what is before it.
		{name: "a CRLF line at the limit is read, one a byte over is skipped", cfg: Config{MaxLineBytes: 1000}, steps: []step{
			{name: "first", do: write(h, strings.TrimSuffix(longPrompt(1001, "/crlf"), "\n")+"\r\n"+
				strings.TrimSuffix(longPrompt(1002, "/over"), "\n")+"\r\n"+prompt("x", "/p")),
				delta: Delta{Prompts: map[pk]int64{{"/crlf", ""}: 1, p: 1}, Errors: map[ek]int64{{KindHistory, "too_long"}: 1}}},
		}},
		{name: "a too long last line without newline counts as too long when final", cfg: Config{MaxLineBytes: 1000}, steps: []step{
			{name: "first", do: write(h, prompt("x", "/p")+strings.TrimSuffix(longPrompt(70<<10, "/long"), "\n")),
				delta: Delta{Prompts: map[pk]int64{p: 1}}},
			{name: "final", final: true, delta: Delta{Errors: map[ek]int64{{KindHistory, "too_long"}: 1}}},
		}},
		{name: "projects' own history files", steps: []step{
			{name: "first", do: all(
				write("projects/-a/.history.jsonl", prompt("x", "/p")),
				write("projects/-b/.history.jsonl", prompt("x", "/p")+prompt("/compact", "/p")),
				write("projects/-c/history.jsonl", prompt("x", "/p")),
				write("projects/.history.jsonl", prompt("x", "/p")),
			), delta: Delta{Prompts: map[pk]int64{p: 2, c: 1}}},
			{name: "appended", do: appendTo("projects/-a/.history.jsonl", prompt("y", "/q")), delta: Delta{Prompts: map[pk]int64{q: 1}}},
		}},
	})
}

func TestRefreshReadsALinkedRootOnce(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a")
	if err := os.MkdirAll(filepath.Join(a, "todos"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(a, "todos", "s-agent-s.json"), []byte(`[{"status":"pending"}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(a, "history.jsonl"), []byte(`{"display":"x","project":"/p"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(a, filepath.Join(dir, "b")); err != nil {
		t.Fatal(err)
	}
	r := New(Config{Roots: []string{a, filepath.Join(dir, "b")}})
	inv, d := r.Refresh(false)
	if inv.Todos["pending"] != 1 || d.Prompts[PromptKey{Project: "/p"}] != 1 {
		t.Errorf("a root and a link to it: todos %v, prompts %v; want each file once", inv.Todos, d.Prompts)
	}
}

func TestRefreshCountsATimelinesBadLineOnceWhateverTheStateFileDoes(t *testing.T) {
	dir := t.TempDir()
	job := filepath.Join(dir, "jobs", "j")
	if err := os.MkdirAll(job, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(job, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("timeline.jsonl", "bad\n"+`{"at":"2026-11-20T10:00:00Z","state":"blocked"}`+"\n")
	r := New(Config{Roots: []string{dir}})
	bad := ErrorKey{KindJobTimeline, "malformed"}
	var total int64
	for i, step := range []func(){
		func() {},
		func() { write("state.json", `{"state":"done"}`) }, // the timeline is not read
		func() { write("state.json", ``) },                 // caught mid-write: the timeline again
	} {
		step()
		_, d := r.Refresh(false)
		total += d.Errors[bad]
		if total != 1 {
			t.Fatalf("step %d: the timeline's bad line counted %d times, want once", i, total)
		}
	}
}
