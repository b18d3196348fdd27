package session

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/testonly/testbackend"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/transcript"
)

// systemTurnDurationMs is a turn_duration line with its own figure.
func systemTurnDurationMs(uuid, parent string, sec int, ms int64) string {
	m := envelope("system", uuid, parent, sessA, sec, "", false)
	m["subtype"] = "turn_duration"
	m["durationMs"] = ms
	m["isMeta"] = false
	return mustJSON(m)
}

// plainLine is a main-thread line of another record type.
func plainLine(kind, uuid string, sec int, extra map[string]any) string {
	m := envelope(kind, uuid, "", sessA, sec, "", false)
	for k, v := range extra {
		m[k] = v
	}
	return mustJSON(m)
}

// activeOf sums what the emitted turns add: cli (Active) and user
// (SincePrevious, first emissions), and counts the turns once each.
func activeOf(turns []Turn) (cli, user time.Duration, counted int) {
	for _, t := range turns {
		cli += t.Active
		if !t.Again {
			counted++
			user += t.SincePrevious
		}
	}
	return cli, user, counted
}

// TestTurnActiveTime pins the active-time rule of session.Turn: Claude
// Code's turn_duration where it wrote one (each record once), else the
// turn's work records with every silence capped at WorkGapCap; records
// that are not work never extend a turn.
func TestTurnActiveTime(t *testing.T) {
	prompt := func(uuid string, sec int) string { return U{UUID: uuid, Sec: sec, Text: "Do it."}.String() }
	tests := []struct {
		name  string
		lines []string
		cli   time.Duration // the first turn's, all emissions
		end   int           // the first turn's End, seconds
	}{
		{
			name: "Claude Code's turn_duration wins over the span",
			lines: []string{
				prompt("u1", 0),
				A{UUID: "a1", Parent: "u1", Sec: 5, Msg: "msg_1", Out: 3, Stop: "tool_use", Blocks: blocks(toolUseB("toolu_1", "Bash", ""))}.String(),
				U{UUID: "r1", Parent: "a1", Sec: 3000, Blocks: blocks(toolResultB("toolu_1", false))}.String(),
				A{UUID: "a2", Parent: "r1", Sec: 3010, Msg: "msg_2", Out: 3, Stop: "end_turn"}.String(),
				systemTurnDurationMs("d1", "a2", 3011, 20385),
				prompt("u2", 3100),
			},
			cli: 20385 * time.Millisecond,
			end: 3010,
		},
		{
			name: "two records add up, a copy counts once",
			lines: []string{
				prompt("u1", 0),
				A{UUID: "a1", Parent: "u1", Sec: 5, Msg: "msg_1", Out: 3, Stop: "end_turn"}.String(),
				systemTurnDurationMs("d1", "a1", 6, 4000),
				systemTurnDurationMs("d1", "a1", 6, 4000),
				A{UUID: "a2", Parent: "d1", Sec: 9, Msg: "msg_2", Out: 3, Stop: "end_turn"}.String(),
				systemTurnDurationMs("d2", "a2", 10, 2500),
				prompt("u2", 60),
			},
			cli: 6500 * time.Millisecond,
			end: 9,
		},
		{
			name: "measured: silences count up to the cap",
			lines: []string{
				prompt("u1", 0),
				A{UUID: "a1", Parent: "u1", Sec: 10, Msg: "msg_1", Out: 3, Stop: "tool_use", Blocks: blocks(toolUseB("toolu_1", "Bash", ""))}.String(),
				// A permission prompt answered 50 minutes later.
				U{UUID: "r1", Parent: "a1", Sec: 3010, Blocks: blocks(toolResultB("toolu_1", false))}.String(),
				A{UUID: "a2", Parent: "r1", Sec: 3030, Msg: "msg_2", Out: 3, Stop: "end_turn"}.String(),
				prompt("u2", 3100),
			},
			cli: 10*time.Second + WorkGapCap + 20*time.Second,
			end: 3030,
		},
		{
			name: "records that are not work never extend the turn",
			lines: []string{
				prompt("u1", 0),
				A{UUID: "a1", Parent: "u1", Sec: 30, Msg: "msg_1", Out: 3, Stop: "end_turn"}.String(),
				plainLine("queue-operation", "", 40, map[string]any{"operation": "enqueue"}),
				plainLine("system", "s1", 50, map[string]any{"subtype": "away_summary", "content": "x"}),
				// /context typed 210 hours later: a command, its output.
				U{UUID: "c1", Sec: 210 * 3600, Text: "<command-name>/context</command-name>"}.String(),
				plainLine("system", "s2", 210*3600+1, map[string]any{"subtype": "local_command", "content": "<local-command-stdout>x</local-command-stdout>"}),
			},
			cli: 30 * time.Second,
			end: 30,
		},
		{
			name: "a prompt alone is no time",
			lines: []string{
				prompt("u1", 4),
			},
			cli: 0,
			end: 4,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			log, _ := run(t, file{sessionPath(sessA), tc.lines})
			var first []Turn
			for _, tu := range log.turns {
				if tu.PromptUUID == "u1" {
					first = append(first, tu)
				}
			}
			if len(first) == 0 {
				t.Fatal("no turn emitted")
			}
			cli, _, counted := activeOf(first)
			if cli != tc.cli || counted != 1 {
				t.Errorf("cli = %v over %d counted turns, want %v over 1", cli, counted, tc.cli)
			}
			if !first[0].End.Equal(at(tc.end)) {
				t.Errorf("End = %v, want %v", first[0].End, at(tc.end))
			}
		})
	}
}

