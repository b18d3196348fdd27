package anonymize

// Shell commands (a Bash call's "command") are filled word by word, not as
// text: the exporter counts commits and pull requests from them
// (transcript.ShellFactsOf), so the copy keeps what any reading of the
// command line splits and decides on:
//
//   - every byte that is not part of a word (blanks, newlines, quotes,
//     backslashes, operators, $, =, -, /, ., …) stays where it is, so the
//     words, simple commands, quoting and here-documents are the same;
//   - words of the shell's and the counters' vocabulary (shellWords: git,
//     gh, pr, create, commit, --dry-run, -C, sudo, env, if, then, do, …),
//     here-document delimiters (EOF) and single characters stay;
//   - every other run of letters and digits is replaced: outside quotes
//     and here-document bodies (command names, arguments, paths) through
//     the key like a path, so equal arguments stay equal (the same
//     directory in `cd` and in cwd); inside quotes and here-document bodies
//     (messages, file contents) by x's.
//
// A replaced run never becomes a vocabulary word, so every word of the copy
// equals a vocabulary word exactly when the original's did.

// shellWords are the runs kept in shell commands: the words the commit and
// pull-request rules compare with (command wrappers, reserved words, git's
// global options and the --dry-run option) and nothing a person chose.
var shellWords = map[string]bool{
	"git": true, "gh": true, "pr": true, "create": true, "commit": true, "dry": true, "run": true,
	"sudo": true, "env": true, "command": true, "time": true, "nohup": true, "exec": true, "xargs": true,
	"if": true, "then": true, "else": true, "elif": true, "fi": true, "do": true, "done": true,
	"while": true, "until": true, "for": true, "in": true, "case": true, "esac": true, "select": true,
	"function": true, "bash": true, "sh": true, "zsh": true,
}

// shellOptions are the option words the rules compare with; their runs are
// kept only where the whole word (up to an =) is one of them.
var shellOptions = map[string]bool{
	"--dry-run": true, "--git-dir": true, "--work-tree": true, "--namespace": true, "--no-pager": true,
	"--exec-path": true, "--bare": true, "--paginate": true, "--no-replace-objects": true,
}

// fillShell rewrites a shell command (raw JSON string content) in place.
func (a *Anonymizer) fillShell(s []byte) {
	dec, pos := decodeShell(s)
	text, delims := shellRegions(s, dec, pos)
	for k := 0; k < len(dec); {
		if dec[k] != 'a' || !isRunStart(s, pos[k]) {
			k++
			continue
		}
		// A run: consecutive word characters.
		j := k
		for j < len(dec) && dec[j] == 'a' && isRunStart(s, pos[j]) {
			j++
		}
		start, end := pos[k], len(s)
		if j < len(dec) {
			end = pos[j]
		}
		run := s[start:end]
		switch {
		case end-start == 1 || shellWords[string(run)] || delims[string(run)] || optionRuns[string(run)] && shellOptions[shellWord(s, dec, pos, k)]:
		case text[k]:
			for i := start; i < end; i++ {
				s[i] = 'x'
			}
		default:
			copy(run, a.mapRun(run))
		}
		k = j
	}
}

// decodeShell reads a JSON string's raw content as the shell sees it: one
// entry per character, 'a' for every word character (ASCII letters and
// digits, non-ASCII, \u escapes of them), the character itself for every
// other one, and where in s the character starts.
func decodeShell(s []byte) (dec []byte, pos []int) {
	dec = make([]byte, 0, len(s))
	pos = make([]int, 0, len(s))
	for i := 0; i < len(s); {
		c := s[i]
		pos = append(pos, i)
		switch {
		case c == '\\' && i+1 < len(s):
			switch s[i+1] {
			case 'u':
				if i+6 <= len(s) {
					v := hex4(s[i+2 : i+6])
					if v >= 0x80 || isWordByte(byte(v)) {
						dec = append(dec, 'a')
					} else {
						dec = append(dec, byte(v))
					}
					i += 6
					continue
				}
				dec = append(dec, '\\')
			case 'n':
				dec = append(dec, '\n')
			case 't':
				dec = append(dec, '\t')
			case 'r':
				dec = append(dec, '\r')
			case 'b', 'f':
				dec = append(dec, ' ')
			default: // \" \\ \/
				dec = append(dec, s[i+1])
			}
			i += 2
		case isWordByte(c) || c >= 0x80:
			dec = append(dec, 'a')
			i++
		default:
			dec = append(dec, c)
			i++
		}
	}
	return dec, pos
}

