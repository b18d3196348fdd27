package transcript

import (
	"strings"
	"testing"
)

func TestShellFactsOf(t *testing.T) {
	cases := []struct {
		name string
		cmd  string
		want ShellFacts
	}{
		{"plain commit", `git commit -m "fix"`, ShellCommit},
		{"commit message from a quoted here-document in a substitution", `git add -A && git commit -m "$(cat <<'EOF'` + "\nFix the parser\n\nCo-Authored-By: Claude\nEOF\n)\"", ShellCommit},
		{"git -C before commit", `cd /repo && git -C sub commit -am wip`, ShellCommit},
		{"a lone dash before the subcommand is an option", `git - commit -m x`, ShellCommit},
		{"commit as the argument of -C is no subcommand", "0& git -C commit", 0},
		{"a NUL is no name's byte", "\x00= git commit", 0},
		{"a NUL in a path to git", "a\x00/git commit", ShellCommit},
		{"an operator ends an option word", "git -& commit", 0},
		{"an operator ends -C's argument", "git -C a;b commit", 0},
		{"a brace ends the commit's words", "git commit -m x{ --dry-run", ShellCommit},
		{"an operator ends an assignment", "A=x;y git commit", 0},
		{"a path whose first word is no name", "=/git commit", ShellCommit},
		{"a path after a number and =", "1A=/x/git commit", ShellCommit},
		{"an assignment of a path is no command", "A=/x/git commit", 0},
		{"an append assignment of a path is no command", "A+=/x/git commit", 0},
		{"a redirection glued to a path", "2>/x/git commit", ShellCommit},
		{"commit as the argument of --git-dir is no subcommand", `git --git-dir commit`, 0},
		{"an option that only starts like -C stands alone", `git -Cx commit -m x`, ShellCommit},
		{"--dry-run before commit is git's option, not commit's", `git --dry-run commit -m x`, ShellCommit},
		{"global options before commit", `git -c user.name=x --no-pager commit --amend --no-edit`, ShellCommit},
		{"assignment before git", `GIT_AUTHOR_DATE=now git commit -m x`, ShellCommit},
		{"dry run is no commit", `git commit --dry-run`, 0},
		{"other git subcommands", `git status; git log --oneline | head`, 0},
		{"git as an argument", `echo git commit`, 0},
		{"another subcommand starting with commit", `git commit-tree abc`, 0},
		{"pull request", `gh pr create --title x --body y`, ShellPRCreate},
		{"pull request after a push", `git push -u origin HEAD && gh pr create --fill`, ShellPRCreate},
		{"commit and pull request", `git commit -m x && git push && gh pr create --fill`, ShellCommit | ShellPRCreate},
		{"gh pr view", `gh pr view 12`, 0},
		{"gh pr list", `gh pr list`, 0},
		{"empty", ``, 0},
		{"sudo", `sudo git commit -m x`, ShellCommit},
		{"subshell", `(git commit -m x)`, ShellCommit},
		{"group", `{ git commit -m x; }`, ShellCommit},
		{"exec", `exec git commit -m x`, ShellCommit},
		{"copied prompt", `$ git commit -m x`, ShellCommit},

		// Quoted or escaped text is never a command word.
		{"separator in double quotes", `echo "done; git commit -m x"`, 0},
		{"single-quoted command", `echo 'git commit' | wc`, 0},
		{"newline inside a quoted body", `gh pr create --body "steps:` + "\n" + `git commit -m x"`, ShellPRCreate},
		{"escaped separator", `echo done\; git commit -m x`, 0},
		{"quoted subcommand", `git "commit" -m x`, 0},
		{"dry run inside the message", `git commit -m "try --dry-run next"`, ShellCommit},
		{"nested quotes of the other kind", `git commit -m 'a "quoted" word' && echo "it's done"`, ShellCommit},
		{"append assignment", `PATH+=:/x git commit -m x`, ShellCommit},
		{"a word with = but no name is the command", `= git commit -m x`, 0},
		{"an option with = is no assignment", `--x=1 git commit -m x`, 0},
		{"quoted assignment", `A="x y" git commit -m x`, ShellCommit},
		{"quoted global option argument", `git -C "/my repo" commit -m x`, ShellCommit},
		{"unclosed double quote", `echo "unclosed; git commit`, 0},
		{"unclosed single quote", `echo 'unclosed; git commit -m x`, 0},
		{"line continuation before an option", `git commit \` + "\n" + `  -m x`, ShellCommit},
		{"line continuation before the subcommand", "git \\\n commit -m x", ShellCommit},
		{"escaped quote inside double quotes", `echo "a\"; git commit"`, 0},
		{"escaped backslash closes the quote", `echo "a\\"; git commit`, ShellCommit},
		{"quoted command name", `"/usr/bin/git" commit -m x`, 0},

		// Here-documents: a quoted delimiter's body is text.
		{"quoted here-document body", "cat > notes.md <<'EOF'\ngit add -A && git commit -m x\nEOF", 0},
		{"double-quoted delimiter", "cat > notes.md <<\"EOF\"\ngit commit -m x\nEOF", 0},
		{"backslash-quoted delimiter", "cat > notes.md <<\\EOF\ngit commit -m x\nEOF", 0},
		{"partly quoted delimiter", "cat <<E'O'F\ngit commit -m x\nEOF", 0},
		{"blank before the delimiter", "cat > notes.md << 'EOF'\ngit commit -m x\nEOF", 0},
		{"<<- strips tabs before the terminator", "cat <<-'EOF'\n\tgit commit -m x\n\tEOF\ngit commit -m y", ShellCommit},
		{"<<- body stays text", "cat <<-'EOF'\n\tgit commit -m x\n\tEOF", 0},
		{"<<- strips tabs, not spaces", "cat <<-'EOF'\nx\n  EOF\ngit commit -m y", 0},
		{"commands after the terminator", "cat > notes.md <<'EOF'\ntext\nEOF\ngit commit -m x", ShellCommit},
		{"commands after the operator on its line", "cat <<'EOF' | git commit -F -\nsubject\nEOF", ShellCommit},
		{"quoted body's substitution is text", "cat <<'EOF'\n$(git commit -m x)\nEOF", 0},
		{"unterminated here-document runs to the end", "cat > notes.md <<'EOF'\ngit commit -m x", 0},
		{"terminator with trailing blanks is a body line", "cat <<'EOF'\nnotes\nEOF  \ngit commit -m x", 0},
		{"terminator with a trailing CR is a body line", "cat <<'EOF'\r\nnotes\r\nEOF\r\ngit commit -m x", 0},
		{"body quotes do not close anything", "git commit -m \"$(cat <<'EOF'\nDon't \"quote\" me\nEOF\n)\" && echo ok", ShellCommit},
		{"body with quotes and separators in a substitution", "echo \"$(cat <<'EOF'\nit's; gh pr create\nEOF\n)\"", 0},
		{"two here-documents on a line", "cat <<'A' <<B\ngit commit -m a\nA\n$(gh pr create --fill)\nB\necho done", ShellPRCreate},
		{"here-document fed to a shell is a body", "bash <<'EOF'\ngit commit -m x\nEOF", 0},
		{"<<EOF in double quotes is no here-document", "echo \"<<EOF\"\ngit commit -m x", ShellCommit},
		{"<<EOF in single quotes is no here-document", "echo '<<EOF'; git commit -m x", ShellCommit},
		{"here-string is no here-document", "cat <<<EOF\ngit commit -m x", ShellCommit},
		{"commit reading a here-string", `git commit -F - <<< "subject"`, ShellCommit},
		{"shift in arithmetic is no here-document", "echo $((1<<2))\ngit commit -m x", ShellCommit},
		{"operator without a delimiter", "cat <<\ngit commit -m x", ShellCommit},

		// An unquoted here-document's body is text too; only its
		// substitutions run.
		{"unquoted here-document body", "cat > notes <<EOF\ngit commit -m x\nEOF", 0},
		{"unquoted body's substitution runs", "cat <<EOF\n$(git commit -m x)\nEOF", ShellCommit},
		{"unquoted body's backquotes run", "cat <<EOF\n`gh pr create --fill`\nEOF", ShellPRCreate},
		{"escaped substitution in an unquoted body", "cat <<EOF\n\\$(git commit -m x)\nEOF", 0},
		{"unterminated unquoted body's substitution", "cat <<EOF\n$(git commit -m x)", ShellCommit},

		// Command substitutions run wherever the shell runs them.
		{"substitution in double quotes", `echo "$(git commit -m x)"`, ShellCommit},
		{"escaped substitution in double quotes", `echo "\$(git commit -m x)"`, 0},
		{"substitution in single quotes", `echo '$(git commit -m x)'`, 0},
		{"substitution in an assignment", `sha=$(git commit -q -m x && git rev-parse HEAD)`, ShellCommit},
		{"backquotes", "echo `git commit -m x`", ShellCommit},
		{"nested substitutions", `echo $(echo "$(git commit -m x)")`, ShellCommit},
		{"subshell inside a substitution", `echo "$( (cd a && git commit -m x) )"`, ShellCommit},
		{"substitution result is no command name", `$(echo git) commit -m x`, 0},
		{"unclosed substitution is read to the end", `echo "$(git commit -m x`, ShellCommit},
		{"dry run after a substitution", `git commit -m "$(cat msg)" --dry-run`, 0},
		{"parameter expansion is not a comment", `[ ${#x} -gt 0 ] && git commit -m x`, ShellCommit},

		// Comments are text.
		{"commented-out commit", "# git add -A && git commit -m x\necho ok", 0},
		{"comment after a command", "git status # then; git commit -m x", 0},
		{"hash inside a word", "echo a#b; git commit -m x", ShellCommit},

		// A command word after a shell keyword is a command.
		{"if condition", `if git commit -m x; then echo ok; fi`, ShellCommit},
		{"then branch", `if true; then git commit -m x; fi`, ShellCommit},
		{"else branch", `if false; then :; else git commit -m x; fi`, ShellCommit},
		{"elif condition", `if false; then :; elif git commit -m x; then :; fi`, ShellCommit},
		{"while negated condition", `while ! git commit -m x; do sleep 1; done`, ShellCommit},
		{"until condition", `until git commit -m x; do :; done`, ShellCommit},
		{"negated dry run", `! git commit --dry-run`, 0},
		{"keyword as an argument", `echo if git commit`, 0},
		// One fact per call: counted once per successful call however
		// many repositories the loop commits in.
		{"loop committing in several repositories", `for r in a b c; do git -C "$r" commit -am x; done`, ShellCommit},

		// The command is named by its last path element.
		{"absolute path", `/usr/bin/git commit -m x`, ShellCommit},
		{"relative path", `./bin/git commit -m x`, ShellCommit},
		{"path from a variable", `$HOME/bin/git commit -m x`, ShellCommit},
		{"gh by path", `/opt/homebrew/bin/gh pr create --fill`, ShellPRCreate},
		{"another program named like a path to git", `/usr/bin/gitk commit`, 0},
		{"a directory named git", `/usr/lib/git/ commit`, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := ShellFactsOf(tc.cmd); got != tc.want {
				t.Errorf("ShellFactsOf(%q) = %b, want %b", tc.cmd, got, tc.want)
			}
		})
	}
}