// TestTurnGoesOnAfterItsSessionWentIdle: live, a session idle past the
// timeout closes and its turn is counted; a line that comes later (a
// permission answered, the turn_duration record) adds what it adds, so
// that the total equals a reading at once, and counters never go down.
func TestTurnGoesOnAfterItsSessionWentIdle(t *testing.T) {
	lines := []string{
		U{UUID: "u1", Sec: 0, Text: "Deploy."}.String(),
		A{UUID: "a1", Parent: "u1", Sec: 10, Msg: "msg_1", Out: 3, Stop: "tool_use", Blocks: blocks(toolUseB("toolu_1", "Bash", ""))}.String(),
		U{UUID: "r1", Parent: "a1", Sec: 4000, Blocks: blocks(toolResultB("toolu_1", false))}.String(),
		A{UUID: "a2", Parent: "r1", Sec: 4020, Msg: "msg_2", Out: 3, Stop: "end_turn"}.String(),
		systemTurnDurationMs("d1", "a2", 4021, 45000),
		// A line 110 days later: not work, never a turn's time.
		U{UUID: "c1", Sec: 110 * 86400, Text: "<command-name>/context</command-name>"}.String(),
	}
	cfg := Config{IdleTimeout: 30 * time.Minute}
	// At once.
	once := newFeeder(t, cfg)
	once.add(sessionPath(sessA), at(0), lines...)
	once.flush(at(0), true)
	// Live: each line as it is written, the clock following the lines,
	// a flush before each (the session closes idle before r1 and c1).
	live := newFeeder(t, cfg)
	for _, l := range lines {
		var rec struct{ Timestamp time.Time }
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatal(err)
		}
		live.flush(rec.Timestamp, false)
		live.add(sessionPath(sessA), rec.Timestamp, l)
	}
	live.flush(at(110*86400+3600), true)
	oc, ou, on := activeOf(once.log.turns)
	lc, lu, ln := activeOf(live.log.turns)
	if oc != 45*time.Second || lc != oc || lu != ou || ln != on || on != 1 {
		t.Errorf("at once cli %v user %v turns %d; live cli %v user %v turns %d; want cli 45s in both, 1 turn",
			oc, ou, on, lc, lu, ln)
	}
	if len(live.log.turns) < 2 {
		t.Errorf("live emitted %d turn units, want the idle close and the continuation", len(live.log.turns))
	}
}

