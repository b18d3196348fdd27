package transcript

import "strings"

// ShellFactsOf tells what a shell command line does that the exporter
// counts. The rule: the line is split into simple commands at ;, &, |,
// newlines, backquotes and the open/close of ( ) { } and $( ), and each
// simple command into words at blanks; quoted text ('…', "…") and
// backslash escapes never split anything and make the word they are in
// opaque from there on: such a word is never a command name, subcommand
// or option (so `echo "a; git commit"` runs no commit, and neither does
// git "commit"), but A="x y" is still an assignment.
// In each simple command, leading variable assignments (A=b) and the
// wrappers sudo, env, command, time, nohup are skipped; then
//   - `git [global options] commit …` without a --dry-run word is a commit;
//   - `gh pr create …` is a pull request.
//
// Not parsed: the body of an unquoted here-document (its lines are read as
// commands), aliases, functions, scripts the command runs.
func ShellFactsOf(cmd string) ShellFacts {
	var f ShellFacts
	var buf [16]string
	words := buf[:0]
	start, opaque := -1, -1 // start of the word, of its first quoted or escaped text
	endWord := func(i int) {
		if start >= 0 {
			w := cmd[start:i]
			if opaque >= 0 {
				w = cmd[start:opaque] + opaqueMark
			}
			words = append(words, w)
		}
		start, opaque = -1, -1
	}
	quoted := func(i int) {
		if start < 0 {
			start = i
		}
		if opaque < 0 {
			opaque = i
		}
	}
	for i := 0; i < len(cmd); i++ {
		switch c := cmd[i]; c {
		case ' ', '\t', '\r':
			endWord(i)
		case ';', '&', '|', '\n', '(', ')', '{', '}', '`':
			endWord(i)
			f |= simpleCommandFacts(words)
			words = words[:0]
		case '\\':
			if i+1 < len(cmd) && cmd[i+1] == '\n' { // a line continuation
				endWord(i)
				i++
				continue
			}
			quoted(i)
			i++
		case '\'', '"':
			quoted(i)
			i = closingQuote(cmd, i)
		default:
			if start < 0 {
				start = i
			}
		}
	}
	endWord(len(cmd))
	return f | simpleCommandFacts(words)
}

// opaqueMark replaces a word's text from its first quoted or escaped
// part on: "com\x00" for com"mit", "A=\x00" for A="x y" (an assignment).
const opaqueMark = "\x00"

// closingQuote is the index of the quote that closes the one at i (a
// backslash escapes inside double quotes), or the last index of cmd.
func closingQuote(cmd string, i int) int {
	q := cmd[i]
	for j := i + 1; j < len(cmd); j++ {
		switch cmd[j] {
		case q:
			return j
		case '\\':
			if q == '"' {
				j++
			}
		}
	}
	return len(cmd) - 1
}

// simpleCommandFacts is what one simple command's words do.
func simpleCommandFacts(w []string) ShellFacts {
	for len(w) > 0 && (strings.Contains(w[0], "=") && !strings.HasPrefix(w[0], "-") ||
		w[0] == "sudo" || w[0] == "env" || w[0] == "command" || w[0] == "time" || w[0] == "nohup" || w[0] == "$") {
		w = w[1:]
	}
	if len(w) == 0 {
		return 0
	}
	switch w[0] {
	case "git":
		if sub, rest := gitSubcommand(w[1:]); sub == "commit" && !hasWord(rest, "--dry-run") {
			return ShellCommit
		}
	case "gh":
		if len(w) >= 3 && w[1] == "pr" && w[2] == "create" {
			return ShellPRCreate
		}
	}
	return 0
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
