package indepcount

import (
	"regexp"
	"strings"
)

// The commit and pull-request rule, written apart from the exporter's
// lexer: a command line is first cut into the command texts the shell
// runs (shellTexts), each made plain so that only command words are left
// readable, and the regular expressions below then look for git commit
// and gh pr create at the start of a simple command in each text.

// commitRe and prRe find, at the start of a simple command (after ;, &,
// |, a newline or a bracket, and after variable assignments, the
// keywords if/then/else/elif/while/until/do/! and the wrappers
// sudo/env/command/exec/time/nohup), a git commit (git's global options
// allowed before it: -C, -c, --git-dir, --work-tree and --namespace take
// the next word, any other word starting with - stands alone) or a gh pr
// create; git and gh may be named by a path (/usr/bin/git). The first
// group of commitRe is what follows commit in its simple command, where
// dryRunRe looks for a --dry-run word.
var (
	blank     = `[ \t\r]`           // what separates words (a newline separates commands)
	word      = `[^ \t\r\n;&|(){}]` // a word's byte: the rest end a word, and its command
	prefix    = `(?:^|[;&|\n(){}])` + blank + `*(?:(?:[A-Za-z_][A-Za-z0-9_]*\+?=` + word + `*|sudo|env|command|exec|time|nohup|if|then|else|elif|while|until|do|!|\$)` + blank + `+)*` + pathTo
	pathTo    = pathPrefix()
	argOption = `-[Cc]|--git-dir|--work-tree|--namespace`
	aloneOpt  = `-` + otherThan("C", "c", "-git-dir", "-work-tree", "-namespace")
	commitRe  = regexp.MustCompile(prefix + `git(?:` + blank + `+(?:` + argOption + `)` + blank + `+` + word + `+|` + blank + `+` + aloneOpt + `)*` + blank + `+commit((?:` + blank + `[^;&|\n(){}]*)?)(?:$|[;&|\n(){}])`)
	prRe      = regexp.MustCompile(prefix + `gh` + blank + `+pr` + blank + `+create(?:` + blank + `|$|[;&|\n(){}])`)
	dryRunRe  = regexp.MustCompile(`(?:^|` + blank + `)--dry-run(?:$|` + blank + `)`)
)

// pathPrefix is a pattern for what may stand before git or gh in the
// command word: nothing, or the directories of a path (/usr/bin/), a word
// ending in / that is not an assignment (A=/x/git is an assignment; =/git
// and 1A=/git are commands) and holds nothing quoted.
func pathPrefix() string {
	const ends = ` \t\r\n\x00;&|(){}` // bytes no command word holds here
	p := `[^` + ends + `]`
	name := `[A-Za-z_][A-Za-z0-9_]*`
	notName := `[^A-Za-z_` + ends + `]` + p + `*`                                                   // starts with no name byte
	nameThen := name + `(?:\+?|[^A-Za-z0-9_=+` + ends + `]` + p + `*|\+[^=` + ends + `]` + p + `*)` // a name not followed by = or +=
	return `(?:(?:` + notName + `|` + nameThen + `)?/)?`
}

// otherThan is a pattern for a run of word characters that is none of
// the given words, whole (what follows it must end the word). It walks
// the words' common prefixes: at each step the run may end (unless a
// word ends there), go on with a character no word has next, or take one
// that some word has and continue with the words that share it.
func otherThan(words ...string) string {
	var alts []string
	ends := false
	next := map[byte][]string{}
	var order []byte
	for _, w := range words {
		if w == "" {
			ends = true
			continue
		}
		if _, ok := next[w[0]]; !ok {
			order = append(order, w[0])
		}
		next[w[0]] = append(next[w[0]], w[1:])
	}
	if !ends {
		alts = append(alts, ``)
	}
	class := `[^ \t\r\n;&|(){}`
	for _, c := range order {
		class += regexp.QuoteMeta(string(c))
		alts = append(alts, regexp.QuoteMeta(string(c))+otherThan(next[c]...))
	}
	alts = append(alts, class+`]`+word+`*`)
	return `(?:` + strings.Join(alts, `|`) + `)`
}

