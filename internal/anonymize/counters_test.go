package anonymize

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/claudedir"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/metrics"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/session"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/transcript"
)

// facts is what the exporter's decoder reads from a line that the
// counters depend on beyond ids, usage and types: commits and pull
// requests of shell calls, the languages of edits, the lines an edit
// changed, a pull request's key.
func facts(t *testing.T, line string) string {
	t.Helper()
	var r transcript.Record
	if err := transcript.NewDecoder(transcript.Options{}).Decode([]byte(line), &r); err != nil {
		t.Fatalf("decode: %v\n%s", err, line)
	}
	// Names and repositories are replaced: what counts is whether
	// there is one, and whether it is built in.
	repo := regexp.MustCompile(`^[^#]+#`)
	x := r.Rare()
	skill := x.Skill
	if skill != "" && !claudedir.IsBuiltinCommand(skill) {
		skill = "custom"
	}
	out := fmt.Sprintf("edit=%+v pr=%q outputPR=%q skill=%q", x.Edit,
		repo.ReplaceAllString(session.PullRequestKey(x.PRURL, x.PRRepo, x.PRNumber), "R#"),
		repo.ReplaceAllString(session.PullRequestKey(x.OutputPRURL, "", 0), "R#"), skill)
	for _, tu := range r.Message.ToolUses {
		out += fmt.Sprintf(" tool=%s shell=%d language=%s notebook=%d", tu.Name, tu.Shell, metrics.LanguageOf(tu.Ext), tu.NotebookLines)
	}
	return out
}

// bash is an assistant line with one Bash call running cmd.
func bash(cmd string) string {
	b, _ := json.Marshal(cmd)
	return `{"type":"assistant","uuid":"u1","message":{"id":"m1","role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":` + string(b) + `,"description":"run it"}}]}}`
}

// edit is an assistant line with one edit call on path.
func edit(tool, path string) string {
	b, _ := json.Marshal(path)
	return `{"type":"assistant","uuid":"u1","message":{"id":"m1","role":"assistant","content":[{"type":"tool_use","id":"t1","name":"` + tool + `","input":{"file_path":` + string(b) + `,"notebook_path":` + string(b) + `,"old_string":"secret\nold","new_string":"secret\nnew\nlines","new_source":"a\nb\nc","edit_mode":"delete"}}]}}`
}

