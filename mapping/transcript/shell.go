package transcript

import "strings"

// ShellFactsOf tells what a shell command line does that the exporter
// counts. The rule: the line is split into simple commands at ;, &, |,
// newlines and ( ) { }, and each simple command into words at blanks.
// Quoted text ('…', "…"), backslash escapes, ${…}, $((…)) and command
// substitutions never split anything and make the word they are in
// opaque from there on: such a word is never a command name, subcommand
// or option (so `echo "a; git commit"` runs no commit, and neither does
// git "commit"), but A="x y" is still an assignment.
//
// A command substitution, $(…) or `…`, is a command list of its own,
// read by the same rule wherever the shell runs it: in the line, inside
// double quotes and inside an unquoted here-document's body. Text is
// never read as commands: single-quoted text, a comment (# at the start
// of a word, to the end of its line) and the body of a here-document
// (<<WORD or <<-WORD, from the line after the operator to the line that
// is exactly WORD, leading tabs stripped for <<-, or to the end when no
// line is); a quoted delimiter (<<'EOF', <<"EOF", <<\EOF) makes the
// body plain text, substitutions included.
//
// In each simple command, leading variable assignments (A=b, A+=b), the
// keywords if, then, else, elif, while, until, do and !, and the
// wrappers sudo, env, command, exec, time, nohup are skipped; then, with
// the command named by its last path element (/usr/bin/git is git),
//   - `git [global options] commit …` without a --dry-run word is a commit;
//   - `gh pr create …` is a pull request.
//
// Not parsed: aliases, functions defined elsewhere, scripts the command
// runs (a here-document fed to bash is a body, not commands), text handed
// to another program (bash -c '…', ssh host '…').
func ShellFactsOf(cmd string) ShellFacts {
	f, _ := lexCommands(cmd, 0, 0)
	return f
}

// lexer reads one command list: the whole line, or the inside of one
// command substitution.
type lexer struct {
	s      string
	facts  ShellFacts
	cmd    simpleCommand // the current simple command
	start  int           // start of the current word, -1 between words
	opaque int           // start of the current word's first quoted, escaped or substituted part, -1 if none
	// pending are the here-documents opened on the current line: their
	// bodies start at its newline.
	pending []hereDoc
}

// hereDoc is a here-document whose body is still to be read.
type hereDoc struct {
	delim  string
	quoted bool // the delimiter was quoted: the body is plain text
	tabs   bool // <<-: leading tabs are stripped from each body line
}

// lexCommands reads the command list of s from i to the byte stop (')'
// closing a $(, '`' closing a backquote, 0 for the end of s) and returns
// what it does and the index of that stop (len(s) when there is none).
func lexCommands(s string, i int, stop byte) (ShellFacts, int) {
	l := lexer{s: s, start: -1, opaque: -1}
	depth := 0 // subshells ( … ) open within a $( … )
	for ; i < len(s); i++ {
		c := s[i]
		if c == stop && stop != 0 && (stop == '`' || depth == 0) {
			break
		}
		switch c {
		case ' ', '\t', '\r':
			l.endWord(i)
		case '\n':
			l.endCommand(i)
			i = l.hereDocBodies(i+1) - 1
		case '(':
			depth++
			l.endCommand(i)
		case ')':
			if depth > 0 {
				depth--
			}
			l.endCommand(i)
		case ';', '&', '|', '{', '}':
			l.endCommand(i)
		case '#':
			if l.start >= 0 {
				continue
			}
			if j := strings.IndexByte(s[i:], '\n'); j >= 0 {
				i += j - 1 // the newline ends the command
			} else {
				i = len(s)
			}
		case '<':
			if strings.HasPrefix(s[i:], "<<<") { // a here-string: a word
				l.wordAt(i)
				i += 2
			} else if strings.HasPrefix(s[i:], "<<") {
				l.endWord(i)
				i = l.hereDocOperator(i+2) - 1
			} else {
				l.wordAt(i)
			}
		case '\\':
			if i+1 < len(s) && s[i+1] == '\n' { // a line continuation
				l.endWord(i)
				i++
				continue
			}
			l.markOpaque(i)
			i++
		case '\'':
			l.markOpaque(i)
			i = closingSingleQuote(s, i)
		case '"':
			l.markOpaque(i)
			i = l.doubleQuoted(i)
		case '`':
			l.markOpaque(i)
			i = l.substitution(i+1, '`')
		case '$':
			if end := l.dollar(i); end > i {
				l.markOpaque(i)
				i = end
			} else {
				l.wordAt(i) // $name, or the lone $ of a copied prompt
			}
		default:
			l.wordAt(i)
		}
	}
	if i > len(s) {
		i = len(s)
	}
	l.endCommand(i)
	return l.facts, i
}

