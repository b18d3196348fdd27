package spans

import "crypto/sha256"

// Span id kinds: the namespace of the transcript id a span id is derived
// from.
const (
	idSession    = "session"
	idTurn       = "turn"
	idRequest    = "request"
	idTool       = "tool"
	idAgent      = "agent"
	idCompaction = "compaction"
	idError      = "error"
)

// SessionTraceID is the trace id of a session: the first 16 bytes of
// SHA-256("trace\x00" + sessionID).
func SessionTraceID(sessionID string) TraceID {
	return traceID(sessionID, "", false)
}

// TurnTraceID is the trace id of one turn under --traces.granularity=turn:
// the first 16 bytes of SHA-256("trace\x00" + sessionID + "\x00" + promptUUID).
func TurnTraceID(sessionID, promptUUID string) TraceID {
	return traceID(sessionID, promptUUID, true)
}

func traceID(sessionID, promptUUID string, turn bool) TraceID {
	var buf [160]byte // ids are short: hashing needs no allocation
	key := append(buf[:0], "trace\x00"...)
	key = append(key, sessionID...)
	if turn {
		key = append(key, 0)
		key = append(key, promptUUID...)
	}
	sum := sha256.Sum256(key)
	var id TraceID
	copy(id[:], sum[:16])
	if id.IsZero() {
		id[15] = 1
	}
	return id
}

// NewSpanID derives a span id: the first 8 bytes of
// SHA-256(sessionID + "\x00" + kind + "\x00" + id), where kind is one of
// session, turn, request, tool, agent, compaction, error and id the transcript id
// (session id, prompt uuid, message.id, tool_use id, agent id, compact
// boundary uuid). It is never all-zero.
func NewSpanID(sessionID, kind, id string) SpanID {
	var buf [160]byte
	key := append(buf[:0], sessionID...)
	key = append(key, 0)
	key = append(key, kind...)
	key = append(key, 0)
	key = append(key, id...)
	sum := sha256.Sum256(key)
	var s SpanID
	copy(s[:], sum[:8])
	if s.IsZero() {
		s[7] = 1
	}
	return s
}

// The span ids of each kind of unit.

// RootSpanID is the id of a session's root span.
func RootSpanID(sessionID string) SpanID { return NewSpanID(sessionID, idSession, sessionID) }

// TurnSpanID is the id of the span of the turn opened by promptUUID.
func TurnSpanID(sessionID, promptUUID string) SpanID {
	return NewSpanID(sessionID, idTurn, promptUUID)
}

// RequestSpanID is the id of the chat span of the request messageID.
func RequestSpanID(sessionID, messageID string) SpanID {
	return NewSpanID(sessionID, idRequest, messageID)
}

// ToolSpanID is the id of the execute_tool span of a tool_use id.
func ToolSpanID(sessionID, toolUseID string) SpanID { return NewSpanID(sessionID, idTool, toolUseID) }

// AgentSpanID is the id of the invoke_agent span of a subagent.
func AgentSpanID(sessionID, agentID string) SpanID { return NewSpanID(sessionID, idAgent, agentID) }

// ErrorSpanID is the id of the chat span of a request that failed, by the
// message id (else uuid) of the <synthetic> line reporting it.
func ErrorSpanID(sessionID, id string) SpanID { return NewSpanID(sessionID, idError, id) }

// CompactionSpanID is the id of a compaction span.
func CompactionSpanID(sessionID, uuid string) SpanID {
	return NewSpanID(sessionID, idCompaction, uuid)
}
