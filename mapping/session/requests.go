package session

// Requests: an assistant line opens or grows a request, which is emitted once
// it has settled (see flush), and a later, better copy grows what it counted.

import (
	"slices"
	"strings"
	"time"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/transcript"
)

// reqState is a request not yet emitted. Once emitted, it leaves only a
// doneReq in the index.
type reqState struct {
	seq   uint64
	where Where
	msgID string
	// key is idKey(keyRequest, msgID), hashed once when the request is
	// first seen and put in the index with it when it is emitted.
	key       uint64
	model     string
	usage     transcript.Usage
	requestID string
	stop      string
	start     time.Time
	end       time.Time
	// usageAt is the time of the line whose usage counts (the first of
	// the best): where ccusage places its usage entry.
	usageAt  time.Time
	lastSeen time.Time
	// complete is set by a line with a stop reason: the response has
	// ended, so the request need not wait for the settle time.
	complete  bool
	interrupt bool
	toolIDs   []string
	text      string
	thinking  string
	// advisor is the winning copy's advisor iterations (a copy of them:
	// the decoder reuses its record).
	advisor []transcript.AdvisorUsage
	// skill, plugin and effort are the first a line of the request names;
	// cacheMiss and cacheMissTokens the first cache-miss reason.
	skill, plugin, effort string
	mcpServer             string
	cacheMiss             string
	cacheMissTokens       int64
}

// note takes what any line of a request may say once: attribution and
// the cache-miss reason.
func (st *reqState) note(r *transcript.Record) {
	if st.effort == "" {
		st.effort = r.Effort
	}
	x := r.Rare()
	if st.skill == "" {
		st.skill = x.Skill
	}
	if st.plugin == "" {
		st.plugin = x.Plugin
	}
	if st.mcpServer == "" {
		st.mcpServer = x.MCPServer
	}
	if st.cacheMiss == "" && r.Message.CacheMiss != "" {
		st.cacheMiss, st.cacheMissTokens = r.Message.CacheMiss, r.Message.CacheMissTokens
	}
}