// liveOrder interleaves the files' lines by time, each file in its own
// order, as they are written live; a line without a time goes with the
// line before it.
func liveOrder(t *testing.T, lines []srcLine) ([]srcLine, []time.Time) {
	type item struct {
		l  srcLine
		at time.Time
	}
	var files [][]item
	byFile := map[string]int{}
	var last time.Time
	for _, l := range lines {
		var rec struct{ Timestamp time.Time }
		if json.Unmarshal(l.line, &rec) == nil && !rec.Timestamp.IsZero() {
			last = rec.Timestamp
		}
		i, ok := byFile[l.src.Rel]
		if !ok {
			i = len(files)
			byFile[l.src.Rel] = i
			files = append(files, nil)
			last = rec.Timestamp
		}
		files[i] = append(files[i], item{l, last})
	}
	var out []srcLine
	var times []time.Time
	pos := make([]int, len(files))
	for {
		best := -1
		for i, f := range files {
			if pos[i] < len(f) && (best < 0 || f[pos[i]].at.Before(files[best][pos[best]].at)) {
				best = i
			}
		}
		if best < 0 {
			return out, times
		}
		it := files[best][pos[best]]
		pos[best]++
		out = append(out, it.l)
		times = append(times, it.at)
	}
}

// TestActiveTimeSameAtOnceLiveAndRestored reads every corpus tree at once,
// and live (lines interleaved by time, the clock following them, flushes
// that close idle sessions, and a restart from saved state in the middle):
// active time and turns are the same.
func TestActiveTimeSameAtOnceLiveAndRestored(t *testing.T) {
	cfg := Config{IdleTimeout: 30 * time.Minute}
	for _, dir := range testbackend.CorpusTrees(t) {
		t.Run(corpusName(dir), func(t *testing.T) {
			lines := treeLines(t, dir)
			onceLog := &unitLog{}
			once := New(cfg, onceLog)
			now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
			feed(once, lines, now)
			once.Flush(now, true)
			oc, ou, on := activeOf(onceLog.turns)

			ordered, times := liveOrder(t, lines)
			liveLog := &unitLog{}
			live := New(cfg, liveLog)
			dec := transcript.NewDecoder(transcript.Options{})
			var rec transcript.Record
			var clock time.Time
			for i := range ordered {
				if times[i].After(clock) {
					clock = times[i]
				}
				if i == len(ordered)/2 {
					// A restart: the state through JSON, as the checkpoint keeps it.
					b, err := json.Marshal(live.State())
					if err != nil {
						t.Fatal(err)
					}
					var st State
					if err := json.NewDecoder(bytes.NewReader(b)).Decode(&st); err != nil {
						t.Fatal(err)
					}
					live = New(cfg, liveLog)
					if err := live.Restore(st, clock); err != nil {
						t.Fatal(err)
					}
				}
				live.Flush(clock, false)
				if dec.Decode(ordered[i].line, &rec) == nil {
					live.Add(&ordered[i].src, &rec, clock)
				}
			}
			live.Flush(clock.Add(time.Hour), false)
			live.Flush(clock.Add(time.Hour), true)
			lc, lu, ln := activeOf(liveLog.turns)
			if on != ln || math.Abs(oc.Seconds()-lc.Seconds()) > 1e-6 || math.Abs(ou.Seconds()-lu.Seconds()) > 1e-6 {
				t.Errorf("at once: cli %v user %v turns %d; live with a restart: cli %v user %v turns %d", oc, ou, on, lc, lu, ln)
			}
			t.Logf("cli %v user %v turns %d", oc.Round(time.Second), ou.Round(time.Second), on)
		})
	}
}