func TestCopyReadsAsTheOriginal(t *testing.T) {
	cases := []struct {
		name string
		line string
		gone []string // personal words that must not survive
	}{
		{"commit after cd", bash(`cd /home/alice/payroll && git add -A && git commit -m "Fix Alice's salary bug"`), []string{"alice", "payroll", "salary", "Fix"}},
		{"commit message from a quoted here-document in $( )", bash("git commit -m \"$(cat <<'EOF'\nAdd payroll export for Carol\n\nCo-Authored-By: Claude <noreply@anthropic.com>\nEOF\n)\""), []string{"payroll", "Carol", "noreply", "anthropic"}},
		{"a here-document whose body names git commit", bash("cat > notes.md <<'EOF'\nremember: git commit before leaving\ndon't forget Alice\nEOF\necho done"), []string{"notes", "remember", "leaving", "Alice", "forget"}},
		{"an unquoted here-document and a commit after it", bash("cat <<END >> log.txt\nsalary of $USER\nEND\ngit -C /srv/alice commit --amend --no-edit"), []string{"salary", "USER", "srv", "alice", "amend", "edit"}},
		{"dry run is no commit", bash(`git --no-pager commit --dry-run -m wip`), []string{"wip"}},
		{"global options before the subcommand", bash(`git -c user.name=alice --git-dir=/home/alice/.git --work-tree /home/alice commit -q`), []string{"alice", "user"}},
		{"if, loops and paths to git", bash(`if /usr/bin/git commit -am payroll; then echo ok; fi; for d in alpha beta; do git -C "$d" commit -m "bump $d"; done`), []string{"payroll", "alpha", "beta", "bump"}},
		{"quoted and escaped words are no commands", bash(`echo "git commit"; git "commit" -m x; g\it commit; sudo -u alice env A="x y" git commit -m y`), []string{"alice"}},
		{"pull request", bash(`gh pr create --title "Payroll export" --body "$(cat <<'EOF'
Adds the payroll export
EOF
)" --base main`), []string{"Payroll", "payroll", "export", "Adds"}},
		{"pull request, other subcommands", bash(`gh pr view 12 && gh issue create --title payroll && gh pr create -f`), []string{"payroll", "view", "issue"}},
		{"a command with \\u escapes and non-ASCII", bash("git commit -m \"naïve café \u2603\" && echo \"\u00e9t\u00e9\""), []string{"café", "naïve", "été"}},
		{"a Makefile", edit("Write", "/home/alice/payroll/Makefile"), []string{"alice", "payroll"}},
		{"a GNUmakefile on Windows", edit("Edit", `C:\Users\alice\payroll\GNUmakefile`), []string{"alice", "payroll"}},
		{"a Dockerfile with a suffix", edit("MultiEdit", "/home/alice/payroll/Dockerfile.prod"), []string{"alice", "payroll"}},
		{"an upper-case extension", edit("Edit", "/home/alice/payroll/README.MD"), []string{"alice", "payroll", "README"}},
		{"a long extension the language table names", edit("Write", "/home/alice/app.properties"), []string{"alice"}},
		{"a long extension it does not name", edit("Write", "/home/alice/app.payrollfile"), []string{"alice", "payrollfile"}},
		{"a dot file", edit("Write", "/home/alice/.env"), []string{"alice"}},
		{"no extension", edit("Write", "/home/alice/payroll"), []string{"alice", "payroll"}},
		{"a notebook deleted", edit("NotebookEdit", "/home/alice/payroll.ipynb"), []string{"alice", "payroll"}},
		{"a patch's added, removed and context lines", `{"type":"user","uuid":"u2","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]},"toolUseResult":{"filePath":"/home/alice/pay.go","structuredPatch":[{"oldStart":1,"oldLines":3,"newStart":1,"newLines":4,"lines":[" func salary() {","-\treturn 1","+\treturn 2","+\t// alice","-","+"," }","\\ No newline at end of file"]}]}}`, []string{"alice", "salary", "return"}},
		{"a created file's content lines", `{"type":"user","uuid":"u2","toolUseResult":{"type":"create","filePath":"/home/alice/pay.go","content":"package payroll\n\nfunc salary() {}\n"}}`, []string{"alice", "payroll", "salary"}},
		{"a pull request URL in a shell call's output", `{"type":"user","uuid":"u2","toolUseResult":{"stdout":"Creating pull request for alice:payroll\nhttps://github.com/Alice/Payroll/pull/42\n","stderr":""}}`, []string{"alice", "Alice", "payroll", "Payroll"}},
		{"a pr-link record", `{"type":"pr-link","sessionId":"s","prNumber":42,"prUrl":"https://github.com/Alice/Payroll/pull/42","prRepository":"Alice/Payroll"}`, []string{"Alice", "Payroll"}},
		{"a pr-link record without a URL", `{"type":"pr-link","sessionId":"s","prNumber":42,"prRepository":"alice/payroll"}`, []string{"alice", "payroll"}},
		{"a custom skill", `{"type":"assistant","uuid":"u1","attributionSkill":"payroll-report","message":{"id":"m1","role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Skill","input":{"skill":"payroll-report"}}]}}`, []string{"payroll", "report"}},
		{"a built-in skill", `{"type":"assistant","uuid":"u1","attributionSkill":"simplify","message":{"id":"m1","role":"assistant","content":[]}}`, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := New([]byte("k"))
			out := anonymizeLine(a, tc.line)
			if got, want := facts(t, out), facts(t, tc.line); got != want {
				t.Errorf("the copy reads\n  %s\nthe original\n  %s\ncopy: %s", got, want, out)
			}
			for _, w := range tc.gone {
				if strings.Contains(out, w) {
					t.Errorf("%q survived: %s", w, out)
				}
			}
		})
	}
}

// TestShellCopiesAnswerEveryWordQuestionAlike checks fillShell's promise
// for any reading of a command, not only today's rule: the copy has the
// same bytes outside words, and each word (a maximal run of letters and
// digits) equals a vocabulary word exactly when the original's does.
func TestShellCopiesAnswerEveryWordQuestionAlike(t *testing.T) {
	cmds := []string{
		"git commit -m \"$(cat <<'EOF'\nFix the bug in the parser for now\nEOF\n)\" && git push origin feature/alice",
		"for r in a b c; do (cd $r && git commit -qam 'wip: alice'); done",
		"if ! git diff --quiet; then /opt/homebrew/bin/git commit -m x; fi",
		"cat <<-EOL > f\n\tgit commit\n\tEOL\ngh pr create --fill",
	}
	word := regexp.MustCompile(`[A-Za-z0-9]+`)
	for _, cmd := range cmds {
		line := bash(cmd)
		out := anonymizeLine(New([]byte("k")), line)
		var got string
		var r struct {
			Message struct {
				Content []struct {
					Input struct{ Command string }
				}
			}
		}
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatal(err)
		}
		got = r.Message.Content[0].Input.Command
		if len(got) != len(cmd) {
			t.Fatalf("length %d, want %d: %q", len(got), len(cmd), got)
		}
		skeleton := func(s string) string {
			return word.ReplaceAllStringFunc(s, func(w string) string { return strings.Repeat("a", len(w)) })
		}
		if skeleton(got) != skeleton(cmd) {
			t.Errorf("punctuation moved:\n  %q\n  %q", got, cmd)
		}
		ow, cw := word.FindAllString(cmd, -1), word.FindAllString(got, -1)
		for i := range ow {
			vocab := func(w string) bool { return shellWords[w] || optionRuns[w] }
			if vocab(ow[i]) != vocab(cw[i]) || vocab(ow[i]) && ow[i] != cw[i] {
				t.Errorf("word %d: %q became %q", i, ow[i], cw[i])
			}
		}
		if got, want := transcript.ShellFactsOf(got), transcript.ShellFactsOf(cmd); got != want {
			t.Errorf("%q: facts %d, want %d", cmd, got, want)
		}
	}
}

