package anonymize

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Options configures Tree.
type Options struct {
	// Key keys the path filler (see New).
	Key []byte
	// Sessions, when set, limits the copy to these session ids: their
	// transcripts, subagents, todos and tasks.
	Sessions []string
}

// copied lists what of a Claude config dir is copied: transcripts and the
// files beside them that describe sessions. Settings, credentials, caches,
// shell snapshots and plugins are never read.
var copied = map[string]bool{
	"projects": true, "todos": true, "tasks": true, "sessions": true, "jobs": true,
	"history.jsonl": true,
}

// Result is what Tree did.
type Result struct {
	Stats Stats
	// Skipped are the source paths (relative) that were not copied: files
	// that are not JSON, links, and top-level entries outside the copy.
	Skipped []string
}

// Tree copies the Claude config dir src to dst, anonymized. dst must not
// exist or be an empty directory, and must not lie inside src. Files keep
// their modification times. The walk is in lexical order, so the same key
// over the same tree gives the same copy.
func Tree(src, dst string, opts Options) (Result, error) {
	var res Result
	src, err := filepath.Abs(src)
	if err != nil {
		return res, err
	}
	dst, err = filepath.Abs(dst)
	if err != nil {
		return res, err
	}
	if fi, err := os.Stat(src); err != nil {
		return res, err
	} else if !fi.IsDir() {
		return res, fmt.Errorf("%s is not a directory", src)
	}
	if rel, err := filepath.Rel(src, dst); err == nil && (rel == "." || !strings.HasPrefix(rel, "..")) {
		return res, fmt.Errorf("the copy %s must not be inside the source %s", dst, src)
	}
	if entries, err := os.ReadDir(dst); err == nil && len(entries) > 0 {
		return res, fmt.Errorf("%s is not empty", dst)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return res, err
	}
	a := New(opts.Key)
	err = filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if rel == "." {
			return nil
		}
		parts := strings.Split(filepath.ToSlash(rel), "/")
		if !copied[parts[0]] {
			res.Skipped = append(res.Skipped, rel)
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		if !d.Type().IsRegular() || !(strings.HasSuffix(d.Name(), ".jsonl") || strings.HasSuffix(d.Name(), ".json")) {
			res.Skipped = append(res.Skipped, rel)
			return nil
		}
		if len(opts.Sessions) > 0 {
			ok, err := inSessions(path, parts, opts.Sessions)
			if err != nil {
				return err
			}
			if !ok {
				return nil
			}
		}
		if parts[0] == "projects" && len(parts) > 2 {
			// The encoded project folder is a path: map it like cwd, so
			// that it still matches the anonymized working directory.
			name := []byte(parts[1])
			a.fillPath(name)
			parts[1] = string(name)
		}
		if stem := agentFileStem([]byte(parts[len(parts)-1])); stem != nil {
			// A subagent's id, which its agentId fields hold too.
			name := []byte(parts[len(parts)-1])
			a.fillID(name[len("agent-") : len("agent-")+len(stem)])
			parts[len(parts)-1] = string(name)
		} else if i := strings.Index(parts[len(parts)-1], "-agent-"); parts[0] == "todos" && i >= 0 {
			// todos/<session>-agent-<agent id>.json: the same id.
			name := []byte(parts[len(parts)-1])
			if stem := agentFileStem(name[i+1:]); stem != nil {
				a.fillID(stem)
			}
			parts[len(parts)-1] = string(name)
		}
		out := filepath.Join(dst, filepath.FromSlash(strings.Join(parts, "/")))
		return a.file(path, out, strings.HasSuffix(d.Name(), ".jsonl"))
	})
	res.Stats = a.Stats()
	return res, err
}

// inSessions reports whether a file belongs to one of the sessions: its
// name or a parent folder is the session id, or (a legacy agent-*.jsonl
// beside the sessions) it names the session in a sessionId field.
func inSessions(path string, parts []string, sessions []string) (bool, error) {
	for _, s := range sessions {
		for _, p := range parts[1:] {
			if p == s+".jsonl" || p == s || strings.HasPrefix(p, s+"-") {
				return true, nil
			}
		}
	}
	if parts[0] != "projects" || len(parts) != 3 || !strings.HasPrefix(parts[2], "agent-") {
		return false, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return false, err
	}
	for _, s := range sessions {
		if bytes.Contains(data, []byte(`"sessionId":"`+s+`"`)) {
			return true, nil
		}
	}
	return false, nil
}

// file writes the anonymized copy of one file: line by line for JSONL,
// whole for JSON.
func (a *Anonymizer) file(src, dst string, lines bool) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(out, 1<<20)
	if lines {
		err = a.lines(bufio.NewReaderSize(in, 1<<20), w)
	} else {
		var data []byte
		if data, err = io.ReadAll(in); err == nil {
			a.Document(data)
			_, err = w.Write(data)
		}
	}
	if err == nil {
		err = w.Flush()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%s: %w", src, err)
	}
	a.stats.Files++
	a.stats.Bytes += fi.Size()
	return os.Chtimes(dst, fi.ModTime(), fi.ModTime())
}

// lines transforms every line of r, newline kept; a last line without a
// newline stays without one.
func (a *Anonymizer) lines(r *bufio.Reader, w io.Writer) error {
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 {
			body := line
			if body[len(body)-1] == '\n' {
				body = body[:len(body)-1]
			}
			a.Document(body)
			if _, werr := w.Write(line); werr != nil {
				return werr
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// MissingSessions returns the session ids among sessions that have no
// transcript under src: neither projects/<dir>/<id>.jsonl nor a
// projects/<dir>/<id>/ folder (subagents of a session whose main file is
// gone). A copy limited to them would be empty.
func MissingSessions(src string, sessions []string) ([]string, error) {
	dirs, err := os.ReadDir(filepath.Join(src, "projects"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	var missing []string
	for _, s := range sessions {
		found := false
		for _, d := range dirs {
			if !d.IsDir() || s == "" || strings.ContainsAny(s, `/\`) {
				continue
			}
			for _, name := range []string{s + ".jsonl", s} {
				if _, err := os.Stat(filepath.Join(src, "projects", d.Name(), name)); err == nil {
					found = true
				}
			}
		}
		if !found {
			missing = append(missing, s)
		}
	}
	return missing, nil
}
