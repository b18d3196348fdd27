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
	runUserType // userType, entrypoint: known and skipped, in a run only so that it does not end it
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

// runValues are the fields a run sets: isSidechain, and the strings of the
// keys from runCwd on (runString).
type runValues struct {
	isSidechain bool
	strs        [runAgentID - runCwd + 1]string
}

// runString is the string field of r that run key k sets, or nil.
func runString(r *Record, k runKey) *string {
	switch k {
	case runCwd:
		return &r.Cwd
	case runSessionID:
		return &r.SessionID
	case runVersion:
		return &r.Version
	case runGitBranch:
		return &r.GitBranch
	case runSlug:
		return &r.Slug
	case runAgentID:
		return &r.AgentID
	}
	return nil
}

// copyRun copies the fields the run keys set between r and v: into v when
// take is set, else into r.
func (v *runValues) copyRun(r *Record, keys uint16, take bool) {
	if keys&(1<<runIsSidechain) != 0 {
		if take {
			v.isSidechain = r.IsSidechain
		} else {
			r.IsSidechain = v.isSidechain
		}
	}
	for k := runCwd; k <= runAgentID; k++ {
		if keys&(1<<k) == 0 {
			continue
		}
		if f := runString(r, k); take {
			v.strs[k-runCwd] = *f
		} else {
			*f = v.strs[k-runCwd]
		}
	}
}

// runScan follows the run of the line being read: it starts at the first
// run key and ends at the first other key after it (or the end of the
// object). Only the first run of a line is kept; a line that took the
// kept run keeps it.
type runScan struct {
	d *Decoder
	r *Record
	// rk is the run key the record's fn read last (runNone for others).
	rk         runKey
	start, end int
	keys       uint16
	closed     bool
}

// reuse takes the kept run when b holds it at i, a key's opening quote,
// and returns the index after it; else 0.
func (s *runScan) reuse(b []byte, i int) int {
	kept := &s.d.run
	n := len(kept.bytes)
	if s.closed || n == 0 || len(b)-i < n || b[i+1] != kept.bytes[1] || string(b[i:i+n]) != string(kept.bytes) {
		return 0
	}
	kept.vals.copyRun(s.r, kept.keys, false)
	s.closed = true
	return i + n
}

// note follows the key read from start to end (the end of its value).
// Only run keys set the fields of a run, so they hold its values still
// when the key after it has been read.
func (s *runScan) note(b []byte, start, end int) {
	k := s.rk
	s.rk = runNone
	switch {
	case s.closed:
	case k == runNone:
		if s.keys != 0 {
			s.keep(b)
		}
	case s.keys == 0:
		s.start, s.end, s.keys = start, end, 1<<k
	default:
		s.end, s.keys = end, s.keys|1<<k
	}
}

// done is the end of the object: a run that reached it is kept.
func (s *runScan) done(b []byte) {
	if !s.closed && s.keys != 0 {
		s.keep(b)
	}
}

// keep keeps the run found in b, with the values it set in the record.
func (s *runScan) keep(b []byte) {
	s.closed = true
	if s.end-s.start > runMax || s.keys&^(1<<runUserType) == 0 {
		return
	}
	kept := &s.d.run
	kept.bytes = append(kept.bytes[:0], b[s.start:s.end]...)
	kept.keys = s.keys
	kept.vals.copyRun(s.r, s.keys, true)
}