// TestShellFactsOfHostileInput reads inputs built to stress the lexer:
// it must end, and read them the way a shell would.
func TestShellFactsOfHostileInput(t *testing.T) {
	deep := strings.Repeat(`"$(`, 5000) + "git commit -m x" + strings.Repeat(`)"`, 5000)
	cases := []struct {
		name string
		cmd  string
		want ShellFacts
	}{
		{"deeply nested substitutions", deep, ShellCommit},
		{"unclosed nested substitutions", strings.Repeat("$(", 5000) + "git commit", ShellCommit},
		{"many here-documents on one line", strings.Repeat("<<'A' ", 2000) + "\n" + strings.Repeat("git commit\nA\n", 2000) + "gh pr create", ShellPRCreate},
		{"lone operators at the end", "git commit -m x; cat <<", ShellCommit},
		{"lone quote in a delimiter", "cat <<'", 0},
		{"lone double quote in a delimiter", "cat <<\"EOF\ngit commit", 0},
		{"lone backslash", "git commit -m x \\", ShellCommit},
		{"lone dollar", "git commit -m x $", ShellCommit},
		{"NUL bytes", "git commit -m x\x00; gh pr create", ShellCommit | ShellPRCreate},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := ShellFactsOf(tc.cmd); got != tc.want {
				t.Errorf("ShellFactsOf(%.80q…) = %b, want %b", tc.cmd, got, tc.want)
			}
		})
	}
}