func (l *lexer) wordAt(i int) {
	if l.start < 0 {
		l.start = i
	}
}

// markOpaque notes quoted, escaped or substituted text at i.
func (l *lexer) markOpaque(i int) {
	l.wordAt(i)
	if l.opaque < 0 {
		l.opaque = i
	}
}

func (l *lexer) endWord(i int) {
	if l.start >= 0 {
		if l.opaque >= 0 {
			l.cmd.word(l.s[l.start:l.opaque], true)
		} else {
			l.cmd.word(l.s[l.start:i], false)
		}
	}
	l.start, l.opaque = -1, -1
}

func (l *lexer) endCommand(i int) {
	l.endWord(i)
	l.facts |= l.cmd.end()
}

// substitution reads the command list from i to the stop byte and
// returns the stop's index.
func (l *lexer) substitution(i int, stop byte) int {
	f, end := lexCommands(l.s, i, stop)
	l.facts |= f
	return end
}

// dollar reads what starts with the $ at i: a command substitution, an
// arithmetic expansion or a ${…} expansion, and returns the index of its
// last byte (i for any other $).
func (l *lexer) dollar(i int) int {
	s := l.s
	switch {
	case strings.HasPrefix(s[i:], "$(("):
		return matchingParen(s, i+1)
	case strings.HasPrefix(s[i:], "$("):
		return l.substitution(i+2, ')')
	case strings.HasPrefix(s[i:], "${"):
		if j := strings.IndexByte(s[i:], '}'); j >= 0 {
			return i + j
		}
		return len(s)
	}
	return i
}

// doubleQuoted reads the double-quoted text whose opening quote is at i,
// running the command substitutions inside, and returns the index of the
// closing quote (len(s) when there is none).
func (l *lexer) doubleQuoted(i int) int {
	s := l.s
	for j := i + 1; j < len(s); j++ {
		switch s[j] {
		case '"':
			return j
		case '\\':
			j++
		case '`':
			j = l.substitution(j+1, '`')
		case '$':
			j = l.dollar(j)
		}
	}
	return len(s)
}

// hereDocOperator reads the delimiter after a << at i (a - first for
// <<-), queues the here-document and returns the index after the
// delimiter.
func (l *lexer) hereDocOperator(i int) int {
	s := l.s
	h := hereDoc{}
	if i < len(s) && s[i] == '-' {
		h.tabs = true
		i++
	}
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	var dbuf [32]byte
	delim := dbuf[:0] // the delimiter without its quoting
	first := i
	for ; i < len(s); i++ {
		c := s[i]
		if strings.IndexByte(" \t\r\n;&|<>()", c) >= 0 {
			break
		}
		switch c {
		case '\'':
			h.quoted = true
			end := closingSingleQuote(s, i)
			delim = append(delim, s[i+1:min(end, len(s))]...)
			i = end
		case '"':
			h.quoted = true
			for i++; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) {
					i++
				}
				delim = append(delim, s[i])
			}
		case '\\':
			h.quoted = true
			if i+1 < len(s) {
				i++
				delim = append(delim, s[i])
			}
		default:
			delim = append(delim, c)
		}
	}
	if len(delim) > 0 || h.quoted {
		// The delimiter's bytes as a slice of s when they are one: a plain
		// or a single-quoted word, the usual kinds.
		switch word := s[first:min(i, len(s))]; {
		case !strings.ContainsAny(word, `'"\`):
			h.delim = word
		case len(word) >= 2 && word[0] == '\'' && strings.IndexByte(word[1:], '\'') == len(word)-2:
			h.delim = word[1 : len(word)-1]
		default:
			h.delim = string(delim)
		}
		l.pending = append(l.pending, h)
	}
	return min(i, len(s))
}

// hereDocBodies reads the bodies of the here-documents opened on the line
// that ended before i and returns the index after the last one.
func (l *lexer) hereDocBodies(i int) int {
	s := l.s
	for _, h := range l.pending {
		body := i
		for i < len(s) {
			end := strings.IndexByte(s[i:], '\n')
			next := i + end + 1
			if end < 0 {
				end, next = len(s)-i, len(s)
			}
			line := s[i : i+end]
			if h.tabs {
				line = strings.TrimLeft(line, "\t")
			}
			if line == h.delim {
				if !h.quoted {
					l.facts |= bodyFacts(s[body:i])
				}
				body = -1
				i = next
				break
			}
			i = next
		}
		if body >= 0 && !h.quoted { // no terminator: the body runs to the end
			l.facts |= bodyFacts(s[body:])
		}
	}
	l.pending = l.pending[:0]
	return i
}

// bodyFacts is what the command substitutions of an unquoted
// here-document's body do.
func bodyFacts(body string) ShellFacts {
	l := lexer{s: body, start: -1, opaque: -1}
	for j := 0; j < len(body); j++ {
		switch body[j] {
		case '\\':
			j++
		case '`':
			j = l.substitution(j+1, '`')
		case '$':
			j = l.dollar(j)
		}
	}
	return l.facts
}