// TestMeasuredActiveTimeNearClaudeCodes checks the measured rule (Work)
// against Claude Code's own figure on every real turn that has one: per
// tree, within 10 %; and the reported figure is what counts, each
// turn_duration record once (plain encoding/json over the same files).
func TestMeasuredActiveTimeNearClaudeCodes(t *testing.T) {
	for _, dir := range testbackend.AllCorpusTrees(t) {
		t.Run(corpusName(dir), func(t *testing.T) {
			lines := treeLines(t, dir)
			log := &unitLog{}
			asm := New(Config{IdleTimeout: 30 * time.Minute}, log)
			now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
			feed(asm, lines, now)
			asm.Flush(now, true)
			// The last emission of each turn has its final figures.
			final := map[string]Turn{}
			var cliAll, alone time.Duration
			for _, tu := range log.turns {
				cliAll += tu.Active
				if tu.PromptUUID == "" {
					alone += tu.Reported // time outside any turn
					continue
				}
				final[tu.SessionID+"/"+tu.PromptUUID] = tu
			}
			var reported, measured, counted time.Duration
			n := 0
			for _, tu := range final {
				if tu.HasReported {
					n++
					reported += tu.Reported
					measured += tu.Work
					counted += tu.Counted + tu.Active
				}
			}
			// Independent: the unique turn_duration records of main-thread
			// files.
			seen := map[string]bool{}
			var indep time.Duration
			for _, l := range lines {
				if l.src.AgentID != "" || !bytes.Contains(l.line, []byte(`"turn_duration"`)) {
					continue
				}
				var r struct {
					Type, Subtype, UUID string
					IsSidechain         bool
					DurationMs          int64
				}
				if json.Unmarshal(l.line, &r) != nil || r.Type != "system" || r.Subtype != "turn_duration" || r.IsSidechain || seen[r.UUID] {
					continue
				}
				seen[r.UUID] = true
				indep += time.Duration(r.DurationMs) * time.Millisecond
			}
			orphans := asm.Stats().OrphanTurnDurations
			if reported+alone != indep {
				t.Errorf("reported time %v in turns and %v outside (%d records), independent sum of turn_duration %v", reported, alone, orphans, indep)
			}
			if counted != reported {
				t.Errorf("counted %v for the reported turns, want their reported %v", counted, reported)
			}
			if n == 0 {
				t.Logf("no turn_duration records; cli %v", cliAll.Round(time.Second))
				return
			}
			ratio := measured.Seconds() / reported.Seconds()
			t.Logf("%d turns with turn_duration (%d orphan records): Claude Code %v, measured %v (%.3f); cli total %v (%.2f× their sum)",
				n, orphans, reported.Round(time.Second), measured.Round(time.Second), ratio, cliAll.Round(time.Second), cliAll.Seconds()/indep.Seconds())
			if math.Abs(ratio-1) > 0.10 {
				t.Errorf("measured active time of the turns Claude Code timed is %.3f× its figure, want within 10 %%", ratio)
			}
		})
	}
}

// TestTurnDurationOutsideATurnCountsAlone: a session opened by a slash
// command (/init: its prompt is Claude Code's, no human turn) still adds
// Claude Code's figure for its work, with no turn counted and no span.
func TestTurnDurationOutsideATurnCountsAlone(t *testing.T) {
	log, st := run(t, file{sessionPath(sessA), []string{
		U{UUID: "c1", Sec: 0, Text: "<command-message>init</command-message> <command-name>/init</command-name>"}.String(),
		A{UUID: "a1", Parent: "c1", Sec: 30, Msg: "msg_1", Out: 3, Stop: "end_turn"}.String(),
		systemTurnDurationMs("d1", "a1", 31, 31000),
		systemTurnDurationMs("d1", "a1", 31, 31000),
	}})
	cli, _, counted := activeOf(log.turns)
	if cli != 31*time.Second || counted != 0 || st.OrphanTurnDurations != 1 {
		t.Errorf("cli %v, turns counted %d, orphan records %d; want 31s, 0, 1", cli, counted, st.OrphanTurnDurations)
	}
}
