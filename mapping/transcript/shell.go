package transcript

import "strings"

// ShellFactsOf tells what a shell command line does that the exporter
// counts. The rule: the line is split into simple commands at ;, &, |,
// newlines and the open/close of ( ) { } and $( ); in each, leading
// variable assignments (A=b) and the wrappers sudo, env, command, time,
// nohup are skipped; then
//   - `git [global options] commit …` without --dry-run is a commit;
//   - `gh pr create …` is a pull request.
//
// Quoted text is not parsed: a commit message that itself starts a line
// with "git commit" would count, which real messages do not do.
func ShellFactsOf(cmd string) ShellFacts {
	var f ShellFacts
	for _, part := range strings.FieldsFunc(cmd, func(r rune) bool {
		switch r {
		case ';', '&', '|', '\n', '(', ')', '{', '}', '`':
			return true
		}
		return false
	}) {
		w := strings.Fields(part)
		for len(w) > 0 && (strings.Contains(w[0], "=") && !strings.HasPrefix(w[0], "-") ||
			w[0] == "sudo" || w[0] == "env" || w[0] == "command" || w[0] == "time" || w[0] == "nohup" || w[0] == "$") {
			w = w[1:]
		}
		if len(w) == 0 {
			continue
		}
		switch w[0] {
		case "git":
			if sub, rest := gitSubcommand(w[1:]); sub == "commit" && !hasWord(rest, "--dry-run") {
				f |= ShellCommit
			}
		case "gh":
			if len(w) >= 3 && w[1] == "pr" && w[2] == "create" {
				f |= ShellPRCreate
			}
		}
	}
	return f
}

// gitSubcommand skips git's global options (-C <dir>, -c <k=v>,
// --git-dir=…, --no-pager, …) and returns the subcommand and its words.
func gitSubcommand(w []string) (string, []string) {
	for i := 0; i < len(w); i++ {
		switch {
		case w[i] == "-C" || w[i] == "-c" || w[i] == "--git-dir" || w[i] == "--work-tree" || w[i] == "--namespace":
			i++
		case strings.HasPrefix(w[i], "-"):
		default:
			return w[i], w[i+1:]
		}
	}
	return "", nil
}

func hasWord(w []string, s string) bool {
	for _, x := range w {
		if x == s {
			return true
		}
	}
	return false
}
