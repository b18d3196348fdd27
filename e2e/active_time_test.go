package e2e

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/testonly/testbackend"
)

var stampRe = regexp.MustCompile(`"timestamp":"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z)"`)

// activeTime is claude_transcript_active_time_seconds_total by type.
func activeTime(t *testing.T, exposition string) map[string]float64 {
	return sumBy(parseExposition(t, exposition), "claude_transcript_active_time_seconds_total", "type")
}

// TestActiveTimeSameLiveRestartedAndOneshot is issue 20's case on the
// real binary: the daemon backfills a tree, then lines are appended 110
// days after the tree's last record (a prompt and 30 s of a tool's
// progress, then a day later a /context typed into the same session and
// its output), the daemon restarts from its state, and a one-shot reads
// the same bytes: active time is the same in all three, and the appended
// lines add 30 s of Claude's time (the /context is no work) and 5 minutes
// of the user's (the gap before the prompt, capped) where the session had
// a turn before. spotter has Claude Code's turn_duration records;
// swordintel (Claude Code 1.0) none, and its newest session is a resumed
// one whose copied prompts are not its turns, so no user time.
func TestActiveTimeSameLiveRestartedAndOneshot(t *testing.T) {
	for _, tc := range []struct {
		tree string
		user float64
	}{
		{"spotter", 300},
		{"swordintel", 0},
	} {
		t.Run(tc.tree, func(t *testing.T) { activeTimeSameEverywhere(t, tc.tree, tc.user) })
	}
}

func activeTimeSameEverywhere(t *testing.T, tree string, userAdded float64) {
	src := filepath.Join(testbackend.CorpusDir(t), tree)
	dir := filepath.Join(t.TempDir(), "claude")
	if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	// The session with the newest record, and that record's time.
	var file string
	var last time.Time
	sessions, _ := filepath.Glob(filepath.Join(dir, "projects", "*", "*.jsonl"))
	for _, p := range sessions {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range stampRe.FindAllSubmatch(b, -1) {
			if ts, err := time.Parse(time.RFC3339Nano, string(m[1])); err == nil && ts.After(last) {
				last, file = ts, p
			}
		}
	}
	if file == "" {
		t.Fatal("no session with a timestamp")
	}
	sessionID := strings.TrimSuffix(filepath.Base(file), ".jsonl")
	late := last.Add(110 * 24 * time.Hour)
	if late.After(time.Now()) {
		t.Fatalf("110 days after %v is in the future: pick an older tree", last)
	}
	at := func(d time.Duration) string { return late.Add(d).UTC().Format("2006-01-02T15:04:05.000Z") }
	line := func(d time.Duration, uuid, parent, body string) string {
		p := "null"
		if parent != "" {
			p = fmt.Sprintf("%q", parent)
		}
		return fmt.Sprintf(`{"parentUuid":%s,"isSidechain":false,%s,"uuid":%q,"timestamp":%q,"sessionId":%q,"version":"2.1.39"}`+"\n",
			p, body, uuid, at(d), sessionID)
	}
	appended := line(0, "e2e-p1", "", `"type":"user","message":{"role":"user","content":"Anything new?"}`) +
		line(30*time.Second, "e2e-p2", "e2e-p1", `"type":"progress","data":{"type":"bash_progress","output":"","elapsedTimeSeconds":30}`) +
		line(24*time.Hour, "e2e-c1", "e2e-p2", `"type":"user","message":{"role":"user","content":"<command-name>/context</command-name>\n<command-message>context</command-message>"}`) +
		line(24*time.Hour+time.Second, "e2e-c2", "e2e-c1", `"type":"system","subtype":"local_command","content":"<local-command-stdout>Context</local-command-stdout>"`)

	state := filepath.Join(t.TempDir(), "state")
	addr, stop := startServe(t, "--claude.dir="+dir, "--sessions.idle-timeout=30m", "--state.file="+state)
	waitFor(t, func() bool {
		return sumBy(parseExposition(t, scrape(t, addr)), "claude_transcript_exporter_backfill_done")[""] == 1
	})
	before := activeTime(t, scrape(t, addr))
	if before["cli"] <= 0 {
		t.Fatalf("no cli active time after the backfill: %v", before)
	}
	f, err := os.OpenFile(file, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(appended); err != nil {
		t.Fatal(err)
	}
	f.Close()
	// The lines are read, their session reopens, settles and closes again.
	var live map[string]float64
	deadline := time.Now().Add(time.Minute)
	for {
		live = activeTime(t, scrape(t, addr))
		if live["cli"] > before["cli"] || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(5 * time.Second) // a settle more: nothing else may come
	live = activeTime(t, scrape(t, addr))
	stop()

	addr2, stop2 := startServe(t, "--claude.dir="+dir, "--sessions.idle-timeout=30m", "--state.file="+state)
	restarted := activeTime(t, scrape(t, addr2))
	stop2()
	once := activeTime(t, oneshot(t, "--claude.dir="+dir, "--sessions.idle-timeout=30m"))
	for _, typ := range []string{"cli", "user"} {
		if math.Abs(live[typ]-once[typ]) > 1e-6*math.Max(1, once[typ]) || math.Abs(restarted[typ]-once[typ]) > 1e-6*math.Max(1, once[typ]) {
			t.Errorf("active_time{type=%q}: live %v, restarted %v, one-shot %v", typ, live[typ], restarted[typ], once[typ])
		}
	}
	if d := live["cli"] - before["cli"]; math.Abs(d-30) > 1e-6 {
		t.Errorf("the appended lines added %v s of cli time, want 30", d)
	}
	if d := live["user"] - before["user"]; math.Abs(d-userAdded) > 1e-6 {
		t.Errorf("the appended lines added %v s of user time, want %v", d, userAdded)
	}
	t.Logf("cli %.0f s (backfill %.0f s), user %.0f s", live["cli"], before["cli"], live["user"])
}
