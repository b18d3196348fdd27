package metrics

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
)

// The project label: how a session's working dir becomes a label value
// that never collides and never changes (docs/metrics.md, "Labels").

// ProjectLabel says how the project label is formed.
type ProjectLabel string

// Project label modes (--metrics.project-label).
const (
	ProjectNone     ProjectLabel = "none"
	ProjectBasename ProjectLabel = "basename"
	ProjectPath     ProjectLabel = "path"
)

// ParseProjectLabel validates a --metrics.project-label value.
func ParseProjectLabel(s string) (ProjectLabel, error) {
	switch p := ProjectLabel(s); p {
	case ProjectNone, ProjectBasename, ProjectPath:
		return p, nil
	}
	return "", fmt.Errorf("unknown project label mode %q (want none, basename or path)", s)
}

// Project returns the project label value for a working directory. With
// basename labels, the first working dir of a basename gets the basename
// (dl); another dir of the same basename gets the basename, "~" and the
// first hex digits of its path's SHA-256 (dl~3f2a), as many as make it
// unique; the path itself never leaves the machine.
func (m *Mapper) Project(cwd string) string {
	switch m.cfg.Project {
	case ProjectNone:
		return ""
	case ProjectPath:
		return m.bound("project", cwd)
	}
	if l, ok := m.byCwd[cwd]; ok {
		return l
	}
	key := projectKey(cwd)
	if l, ok := m.projects[key]; ok {
		m.byCwd[cwd] = l
		return l
	}
	base := Basename(cwd)
	label := base
	if owner, taken := m.owners[label]; taken && owner != key {
		sum := sha256.Sum256([]byte(key))
		hexSum := hex.EncodeToString(sum[:])
		for n := 4; n <= len(hexSum); n += 2 {
			label = base + "~" + hexSum[:n]
			if owner, taken := m.owners[label]; !taken || owner == key {
				break
			}
		}
	}
	label = m.bound("project", label)
	if label != OtherValue {
		m.projects[key], m.owners[label] = label, key
		m.byCwd[cwd] = label
	}
	return label
}

// projectKey is the identity of a working dir: its path without trailing
// separators; a Windows path (X:\...) is case-insensitive and written with
// either separator (Claude Code writes both S:\repo and s:\repo for one
// dir), so it is folded to lower case and backslashes.
func projectKey(cwd string) string {
	key := cwd
	if t := strings.TrimRight(cwd, `/\`); t != "" {
		key = t
	}
	if len(key) >= 2 && key[1] == ':' && (key[0]|0x20 >= 'a' && key[0]|0x20 <= 'z') {
		key = strings.ReplaceAll(strings.ToLower(key), "/", `\`)
	}
	return key
}

// ProjectLabels returns the label given to each working dir (basename
// labels), for the state file.
func (m *Mapper) ProjectLabels() map[string]string {
	out := make(map[string]string, len(m.projects))
	for k, v := range m.projects {
		out[k] = v
	}
	return out
}

// RestoreProjectLabels gives working dirs the labels a previous run gave
// them (ProjectLabels from the state file), so that a label never changes
// across restarts. A label already given to another dir in this run
// keeps its owner.
func (m *Mapper) RestoreProjectLabels(saved map[string]string) {
	keys := make([]string, 0, len(saved))
	for k := range saved {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		l := saved[k]
		if _, ok := m.projects[k]; ok {
			continue
		}
		if _, taken := m.owners[l]; taken {
			continue
		}
		if m.bound("project", l) != l {
			continue
		}
		m.projects[k], m.owners[l] = l, k
	}
}

// Basename is the last element of a path written on any OS (Claude Code
// runs on Windows too: X:\work\repo).
func Basename(p string) string {
	if t := strings.TrimRight(p, `/\`); t == "" || strings.HasSuffix(t, ":") {
		// A root: "/" or "C:\".
		if t == "" && p != "" {
			return "/"
		}
		return t
	}
	p = strings.TrimRight(p, `/\`)
	if i := strings.LastIndexAny(p, `/\`); i >= 0 {
		p = p[i+1:]
	}
	return p
}
