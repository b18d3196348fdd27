package anonymize

import (
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

const (
	sessionA = "0b9c6a52-1d7e-4a38-9f3e-2c1a8d7e5f10"
	sessionB = "7f3e2d1c-0b9a-4c8d-8e7f-6a5b4c3d2e1f"
)

// personalTree is a Claude config dir in the real layout, full of made-up
// personal text: a session with a subagent, a legacy agent file, a second
// session, todos, tasks, history, and files that must never be copied.
var personalTree = map[string]string{
	"projects/-home-alice-secretproject/" + sessionA + ".jsonl": `{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"` + sessionA + `","cwd":"/home/alice/secretproject","gitBranch":"alice/payroll-fix","version":"2.1.3","timestamp":"2026-01-02T03:04:05.000Z","message":{"role":"user","content":"Please fix the payroll bug for Alice Wonderland before Friday"}}
{"type":"assistant","uuid":"u2","parentUuid":"u1","sessionId":"` + sessionA + `","cwd":"/home/alice/secretproject","timestamp":"2026-01-02T03:04:06.000Z","requestId":"req_1","message":{"id":"msg_1","model":"claude-opus-4-6","role":"assistant","stop_reason":"tool_use","usage":{"input_tokens":10,"output_tokens":20},"content":[{"type":"thinking","thinking":"The user Alice wants the payroll module changed","signature":"c2lnbmF0dXJlIGJ5dGVz"},{"type":"text","text":"I will look at the salary table in payroll.py"},{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"grep -rn salary /home/alice/secretproject","description":"Search salaries of the staff"}},{"type":"tool_use","id":"toolu_2","name":"Task","input":{"subagent_type":"Explore","description":"Explore the payroll schema","prompt":"Find every table holding bank account numbers"}}]}}
{"type":"user","uuid":"u3","parentUuid":"u2","sessionId":"` + sessionA + `","cwd":"/home/alice/secretproject","timestamp":"2026-01-02T03:04:07.000Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","is_error":false,"content":"payroll.py:12: salary = 123456 # bob.smith@example.com"}]},"toolUseResult":{"stdout":"payroll.py:12: salary = 123456 # bob.smith@example.com","stderr":"","interrupted":false}}
{"type":"file-history-snapshot","messageId":"u2","snapshot":{"trackedFileBackups":{"/home/alice/secretproject/payroll.py":{"backupFileName":"3f2a1b0c@v1","version":1,"backupTime":"2026-01-02T03:04:06.000Z"}}}}
{"type":"summary","summary":"Fixing Alice's payroll rounding bug","leafUuid":"u3"}
{"type":"ai-title","aiTitle":"Payroll rounding fix for Wonderland Inc","sessionId":"` + sessionA + `"}
{"type":"user","uuid":"u4","sessionId":"` + sessionA + `","message":{"role":"user","content":"truncated last line with a secret passw`,
	"projects/-home-alice-secretproject/" + sessionA + "/subagents/agent-a1b2c3d.jsonl": `{"type":"user","uuid":"s1","sessionId":"` + sessionA + `","agentId":"a1b2c3d","isSidechain":true,"cwd":"/home/alice/secretproject","message":{"role":"user","content":"Find every table holding bank account numbers"}}
{"type":"assistant","uuid":"s2","sessionId":"` + sessionA + `","agentId":"a1b2c3d","isSidechain":true,"message":{"id":"msg_2","model":"claude-haiku-4-5","usage":{"input_tokens":3,"output_tokens":4},"content":[{"type":"text","text":"The accounts table holds IBAN DE44500105175407324931"}]}}
`,
	"projects/-home-alice-secretproject/" + sessionA + "/subagents/agent-a1b2c3d.meta.json": `{"agentType":"Explore","description":"Explore the payroll schema"}`,
	"projects/-home-alice-secretproject/agent-5e9a01b2.jsonl": `{"type":"user","uuid":"l1","sessionId":"` + sessionA + `","agentId":"5e9a01b2","isSidechain":true,"message":{"role":"user","content":"Legacy agent reading Alice's diary entries"}}
`,
	"projects/-home-alice-otherproject/" + sessionB + ".jsonl": `{"type":"user","uuid":"b1","sessionId":"` + sessionB + `","cwd":"/home/alice/otherproject","message":{"role":"user","content":"Draft an email to the landlord about the broken heating"}}
`,
	"todos/" + sessionA + "-agent-" + sessionA + ".json": `[{"content":"Email Carol about the quarterly bonus numbers","status":"pending","activeForm":"Emailing Carol about the bonus","id":"1"}]`,
	"tasks/" + sessionA + "/1.json":                      `{"id":"1","subject":"Rotate the staging database password","description":"The old password leaked in chat","status":"completed"}`,
	"history.jsonl":                                      `{"display":"fix the payroll bug for Alice Wonderland","pastedContents":{},"timestamp":1767323045000,"project":"/home/alice/secretproject","sessionId":"` + sessionA + `"}` + "\n",
	"settings.json":                                      `{"env":{"ANTHROPIC_API_KEY":"sk-ant-do-not-copy-me"}}`,
	".credentials.json":                                  `{"claudeAiOauth":{"accessToken":"do-not-copy-this-token"}}`,
	"shell-snapshots/snapshot-bash-1.sh":                 "export SECRET_TOKEN=do-not-copy\n",
	"projects/-home-alice-secretproject/notes.txt":       "alice's private notes, not a transcript\n",
}

func writePersonalTree(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "claude")
	for rel, content := range personalTree {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// files lists a tree's regular files, relative, with their sizes.
func files(t *testing.T, dir string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = fi.Size()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestTreeCopiesTranscriptsOnlyWithTheirSizes(t *testing.T) {
	src := writePersonalTree(t)
	dst := filepath.Join(t.TempDir(), "copy")
	res, err := Tree(src, dst, Options{Key: []byte("k")})
	if err != nil {
		t.Fatal(err)
	}
	in, out := files(t, src), files(t, dst)
	var sizesIn, sizesOut []int64
	for rel, n := range in {
		if strings.HasSuffix(rel, ".json") && !strings.Contains(rel, "/") || strings.HasPrefix(rel, "shell-") || strings.HasSuffix(rel, ".txt") {
			continue // must not be copied
		}
		sizesIn = append(sizesIn, n)
	}
	for rel, n := range out {
		for _, never := range []string{"settings", "credentials", "shell-", ".txt"} {
			if strings.Contains(rel, never) {
				t.Errorf("%s was copied", rel)
			}
		}
		if strings.Contains(rel, "alice") || strings.Contains(rel, "secretproject") {
			t.Errorf("a path in the copy names the user or project: %s", rel)
		}
		sizesOut = append(sizesOut, n)
	}
	sort.Slice(sizesIn, func(i, j int) bool { return sizesIn[i] < sizesIn[j] })
	sort.Slice(sizesOut, func(i, j int) bool { return sizesOut[i] < sizesOut[j] })
	if len(sizesIn) != len(sizesOut) || len(sizesOut) != 8 {
		t.Fatalf("copied %d files, want the 8 transcript, todo, task and history files: %v", len(sizesOut), out)
	}
	for i := range sizesIn {
		if sizesIn[i] != sizesOut[i] {
			t.Errorf("file sizes differ: source %v, copy %v", sizesIn, sizesOut)
			break
		}
	}
	if res.Stats.Malformed != 1 {
		t.Errorf("malformed documents = %d, want 1 (the truncated last line)", res.Stats.Malformed)
	}
	if len(res.Skipped) != 4 {
		t.Errorf("skipped %v, want settings, credentials, shell snapshots and the .txt file", res.Skipped)
	}
	// Subagents, their meta files and legacy agents keep their names (random
	// ids; ids made of words are replaced, see TestNoPersonalTextSurvives).
	var agents int
	for rel := range out {
		if strings.Contains(rel, "agent-a1b2c3d.jsonl") || strings.Contains(rel, "agent-a1b2c3d.meta.json") || strings.HasSuffix(rel, "agent-5e9a01b2.jsonl") {
			agents++
		}
	}
	if agents != 3 {
		t.Errorf("subagent, meta and legacy agent files: %d of 3 kept their names: %v", agents, out)
	}
}

func TestTreeCopiesOnlyTheNamedSession(t *testing.T) {
	src := writePersonalTree(t)
	dst := filepath.Join(t.TempDir(), "copy")
	if _, err := Tree(src, dst, Options{Key: []byte("k"), Sessions: []string{sessionA}}); err != nil {
		t.Fatal(err)
	}
	out := files(t, dst)
	for rel := range out {
		if strings.Contains(rel, sessionB) || rel == "history.jsonl" {
			t.Errorf("%s is not part of session %s", rel, sessionA)
		}
	}
	if len(out) != 6 {
		t.Errorf("copied %d files, want the session, its subagent and meta, the legacy agent, its todo and task: %v", len(out), out)
	}
}

func TestTreeRefusesToOverwriteOrNest(t *testing.T) {
	src := writePersonalTree(t)
	full := t.TempDir()
	if err := os.WriteFile(filepath.Join(full, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for name, dst := range map[string]string{
		"a non-empty folder": full,
		"inside the source":  filepath.Join(src, "copy"),
		"the source itself":  src,
	} {
		if _, err := Tree(src, dst, Options{}); err == nil {
			t.Errorf("copy into %s: no error", name)
		}
	}
}

func TestTreeIsReproducibleWithAKey(t *testing.T) {
	src := writePersonalTree(t)
	a, b := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
	for _, dst := range []string{a, b} {
		if _, err := Tree(src, dst, Options{Key: []byte("same")}); err != nil {
			t.Fatal(err)
		}
	}
	for rel := range files(t, a) {
		x, err := os.ReadFile(filepath.Join(a, rel))
		if err != nil {
			t.Fatal(err)
		}
		y, err := os.ReadFile(filepath.Join(b, rel))
		if err != nil {
			t.Fatalf("%s is in one copy only: %v", rel, err)
		}
		if string(x) != string(y) {
			t.Errorf("%s differs between two copies with one key", rel)
		}
	}
}