func TestJobStatesStayAndProseGoes(t *testing.T) {
	for _, state := range []string{"blocked", "done", "in_progress", "needs-input"} {
		line := `{"state":"` + state + `","sessionId":"s","detail":"waiting for alice"}`
		out := anonymizeLine(New([]byte("k")), line)
		js, err := claudedir.ParseJobState([]byte(out))
		if err != nil || js.State != state {
			t.Errorf("state %q became %+v (%v): %s", state, js, err, out)
		}
		if strings.Contains(out, "alice") {
			t.Errorf("detail survived: %s", out)
		}
	}
	out := anonymizeLine(New([]byte("k")), `{"state":"Waiting on Alice"}`)
	if strings.Contains(out, "Alice") {
		t.Errorf("a state that is prose survived: %s", out)
	}
}

// TestPullRequestsStayOneOrMany checks that the copies of one pull
// request's URLs (in a shell call's output and a pr-link record, in any
// letter case) name one pull request, and different ones stay different.
func TestPullRequestsStayOneOrMany(t *testing.T) {
	a := New([]byte("k"))
	key := func(line string) string {
		var r transcript.Record
		if err := transcript.NewDecoder(transcript.Options{}).Decode([]byte(anonymizeLine(a, line)), &r); err != nil {
			t.Fatal(err)
		}
		x := r.Rare()
		if x.OutputPRURL != "" {
			return session.PullRequestKey(x.OutputPRURL, "", 0)
		}
		return session.PullRequestKey(x.PRURL, x.PRRepo, x.PRNumber)
	}
	out := key(`{"type":"user","toolUseResult":{"stdout":"https://github.com/Alice/Payroll/pull/42\n"}}`)
	link := key(`{"type":"pr-link","prNumber":42,"prUrl":"https://github.com/alice/payroll/pull/42","prRepository":"alice/payroll"}`)
	bare := key(`{"type":"pr-link","prNumber":42,"prRepository":"ALICE/payroll"}`)
	other := key(`{"type":"pr-link","prNumber":42,"prUrl":"https://github.com/alice/payrolls/pull/42"}`)
	otherNumber := key(`{"type":"pr-link","prNumber":43,"prUrl":"https://github.com/alice/payroll/pull/43"}`)
	if out == "" || out != link || link != bare {
		t.Errorf("one pull request became %q, %q and %q", out, link, bare)
	}
	if other == link || otherNumber == link || strings.Contains(link, "alice") {
		t.Errorf("pull requests %q, %q, %q", link, other, otherNumber)
	}
}

func TestAgentIdsKeepRandomPartsOnly(t *testing.T) {
	cases := []struct {
		id   string
		kept bool
	}{
		{"a1b2c3d", true},
		{"aacfadc", true}, // "a" + 7 hex letters: random
		{"a0123456789abcdef", true},
		{"5e9a01b2", true},
		{"03dba5be-eb42-416a-84ff-abcdefabcdef", true}, // a session id
		{"acompact-3c44c3", true},
		{"aprompt_suggestion-0a1b2c", true},
		{"aside_question-5f3e2a1b", true},
		{"acafe-0123456789abcdef", false}, // a name: "acafe" is too short for random hex
		{"a20261125-1600moxamox-0123456789abcdef", false},
		{"areviewer-0123456789abcdef", false},
	}
	for _, tc := range cases {
		b := []byte(tc.id)
		New([]byte("k")).fillID(b)
		if got := string(b) == tc.id; got != tc.kept {
			t.Errorf("%s became %s, kept %v, want %v", tc.id, b, got, tc.kept)
		}
		if len(b) != len(tc.id) || b[0] != 'a' && tc.id[0] == 'a' {
			t.Errorf("%s became %s: not the same shape", tc.id, b)
		}
	}
}
