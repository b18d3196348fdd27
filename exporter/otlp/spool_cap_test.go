package otlp

import (
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/safefile"
)

// TestSpoolCapDropsTheOldestSpansFirst fills a capped spool far past its
// cap: it keeps at most the cap plus one segment, what it keeps is the
// newest spans in order, every span is either kept or counted as dropped,
// and a reopened spool agrees.
func TestSpoolCapDropsTheOldestSpansFirst(t *testing.T) {
	const maxBytes = 2000
	for _, total := range []int{5, 100, 1000} {
		t.Run(strconv.Itoa(total), func(t *testing.T) {
			dir := t.TempDir()
			dropped := 0
			s, err := OpenSpool(dir, SpoolConfig{MaxBytes: maxBytes, Dropped: func(n int) { dropped += n }})
			if err != nil {
				t.Fatal(err)
			}
			segMax := s.segSize
			for i := 0; i < total; i++ {
				appendNames(t, s, strconv.Itoa(i))
				if s.Bytes() > maxBytes+segMax+200 {
					t.Fatalf("after %d spans the spool holds %d bytes, cap %d", i+1, s.Bytes(), maxBytes)
				}
			}
			if dropped+s.Len() != total {
				t.Fatalf("kept %d + dropped %d != appended %d", s.Len(), dropped, total)
			}
			if total == 5 && dropped != 0 {
				t.Fatalf("dropped %d spans below the cap", dropped)
			}
			got, _ := readNames(t, s, total)
			if want := names(dropped, total); strings.Join(got, ",") != strings.Join(want, ",") {
				t.Fatalf("kept %v, want the newest %v", got, want)
			}
			bytes := s.Bytes()
			if err := s.Sync(); err != nil {
				t.Fatal(err)
			}
			s.Close()
			r := openSpool(t, dir, 0)
			defer r.Close()
			if r.Len() != total-dropped || r.Bytes() != bytes {
				t.Fatalf("reopened: %d spans %d bytes, want %d and %d", r.Len(), r.Bytes(), total-dropped, bytes)
			}
		})
	}
}

// TestAckAfterTheCapDroppedPartOfABatch reads a batch from the oldest
// segment, lets the cap drop that segment while the batch is being sent,
// then acknowledges the batch: no error, and exactly the spans after the
// batch remain.
func TestAckAfterTheCapDroppedPartOfABatch(t *testing.T) {
	dir := t.TempDir()
	dropped := 0
	s, err := OpenSpool(dir, SpoolConfig{MaxBytes: 2000, Dropped: func(n int) { dropped += n }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	appendNames(t, s, names(0, 12)...)
	if dropped != 0 {
		t.Fatalf("dropped %d", dropped)
	}
	batch, cur := readNames(t, s, 10)
	appendNames(t, s, names(12, 40)...)
	if dropped == 0 {
		t.Fatal("the cap dropped nothing: the test needs a drop during the send")
	}
	if err := s.Ack(cur); err != nil {
		t.Fatalf("ack after a drop: %v", err)
	}
	first := max(dropped, len(batch))
	got, _ := readNames(t, s, 100)
	if want := names(first, 40); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("left %v, want %v", got, want)
	}
	if s.Len() != 40-first {
		t.Fatalf("len %d, want %d", s.Len(), 40-first)
	}
}

// TestSecondProcessOnASpoolFailsAtOpen: a spool in use is refused, and
// free again once its holder closes it.
func TestSecondProcessOnASpoolFailsAtOpen(t *testing.T) {
	dir := t.TempDir()
	s := openSpool(t, dir, 0)
	if _, err := OpenSpool(dir, SpoolConfig{}); !errors.Is(err, safefile.ErrLocked) {
		t.Fatalf("second open: %v, want ErrLocked", err)
	}
	s.Close()
	r, err := OpenSpool(dir, SpoolConfig{})
	if err != nil {
		t.Fatalf("open after close: %v", err)
	}
	r.Close()
	if m, _ := filepath.Glob(filepath.Join(dir, spoolPrefix+"*")); len(m) != 0 {
		t.Errorf("segments left: %v", m)
	}
}
