// Command gensessions writes a Claude config dir of many small session
// transcripts, for the bench's memory and idle figures with tens of
// thousands of files: each session is a prompt, a request with a tool
// call, its result and a final request, spread over projects. With
// -subagents, a session's tool call is a Task whose subagent (a user line
// and a request with a tool call and its result) is a file of its own with
// its .meta.json, as Claude Code 2.1 writes them: half of a real tree's
// transcripts are subagents. Ids and times are deterministic; each file is
// dated by its last record, in October 2026, as a past session's are.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

func main() {
	dir := flag.String("dir", "", "Claude config dir to create (projects/ under it)")
	sessions := flag.Int("sessions", 20000, "session files")
	projects := flag.Int("projects", 200, "project dirs they are spread over")
	subagents := flag.Bool("subagents", false, "give every session a Task call and its subagent file (two files per session)")
	flag.Parse()
	if *dir == "" || *sessions < 1 || *projects < 1 {
		fmt.Fprintln(os.Stderr, "usage: gensessions -dir DIR [-sessions N] [-projects N]")
		os.Exit(2)
	}
	for i := 0; i < *sessions; i++ {
		if err := write(*dir, i, i%*projects, *subagents); err != nil {
			fmt.Fprintln(os.Stderr, "gensessions:", err)
			os.Exit(1)
		}
	}
}

func write(dir string, i, p int, subagent bool) error {
	cwd := fmt.Sprintf("/home/u/proj%d", p)
	proj := filepath.Join(dir, "projects", fmt.Sprintf("-home-u-proj%d", p))
	if err := os.MkdirAll(proj, 0o755); err != nil {
		return err
	}
	sid := fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i)
	ts := fmt.Sprintf("2026-10-%02dT10:%02d:00.000Z", 1+i%28, i%60)
	rec := func(typ, uuid, parent string, msg map[string]any) map[string]any {
		r := map[string]any{"type": typ, "uuid": uuid, "sessionId": sid, "timestamp": ts, "cwd": cwd, "message": msg}
		if parent != "" {
			r["parentUuid"] = parent
		}
		return r
	}
	u1, a1, u2, a2 := fmt.Sprintf("u1-%d", i), fmt.Sprintf("a1-%d", i), fmt.Sprintf("u2-%d", i), fmt.Sprintf("a2-%d", i)
	tool := fmt.Sprintf("toolu_gen%d", i)
	call := map[string]any{"type": "tool_use", "id": tool, "name": "Read", "input": map[string]any{"file_path": "/x"}}
	result := rec("user", u2, a1, map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": tool, "content": "ok"}}})
	agentID := fmt.Sprintf("a%016x", i)
	if subagent {
		call = map[string]any{"type": "tool_use", "id": tool, "name": "Task", "input": map[string]any{
			"subagent_type": "Explore", "description": "find the test", "prompt": "find the failing test"}}
		result["toolUseResult"] = map[string]any{"status": "completed", "agentId": agentID, "agentType": "Explore", "totalDurationMs": 4000,
			"content": []any{map[string]any{"type": "text", "text": "found it"}}}
	}
	lines := []map[string]any{
		rec("user", u1, "", map[string]any{"role": "user", "content": "please fix the failing test"}),
		rec("assistant", a1, u1, map[string]any{"id": fmt.Sprintf("msg_gen%d_a", i), "model": "claude-sonnet-4-5", "role": "assistant",
			"stop_reason": "tool_use", "content": []any{call},
			"usage": map[string]any{"input_tokens": 10, "output_tokens": 20, "cache_read_input_tokens": 1000, "cache_creation_input_tokens": 50}}),
		result,
		rec("assistant", a2, u2, map[string]any{"id": fmt.Sprintf("msg_gen%d_b", i), "model": "claude-sonnet-4-5", "role": "assistant",
			"stop_reason": "end_turn", "content": []any{map[string]any{"type": "text", "text": "done"}},
			"usage": map[string]any{"input_tokens": 5, "output_tokens": 7}}),
	}
	at, err := time.Parse(time.RFC3339, ts)
	if err != nil {
		return err
	}
	if err := writeLines(filepath.Join(proj, sid+".jsonl"), lines, at); err != nil {
		return err
	}
	if !subagent {
		return nil
	}
	sub := func(typ, uuid, parent string, msg map[string]any) map[string]any {
		r := rec(typ, uuid, parent, msg)
		r["isSidechain"], r["agentId"] = true, agentID
		return r
	}
	su1, sa1, su2, sa2 := "s"+u1, "s"+a1, "s"+u2, "s"+a2
	stool := fmt.Sprintf("toolu_gensub%d", i)
	subDir := filepath.Join(proj, sid, "subagents")
	if err := os.MkdirAll(subDir, 0o755); err != nil {
		return err
	}
	meta := filepath.Join(subDir, "agent-"+agentID+".meta.json")
	if err := os.WriteFile(meta, []byte(`{"agentType":"Explore","description":"find the test"}`+"\n"), 0o644); err != nil {
		return err
	}
	if err := os.Chtimes(meta, at, at); err != nil {
		return err
	}
	return writeLines(filepath.Join(subDir, "agent-"+agentID+".jsonl"), []map[string]any{
		sub("user", su1, "", map[string]any{"role": "user", "content": "find the failing test"}),
		sub("assistant", sa1, su1, map[string]any{"id": fmt.Sprintf("msg_gensub%d_a", i), "model": "claude-haiku-4-5", "role": "assistant",
			"stop_reason": "tool_use", "content": []any{map[string]any{"type": "tool_use", "id": stool, "name": "Grep", "input": map[string]any{"pattern": "FAIL"}}},
			"usage": map[string]any{"input_tokens": 8, "output_tokens": 12, "cache_read_input_tokens": 500, "cache_creation_input_tokens": 20}}),
		sub("user", su2, sa1, map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": stool, "content": "x_test.go"}}}),
		sub("assistant", sa2, su2, map[string]any{"id": fmt.Sprintf("msg_gensub%d_b", i), "model": "claude-haiku-4-5", "role": "assistant",
			"stop_reason": "end_turn", "content": []any{map[string]any{"type": "text", "text": "found it"}},
			"usage": map[string]any{"input_tokens": 4, "output_tokens": 6}}),
	}, at)
}

// writeLines writes records as JSON lines, and dates the file at, its
// last record's time, as Claude Code's files of a past session are.
func writeLines(path string, lines []map[string]any, at time.Time) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	for _, l := range lines {
		if err := enc.Encode(l); err != nil {
			f.Close()
			return err
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Chtimes(path, at, at)
}
