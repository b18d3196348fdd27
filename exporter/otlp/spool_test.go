package otlp

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/spans"
)

// die ends a spool as a killed process would: nothing is synced or
// closed; only the lock goes, as the kernel frees it.
func die(s *Spool) { s.unlock() }

func openSpool(t *testing.T, dir string, segBytes int64) *Spool {
	t.Helper()
	s, err := OpenSpool(dir, SpoolConfig{SegmentBytes: segBytes})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func appendNames(t *testing.T, s *Spool, names ...string) {
	t.Helper()
	for _, n := range names {
		sp := span(n)
		if err := s.Append(&sp); err != nil {
			t.Fatal(err)
		}
	}
}

// readNames reads up to n spans and returns their names and the cursor.
func readNames(t *testing.T, s *Spool, n int) ([]string, Cursor) {
	t.Helper()
	batch, cur, bad, err := s.Read(n)
	if err != nil {
		t.Fatal(err)
	}
	if bad != 0 {
		t.Fatalf("%d bad lines", bad)
	}
	var names []string
	for _, sp := range batch {
		names = append(names, sp.Name)
	}
	return names, cur
}

func names(from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprint(i))
	}
	return out
}

func segmentFiles(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, spoolPrefix+"*"+spoolExt))
	if err != nil {
		t.Fatal(err)
	}
	for i := range m {
		m[i] = filepath.Base(m[i])
	}
	return m
}

// fullSpan sets every field of a span, with values at the edges of their
// types.
func fullSpan() spans.Span {
	paris := time.FixedZone("CEST", 2*3600)
	return spans.Span{
		TraceID:      spans.TraceID{0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0xfe, 0xdc, 0xba, 0x98, 0x76, 0x54, 0x32, 0x10},
		SpanID:       spans.SpanID{0xff, 0, 1, 2, 3, 4, 5, 0x80},
		ParentSpanID: spans.SpanID{9, 8, 7, 6, 5, 4, 3, 2},
		Name:         "execute_tool Bash «ü» \"quoted\"\n\ttab",
		Kind:         spans.KindClient,
		Start:        time.Date(2025, 7, 1, 12, 34, 56, 123456789, time.UTC),
		End:          time.Date(2025, 7, 1, 14, 34, 57, 1, paris),
		Attrs: []spans.Attr{
			spans.String("gen_ai.operation.name", "chat"),
			spans.String("empty", ""),
			spans.Int("zero", 0),
			spans.Int("max", math.MaxInt64),
			spans.Int("min", math.MinInt64),
			spans.Bool("false", false),
			spans.Bool("true", true),
			spans.Strings("gen_ai.response.finish_reasons", "tool_use", "", "end_turn"),
			spans.String("emoji", "🦀 \u2028 \x00 nul"),
			spans.Float("claude_code.cost.usd", 0.1234567890123),
			spans.Float("float.zero", 0),
		},
		Status:        spans.StatusError,
		StatusMessage: "tool failed: exit 1",
		Events: []spans.Event{
			{Name: "gen_ai.compaction", Time: time.Date(2025, 7, 1, 12, 35, 0, 5, time.UTC),
				Attrs: []spans.Attr{spans.String("trigger", "auto"), spans.Int("pre_tokens", 150000)}},
			{Name: "no attrs", Time: time.Date(2025, 7, 1, 12, 36, 0, 0, time.UTC)},
		},
		Links: []spans.Link{{TraceID: spans.TraceID{1}, SpanID: spans.SpanID{2}}},
	}
}

// sameSpan compares two spans field by field; times by instant.
func sameSpan(t *testing.T, got, want spans.Span) {
	t.Helper()
	if !got.Start.Equal(want.Start) || !got.End.Equal(want.End) {
		t.Errorf("times %v..%v, want %v..%v", got.Start, got.End, want.Start, want.End)
	}
	if len(got.Events) != len(want.Events) {
		t.Fatalf("%d events, want %d", len(got.Events), len(want.Events))
	}
	for i := range want.Events {
		if !got.Events[i].Time.Equal(want.Events[i].Time) {
			t.Errorf("event %d time %v, want %v", i, got.Events[i].Time, want.Events[i].Time)
		}
		got.Events[i].Time, want.Events[i].Time = time.Time{}, time.Time{}
	}
	got.Start, got.End, want.Start, want.End = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("round trip:\n got %+v\nwant %+v", got, want)
	}
}

