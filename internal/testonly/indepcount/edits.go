package indepcount

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

var (
	// prURLRe finds pull request URLs in output text.
	prURLRe = regexp.MustCompile(`https?://[^\s"'<>()\[\]\\]+?/pull/[0-9]+`)
	// prPathRe reads owner, repository and number from a pull request URL.
	prPathRe = regexp.MustCompile(`^https?://[^/]+/(?:[^?#]*/)?([^/?#]+)/([^/?#]+)/pull/([0-9]+)(?:[/?#].*)?$`)
)

// edits counts what an answered call of an edit tool or the shell did:
// the user's decision (reject when its first result is Claude Code's
// rejection text), the lines its first result's structuredPatch adds and
// removes (a created file's lines; without either, a NotebookEdit's
// new_source, or what an Edit, MultiEdit or Write input adds and removes)
// when it succeeded, and commits and pull requests of successful Bash
// calls.
func (c *counter) edits(u toolUse, r firstResult, outcome string) {
	t := c.t
	if outcome == OutcomeUnanswered {
		return
	}
	switch u.name {
	case "Edit", "MultiEdit", "Write", "NotebookEdit":
		switch {
		case r.rejected:
			t.EditDecisions[u.name+"|reject|"+Language(u.ext)]++
			return
		case outcome != OutcomeOK:
			return // failed before the user was asked: no decision
		}
		t.EditDecisions[u.name+"|accept|"+Language(u.ext)]++
		added, removed := r.added, r.removed
		switch {
		case r.hasEdit:
		case u.name == "NotebookEdit":
			added = u.notebookLines
		default:
			// No patch (subagents of Claude Code 2.1.2xx write no
			// toolUseResult): what the input says.
			added, removed = u.inputAdded, u.inputRemoved
		}
		if added > 0 || removed > 0 {
			t.LinesOfCode["added|"+u.name+"|"+Language(u.ext)] += added
			t.LinesOfCode["removed|"+u.name+"|"+Language(u.ext)] += removed
		}
	case "Bash":
		if outcome != OutcomeOK {
			return
		}
		if u.commit {
			t.Commits++
		}
		if u.prCreate {
			c.created = append(c.created, r)
		}
	}
}

// pullRequests counts each pull request once, under the source of the
// line that named it first: a successful gh pr create's result (by the
// URL its stdout printed last; one that printed none always counts) or a
// pr-link record.
func (c *counter) pullRequests() {
	first := map[string]int{} // key -> seq of the first gh pr create result naming it
	for _, r := range c.created {
		key := prKey(r.prURL, "", 0)
		if key == "" {
			c.t.PullRequestsCreated++
			continue
		}
		if s, ok := first[key]; !ok || r.seq < s {
			first[key] = r.seq
		}
	}
	for key, s := range first {
		if linked, ok := c.prKeys[key]; ok && linked < s {
			continue
		}
		c.t.PullRequestsCreated++
	}
	for key, linked := range c.prKeys {
		if s, ok := first[key]; ok && s < linked {
			continue
		}
		c.t.PullRequestsLinked++
	}
}

// lastPRURL is the last pull request URL in a command's output.
func lastPRURL(out string) string {
	all := prURLRe.FindAllString(out, -1)
	if len(all) == 0 {
		return ""
	}
	return all[len(all)-1]
}

// prKey identifies a pull request: "owner/repo#n" in lower case from its
// URL, else from repository and number, else the URL.
func prKey(url, repo string, number int64) string {
	if m := prPathRe.FindStringSubmatch(url); m != nil && strings.TrimLeft(m[3], "0") != "" {
		n, _ := strconv.ParseInt(m[3], 10, 64)
		return strings.ToLower(m[1]+"/"+m[2]) + "#" + strconv.FormatInt(n, 10)
	}
	if repo != "" && number > 0 {
		return fmt.Sprintf("%s#%d", strings.ToLower(repo), number)
	}
	return url
}

// rejectionText starts the result of a tool call the user refused.
const rejectionText = "The user doesn't want to proceed with this tool use"

// rejection reports whether a tool_result's content is the rejection: a
// string, or text blocks, starting with it (within its first 256 bytes
// as written).
func rejection(content any) bool {
	b, _ := json.Marshal(content)
	return bytes.Contains(b[:min(len(b), 256)], []byte(rejectionText))
}

// editOf reads an edit tool's toolUseResult: a created file counts its
// content's lines as added; otherwise structuredPatch hunks' lines
// starting with + and - count.
func editOf(tr map[string]any) (has bool, added, removed int64) {
	if str(tr["type"]) == "create" {
		return true, lineCount(str(tr["content"])), 0
	}
	hunks, ok := tr["structuredPatch"].([]any)
	if !ok {
		return false, 0, 0
	}
	for _, h := range hunks {
		hm, _ := h.(map[string]any)
		lines, _ := hm["lines"].([]any)
		for _, l := range lines {
			s, _ := l.(string)
			switch {
			case strings.HasPrefix(s, "+"):
				added++
			case strings.HasPrefix(s, "-"):
				removed++
			}
		}
	}
	return true, added, removed
}

// lineCount is the number of lines of a text (a last line without a
// newline counts).
func lineCount(s string) int64 {
	if s == "" {
		return 0
	}
	n := int64(strings.Count(s, "\n"))
	if !strings.HasSuffix(s, "\n") {
		n++
	}
	return n
}

// extension is a path's lower-case extension ("dockerfile", "makefile"
// for those files; "" for none).
func extension(path string) string {
	base := path
	if i := strings.LastIndexAny(base, `/\`); i >= 0 {
		base = base[i+1:]
	}
	base = strings.ToLower(base)
	switch {
	case base == "dockerfile" || strings.HasPrefix(base, "dockerfile."):
		return "dockerfile"
	case base == "makefile" || base == "gnumakefile":
		return "makefile"
	}
	ext := filepath.Ext(base)
	if len(ext) < 2 || len(ext) > 17 {
		return ""
	}
	return ext[1:]
}