// shellCounts tells whether a command commits (no --dry-run after the
// commit word) and creates a pull request.
func shellCounts(cmd string) (commit, pr bool) {
	for _, text := range shellTexts(cmd) {
		for _, m := range commitRe.FindAllStringSubmatch(text, -1) {
			if !dryRunRe.MatchString(m[1]) {
				commit = true
			}
		}
		if prRe.MatchString(text) {
			pr = true
		}
	}
	return commit, pr
}

// shellTexts cuts a command line into the command texts the shell runs:
// the line itself, and the text of each command substitution ($(…) and
// `…`) in it at any depth: in the line, in double quotes, in the body of
// a here-document whose delimiter is unquoted. In each text, what can
// never be a command word or separator becomes one NUL: quoted and
// escaped text, ${…}, $((…)) and a substitution; and what is not read as
// commands is left out: comments, and here-document bodies (from the
// line after <<WORD to the line that is exactly WORD, tabs first removed
// for <<-, or to the end).
func shellTexts(cmd string) []string {
	p := &plainer{src: cmd}
	p.list(0, 0)
	return p.texts
}

// plainer makes one command line plain; texts collects what it made.
type plainer struct {
	src   string
	texts []string
}

// wordEnds are the bytes after which a # starts a comment.
const wordEnds = " \t\r\n;&|(){}"

// delimRe reads a here-document operator and its delimiter word.
var delimRe = regexp.MustCompile(`^<<(-?)[ \t]*((?s:[^ \t\r\n;&|<>()'"\\]|'[^']*'?|"(?:[^"\\]|\\.)*"?|\\.?)*)`)

// unquoteRe reads the delimiter word piece by piece.
var unquoteRe = regexp.MustCompile(`(?s)'([^']*)'?|"((?:[^"\\]|\\.)*)"?|\\(.?)|([^'"\\]+)`)

// escapeRe is a backslash and the byte it escapes in double quotes.
var escapeRe = regexp.MustCompile(`(?s)\\(.)`)

// hereDocument is one here-document waiting for the end of its line.
type hereDocument struct {
	word       string
	quoted     bool
	stripsTabs bool
}