// closingSingleQuote is the index of the quote that closes the one at i,
// or len(s) when none does.
func closingSingleQuote(s string, i int) int {
	if j := strings.IndexByte(s[i+1:], '\''); j >= 0 {
		return i + 1 + j
	}
	return len(s)
}

// matchingParen is the index of the ) that closes the ( at i, or len(s).
func matchingParen(s string, i int) int {
	depth := 0
	for j := i; j < len(s); j++ {
		switch s[j] {
		case '(':
			depth++
		case ')':
			if depth--; depth == 0 {
				return j
			}
		}
	}
	return len(s)
}

// simpleCommand reads one simple command's words as they come.
type simpleCommand struct {
	step    uint8 // what the next word is (see stepName…)
	skipArg bool  // the next word is a git global option's argument
	dryRun  bool  // a --dry-run word came
}

// The steps of a simple command.
const (
	stepName     = iota // before its name: assignments, keywords and wrappers are skipped
	stepGitSub          // after git: global options, then the subcommand
	stepCommit          // the words of a git commit
	stepGhPr            // after gh: pr
	stepGhCreate        // after gh pr: create
	stepPRCreate        // gh pr create
	stepNone            // not a command the exporter counts
)

// word takes the next word: text is its bytes up to its first quoted,
// escaped or substituted part, opaque tells there is one. An opaque word
// is never a name, subcommand or option (but A="x y" is an assignment,
// and "-x…" an option).
func (c *simpleCommand) word(text string, opaque bool) {
	switch c.step {
	case stepName:
		switch {
		case isAssignment(text) || !opaque && skipped(text):
		case opaque:
			c.step = stepNone
		default:
			switch text[strings.LastIndexByte(text, '/')+1:] {
			case "git":
				c.step = stepGitSub
			case "gh":
				c.step = stepGhPr
			default:
				c.step = stepNone
			}
		}
	case stepGitSub:
		switch {
		case c.skipArg:
			c.skipArg = false
		case strings.HasPrefix(text, "-"):
			c.skipArg = !opaque && (text == "-C" || text == "-c" || text == "--git-dir" || text == "--work-tree" || text == "--namespace")
		case !opaque && text == "commit":
			c.step = stepCommit
		default:
			c.step = stepNone
		}
	case stepCommit:
		c.dryRun = c.dryRun || !opaque && text == "--dry-run"
	case stepGhPr:
		c.step = stepNone
		if !opaque && text == "pr" {
			c.step = stepGhCreate
		}
	case stepGhCreate:
		c.step = stepNone
		if !opaque && text == "create" {
			c.step = stepPRCreate
		}
	}
}

// end is what the simple command does, and readies c for the next one.
func (c *simpleCommand) end() ShellFacts {
	var f ShellFacts
	switch {
	case c.step == stepCommit && !c.dryRun:
		f = ShellCommit
	case c.step == stepPRCreate:
		f = ShellPRCreate
	}
	*c = simpleCommand{}
	return f
}

// isAssignment tells a variable assignment: NAME=… or NAME+=…, NAME a
// letter or _ then letters, digits or _.
func isAssignment(w string) bool {
	name, _, ok := strings.Cut(w, "=")
	name = strings.TrimSuffix(name, "+")
	if !ok || name == "" {
		return false
	}
	for i, c := range []byte(name) {
		if !(c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || i > 0 && '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

// skipped tells the words before a command's name: keywords, wrappers
// that run the command after them, and the $ of a copied prompt.
func skipped(w string) bool {
	switch w {
	case "if", "then", "else", "elif", "while", "until", "do", "!",
		"sudo", "env", "command", "exec", "time", "nohup", "$":
		return true
	}
	return false
}
