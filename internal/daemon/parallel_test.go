package daemon

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/safefile"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/tail"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/transcript"
)

func TestRecycledBatchesFollowTheWindowUpToACap(t *testing.T) {
	for _, tc := range []struct{ cores, want int }{{0, 3}, {1, 3}, {2, 6}, {3, 8}, {16, 8}} {
		if got := recycledBatches(tc.cores); got != tc.want {
			t.Errorf("recycledBatches(%d) = %d, want %d", tc.cores, got, tc.want)
		}
	}
}

// TestRangesOfManyShortLinesGoToTheAssemblyInBoundedParts: a range of
// thousands of short lines reaches the assembly in batches of at most
// maxBatchRecords records, read or streamed, every record once and in file
// order, with the range's counts summed over its parts and its end (part
// unset) last; ranges of few lines stay whole; every batch stays small
// enough to be kept for reuse.
func TestRangesOfManyShortLinesGoToTheAssemblyInBoundedParts(t *testing.T) {
	const maxLine = 4096
	var file strings.Builder
	var want []string
	var ranges []tail.Range
	addRange := func(prefix string, lines int) {
		start := int64(file.Len())
		for i := range lines {
			switch {
			case i%1000 == 999:
				file.WriteString("\n") // blank: counted, no record
			case i%1000 == 998:
				file.WriteString("{not json\n") // counted as a decode error
			default:
				id := fmt.Sprintf("%s%d", prefix, i)
				want = append(want, id)
				fmt.Fprintf(&file, "{\"uuid\":%q}\n", id)
			}
		}
		ranges = append(ranges, tail.Range{Start: start, End: int64(file.Len())})
	}
	addRange("a", 5000) // read at once (under 2·chunkBytes), five parts
	addRange("b", 3)    // whole
	addRange("c", 2*maxBatchRecords)
	addRange("d", 20_000) // over 2·chunkBytes: streamed, in parts
	addRange("e", maxBatchRecords)
	path := filepath.Join(t.TempDir(), "short.jsonl")
	if err := os.WriteFile(path, []byte(file.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if n := ranges[3].End - ranges[3].Start; n <= 2*chunkBytes {
		t.Fatalf("range d is %d bytes: too short to be streamed", n)
	}
	for _, cores := range []int{1, 2, 4} {
		t.Run(fmt.Sprintf("%d cores", cores), func(t *testing.T) {
			fh, _, err := safefile.OpenFile(path)
			if err != nil {
				t.Fatal(err)
			}
			defer fh.Close()
			free := make(chan []transcript.Record, recycledBatches(cores))
			var got []string
			type counts struct{ lines, blank, bad, parts, ends int }
			per := make([]counts, len(ranges))
			decodeInOrder(func(emit func(job)) {
				for i, rg := range ranges {
					emit(job{fh: fh, rg: rg, last: i == len(ranges)-1})
				}
			}, cores, maxLine, transcript.Options{}, free, func(d *decoded) {
				i := d.seq
				if len(d.recs) > maxBatchRecords || cap(d.recs) > maxBatchRecords {
					t.Errorf("range %d: a batch of %d records (capacity %d)", i, len(d.recs), cap(d.recs))
				}
				if d.err != nil {
					t.Errorf("range %d: %v", i, d.err)
				}
				if per[i].ends > 0 {
					t.Errorf("range %d: records after its end", i)
				}
				for k := range d.recs {
					got = append(got, d.recs[k].UUID)
				}
				per[i].lines += d.lines
				per[i].blank += d.blank
				per[i].bad += d.reasons[transcript.ReasonInvalidJSON]
				if d.part {
					per[i].parts++
				} else {
					per[i].ends++
				}
			})
			if strings.Join(got, ",") != strings.Join(want, ",") {
				t.Fatalf("records out of order or lost: %d read, %d written", len(got), len(want))
			}
			for i, lines := range []int{5000, 3, 2 * maxBatchRecords, 20_000, maxBatchRecords} {
				records := lines - lines/1000*2
				wantParts := (records - 1) / maxBatchRecords
				if c := per[i]; c.lines != lines || c.blank != lines/1000 || c.bad != lines/1000 || c.ends != 1 || c.parts != wantParts {
					t.Errorf("range %d: %+v; want %d lines, %d blank, %d bad, %d parts and an end", i, c, lines, lines/1000, lines/1000, wantParts)
				}
			}
		})
	}
}

// TestLongRangesOfOneFileAreStreamedSideBySide: ranges holding a line
// over the cap are streamed, several of one file at once on its one
// handle, and each still yields its own lines, in order. (Streaming
// seeked the shared handle: with two workers a line went missing.)
func TestLongRangesOfOneFileAreStreamedSideBySide(t *testing.T) {
	const maxLine = 1024
	var file strings.Builder
	var want []string
	for seg := range 4 {
		for i := 0; file.Len()%(3<<20+200<<10) < 100<<10; i++ {
			id := fmt.Sprintf("s%d-%05d", seg, i)
			want = append(want, id)
			fmt.Fprintf(&file, "{\"uuid\":%q}\n", id)
		}
		file.WriteString(strings.Repeat("x", 3<<20) + "\n")
	}
	path := filepath.Join(t.TempDir(), "long.jsonl")
	if err := os.WriteFile(path, []byte(file.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	fh, _, err := safefile.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	var p tail.Planner
	ranges, err := p.Plan(fh, 0, int64(file.Len()), chunkBytes, false)
	if err != nil {
		t.Fatal(err)
	}
	streamed := 0
	for _, rg := range ranges {
		if rg.End-rg.Start > 2*chunkBytes {
			streamed++
		}
	}
	if streamed < 2 {
		t.Fatalf("%d of %d ranges streamed, want several", streamed, len(ranges))
	}
	for _, cores := range []int{2, 4} {
		for range 5 {
			var got []string
			lines, tooLong := 0, 0
			decodeInOrder(func(emit func(job)) {
				for i, rg := range ranges {
					emit(job{fh: fh, rg: rg, last: i == len(ranges)-1})
				}
			}, cores, maxLine, transcript.Options{}, make(chan []transcript.Record, recycledBatches(cores)), func(d *decoded) {
				if d.err != nil {
					t.Errorf("range %d: %v", d.seq, d.err)
				}
				lines += d.lines
				tooLong += d.reasons[transcript.ReasonTooLong]
				for k := range d.recs {
					got = append(got, d.recs[k].UUID)
				}
				time.Sleep(2 * time.Millisecond) // the assembly lags: streams overlap
			})
			if strings.Join(got, ",") != strings.Join(want, ",") || lines != len(want)+4 || tooLong != 4 {
				t.Fatalf("%d cores: %d records (want %d), %d lines (want %d), %d too long (want 4)", cores, len(got), len(want), lines, len(want)+4, tooLong)
			}
		}
	}
}

// TestSplitRangesKeepTheirPlaceBetweenPauses: pauses between groups reach
// the assembly in their place among ranges handed over in parts, and a
// streamed range whose read fails after its first parts ends with the
// error on its last part, the ranges after it read as usual.
func TestSplitRangesKeepTheirPlaceBetweenPauses(t *testing.T) {
	dir := t.TempDir()
	write := func(name, prefix string, lines int) (*safefile.File, tail.Range) {
		var b strings.Builder
		for i := range lines {
			fmt.Fprintf(&b, "{\"uuid\":\"%s%d\"}\n", prefix, i)
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
			t.Fatal(err)
		}
		fh, _, err := safefile.OpenFile(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { fh.Close() })
		return fh, tail.Range{End: int64(b.Len())}
	}
	for _, cores := range []int{1, 2, 4} {
		t.Run(fmt.Sprintf("%d cores", cores), func(t *testing.T) {
			fa, ra := write(fmt.Sprintf("a%d.jsonl", cores), "a", 5000)
			fb, rb := write(fmt.Sprintf("b%d.jsonl", cores), "b", 3)
			fc, rc := write(fmt.Sprintf("c%d.jsonl", cores), "c", 200_000) // streamed: over 2·chunkBytes
			fd, rd := write(fmt.Sprintf("d%d.jsonl", cores), "d", 1500)
			jobs := []job{{pause: true}, {fh: fa, rg: ra}, {pause: true}, {fh: fb, rg: rb}, {fh: fc, rg: rc}, {pause: true}, {fh: fd, rg: rd}, {pause: true}}
			var events []string
			records := map[string]int{}
			closed := false
			decodeInOrder(func(emit func(job)) {
				for _, j := range jobs {
					emit(j)
				}
			}, cores, 4096, transcript.Options{}, make(chan []transcript.Record, recycledBatches(cores)), func(d *decoded) {
				if d.pause {
					events = append(events, "pause")
					return
				}
				name := filepath.Base(d.fh.Name())[:1]
				records[name] += len(d.recs)
				if d.part {
					if name == "c" && !closed {
						fc.Close() // the rest of c's read fails
						closed = true
					}
					return
				}
				if d.err != nil {
					name += " failed"
				}
				events = append(events, name)
			})
			want := []string{"pause", "a", "pause", "b", "c failed", "pause", "d", "pause"}
			if !slices.Equal(events, want) {
				t.Errorf("events %q, want %q", events, want)
			}
			if records["a"] != 5000 || records["b"] != 3 || records["d"] != 1500 || records["c"] < maxBatchRecords || records["c"] >= 200_000 {
				t.Errorf("records %v: want a, b and d whole and c cut short after its first part", records)
			}
		})
	}
}

// TestTheFeederRunsAheadBoundedWhileTheAssemblyLags: with an assembly that
// takes its time, the feeder runs ahead of it by the window and feedAhead
// jobs at most (each fed job may hold an open file), and by more than the
// window (it does not wait for the assembly job by job); the jobs reach
// the assembly once each, in order.
func TestTheFeederRunsAheadBoundedWhileTheAssemblyLags(t *testing.T) {
	for _, cores := range []int{1, 2, 4} {
		t.Run(fmt.Sprintf("%d cores", cores), func(t *testing.T) {
			const jobs = 400
			window := inFlightPerCore * cores
			var mu sync.Mutex
			fed, consumed, ahead := 0, 0, 0
			decodeInOrder(func(emit func(job)) {
				for range jobs {
					emit(job{pause: true})
					mu.Lock()
					fed++
					ahead = max(ahead, fed-consumed)
					mu.Unlock()
				}
			}, cores, 4096, transcript.Options{}, make(chan []transcript.Record, recycledBatches(cores)), func(d *decoded) {
				if d.seq != consumed {
					t.Fatalf("job %d consumed in place %d", d.seq, consumed)
				}
				time.Sleep(100 * time.Microsecond)
				mu.Lock()
				consumed++
				mu.Unlock()
			})
			if consumed != jobs {
				t.Fatalf("consumed %d jobs, fed %d", consumed, jobs)
			}
			// One more: a job counts as fed once emit returned.
			if limit := window + feedAhead + 1; ahead > limit {
				t.Errorf("the feeder ran %d jobs ahead of the assembly, the bound is %d", ahead, limit)
			}
			if ahead <= window+1 {
				t.Errorf("the feeder ran at most %d jobs ahead: it waited for the assembly (window %d)", ahead, window)
			}
		})
	}
}

// TestTheWorkerThatReadsAFilesLastRangeClosesIt: the ranges of a file fed
// with a count of its reads share one handle, which the worker that reads
// the last of them closes, so that it is closed by the time the assembly
// takes the file's last range, and never before a range was read; a
// handle fed without the count is left to its owner.
func TestTheWorkerThatReadsAFilesLastRangeClosesIt(t *testing.T) {
	var file strings.Builder
	var ranges []tail.Range
	for r := range 12 {
		start := int64(file.Len())
		for i := range 500 {
			fmt.Fprintf(&file, "{\"uuid\":\"r%d-%d\"}\n", r, i)
		}
		ranges = append(ranges, tail.Range{Start: start, End: int64(file.Len())})
	}
	path := filepath.Join(t.TempDir(), "ranges.jsonl")
	if err := os.WriteFile(path, []byte(file.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, cores := range []int{1, 2, 4} {
		t.Run(fmt.Sprintf("%d cores", cores), func(t *testing.T) {
			owned, _, err := safefile.OpenFile(path)
			if err != nil {
				t.Fatal(err)
			}
			kept, _, err := safefile.OpenFile(path)
			if err != nil {
				t.Fatal(err)
			}
			defer kept.Close()
			reads := new(atomic.Int32)
			reads.Store(int32(len(ranges)))
			records := 0
			decodeInOrder(func(emit func(job)) {
				for i, rg := range ranges {
					emit(job{fh: owned, reads: reads, rg: rg, last: i == len(ranges)-1})
				}
				for i, rg := range ranges {
					emit(job{fh: kept, rg: rg, last: i == len(ranges)-1})
				}
			}, cores, 4096, transcript.Options{}, make(chan []transcript.Record, recycledBatches(cores)), func(d *decoded) {
				if d.err != nil {
					t.Fatalf("range %d: %v", d.seq, d.err)
				}
				records += len(d.recs)
				if d.last && d.fh == owned {
					if err := owned.Close(); !errors.Is(err, os.ErrClosed) {
						t.Errorf("the file's last range was taken with its handle open (close: %v)", err)
					}
				}
			})
			if want := 2 * 12 * 500; records != want {
				t.Errorf("%d records, want %d", records, want)
			}
			if _, err := kept.ReadAt(make([]byte, 1), 0); err != nil {
				t.Errorf("a handle fed without a count of reads was closed: %v", err)
			}
		})
	}
}

// TestBackfillGroupsEndAtAProjectsEndUnlessTooLarge: a group ends early
// only between two project directories, never inside one (a session's
// legacy agent-*.jsonl sort after the rest of its project, so a pause
// there would close the session before them); inside a project only once
// it holds the configured bytes or groupFiles files, and then never inside
// a session's own subagents.
func TestBackfillGroupsEndAtAProjectsEndUnlessTooLarge(t *testing.T) {
	const (
		sess  = "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
		other = "1a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
	)
	rd, abs := newTestReader(t)
	rd.cfg.GroupBytes = 64 << 20
	file := func(rel string) *fileState {
		f := rd.add(abs(rel), "")
		if f == nil {
			t.Fatalf("%s: not added", rel)
		}
		return f
	}
	var (
		session   = file("-home-u-a/" + sess + ".jsonl")
		subagent  = file("-home-u-a/" + sess + "/subagents/agent-a1.jsonl")
		legacy    = file("-home-u-a/agent-b2.jsonl")
		sibling   = file("-home-u-a/" + other + ".jsonl")
		nextProj  = file("-home-u-b/" + other + ".jsonl")
		odd       = file("-home-u-a/odd name.jsonl")
		oddNext   = file("-home-u-b/odd name.jsonl")
		deepNext  = file("-home-u-b/deeper/" + sess + ".jsonl")
		soft, big = int64(projectGroupBytes), int64(rd.cfg.GroupBytes)
	)
	tests := []struct {
		name    string
		took    int
		pending int64
		prev, f *fileState
		want    bool
	}{
		{"nothing taken", 0, big, nil, session, false},
		{"small group at a project's end", 3, soft - 1, legacy, nextProj, false},
		{"full group at a project's end", 3, soft, legacy, nextProj, true},
		{"full group inside a project, before a legacy agent", 3, soft, subagent, legacy, false},
		{"full group inside a project, between sessions", 3, big - 1, session, sibling, false},
		{"full group at a project's end, unpacked names", 3, soft, odd, oddNext, true},
		{"full group at a project's end, deeper path", 3, soft, sibling, deepNext, true},
		{"oversized group inside a project", 3, big, session, sibling, true},
		{"oversized group inside a session's subagents", 3, big, session, subagent, false},
		{"too many files inside a project", groupFiles, 1, subagent, legacy, true},
		{"too many files inside a session's subagents", groupFiles, 1, session, subagent, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := rd.groupDue(tc.took, tc.pending, tc.prev, tc.f); got != tc.want {
				t.Errorf("groupDue(%d files, %d bytes, before %s) = %v, want %v", tc.took, tc.pending, tc.f.rel(), got, tc.want)
			}
		})
	}
}
