package anonymize

import (
	"bytes"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/claudedir"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/transcript"
)

// Names and ids that are not random: Claude Code builds some subagent ids
// from a name or the words of a prompt ("a<name>-<16 hex>", fork ids), and
// custom skills and slash commands are named by their author. They are
// replaced through the key, the same way in file names and in every field,
// so that links between files hold and counts stay apart; what the exporter
// tells apart by them is kept.

// internalAgentWords are the runs of the agent ids Claude Code gives its
// own forks (agent-acompact-*, agent-aprompt_suggestion-*,
// agent-aside_question-*): the exporter files their spend by them.
var internalAgentWords = map[string]bool{
	"acompact": true, "compact": true, "aprompt": true, "prompt": true, "suggestion": true,
	"aside": true, "question": true,
}

// fillID replaces the runs of a subagent id (raw string content or a file
// name stem) that are not random: a run of hex digits (isRandomHex) is
// random and stays, as do the words of Claude Code's internal fork ids;
// every other run goes through the key (a leading "a", which Claude Code
// puts before every id, stays).
func (a *Anonymizer) fillID(s []byte) {
	if isUUID(s) {
		return // a session id (todos/<session>-agent-<session>.json)
	}
	first := true
	for i := 0; i < len(s); {
		j := runEnd(s, i, len(s))
		if j == i {
			i++
			if s[i-1] == '\\' && i < len(s) {
				i++ // an escape
			}
			continue
		}
		run := s[i:j]
		switch {
		case isRandomHex(run) || internalAgentWords[string(run)]:
		case first && run[0] == 'a' && len(run) > 1:
			copy(run[1:], a.mapRun(run[1:]))
		default:
			copy(run, a.mapRun(run))
		}
		first = false
		i = j
	}
}

// isRandomHex says a run looks random: hex digits, at least one of them a
// decimal digit or at least 7 of them (Claude Code's "a" + 6 hex ids may
// be letters only: "aacfadc"); a shorter word such as "cafe" or "decade"
// is not random. A name of 7 or more of the letters a to f is taken for
// random and kept.
func isRandomHex(run []byte) bool {
	digit := len(run) >= 7
	for _, c := range run {
		switch {
		case c >= '0' && c <= '9':
			digit = true
		case c >= 'a' && c <= 'f', c >= 'A' && c <= 'F':
		default:
			return false
		}
	}
	return digit
}

// agentFileStem is the id part of a subagent file name: "agent-<id>" of
// agent-<id>.jsonl and agent-<id>.meta.json; nil for other files.
func agentFileStem(name []byte) []byte {
	if !bytes.HasPrefix(name, []byte("agent-")) {
		return nil
	}
	stem := name[len("agent-"):]
	for _, suf := range []string{".meta.json", ".jsonl", ".json"} {
		if bytes.HasSuffix(stem, []byte(suf)) {
			return stem[:len(stem)-len(suf)]
		}
	}
	return nil
}

// fillName replaces a skill or slash command name (raw string content,
// without its slash): Claude Code's own commands and bundled skills stay,
// any other name becomes a name of the same shape (its punctuation kept)
// that is no built-in one and no other name's, the same everywhere.
func (a *Anonymizer) fillName(s []byte) {
	if claudedir.IsBuiltinCommand(string(s)) {
		return
	}
	if f, ok := a.names[string(s)]; ok {
		copy(s, f)
		return
	}
	orig := string(s)
	out := []byte(orig)
	for attempt := uint32(0); ; attempt++ {
		for i := 0; i < len(out); {
			j := runEnd(out, i, len(out))
			if j == i {
				i++
				continue
			}
			run := []byte(orig[i:j])
			if attempt == 0 {
				copy(out[i:j], a.mapRun(run))
			} else {
				copy(out[i:j], a.derive(run, 1000+attempt))
			}
			i = j
		}
		_, taken := a.usedNames[string(out)]
		if !claudedir.IsBuiltinCommand(string(out)) && !taken || attempt == 255 {
			break
		}
	}
	a.names[orig] = string(out)
	a.usedNames[string(out)] = struct{}{}
	copy(s, out)
}

// fillPRURLs replaces the pull request URLs in a shell command's output
// (raw string content, already filled as text) with their copies from
// the original bytes orig, filled by fillURL: the exporter tells a pull
// request it has seen from a new one by its URL.
func (a *Anonymizer) fillPRURLs(s, orig []byte) {
	for off := 0; ; {
		i := bytes.Index(orig[off:], []byte("/pull/"))
		if i < 0 {
			return
		}
		end := off + i + len("/pull/")
		for end < len(orig) && orig[end] >= '0' && orig[end] <= '9' {
			end++
		}
		if u := transcript.PullRequestURLIn(orig[:end]); u != nil && bytes.HasSuffix(orig[:end], u) {
			start := end - len(u)
			copy(s[start:end], u)
			a.fillURL(s[start:end])
		}
		off += i + len("/pull/")
	}
}

// fillURL fills a URL like a path, keeping its scheme, the "pull" of a
// pull request path and the number after it, so that the copy names the
// same pull request wherever the original did. Runs are mapped without
// regard to case (GitHub's owner and repository names are not
// case-sensitive, and the exporter compares them so), keeping each
// letter's case.
func (a *Anonymizer) fillURL(s []byte) {
	afterPull := false
	for i := 0; i < len(s); {
		j := runEnd(s, i, len(s))
		if j == i {
			i++
			continue
		}
		run := s[i:j]
		switch w := string(run); {
		case i == 0 && (w == "http" || w == "https"), w == "pull":
		case afterPull && isDigits(run):
		default:
			lower := bytes.ToLower(run)
			f := []byte(a.mapRun(lower))
			for k := range f {
				if run[k] >= 'A' && run[k] <= 'Z' {
					f[k] = bytes.ToUpper(f[k : k+1])[0]
				} else {
					f[k] = bytes.ToLower(f[k : k+1])[0]
				}
			}
			copy(run, f)
		}
		afterPull = string(run) == "pull" && j < len(s) && s[j] == '/'
		i = j
	}
}

func isDigits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return len(b) > 0
}

// isUUID says s is a UUID (8-4-4-4-12 hex digits).
func isUUID(s []byte) bool {
	if len(s) != 36 {
		return false
	}
	for i, c := range s {
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
				return false
			}
		}
	}
	return true
}
