package daemon

import (
	"path/filepath"
	"strings"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/session"
)

// The file table holds an entry per transcript for as long as the daemon
// runs, and as strings its paths were most of it (100,000 files: 8 MB of
// the 40 a history's live heap held, more on a machine whose project
// paths are long). Every path is a directory and a name, and the names
// Claude Code writes are ids: a session is "<uuid>.jsonl", a subagent
// "agent-<hex>.jsonl". So an entry keeps its directory as a pointer to
// an entry shared by its siblings (dirEntry, interned by the reader) and
// its name packed in 16 bytes: a UUID as its bytes, an agent's hex as its
// nibbles. A subagent's transcript, <project>/<session>/subagents/
// agent-<hex>.jsonl, shares its project's entry, with its session's UUID
// packed beside its name (nameSubagent): a directory of its own per
// session was most of what subagents cost. A name of any other form
// (rare: Claude Code's own compaction agents, files a user put there) is
// not packed: its entry's dirEntry is then its own and holds the whole
// path. A path is made as a string only
// when it is needed (opening the file, a log line, a state write); a
// lookup compares without making one.

// dirEntry is a directory of transcripts, or, for a file whose name is
// not packed, the file itself.
type dirEntry struct {
	// path is the directory's path (the file's, when the name is not
	// packed); rel is its part under projects/ ("" for projects/ itself).
	path, rel string
	// files counts the table entries that share it (the reader's
	// goroutine only; interned entries only).
	files int
}

// Forms of a packed name (fileState.nameKind), in 2 bits.
const (
	// nameWhole: the name is not packed; dir.path is the whole path.
	nameWhole uint8 = iota
	// nameUUID: "<uuid>.jsonl", a canonical (lowercase) UUID, as its 16
	// bytes.
	nameUUID
	// nameAgent: "agent-<hex>.jsonl" with 1 to maxAgentHex lowercase hex
	// digits: their count in the first byte, the digits as nibbles after.
	nameAgent
	// nameSubagent: "<session>/subagents/agent-<hex>.jsonl" below its
	// project's directory, which is the entry's dirEntry: the session's
	// UUID as its 16 bytes (fileState.session), the name as nameAgent's.
	// A directory entry of its own, with its path, for each session's
	// subagents/ was 9 MB at 50,000 sessions (the daemon's largest
	// holding after the file table itself).
	nameSubagent
)

const (
	jsonlExt    = ".jsonl"
	agentPrefix = "agent-"
	maxAgentHex = 30
	// maxName is the longest packed name ("agent-" + 30 digits +
	// ".jsonl").
	maxName = len(agentPrefix) + maxAgentHex + len(jsonlExt)
	// maxTail is the longest part of a path an entry packs
	// (nameSubagent's: a UUID, "/subagents/" and a name).
	maxTail = 36 + 1 + len(subagentsDir) + 1 + maxName
	// subagentsDir holds a session's subagent transcripts.
	subagentsDir = "subagents"
)

// packName packs a file name; ok is false when it has no packed form.
func packName(name string) (kind uint8, packed [16]byte, ok bool) {
	base, ok := strings.CutSuffix(name, jsonlExt)
	if !ok {
		return nameWhole, packed, false
	}
	if hex, ok := strings.CutPrefix(base, agentPrefix); ok {
		if len(hex) == 0 || len(hex) > maxAgentHex {
			return nameWhole, [16]byte{}, false
		}
		packed[0] = byte(len(hex))
		for i := 0; i < len(hex); i++ {
			d, ok := session.LowerHexDigit(hex[i])
			if !ok {
				return nameWhole, [16]byte{}, false
			}
			packed[1+i/2] |= d << (4 * (1 - i%2))
		}
		return nameAgent, packed, true
	}
	if u, ok := session.ParseUUID(base); ok {
		return nameUUID, u, true
	}
	return nameWhole, [16]byte{}, false
}

const hexDigits = "0123456789abcdef"

