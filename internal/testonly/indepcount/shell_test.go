package indepcount

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/testonly/testbackend"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/transcript"
)

// shellCase is a command and what the commit and pull-request rule
// says it does.
type shellCase struct {
	name       string
	cmd        string
	commit, pr bool
}

// shellCases are the rule's shapes: the same as the exporter's
// (mapping/transcript), read here by this package's own code.
func shellCases() []shellCase {
	deep := strings.Repeat(`"$(`, 5000) + "git commit -m x" + strings.Repeat(`)"`, 5000)
	return []shellCase{
		{"plain commit", `git commit -m "fix"`, true, false},
		{"commit message from a quoted here-document in a substitution", `git add -A && git commit -m "$(cat <<'EOF'` + "\nFix the parser\n\nCo-Authored-By: Claude\nEOF\n)\"", true, false},
		{"git -C before commit", `cd /repo && git -C sub commit -am wip`, true, false},
		{"a lone dash before the subcommand is an option", `git - commit -m x`, true, false},
		{"commit as the argument of -C is no subcommand", "0& git -C commit", false, false},
		{"a NUL is no name's byte", "\x00= git commit", false, false},
		{"a NUL in a path to git", "a\x00/git commit", true, false},
		{"an operator ends an option word", "git -& commit", false, false},
		{"an operator ends -C's argument", "git -C a;b commit", false, false},
		{"a brace ends the commit's words", "git commit -m x{ --dry-run", true, false},
		{"an operator ends an assignment", "A=x;y git commit", false, false},
		{"a path whose first word is no name", "=/git commit", true, false},
		{"a path after a number and =", "1A=/x/git commit", true, false},
		{"an assignment of a path is no command", "A=/x/git commit", false, false},
		{"an append assignment of a path is no command", "A+=/x/git commit", false, false},
		{"a redirection glued to a path", "2>/x/git commit", true, false},
		{"commit as the argument of --git-dir is no subcommand", `git --git-dir commit`, false, false},
		{"an option that only starts like -C stands alone", `git -Cx commit -m x`, true, false},
		{"--dry-run before commit is git's option, not commit's", `git --dry-run commit -m x`, true, false},
		{"global options before commit", `git -c user.name=x --no-pager commit --amend --no-edit`, true, false},
		{"assignment before git", `GIT_AUTHOR_DATE=now git commit -m x`, true, false},
		{"dry run is no commit", `git commit --dry-run`, false, false},
		{"other git subcommands", `git status; git log --oneline | head`, false, false},
		{"git as an argument", `echo git commit`, false, false},
		{"another subcommand starting with commit", `git commit-tree abc`, false, false},
		{"pull request", `gh pr create --title x --body y`, false, true},
		{"pull request after a push", `git push -u origin HEAD && gh pr create --fill`, false, true},
		{"commit and pull request", `git commit -m x && git push && gh pr create --fill`, true, true},
		{"gh pr view", `gh pr view 12`, false, false},
		{"gh pr list", `gh pr list`, false, false},
		{"empty", ``, false, false},
		{"sudo", `sudo git commit -m x`, true, false},
		{"subshell", `(git commit -m x)`, true, false},
		{"group", `{ git commit -m x; }`, true, false},
		{"exec", `exec git commit -m x`, true, false},
		{"copied prompt", `$ git commit -m x`, true, false},
		// Quoted or escaped text is never a command word.
		{"separator in double quotes", `echo "done; git commit -m x"`, false, false},
		{"single-quoted command", `echo 'git commit' | wc`, false, false},
		{"newline inside a quoted body", `gh pr create --body "steps:` + "\n" + `git commit -m x"`, false, true},
		{"escaped separator", `echo done\; git commit -m x`, false, false},
		{"quoted subcommand", `git "commit" -m x`, false, false},
		{"dry run inside the message", `git commit -m "try --dry-run next"`, true, false},
		{"nested quotes of the other kind", `git commit -m 'a "quoted" word' && echo "it's done"`, true, false},
		{"append assignment", `PATH+=:/x git commit -m x`, true, false},
		{"a word with = but no name is the command", `= git commit -m x`, false, false},
		{"an option with = is no assignment", `--x=1 git commit -m x`, false, false},
		{"quoted assignment", `A="x y" git commit -m x`, true, false},
		{"quoted global option argument", `git -C "/my repo" commit -m x`, true, false},
		{"unclosed double quote", `echo "unclosed; git commit`, false, false},
		{"unclosed single quote", `echo 'unclosed; git commit -m x`, false, false},
		{"line continuation before an option", `git commit \` + "\n" + `  -m x`, true, false},
		{"line continuation before the subcommand", "git \\\n commit -m x", true, false},
		{"escaped quote inside double quotes", `echo "a\"; git commit"`, false, false},
		{"escaped backslash closes the quote", `echo "a\\"; git commit`, true, false},
		{"quoted command name", `"/usr/bin/git" commit -m x`, false, false},
		// Here-documents: a quoted delimiter's body is text.
		{"quoted here-document body", "cat > notes.md <<'EOF'\ngit add -A && git commit -m x\nEOF", false, false},
		{"double-quoted delimiter", "cat > notes.md <<\"EOF\"\ngit commit -m x\nEOF", false, false},
		{"backslash-quoted delimiter", "cat > notes.md <<\\EOF\ngit commit -m x\nEOF", false, false},
		{"partly quoted delimiter", "cat <<E'O'F\ngit commit -m x\nEOF", false, false},
		{"blank before the delimiter", "cat > notes.md << 'EOF'\ngit commit -m x\nEOF", false, false},
		{"<<- strips tabs before the terminator", "cat <<-'EOF'\n\tgit commit -m x\n\tEOF\ngit commit -m y", true, false},
		{"<<- body stays text", "cat <<-'EOF'\n\tgit commit -m x\n\tEOF", false, false},
		{"<<- strips tabs, not spaces", "cat <<-'EOF'\nx\n  EOF\ngit commit -m y", false, false},
		{"commands after the terminator", "cat > notes.md <<'EOF'\ntext\nEOF\ngit commit -m x", true, false},
		{"commands after the operator on its line", "cat <<'EOF' | git commit -F -\nsubject\nEOF", true, false},
		{"quoted body's substitution is text", "cat <<'EOF'\n$(git commit -m x)\nEOF", false, false},
		{"unterminated here-document runs to the end", "cat > notes.md <<'EOF'\ngit commit -m x", false, false},
		{"terminator with trailing blanks is a body line", "cat <<'EOF'\nnotes\nEOF  \ngit commit -m x", false, false},
		{"terminator with a trailing CR is a body line", "cat <<'EOF'\r\nnotes\r\nEOF\r\ngit commit -m x", false, false},
		{"body quotes do not close anything", "git commit -m \"$(cat <<'EOF'\nDon't \"quote\" me\nEOF\n)\" && echo ok", true, false},
		{"body with quotes and separators in a substitution", "echo \"$(cat <<'EOF'\nit's; gh pr create\nEOF\n)\"", false, false},
		{"two here-documents on a line", "cat <<'A' <<B\ngit commit -m a\nA\n$(gh pr create --fill)\nB\necho done", false, true},
		{"here-document fed to a shell is a body", "bash <<'EOF'\ngit commit -m x\nEOF", false, false},
		{"<<EOF in double quotes is no here-document", "echo \"<<EOF\"\ngit commit -m x", true, false},
		{"<<EOF in single quotes is no here-document", "echo '<<EOF'; git commit -m x", true, false},
		{"here-string is no here-document", "cat <<<EOF\ngit commit -m x", true, false},
		{"commit reading a here-string", `git commit -F - <<< "subject"`, true, false},
		{"shift in arithmetic is no here-document", "echo $((1<<2))\ngit commit -m x", true, false},
		{"operator without a delimiter", "cat <<\ngit commit -m x", true, false},
		// An unquoted here-document's body is text too; only its
		// substitutions run.
		{"unquoted here-document body", "cat > notes <<EOF\ngit commit -m x\nEOF", false, false},
		{"unquoted body's substitution runs", "cat <<EOF\n$(git commit -m x)\nEOF", true, false},
		{"unquoted body's backquotes run", "cat <<EOF\n`gh pr create --fill`\nEOF", false, true},
		{"escaped substitution in an unquoted body", "cat <<EOF\n\\$(git commit -m x)\nEOF", false, false},
		{"unterminated unquoted body's substitution", "cat <<EOF\n$(git commit -m x)", true, false},
		// Command substitutions run wherever the shell runs them.
		{"substitution in double quotes", `echo "$(git commit -m x)"`, true, false},
		{"escaped substitution in double quotes", `echo "\$(git commit -m x)"`, false, false},
		{"substitution in single quotes", `echo '$(git commit -m x)'`, false, false},
		{"substitution in an assignment", `sha=$(git commit -q -m x && git rev-parse HEAD)`, true, false},
		{"backquotes", "echo `git commit -m x`", true, false},
		{"nested substitutions", `echo $(echo "$(git commit -m x)")`, true, false},
		{"subshell inside a substitution", `echo "$( (cd a && git commit -m x) )"`, true, false},
		{"substitution result is no command name", `$(echo git) commit -m x`, false, false},
		{"unclosed substitution is read to the end", `echo "$(git commit -m x`, true, false},
		{"dry run after a substitution", `git commit -m "$(cat msg)" --dry-run`, false, false},
		{"parameter expansion is not a comment", `[ ${#x} -gt 0 ] && git commit -m x`, true, false},
		// Comments are text.
		{"commented-out commit", "# git add -A && git commit -m x\necho ok", false, false},
		{"comment after a command", "git status # then; git commit -m x", false, false},
		{"hash inside a word", "echo a#b; git commit -m x", true, false},
		// A command word after a shell keyword is a command.
		{"if condition", `if git commit -m x; then echo ok; fi`, true, false},
		{"then branch", `if true; then git commit -m x; fi`, true, false},
		{"else branch", `if false; then :; else git commit -m x; fi`, true, false},
		{"elif condition", `if false; then :; elif git commit -m x; then :; fi`, true, false},
		{"while negated condition", `while ! git commit -m x; do sleep 1; done`, true, false},
		{"until condition", `until git commit -m x; do :; done`, true, false},
		{"negated dry run", `! git commit --dry-run`, false, false},
		{"keyword as an argument", `echo if git commit`, false, false},
		// One fact per call: counted once per successful call however
		// many repositories the loop commits in.
		{"loop committing in several repositories", `for r in a b c; do git -C "$r" commit -am x; done`, true, false},
		// The command is named by its last path element.
		{"absolute path", `/usr/bin/git commit -m x`, true, false},
		{"relative path", `./bin/git commit -m x`, true, false},
		{"path from a variable", `$HOME/bin/git commit -m x`, true, false},
		{"gh by path", `/opt/homebrew/bin/gh pr create --fill`, false, true},
		{"another program named like a path to git", `/usr/bin/gitk commit`, false, false},
		{"a directory named git", `/usr/lib/git/ commit`, false, false},
		{"deeply nested substitutions", deep, true, false},
		{"unclosed nested substitutions", strings.Repeat("$(", 5000) + "git commit", true, false},
		{"many here-documents on one line", strings.Repeat("<<'A' ", 2000) + "\n" + strings.Repeat("git commit\nA\n", 2000) + "gh pr create", false, true},
		{"lone operators at the end", "git commit -m x; cat <<", true, false},
		{"lone quote in a delimiter", "cat <<'", false, false},
		{"lone double quote in a delimiter", "cat <<\"EOF\ngit commit", false, false},
		{"lone backslash", "git commit -m x \\", true, false},
		{"lone dollar", "git commit -m x $", true, false},
		{"NUL bytes", "git commit -m x\x00; gh pr create", true, true},
	}
}

func TestShellCounts(t *testing.T) {
	for _, tc := range shellCases() {
		t.Run(tc.name, func(t *testing.T) {
			if commit, pr := shellCounts(tc.cmd); commit != tc.commit || pr != tc.pr {
				t.Errorf("shellCounts(%.80q) = %v, %v; want %v, %v", tc.cmd, commit, pr, tc.commit, tc.pr)
			}
		})
	}
}

// FuzzShellRulesAgree checks that this package's reading of a command
// and the exporter's (transcript.ShellFactsOf) agree on any input: the
// two are written apart, and the end-to-end test compares their totals.
func FuzzShellRulesAgree(f *testing.F) {
	for _, tc := range shellCases() {
		if len(tc.cmd) <= 4096 {
			f.Add(tc.cmd)
		}
	}
	f.Fuzz(func(t *testing.T, cmd string) {
		if len(cmd) > 4096 {
			return
		}
		commit, pr := shellCounts(cmd)
		facts := transcript.ShellFactsOf(cmd)
		if commit != (facts&transcript.ShellCommit != 0) || pr != (facts&transcript.ShellPRCreate != 0) {
			t.Errorf("%q: here commit=%v pr=%v, exporter facts %b", cmd, commit, pr, facts)
		}
	})
}

// TestShellTreeCommits counts the synthetic tree of shell shapes
// (testdata/synthetic/shell): 20 Bash calls, of which these commit: the
// commit after a <<-'EOF' body, the $(git commit …) of an unquoted body,
// the commit after echo "<<EOF", the if and until conditions,
// /usr/bin/git, $HOME/bin/git, the loop over three repositories (one
// call), the message read from a quoted here-document, and the
// substitution in double quotes. The failed if git commit does not count,
// nor any commit in a here-document's body; gh by path opens one pull
// request.
func TestShellTreeCommits(t *testing.T) {
	got, err := Count(filepath.Join(testbackend.RepoRoot(t), "testdata", "synthetic", "shell"))
	if err != nil {
		t.Fatal(err)
	}
	if got.Commits != 10 || got.PullRequestsCreated != 1 {
		t.Errorf("commits %d, pull requests created %d; want 10, 1", got.Commits, got.PullRequestsCreated)
	}
}
