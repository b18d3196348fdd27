package session

// Fanout is a Sink that hands every unit to each of its sinks in turn.
type Fanout []Sink

// Session implements Sink.
func (f Fanout) Session(u *Session) {
	for _, s := range f {
		s.Session(u)
	}
}

// Turn implements Sink.
func (f Fanout) Turn(u *Turn) {
	for _, s := range f {
		s.Turn(u)
	}
}

// Request implements Sink.
func (f Fanout) Request(u *Request) {
	for _, s := range f {
		s.Request(u)
	}
}

// RequestUpdate implements Sink.
func (f Fanout) RequestUpdate(u *RequestUpdate) {
	for _, s := range f {
		s.RequestUpdate(u)
	}
}

// ToolCall implements Sink.
func (f Fanout) ToolCall(u *ToolCall) {
	for _, s := range f {
		s.ToolCall(u)
	}
}

// Subagent implements Sink.
func (f Fanout) Subagent(u *Subagent) {
	for _, s := range f {
		s.Subagent(u)
	}
}

// Compaction implements Sink.
func (f Fanout) Compaction(u *Compaction) {
	for _, s := range f {
		s.Compaction(u)
	}
}

// APIError implements Sink.
func (f Fanout) APIError(u *APIError) {
	for _, s := range f {
		s.APIError(u)
	}
}

// PullRequest implements Sink.
func (f Fanout) PullRequest(u *PullRequest) {
	for _, s := range f {
		s.PullRequest(u)
	}
}