func (a *Assembler) assistant(c *ctxState, r *transcript.Record, now time.Time) {
	m := &r.Message
	if m.Model == transcript.SyntheticModel {
		a.synthetic(c, r)
		return
	}
	if m.ID == "" {
		a.stats.NoMessageID++
		c.remember(r.UUID, r.Timestamp, "")
		return
	}
	st := a.requests[m.ID]
	var where Where
	switch {
	case st != nil:
		a.stats.DuplicateRequestLines++
		if w := a.where(c); a.rank(w) > a.rank(st.where) {
			// A fork's copy of its parent's history was read first: the
			// request is the parent's.
			st.where = w
			if c.agent == nil && c.sess.turn != nil {
				c.sess.ownTurn().Requests++
			}
		}
		where = st.where
		if !r.Timestamp.IsZero() {
			st.end = laterOf(st.end, r.Timestamp)
			if st.start.IsZero() {
				st.start = r.Timestamp
			}
			if st.usageAt.IsZero() {
				st.usageAt = r.Timestamp
			}
		}
		if better(m.Usage.Output, m.Usage.Total(), st.usage.Output, st.usage.Total()) {
			st.model, st.usage, st.stop = m.Model, m.Usage, m.StopReason
			if !r.Timestamp.IsZero() {
				st.usageAt = r.Timestamp
			}
			st.advisor = append(st.advisor[:0], m.Advisor...)
			if r.RequestID != "" {
				st.requestID = r.RequestID
			}
		}
		st.note(r)
		st.lastSeen = now
		st.complete = st.complete || m.StopReason != ""
		if m.Text != "" {
			st.text = joinCapped(st.text, m.Text)
		}
		if m.Thinking != "" {
			st.thinking = joinCapped(st.thinking, m.Thinking)
		}
	default:
		key := idKey(keyRequest, m.ID)
		if d, ok := a.done.get(key); ok {
			// A copy of a request already emitted: count what it adds,
			// under the labels it was counted with. Tool calls it brings
			// sit where it is read.
			a.stats.DuplicateRequestLines++
			lab := a.labelList[d.lab]
			where = a.where(c)
			if out, tot := m.Usage.Output, m.Usage.Total(); better(out, tot, d.out, d.total) {
				a.version++
				d.out, d.total = out, tot
				a.grow(key, &d, lab, where, m.ID, TokensOf(m.Usage), false, r.Timestamp)
				a.done.put(key, d)
				// The advisor's inferences follow the winning copy.
				for _, adv := range AdvisorTokensOf(m.Advisor) {
					ak := advisorKey(m.ID, adv.Model)
					ad, ok := a.done.get(ak)
					if !ok {
						al := lab
						al.model = adv.Model
						ad = doneReq{lab: a.labels(al), day: d.day}
					}
					a.grow(ak, &ad, a.labelList[ad.lab], where, m.ID, adv.Tokens, true, r.Timestamp)
					a.done.put(ak, ad)
				}
			}
			break
		}
		st = a.freeReqs.get()
		*st = reqState{seq: a.next(), where: a.where(c), msgID: m.ID, key: key, start: r.Timestamp, end: r.Timestamp, usageAt: r.Timestamp}
		if p, ok := c.lookup(r.ParentUUID); ok && !p.t.IsZero() && (r.Timestamp.IsZero() || !p.t.After(r.Timestamp)) {
			st.start = p.t
		}
		st.model, st.stop, st.usage, st.requestID = m.Model, m.StopReason, m.Usage, r.RequestID
		st.advisor = append(st.advisor, m.Advisor...)
		st.note(r)
		st.lastSeen = now
		st.complete = m.StopReason != ""
		st.text, st.thinking = m.Text, m.Thinking
		where = st.where
		a.requests[m.ID] = st
		if c.agent == nil && c.sess.turn != nil {
			c.sess.ownTurn().Requests++
		}
	}
	for i := range m.ToolUses {
		tu := &m.ToolUses[i]
		if tu.ID == "" {
			continue
		}
		if c.agent == nil && SubagentType(tu) != "" && a.agentByTool(tu.ID) == nil && !slices.Contains(c.sess.pendingTasks, tu.ID) {
			// A sidechain written after it in this file is its subagent's
			// (see sidechainAgent), even when a fork's copy of the call
			// was read first.
			c.sess.pendingTasks = append(c.sess.pendingTasks, tu.ID)
		}
		if _, ok := a.tools[tu.ID]; ok {
			continue
		}
		key := idKey(keyTool, tu.ID)
		if a.doneTools.has(key) {
			continue
		}
		ts := a.freeTools.get()
		*ts = toolState{seq: a.next(), key: key, call: ToolCall{
			Where:         where,
			ToolUseID:     tu.ID,
			Name:          tu.Name,
			MessageID:     m.ID,
			Start:         r.Timestamp,
			SubagentType:  SubagentType(tu),
			Description:   tu.Description,
			Background:    tu.Background,
			Input:         tu.Input,
			Ext:           tu.Ext,
			NotebookLines: tu.NotebookLines,
			InputLines:    tu.InputLines,
			Shell:         tu.Shell,
		}}
		a.tools[tu.ID] = ts
		if st != nil {
			st.toolIDs = append(st.toolIDs, tu.ID)
		}
		c.sess.addOpenTool(tu.ID)
		if ag := a.agentByTool(tu.ID); ag != nil {
			ts.call.AgentID = ag.id
		}
		if e, ok := a.early[tu.ID]; ok {
			delete(a.early, tu.ID)
			a.finishTool(ts, e)
		}
	}
	// A server-side tool (server_tool_use) is answered inside the stream:
	// a …_tool_result block, or a gateway's tool_result, in an assistant
	// message.
	a.takeResults(r)
	c.remember(r.UUID, r.Timestamp, m.ID)
}

func joinCapped(cur, add string) string {
	if cur == "" {
		return add
	}
	return cur + "\n" + add
}

