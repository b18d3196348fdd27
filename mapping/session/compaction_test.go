package session

import "testing"

// TestCompactions pins design §2.5: a compact_boundary system record is one
// Compaction with its trigger and preTokens ("unknown" when the trigger is
// missing), counted once per uuid across files; a microcompact_boundary is
// not a compaction; the summary that follows is not a prompt.
func TestCompactions(t *testing.T) {
	const uuid = "49ed28cd-e0ee-4a1c-ba1b-eb154392831c"
	type want struct {
		trigger   string
		preTokens int64
	}
	tests := []struct {
		name  string
		files []file
		want  []want
	}{
		{
			name:  "auto with preTokens",
			files: []file{{sessionPath(sessA), []string{compactBoundary(uuid, sessA, 5, `{"trigger":"auto","preTokens":173429,"postTokens":7850,"durationMs":135906}`)}}},
			want:  []want{{"auto", 173429}},
		},
		{
			name:  "manual",
			files: []file{{sessionPath(sessA), []string{compactBoundary(uuid, sessA, 5, `{"trigger":"manual","preTokens":90211}`)}}},
			want:  []want{{"manual", 90211}},
		},
		{
			name:  "missing trigger is unknown",
			files: []file{{sessionPath(sessA), []string{compactBoundary(uuid, sessA, 5, `{"preTokens":50000}`)}}},
			want:  []want{{"unknown", 50000}},
		},
		{
			name:  "missing compactMetadata is unknown with zero preTokens",
			files: []file{{sessionPath(sessA), []string{compactBoundary(uuid, sessA, 5, "")}}},
			want:  []want{{"unknown", 0}},
		},
		{
			name:  "null trigger is unknown",
			files: []file{{sessionPath(sessA), []string{compactBoundary(uuid, sessA, 5, `{"trigger":null,"preTokens":1}`)}}},
			want:  []want{{"unknown", 1}},
		},
		{
			name: "same boundary in a resumed copy counts once",
			files: []file{
				{sessionPath(sessA), []string{compactBoundary(uuid, sessA, 5, `{"trigger":"auto","preTokens":173429}`)}},
				{sessionPath(sessB), []string{compactBoundary(uuid, sessB, 5, `{"trigger":"auto","preTokens":173429}`)}},
			},
			want: []want{{"auto", 173429}},
		},
		{
			name: "two boundaries count twice",
			files: []file{{sessionPath(sessA), []string{
				compactBoundary(uuid, sessA, 5, `{"trigger":"auto","preTokens":173429}`),
				compactBoundary("7b1c2d3e-0000-4000-8000-000000000001", sessA, 900, `{"trigger":"manual","preTokens":120000}`),
			}}},
			want: []want{{"auto", 173429}, {"manual", 120000}},
		},
		{
			name:  "microcompact_boundary is not a compaction",
			files: []file{{sessionPath(sessA), []string{microcompactBoundary("dc32a5b3-65e2-49f3-bb26-40039f2fd3b2", sessA, 5)}}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			log, _ := run(t, tc.files...)
			if len(log.compactions) != len(tc.want) {
				t.Fatalf("compactions %+v, want %+v", log.compactions, tc.want)
			}
			for i, w := range tc.want {
				c := log.compactions[i]
				if c.Trigger != w.trigger || c.PreTokens != w.preTokens {
					t.Errorf("compaction %d: trigger %q preTokens %d, want %q %d", i, c.Trigger, c.PreTokens, w.trigger, w.preTokens)
				}
				if c.SessionID != sessA {
					t.Errorf("compaction %d session %s, want %s", i, c.SessionID, sessA)
				}
			}
			if len(tc.want) > 0 {
				c := log.compactions[0]
				if c.UUID != uuid || !c.Time.Equal(at(5)) {
					t.Errorf("compaction uuid %s time %v, want %s at %v", c.UUID, c.Time, uuid, at(5))
				}
			}
		})
	}
}

// TestCompactionInContext pins where a compaction sits: in the open turn
// of the main conversation, the summary after it opens no turn, and a
// compaction inside a subagent belongs to that subagent.
func TestCompactionInContext(t *testing.T) {
	log, _ := run(t,
		file{sessionPath(sessA), []string{
			U{UUID: "u1", Sec: 0, Text: "Keep going."}.String(),
			A{UUID: "a1", Parent: "u1", Sec: 1, Msg: "msg_1", Out: 10, Stop: "end_turn"}.String(),
			compactBoundary("b1", sessA, 5, `{"trigger":"auto","preTokens":160000}`),
			U{UUID: "s1", Parent: "b1", Sec: 6, CompactSummary: true, Text: "This session is being continued from a previous conversation that ran out of context."}.String(),
		}},
		file{subagentPath(sessA, "a38ec468816fd17e1"), []string{
			U{UUID: "x0", Sec: 2, Agent: "a38ec468816fd17e1", Text: "Explore."}.String(),
			// A boundary written by the subagent itself.
			compactBoundary("b2", sessA, 3, `{"trigger":"auto","preTokens":140000}`),
		}},
	)
	if len(log.compactions) != 2 {
		t.Fatalf("compactions %+v, want 2", log.compactions)
	}
	main, sub := log.compactions[0], log.compactions[1]
	if main.UUID != "b1" || main.TurnID != "u1" || main.AgentID != "" {
		t.Errorf("main compaction %+v, want b1 in turn u1", main)
	}
	if sub.UUID != "b2" || sub.AgentID != "a38ec468816fd17e1" || sub.TurnID != "" {
		t.Errorf("subagent compaction %+v, want b2 in agent a38ec468816fd17e1 outside turns", sub)
	}
	if len(log.turns) != 1 {
		t.Errorf("turns %d, want 1: the compact summary is not a prompt", len(log.turns))
	}
}
