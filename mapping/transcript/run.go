package transcript

// The fields a file's lines repeat. Claude Code writes every line of a
// session with the same run of fields after its parentUuid:
//
//	"isSidechain":false,"userType":"external","cwd":"/work/app",
//	"sessionId":"…","version":"2.1.3","gitBranch":"main","slug":"…"
//
// byte for byte the same from one line to the next. The decoder keeps the
// bytes of the last such run it read at the top of a line and what they
// set; a line whose bytes at a key are the same run takes those values
// without reading the run again (seven keys and values a line). A run is
// a sequence of whole key/value pairs, and JSON reads the same bytes the
// same way wherever an object holds them, so a line decodes exactly as if
// it had been read: every byte of the run was checked when it was first
// read, the line's UTF-8 is checked whole before decoding, and what
// follows the run is read as usual. A repeated key after the run replaces
// its value as it would.

// runKey names a top-level key whose value may be taken from a run: a
// plain field, set from its bytes alone (no rare field, no decoder state
// such as the ids of the line before).
type runKey uint8

const (
	runNone runKey = iota
	runIsSidechain
	runUserType // known and skipped: in a run only so that it does not end it
	runEntrypoint
	runCwd
	runSessionID
	runVersion
	runGitBranch
	runSlug
	runAgentID
)

// runMax is the longest run kept: longer ones are read each time.
const runMax = 1024

// runState is the last run read at the top of a line: its bytes, which of
// its keys it holds (bit k for runKey k) and the values they set.
type runState struct {
	bytes []byte
	keys  uint16
	vals  runValues
}

// runValues are the fields a run sets.
type runValues struct {
	isSidechain                                  bool
	cwd, sessionID, version, gitBranch, slug, ag string
}

// runCapture follows the run a line being read holds: it starts at the
// first run key and ends at the first other key after it (or the end of
// the object). Only the first run of a line is kept.
type runCapture struct {
	start, end int
	keys       uint16
	closed     bool
}

// note records that the key read from start to end (the end of its
// value) is k (runNone for any other key).
func (c *runCapture) note(k runKey, start, end int) {
	switch {
	case c.closed:
	case k == runNone:
		c.closed = c.keys != 0
	case c.keys == 0:
		c.start, c.end, c.keys = start, end, 1<<k
	default:
		c.end, c.keys = end, c.keys|1<<k
	}
}

// take reads the values of the keys of a captured run from r, which holds
// them right after the run was read.
func (v *runValues) take(r *Record, keys uint16) {
	*v = runValues{}
	if keys&(1<<runIsSidechain) != 0 {
		v.isSidechain = r.IsSidechain
	}
	if keys&(1<<runCwd) != 0 {
		v.cwd = r.Cwd
	}
	if keys&(1<<runSessionID) != 0 {
		v.sessionID = r.SessionID
	}
	if keys&(1<<runVersion) != 0 {
		v.version = r.Version
	}
	if keys&(1<<runGitBranch) != 0 {
		v.gitBranch = r.GitBranch
	}
	if keys&(1<<runSlug) != 0 {
		v.slug = r.Slug
	}
	if keys&(1<<runAgentID) != 0 {
		v.ag = r.AgentID
	}
}

// apply sets the fields of r that a run of keys sets, as reading it would.
func (v *runValues) apply(r *Record, keys uint16) {
	if keys&(1<<runIsSidechain) != 0 {
		r.IsSidechain = v.isSidechain
	}
	if keys&(1<<runCwd) != 0 {
		r.Cwd = v.cwd
	}
	if keys&(1<<runSessionID) != 0 {
		r.SessionID = v.sessionID
	}
	if keys&(1<<runVersion) != 0 {
		r.Version = v.version
	}
	if keys&(1<<runGitBranch) != 0 {
		r.GitBranch = v.gitBranch
	}
	if keys&(1<<runSlug) != 0 {
		r.Slug = v.slug
	}
	if keys&(1<<runAgentID) != 0 {
		r.AgentID = v.ag
	}
}

// matchRun reports whether b holds the kept run at i, a key's opening
// quote.
func (s *runState) matchRun(b []byte, i int) bool {
	n := len(s.bytes)
	return n != 0 && len(b)-i >= n && b[i+1] == s.bytes[1] && string(b[i:i+n]) == string(s.bytes)
}