// list makes plain the command list that starts at i and ends at the byte
// end (')' of a $(, '`', or 0: the end of the line), adds it to texts,
// and returns the index of that end byte (len(src) when missing).
func (p *plainer) list(i int, end byte) int {
	src := p.src
	var out strings.Builder
	var docs []hereDocument
	open := 0 // subshells opened in this list
	for i < len(src) {
		c := src[i]
		if end == '`' && c == '`' || end == ')' && c == ')' && open == 0 {
			break
		}
		switch {
		case c == '(' || c == ')':
			if c == '(' {
				open++
			} else if open > 0 {
				open--
			}
			out.WriteByte(c)
			i++
		case c == '\n':
			out.WriteByte('\n')
			i = p.bodies(docs, i+1)
			docs = nil
		case c == '#' && (out.Len() == 0 || strings.IndexByte(wordEnds, out.String()[out.Len()-1]) >= 0):
			if nl := strings.IndexByte(src[i:], '\n'); nl >= 0 {
				i += nl
			} else {
				i = len(src)
			}
		case strings.HasPrefix(src[i:], "<<<"):
			out.WriteString("<<<")
			i += 3
		case strings.HasPrefix(src[i:], "<<"):
			m := delimRe.FindStringSubmatch(src[i:])
			out.WriteByte(' ')
			i += len(m[0])
			if m[2] != "" {
				docs = append(docs, hereDocument{word: unquote(m[2]), quoted: strings.ContainsAny(m[2], `'"\`), stripsTabs: m[1] == "-"})
			}
		case c == '\\' && i+1 < len(src) && src[i+1] == '\n':
			out.WriteByte(' ')
			i += 2
		case c == '\\':
			out.WriteByte(0)
			i += 2
		case c == '\'':
			out.WriteByte(0)
			if q := strings.IndexByte(src[i+1:], '\''); q >= 0 {
				i += q + 2
			} else {
				i = len(src)
			}
		case c == '"':
			out.WriteByte(0)
			i = p.doubleQuoted(i+1) + 1
		case c == '`' || c == '$':
			if next := p.expansion(i); next > i {
				out.WriteByte(0)
				i = next
			} else {
				out.WriteByte(c)
				i++
			}
		case c == 0: // the command's own NUL is an ordinary byte, not the marker
			out.WriteByte(1) // nor a name's byte: "\x00=x" is a word, no assignment
			i++
		default:
			out.WriteByte(c)
			i++
		}
	}
	p.texts = append(p.texts, out.String())
	return min(i, len(src))
}

// expansion reads the backquote or $ expansion at i: a substitution (its
// commands become a text), $((…)) or ${…}, and returns the index after
// it; i when there is none there.
func (p *plainer) expansion(i int) int {
	src := p.src
	switch {
	case src[i] == '`':
		return p.list(i+1, '`') + 1
	case strings.HasPrefix(src[i:], "$(("):
		depth := 0
		for j := i + 1; j < len(src); j++ {
			if src[j] == '(' {
				depth++
			} else if src[j] == ')' {
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return len(src)
	case strings.HasPrefix(src[i:], "$("):
		return p.list(i+2, ')') + 1
	case strings.HasPrefix(src[i:], "${"):
		if j := strings.IndexByte(src[i:], '}'); j >= 0 {
			return i + j + 1
		}
		return len(src)
	}
	return i
}

// doubleQuoted reads double-quoted text from i (after the opening quote)
// and returns the index of its closing quote (len(src) when missing).
func (p *plainer) doubleQuoted(i int) int {
	src := p.src
	for i < len(src) && src[i] != '"' {
		switch {
		case src[i] == '\\':
			i += 2
		case src[i] == '`' || src[i] == '$':
			if next := p.expansion(i); next > i {
				i = next
			} else {
				i++
			}
		default:
			i++
		}
	}
	return min(i, len(src))
}

// bodies skips the bodies of the here-documents docs, starting at i, and
// returns the index after the last one. An unquoted body's substitutions
// become texts.
func (p *plainer) bodies(docs []hereDocument, i int) int {
	for _, d := range docs {
		rest := p.src[i:]
		body, after := rest, len(p.src) // no terminator: to the end
		for off := 0; off < len(rest); {
			raw, _, found := strings.Cut(rest[off:], "\n")
			line := raw
			if d.stripsTabs {
				line = strings.TrimLeft(line, "\t")
			}
			if line == d.word {
				body, after = rest[:off], i+off+len(raw)
				if found {
					after++
				}
				break
			}
			off += len(raw) + 1
		}
		if !d.quoted {
			b := &plainer{src: body}
			for j := 0; j < len(body); {
				switch {
				case body[j] == '\\':
					j += 2
				case body[j] == '`' || body[j] == '$':
					if next := b.expansion(j); next > j {
						j = next
					} else {
						j++
					}
				default:
					j++
				}
			}
			p.texts = append(p.texts, b.texts...)
		}
		i = after
	}
	return i
}

// unquote is a here-document's delimiter word without its quoting.
func unquote(word string) string {
	var b strings.Builder
	for _, m := range unquoteRe.FindAllStringSubmatch(word, -1) {
		switch {
		case strings.HasPrefix(m[0], `'`):
			b.WriteString(m[1])
		case strings.HasPrefix(m[0], `"`):
			b.WriteString(escapeRe.ReplaceAllString(m[2], "$1"))
		case strings.HasPrefix(m[0], `\`):
			b.WriteString(m[3])
		default:
			b.WriteString(m[4])
		}
	}
	return b.String()
}
