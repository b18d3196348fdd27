package daemon

import "github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/session"

// fanout hands every unit to each sink in turn.
type fanout []session.Sink

func (f fanout) Session(u *session.Session) {
	for _, s := range f {
		s.Session(u)
	}
}

func (f fanout) Turn(u *session.Turn) {
	for _, s := range f {
		s.Turn(u)
	}
}

func (f fanout) Request(u *session.Request) {
	for _, s := range f {
		s.Request(u)
	}
}

func (f fanout) RequestUpdate(u *session.RequestUpdate) {
	for _, s := range f {
		s.RequestUpdate(u)
	}
}

func (f fanout) ToolCall(u *session.ToolCall) {
	for _, s := range f {
		s.ToolCall(u)
	}
}

func (f fanout) Subagent(u *session.Subagent) {
	for _, s := range f {
		s.Subagent(u)
	}
}

func (f fanout) Compaction(u *session.Compaction) {
	for _, s := range f {
		s.Compaction(u)
	}
}

func (f fanout) APIError(u *session.APIError) {
	for _, s := range f {
		s.APIError(u)
	}
}
