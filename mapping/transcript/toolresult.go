package transcript

// A user record's toolUseResult (what a tool reported: patches, created
// files, Task results, pull request URLs in a command's output) and an
// agent_progress record's data.

import (
	"bytes"
)

func (d *Decoder) toolUseResult(b []byte, v int, r *Record) (int, error) {
	if v < len(b) && b[v] == '"' {
		return skipValue(b, v)
	}
	if v >= len(b) || b[v] != '{' {
		return skipValue(b, v)
	}
	var tr TaskResult
	var created, patched bool
	var contentLines int64
	var edit EditResult
	end, err := objectFields(b, v, func(key []byte, v int) (int, error) {
		var next int
		var err error
		switch string(key) {
		case "type":
			if v < len(b) && b[v] == '"' {
				raw, _, n, e := readString(b, v)
				created = e == nil && string(raw) == "create"
				return n, e
			}
			return skipValue(b, v)
		case "content":
			if v < len(b) && b[v] == '"' {
				raw, n, e := readLong(b, v)
				if e != nil {
					return 0, e
				}
				contentLines = countLines(raw)
				return n, nil
			}
			return skipValue(b, v)
		case "structuredPatch":
			if v < len(b) && b[v] == '[' {
				patched = true
				return arrayElems(b, v, func(v int) (int, error) {
					return patchHunk(b, v, &edit)
				})
			}
			return skipValue(b, v)
		case "stdout":
			if v < len(b) && b[v] == '"' {
				// Skipped, not read: output is delimited, never validated.
				n, e := skipValue(b, v)
				if e == nil {
					if u := PullRequestURLIn(b[v+1 : n-1]); u != nil {
						r.more().OutputPRURL = string(u)
					}
				}
				return n, e
			}
			return skipValue(b, v)
		case "agentId":
			tr.AgentID, next, err = d.str(b, v, false)
		case "agentType":
			tr.AgentType, next, err = d.str(b, v, true)
		case "status":
			if v < len(b) && b[v] == '"' {
				tr.Status, next, err = d.str(b, v, true)
			} else {
				next, err = skipValue(b, v)
			}
		case "totalDurationMs":
			tr.TotalDurationMs, next, err = readInt(b, v)
		default:
			return skipValue(b, v)
		}
		return next, err
	})
	if err != nil {
		return 0, err
	}
	if tr.AgentID != "" {
		// A copy: taking tr's address put it on the heap for every
		// toolUseResult, not only the Task ones.
		t := tr
		r.TaskResult = &t
	}
	switch {
	case created:
		r.more().Edit = EditResult{Has: true, Created: true, Added: contentLines}
	case patched:
		edit.Has = true
		r.more().Edit = edit
	}
	return end, nil
}

// MaxPRURL bounds a pull request URL read from a shell call's output.
const MaxPRURL = 512

// PullRequestURLIn finds the last pull request URL in a shell command's
// output (JSON string text): http(s)://host/…/pull/<digits>, as gh pr
// create prints it, at most MaxPRURL bytes; nil when there is none.
func PullRequestURLIn(raw []byte) []byte {
	var found []byte
	for rest, off := raw, 0; ; {
		i := bytes.Index(rest, []byte("/pull/"))
		if i < 0 {
			return found
		}
		at := off + i
		end := at + len("/pull/")
		for end < len(raw) && raw[end] >= '0' && raw[end] <= '9' {
			end++
		}
		if end > at+len("/pull/") {
			if u := urlEndingAt(raw, at, end); u != nil {
				found = u
			}
		}
		off = at + len("/pull/")
		rest = raw[off:]
	}
}

// urlEndingAt is raw[start:end] when it is an http(s) URL whose path
// holds raw[at:] (no blank, quote, backslash or angle bracket in it).
func urlEndingAt(raw []byte, at, end int) []byte {
	for i := at - 1; i >= 0 && end-i <= MaxPRURL; i-- {
		switch raw[i] {
		case ' ', '\t', '\\', '"', '\'', '<', '>', '(', ')', '[', ']':
			return nil
		case 'h':
			if u := raw[i:end]; bytes.HasPrefix(u, []byte("https://")) || bytes.HasPrefix(u, []byte("http://")) {
				return u
			}
		}
	}
	return nil
}

// patchHunk counts the added (+) and removed (-) lines of one
// structuredPatch hunk.
func patchHunk(b []byte, v int, e *EditResult) (int, error) {
	if v >= len(b) || b[v] != '{' {
		return skipValue(b, v)
	}
	return objectFields(b, v, func(key []byte, v int) (int, error) {
		if string(key) != "lines" || v >= len(b) || b[v] != '[' {
			return skipValue(b, v)
		}
		return arrayElems(b, v, func(v int) (int, error) {
			if v+1 < len(b) && b[v] == '"' {
				switch b[v+1] {
				case '+':
					e.Added++
				case '-':
					e.Removed++
				}
			}
			return skipValue(b, v)
		})
	})
}

func (d *Decoder) progressData(b []byte, v int, r *Record) (int, error) {
	if v >= len(b) || b[v] != '{' {
		return skipValue(b, v)
	}
	return objectFields(b, v, func(key []byte, v int) (int, error) {
		var next int
		var err error
		switch string(key) {
		case "type":
			next, err = checkedSkip(b, v)
		case "agentId":
			var x string
			x, next, err = d.str(b, v, true)
			setRare(r, x, func(m *Rare) *string { return &m.ProgressAgentID })
		case "message":
			if v < len(b) && b[v] == '{' && !d.embedding {
				if r.Embedded == nil {
					r.Embedded = &Record{}
				}
				r.embedded = true
				d.embedding = true
				end, err := d.record(b, v, r.Embedded)
				d.embedding = false
				return end, err
			}
			return skipValue(b, v)
		default:
			return skipValue(b, v)
		}
		return next, err
	})
}