func (a *Assembler) synthetic(c *ctxState, r *transcript.Record) {
	key := r.Message.ID
	if key == "" {
		key = r.UUID
	}
	if key != "" && !a.firstSeen(keyError, key) {
		return
	}
	kind := SyntheticKind(r)
	a.sink.APIError(&APIError{Where: a.where(c), ID: key, Kind: kind, Status: r.Rare().APIErrorStatus, Time: r.Timestamp, Text: r.Message.Text, Head: r.Message.TextHead,
		UsageEntry: r.Message.HasUsage && !r.Message.Usage.SpeedNull})
	c.remember(r.UUID, r.Timestamp, "")
}

// SyntheticKind classifies a <synthetic> assistant line: the API error it
// names ("rate_limit", "authentication_failed", ...), a limit notice, a
// generic API error, or a synthetic notice such as "No response
// requested.".
func SyntheticKind(r *transcript.Record) string {
	text := strings.ToLower(r.Message.TextHead)
	switch named := r.Rare().Error; {
	case named != "":
		return named
	case strings.Contains(text, "limit"):
		return "rate_limit"
	case r.IsAPIErrorMessage:
		return "api_error"
	case strings.HasPrefix(text, "no response requested"):
		return "no_response"
	}
	return "synthetic"
}

func (a *Assembler) emitRequest(st *reqState) {
	a.version++
	delete(a.requests, st.msgID)
	a.refreshProject(&st.where)
	counted := TokensOf(st.usage)
	end := st.end
	if !st.start.IsZero() && end.Before(st.start) {
		a.stats.ClampedTimes++
		end = st.start
	}
	attr := Attribution{Spender: a.spender(st.where), Skill: st.skill, Plugin: st.plugin, Effort: st.effort,
		MCPServer: st.mcpServer, Speed: st.usage.Speed, Geo: st.usage.Geo}
	lab := reqLabels{project: st.where.Project, model: st.model, attr: attr}
	day := DayOf(laterOf(st.start, end))
	a.done.put(st.key, doneReq{counted: counted, out: st.usage.Output, total: st.usage.Total(),
		lab: a.labels(lab), day: day})
	advisor := AdvisorTokensOf(st.advisor)
	for _, adv := range advisor {
		al := lab
		al.model = adv.Model
		a.done.put(advisorKey(st.msgID, adv.Model), doneReq{counted: adv.Tokens, out: adv.Tokens.Output,
			total: adv.Tokens.Input + adv.Tokens.Output + adv.Tokens.CacheRead + adv.Tokens.CacheWrite5m + adv.Tokens.CacheWrite1h,
			lab:   a.labels(al), day: day})
	}
	a.req = Request{
		Where:           st.where,
		MessageID:       st.msgID,
		RequestID:       st.requestID,
		Model:           st.model,
		StopReason:      st.stop,
		Tokens:          counted,
		Attribution:     attr,
		Advisor:         advisor,
		CacheMiss:       st.cacheMiss,
		CacheMissTokens: st.cacheMissTokens,
		Start:           st.start,
		End:             end,
		UsageAt:         st.usageAt,
		Interrupted:     st.interrupt,
		ToolUseIDs:      st.toolIDs,
		Text:            st.text,
		Thinking:        st.thinking,
	}
	a.sink.Request(&a.req)
	a.req = Request{}
	a.freeReqs.put(st)
}

// grow counts what a later, better copy of an emitted request (or of its
// advisor's inferences) adds to d, under the labels it was first counted
// with; it moves no counter down.
func (a *Assembler) grow(key uint64, d *doneReq, lab reqLabels, where Where, msgID string, cur Tokens, advisor bool, at time.Time) {
	delta := cur.Sub(d.counted)
	if delta.IsZero() {
		return
	}
	before := d.counted
	d.counted = d.counted.Max(cur)
	where.Project = lab.project
	a.sink.RequestUpdate(&RequestUpdate{Where: where, MessageID: msgID, Model: lab.model, Delta: delta,
		Attribution: lab.attr, Before: before, Day: d.day, Advisor: advisor, At: at})
}

// advisorKey is the dedup key of the advisor's inferences under one model
// in a request: they are counted, and grow, like a request of their own.
func advisorKey(msgID, model string) uint64 {
	return idKey(keyRequest, msgID+"\x00advisor\x00"+model)
}