func TestSpoolRoundTripsEverySpanField(t *testing.T) {
	dir := t.TempDir()
	s := openSpool(t, dir, 0)
	minimal := spans.Span{TraceID: spans.TraceID{1}, SpanID: spans.SpanID{2}, Name: "session"}
	want := []spans.Span{fullSpan(), minimal}
	for i := range want {
		if err := s.Append(&want[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Read back from disk by a new spool.
	s = openSpool(t, dir, 0)
	defer s.Close()
	got, _, bad, err := s.Read(10)
	if err != nil || bad != 0 || len(got) != 2 {
		t.Fatalf("read %d spans, %d bad, err %v", len(got), bad, err)
	}
	sameSpan(t, got[0], fullSpan())
	sameSpan(t, got[1], minimal)
	if !got[1].Start.IsZero() || got[1].Attrs != nil || got[1].Events != nil || got[1].Links != nil || !got[1].ParentSpanID.IsZero() {
		t.Errorf("empty fields did not stay empty: %+v", got[1])
	}
}

func TestSpoolReadWithoutAckReadsTheSameSpansAgain(t *testing.T) {
	s := openSpool(t, t.TempDir(), 0)
	defer s.Close()
	appendNames(t, s, "a", "b", "c")
	first, c1 := readNames(t, s, 2)
	again, c2 := readNames(t, s, 2)
	if strings.Join(first, ",") != "a,b" || strings.Join(again, ",") != "a,b" || c1 != c2 {
		t.Fatalf("read %v then %v", first, again)
	}
	if err := s.Ack(c1); err != nil {
		t.Fatal(err)
	}
	if err := s.Ack(c2); err == nil {
		t.Error("acknowledging a cursor of an older read: no error")
	}
	if s.Len() != 1 {
		t.Errorf("len %d, want 1", s.Len())
	}
	rest, c3 := readNames(t, s, 5)
	if strings.Join(rest, ",") != "c" {
		t.Errorf("read %v", rest)
	}
	if err := s.Ack(c3); err != nil || s.Len() != 0 || s.Bytes() != 0 {
		t.Errorf("err %v, len %d, bytes %d", err, s.Len(), s.Bytes())
	}
	if got, _ := readNames(t, s, 5); len(got) != 0 {
		t.Errorf("empty spool read %v", got)
	}
}

func TestSpoolResumesAtTheCursorAfterReopen(t *testing.T) {
	dir := t.TempDir()
	s := openSpool(t, dir, 200)
	appendNames(t, s, names(0, 30)...)
	_, cur := readNames(t, s, 12)
	if err := s.Ack(cur); err != nil {
		t.Fatal(err)
	}
	bytes := s.Bytes()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = openSpool(t, dir, 200)
	if s.Len() != 18 || s.Bytes() != bytes {
		t.Fatalf("reopened: len %d bytes %d, want 18 and %d", s.Len(), s.Bytes(), bytes)
	}
	// Appends after a reopen come after what was there.
	appendNames(t, s, "30", "31")
	got, cur := readNames(t, s, 100)
	if want := names(12, 32); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("read %v, want %v", got, want)
	}
	if err := s.Ack(cur); err != nil {
		t.Fatal(err)
	}
	if s.Len() != 0 {
		t.Errorf("len %d", s.Len())
	}
	s.Close()
}

func TestSpoolKeepsSyncedSpansWhenTheProcessDies(t *testing.T) {
	dir := t.TempDir()
	s := openSpool(t, dir, 0)
	appendNames(t, s, "a", "b")
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	// No Close: the process is killed. A new process opens the spool.
	die(s)
	r := openSpool(t, dir, 0)
	defer r.Close()
	got, _ := readNames(t, r, 10)
	if strings.Join(got, ",") != "a,b" || r.Len() != 2 {
		t.Errorf("after a kill: %v, len %d", got, r.Len())
	}
}

func TestSpoolDropsATornLastLineAtOpen(t *testing.T) {
	dir := t.TempDir()
	s := openSpool(t, dir, 0)
	appendNames(t, s, "a", "b", "c")
	s.Close()
	segs := segmentFiles(t, dir)
	if len(segs) != 1 {
		t.Fatalf("segments %v", segs)
	}
	path := filepath.Join(dir, segs[0])
	whole, _ := os.ReadFile(path)
	// The process died in the middle of appending a fourth span.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"t":"0100000000000000000000000000000","s":"02`)
	f.Close()

	s = openSpool(t, dir, 0)
	if s.Len() != 3 {
		t.Errorf("len %d, want 3", s.Len())
	}
	if after, _ := os.ReadFile(path); string(after) != string(whole) {
		t.Errorf("torn line not cut: %d bytes, want %d", len(after), len(whole))
	}
	appendNames(t, s, "d")
	got, _ := readNames(t, s, 10)
	if strings.Join(got, ",") != "a,b,c,d" {
		t.Errorf("read %v", got)
	}
	s.Close()
}

func TestSpoolSkipsLinesThatDoNotDecode(t *testing.T) {
	dir := t.TempDir()
	s := openSpool(t, dir, 0)
	appendNames(t, s, "a")
	s.Close()
	segs := segmentFiles(t, dir)
	f, _ := os.OpenFile(filepath.Join(dir, segs[0]), os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString("\x00\x00garbage\n")
	f.Close()
	s = openSpool(t, dir, 0)
	defer s.Close()
	appendNames(t, s, "b")
	if s.Len() != 3 {
		t.Fatalf("len %d, want 3 (the bad line counts until read)", s.Len())
	}
	batch, cur, bad, err := s.Read(10)
	if err != nil || bad != 1 || len(batch) != 2 || batch[0].Name != "a" || batch[1].Name != "b" {
		t.Fatalf("read %d spans, %d bad, err %v", len(batch), bad, err)
	}
	if err := s.Ack(cur); err != nil || s.Len() != 0 {
		t.Errorf("err %v, len %d", err, s.Len())
	}
}

func TestSpoolRollsSegmentsAndDeletesAcknowledgedOnes(t *testing.T) {
	dir := t.TempDir()
	s := openSpool(t, dir, 150) // two or three spans a segment
	appendNames(t, s, names(0, 40)...)
	all := segmentFiles(t, dir)
	if len(all) < 10 {
		t.Fatalf("%d segments for 40 spans of ~60 bytes at 150 bytes a segment", len(all))
	}
	var got []string
	for s.Len() > 0 {
		batch, cur := readNames(t, s, 7)
		got = append(got, batch...)
		if err := s.Ack(cur); err != nil {
			t.Fatal(err)
		}
		left := segmentFiles(t, dir)
		// Only segments at or after the cursor are left.
		if first := segName(cur.Segment); len(left) > 0 && left[0] < first {
			t.Fatalf("segment %s kept behind the cursor %s", left[0], first)
		}
	}
	if strings.Join(got, ",") != strings.Join(names(0, 40), ",") {
		t.Fatalf("read %v", got)
	}
	if left := segmentFiles(t, dir); len(left) > 0 {
		t.Errorf("segments left after acknowledging everything: %v", left)
	}
	s.Close()

	// Reopened, the empty spool starts a new segment after the old ones.
	s = openSpool(t, dir, 150)
	defer s.Close()
	if s.Len() != 0 {
		t.Errorf("len %d", s.Len())
	}
	appendNames(t, s, "x")
	if got, _ := readNames(t, s, 5); strings.Join(got, ",") != "x" {
		t.Errorf("read %v", got)
	}
	if segs := segmentFiles(t, dir); segs[len(segs)-1] <= all[len(all)-1] {
		t.Errorf("new segment %s does not come after %s", segs[len(segs)-1], all[len(all)-1])
	}
}

func TestSpoolCursorIsReplacedAtomically(t *testing.T) {
	dir := t.TempDir()
	s := openSpool(t, dir, 150)
	appendNames(t, s, names(0, 20)...)
	_, cur := readNames(t, s, 9)
	if err := s.Ack(cur); err != nil {
		t.Fatal(err)
	}
	s.Close()
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), cursorName+".") {
			t.Errorf("temporary file left: %s", e.Name())
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, cursorName))
	if err != nil || !strings.Contains(string(b), fmt.Sprintf(`"segment":%d`, cur.Segment)) {
		t.Fatalf("cursor file %q, err %v", b, err)
	}

	// A write interrupted before the rename leaves a temporary file and
	// the old cursor: the temporary file is removed, the old cursor used.
	os.WriteFile(filepath.Join(dir, cursorName+".12345"), []byte(`{"segm`), 0o600)
	s = openSpool(t, dir, 150)
	if got, _ := readNames(t, s, 100); strings.Join(got, ",") != strings.Join(names(9, 20), ",") {
		t.Errorf("resumed at %v", got)
	}
	s.Close()
	if _, err := os.Stat(filepath.Join(dir, cursorName+".12345")); !os.IsNotExist(err) {
		t.Errorf("temporary cursor file not removed: %v", err)
	}

	// A damaged cursor file means starting over at the oldest segment:
	// spans may be sent twice, never lost.
	os.WriteFile(filepath.Join(dir, cursorName), []byte("\x00\x00"), 0o600)
	s = openSpool(t, dir, 150)
	defer s.Close()
	got, _ := readNames(t, s, 100)
	if len(got) < 11 || got[len(got)-1] != "19" {
		t.Errorf("with a damaged cursor read %v", got)
	}
}

func TestSpoolCursorPastLostDataIsClamped(t *testing.T) {
	dir := t.TempDir()
	s := openSpool(t, dir, 0)
	appendNames(t, s, "a", "b", "c")
	_, cur := readNames(t, s, 2)
	if err := s.Ack(cur); err != nil {
		t.Fatal(err)
	}
	s.Close()
	// A power cut kept the cursor but not the segment's data.
	segs := segmentFiles(t, dir)
	if err := os.Truncate(filepath.Join(dir, segs[0]), 10); err != nil {
		t.Fatal(err)
	}
	s = openSpool(t, dir, 0)
	defer s.Close()
	if s.Len() != 0 {
		t.Errorf("len %d", s.Len())
	}
	appendNames(t, s, "d")
	if got, _ := readNames(t, s, 5); strings.Join(got, ",") != "d" {
		t.Errorf("read %v", got)
	}
}