// appendName appends the part of f's path its entry packs, below its
// dirEntry's directory: the file's name, or for nameSubagent the session's
// directory and subagents/ before it (nothing for an unpacked one).
func (f *fileState) appendName(b []byte) []byte {
	switch f.nameKind() {
	case nameUUID:
		b = session.AppendUUID(b, f.name)
	case nameSubagent:
		b = append(session.AppendUUID(b, f.session), filepath.Separator)
		b = appendAgent(append(append(b, subagentsDir...), filepath.Separator), f.name)
	case nameAgent:
		b = appendAgent(b, f.name)
	default:
		return b
	}
	return append(b, jsonlExt...)
}

// appendAgent appends "agent-<hex>" of a packed agent name.
func appendAgent(b []byte, name [16]byte) []byte {
	b = append(b, agentPrefix...)
	for i := 0; i < int(name[0]); i++ {
		c := name[1+i/2]
		b = append(b, hexDigits[(c>>(4*(1-i%2)))&15])
	}
	return b
}

// appendDir appends the path of f's directory.
func (f *fileState) appendDir(b []byte) []byte {
	switch f.nameKind() {
	case nameWhole:
		return append(b, filepath.Dir(f.dir.path)...)
	case nameSubagent:
		b = append(append(b, f.dir.path...), filepath.Separator)
		return append(append(session.AppendUUID(b, f.session), filepath.Separator), subagentsDir...)
	}
	return append(b, f.dir.path...)
}

// appendPath appends f's path.
func (f *fileState) appendPath(b []byte) []byte {
	b = append(b, f.dir.path...)
	if f.nameKind() == nameWhole {
		return b
	}
	return f.appendName(append(b, filepath.Separator))
}

// path returns f's path (a new string; safe on any goroutine: an entry's
// directory, name and kinds never change).
func (f *fileState) path() string {
	if f.nameKind() == nameWhole {
		return f.dir.path
	}
	var buf [256]byte
	return string(f.appendPath(buf[:0]))
}

// comparePath compares f's path with p as strings.Compare would, without
// making f's.
func (f *fileState) comparePath(p string) int {
	d := f.dir.path
	if f.nameKind() == nameWhole {
		return strings.Compare(d, p)
	}
	if len(p) <= len(d) {
		if c := strings.Compare(d[:len(p)], p); c != 0 {
			return c
		}
		return 1 // f's path goes on past p
	}
	if c := strings.Compare(d, p[:len(d)]); c != 0 {
		return c
	}
	var buf [1 + maxTail]byte
	name := f.appendName(append(buf[:0], filepath.Separator))
	rest := p[len(d):]
	switch {
	case string(name) < rest:
		return -1
	case string(name) > rest:
		return 1
	}
	return 0
}

// rel returns f's path under projects/ (a new string).
func (f *fileState) rel() string {
	d := f.dir
	if f.nameKind() == nameWhole {
		return d.rel
	}
	var buf [256]byte
	b := buf[:0]
	if d.rel != "" {
		b = append(append(b, d.rel...), filepath.Separator)
	}
	return string(f.appendName(b))
}

// dirOf returns the shared entry of directory dir, whose part under
// projects/ is rel, and counts a file more in it. shared, when it equals
// dir, is a string of the directory's own to keep (the scan's, which the
// watcher keeps too: at 100,000 directories, a subagents/ one per
// session, a copy was 7.5 MB more).
func (r *reader) dirOf(dir, rel, shared string) *dirEntry {
	d, ok := r.dirs[dir]
	if !ok {
		// The strings are the caller's substrings: a copy of their own
		// keeps the rest of the caller's path from staying alive.
		path := shared
		if path != dir {
			path = strings.Clone(dir)
		}
		d = &dirEntry{path: path}
		if strings.HasSuffix(dir, rel) {
			d.rel = d.path[len(dir)-len(rel):]
		} else {
			d.rel = strings.Clone(rel)
		}
		if r.dirs == nil {
			r.dirs = map[string]*dirEntry{}
		}
		// Keyed by the entry's own string: dir is a substring of the
		// caller's path, and as a key it kept that whole path alive (a
		// subagent file's, 5.5 MB at 50,000).
		r.dirs[d.path] = d
	}
	d.files++
	return d
}

