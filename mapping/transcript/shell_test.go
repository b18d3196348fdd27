package transcript

import "testing"

func TestShellFactsOf(t *testing.T) {
	cases := []struct {
		cmd  string
		want ShellFacts
	}{
		{`git commit -m "fix"`, ShellCommit},
		{`git add -A && git commit -m "$(cat <<'EOF'` + "\nFix the parser\n\nCo-Authored-By: Claude\nEOF\n)\"", ShellCommit},
		{`cd /repo && git -C sub commit -am wip`, ShellCommit},
		{`git -c user.name=x --no-pager commit --amend --no-edit`, ShellCommit},
		{`GIT_AUTHOR_DATE=now git commit -m x`, ShellCommit},
		{`git commit --dry-run`, 0},
		{`git status; git log --oneline | head`, 0},
		{`echo git commit`, 0},
		{`git commit-tree abc`, 0},
		{`gh pr create --title x --body y`, ShellPRCreate},
		{`git push -u origin HEAD && gh pr create --fill`, ShellPRCreate},
		{`git commit -m x && git push && gh pr create --fill`, ShellCommit | ShellPRCreate},
		{`gh pr view 12`, 0},
		{`gh pr list`, 0},
		{``, 0},
		{`sudo git commit -m x`, ShellCommit},
		{`(git commit -m x)`, ShellCommit},
		// Quoted or escaped text is never a command word.
		{`echo "done; git commit -m x"`, 0},
		{`echo 'git commit' | wc`, 0},
		{`gh pr create --body "steps:` + "\n" + `git commit -m x"`, ShellPRCreate},
		{`echo done\; git commit -m x`, 0},
		{`git "commit" -m x`, 0},
		{`git commit -m "try --dry-run next"`, ShellCommit},
		{`git commit -m 'a "quoted" word' && echo "it's done"`, ShellCommit},
		{`A="x y" git commit -m x`, ShellCommit},
		{`git -C "/my repo" commit -m x`, ShellCommit},
		{`echo "unclosed; git commit`, 0},
		{`git commit \` + "\n" + `  -m x`, ShellCommit},
		{"git \\\n commit -m x", ShellCommit},
		{`echo "a\"; git commit"`, 0},
		{`echo "a\\"; git commit`, ShellCommit},
		// Not parsed: an unquoted here-document's body is read as commands.
		{"cat > notes <<EOF\ngit commit -m x\nEOF", ShellCommit},
	}
	for _, tc := range cases {
		if got := ShellFactsOf(tc.cmd); got != tc.want {
			t.Errorf("ShellFactsOf(%q) = %b, want %b", tc.cmd, got, tc.want)
		}
	}
}