// isRunStart says the character at s[i] is a word character as written
// (a letter, digit, non-ASCII byte or \u escape), not a decoded 'a' of an
// escape such as \n.
func isRunStart(s []byte, i int) bool {
	c := s[i]
	return isWordByte(c) || c >= 0x80 || c == '\\' && i+1 < len(s) && s[i+1] == 'u'
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// shellRegions tells, for each decoded character, whether it is text
// (inside quotes or a here-document body) and collects the runs of the
// here-document delimiters, wherever they are written (a here-document
// inside $( ) in double quotes too). It reads the shell only as far as the
// choice of filler needs: a misreading changes which filler a run gets,
// never what is kept.
func shellRegions(s []byte, dec []byte, pos []int) (text []bool, delimRuns map[string]bool) {
	text = make([]bool, len(dec))
	delimRuns = map[string]bool{}
	raw := func(k int) []byte { // the raw bytes of decoded character k
		if k+1 < len(pos) {
			return s[pos[k]:pos[k+1]]
		}
		return s[pos[k]:]
	}
	var pending [][]byte
	inS, inD := false, false
	for k := 0; k < len(dec); k++ {
		c := dec[k]
		if c == '<' && k+1 < len(dec) && dec[k+1] == '<' && (k+2 >= len(dec) || dec[k+2] != '<') && (k == 0 || dec[k-1] != '<') {
			from, to := heredocDelimiter(dec, k+2)
			var d []byte
			for i := from; i < to; i++ {
				if dec[i] != '\'' && dec[i] != '"' && dec[i] != '\\' {
					d = append(d, raw(i)...)
				}
				if dec[i] == 'a' && isRunStart(s, pos[i]) && (i+1 == to || dec[i+1] != 'a' || !isRunStart(s, pos[i+1])) {
					j := i
					for j > from && dec[j-1] == 'a' && isRunStart(s, pos[j-1]) {
						j--
					}
					delimRuns[string(s[pos[j]:pos[i]+len(raw(i))])] = true
				}
			}
			if len(d) > 0 && !inS && !inD {
				pending = append(pending, d)
			}
		}
		switch {
		case inS:
			text[k] = true
			inS = c != '\''
		case inD:
			text[k] = true
			if c == '\\' && k+1 < len(dec) {
				k++
				text[k] = true
			} else {
				inD = c != '"'
			}
		case c == '\\':
			k++
		case c == '\'':
			inS = true
		case c == '"':
			inD = true
		case c == '\n' && len(pending) > 0:
			k = heredocBodies(s, dec, pos, k+1, pending, text) - 1
			pending = nil
		}
	}
	return text, delimRuns
}

// heredocDelimiter returns where the word after << (and an optional -)
// starts and ends in dec.
func heredocDelimiter(dec []byte, k int) (from, to int) {
	if k < len(dec) && dec[k] == '-' {
		k++
	}
	for k < len(dec) && (dec[k] == ' ' || dec[k] == '\t') {
		k++
	}
	from = k
	for ; k < len(dec); k++ {
		switch dec[k] {
		case ' ', '\t', '\n', ';', '&', '|', '<', '>', '(', ')':
			return from, k
		}
	}
	return from, k
}

// heredocBodies marks the lines from k on as text until each pending
// delimiter has closed its body (a line that is the delimiter, leading
// tabs aside); it returns where the shell reads commands again.
func heredocBodies(s []byte, dec []byte, pos []int, k int, pending [][]byte, text []bool) int {
	at := func(k int) int {
		if k < len(pos) {
			return pos[k]
		}
		return len(s)
	}
	for len(pending) > 0 && k < len(dec) {
		end := k
		for end < len(dec) && dec[end] != '\n' {
			end++
		}
		line := k
		for line < end && dec[line] == '\t' {
			line++
		}
		if string(s[at(line):at(end)]) == string(pending[0]) {
			pending = pending[1:]
		} else {
			for i := k; i < end; i++ {
				text[i] = true
			}
		}
		k = end + 1
	}
	return k
}

// optionRuns are the runs of shellOptions: a replaced run is never one,
// so that no replaced word becomes an option.
var optionRuns = map[string]bool{
	"dry": true, "run": true, "git": true, "dir": true, "work": true, "tree": true, "namespace": true,
	"no": true, "pager": true, "exec": true, "path": true, "bare": true, "paginate": true,
	"replace": true, "objects": true,
}

// shellWord is the option word the decoded character k is in, up to an =
// ("--git-dir" of --git-dir=x); "" when that word does not start with "--".
func shellWord(s, dec []byte, pos []int, k int) string {
	from := k
	for from > 0 && !isShellBlank(dec[from-1]) {
		from--
	}
	to := k
	for to < len(dec) && !isShellBlank(dec[to]) && dec[to] != '=' {
		to++
	}
	end := len(s)
	if to < len(dec) {
		end = pos[to]
	}
	w := s[pos[from]:end]
	if len(w) < 3 || w[0] != '-' || w[1] != '-' {
		return ""
	}
	return string(w)
}

// isShellBlank says a decoded character ends a word.
func isShellBlank(c byte) bool {
	switch c {
	case ' ', '\t', '\r', '\n', ';', '&', '|', '(', ')', '{', '}', '`', '<', '>', '\'', '"', '\\':
		return true
	}
	return false
}