// release counts a file less in f's directory, and forgets the
// directory once no entry shares it.
func (r *reader) release(f *fileState) {
	if f.nameKind() == nameWhole {
		return
	}
	d := f.dir
	if d.files--; d.files <= 0 {
		delete(r.dirs, d.path)
	}
}

// newFileState makes the table entry of the transcript at path p, rel
// under projects/; its directory is shared with its siblings'.
func (r *reader) newFileState(p, rel, shared string) *fileState {
	f := &fileState{}
	src := session.ClassifySource(rel).Kind
	dir, name := filepath.Split(p)
	relDir, relName := filepath.Split(rel)
	nk, packed, ok := packName(name)
	if ok && nk == nameAgent && name == relName && r.packSubagent(f, p, rel, packed, src) {
		return f
	}
	if ok && name == relName && len(dir) > 1 {
		// Split leaves the separator at the end of dir (and of relDir).
		dir = dir[:len(dir)-1]
		relDir = strings.TrimSuffix(relDir, string(filepath.Separator))
		// Only when rel reads back (an unclean path, "projects//x",
		// may leave it a separator of its own).
		if relDir == "" && rel == name || relDir != "" && rel == relDir+string(filepath.Separator)+name {
			f.dir, f.kinds, f.name = r.dirOf(dir, relDir, shared), kindsOf(nk, src), packed
			return f
		}
	}
	f.dir, f.kinds = &dirEntry{path: p, rel: rel}, kindsOf(nameWhole, src)
	return f
}

// cutLast cuts path at its last separator (dir "" when it has none).
// Unlike filepath.Dir and Base it cleans nothing: no copy for a clean
// path (three of each for every subagent's file were 1 % of a one-shot's
// CPU).
func cutLast(path string) (dir, base string) {
	i := strings.LastIndexByte(path, filepath.Separator)
	if i < 0 {
		return "", path
	}
	return path[:i], path[i+1:]
}

// packSubagent makes f the entry of a subagent's transcript, p (rel under
// projects/), whose name packs as packed, in <project>/<session>/subagents/:
// its dirEntry is the project's, shared with the session's transcript.
// It reports false, leaving f as it was, for any other path.
func (r *reader) packSubagent(f *fileState, p, rel string, packed [16]byte, src session.SourceKind) bool {
	sep := string(filepath.Separator)
	// The path's last three parts, cut at separators: a path the walk
	// made is clean, and any other is refused by the checks below or
	// read back whole from the parts it was cut into.
	sub, _ := cutLast(p)
	sess, subName := cutLast(sub)
	proj, sessName := cutLast(sess)
	if subName != subagentsDir || len(proj) <= 1 {
		return false
	}
	id, ok := session.ParseUUID(sessName)
	if !ok {
		return false
	}
	// rel must read back as the project's part and the packed tail.
	tail := len(p) - len(proj) // "/<session>/subagents/<name>"
	if len(rel) < tail || rel[len(rel)-tail:] != p[len(proj):] {
		return false
	}
	relProj := rel[:len(rel)-tail]
	if relProj == "" || strings.HasSuffix(relProj, sep) {
		return false // directly in projects/: not a project's dir
	}
	g := fileState{kinds: kindsOf(nameSubagent, src), name: packed, session: id}
	var buf [1 + maxTail]byte
	if string(g.appendName(append(buf[:0], filepath.Separator))) != p[len(proj):] {
		return false
	}
	f.dir, f.kinds, f.name, f.session = r.dirOf(proj, relProj, ""), g.kinds, packed, id
	return true
}
