// Package session assembles decoded transcript records into units: API
// requests, tool calls, turns, subagents, compactions, API errors, pull
// requests and sessions, deduplicated across files (the same message id,
// tool_use id, prompt uuid or compact boundary read twice counts once) and
// handed to a Sink in an order that places each unit in its session tree.
//
// Design note. It is pure: records and the wall-clock time of processing go
// in, units come out; it reads no file and no clock. Its files follow the
// units: assembler.go (reading contexts, sessions, flushing), requests.go,
// tools.go, agents.go (subagents, sidechains inside session files, forks,
// spenders) and turns.go (prompts, active time, system records); index.go
// keeps what emitted units leave behind for dedup (its sorted keys in
// segments.go), closed.go packs the closed sessions (most of a long
// history's), state.go saves and restores all of it and frozen.go freezes
// it for a write on another goroutine. The hard parts:
//   - Order across files is free: a tool result may come before its call, a
//     subagent's file before its session's, a fork's copy of its parent's
//     history before the parent (forks' requests wait for the end of the
//     history, see flush).
//   - A request is written as several lines: it settles before it is
//     emitted, and a later, better copy grows it, never lowers it.
//   - A turn's active time is a function of its records in file order, so
//     that reading at once, in pieces or live gives the same value (see Turn).
package session
