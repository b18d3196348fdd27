package tail

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// linesOf splits content the way a sequential reader does.
func linesOf(content string, atEOF bool) []string {
	var out []string
	for {
		i := strings.IndexByte(content, '\n')
		if i < 0 {
			if atEOF && content != "" {
				out = append(out, "~"+content)
			}
			return out
		}
		out = append(out, content[:i])
		content = content[i+1:]
	}
}

func TestPlannedRangesYieldTheSameLinesAsASequentialRead(t *testing.T) {
	long := strings.Repeat("x", 300<<10) // longer than a probe window
	contents := map[string]string{
		"empty":               "",
		"one line":            "a\n",
		"no final newline":    "a\nbb\nccc",
		"only a partial line": "partial",
		"blank lines":         "\n\n\na\n\n",
		"long line":           "a\n" + long + "\nb\n" + long,
		"many short lines":    strings.Repeat("0123456789\n", 5000),
		"lines past a probe":  strings.Repeat(strings.Repeat("y", 20<<10)+"\n", 40),
		"lines past 3 chunks": strings.Repeat(strings.Repeat("z", 3<<12)+"\n", 10),
	}
	for name, content := range contents {
		for _, chunk := range []int64{1, 7, 64, 4096, 1 << 20} {
			for _, atEOF := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/chunk=%d/eof=%v", name, chunk, atEOF), func(t *testing.T) {
					f := strings.NewReader(content)
					var p Planner
					ranges, err := p.Plan(f, 0, int64(len(content)), chunk, atEOF)
					if err != nil {
						t.Fatal(err)
					}
					var got []string
					prev := int64(0)
					for _, rg := range ranges {
						if rg.Start != prev {
							t.Fatalf("ranges not contiguous: %v", ranges)
						}
						prev = rg.End
						data, err := ReadRange(f, rg, nil)
						if err != nil {
							t.Fatal(err)
						}
						Lines(data, rg, 0, func(line []byte, _ int, end int64, st LineStatus) {
							s := string(line)
							if st == LineUnterminated {
								s = "~" + s
							}
							if end > rg.End {
								t.Fatalf("line end %d past range end %d", end, rg.End)
							}
							got = append(got, s)
						})
					}
					want := linesOf(content, atEOF)
					if strings.Join(got, "|") != strings.Join(want, "|") {
						t.Fatalf("lines differ: got %d, want %d", len(got), len(want))
					}
					if !atEOF && prev != int64(strings.LastIndexByte(content, '\n')+1) {
						t.Fatalf("plan ends at %d, want after the last newline", prev)
					}
				})
			}
		}
	}
}

func TestPlanStartsAtTheGivenOffset(t *testing.T) {
	content := "a\nb\nc\n"
	var p Planner
	ranges, err := p.Plan(strings.NewReader(content), 2, int64(len(content)), 1, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(ranges) == 0 || ranges[0].Start != 2 || ranges[len(ranges)-1].End != 6 {
		t.Fatalf("ranges %v", ranges)
	}
}

func TestLinesOverTheCapAreReportedNotHandedOver(t *testing.T) {
	data := []byte("short\n" + strings.Repeat("y", 100) + "\nok\n")
	var got []string
	Lines(data, Range{Start: 10, End: 10 + int64(len(data))}, 50, func(line []byte, _ int, end int64, st LineStatus) {
		if st == LineTooLong {
			if line != nil {
				t.Fatal("a too-long line was handed over")
			}
			got = append(got, fmt.Sprintf("too_long@%d", end))
			return
		}
		got = append(got, string(bytes.TrimSpace(line)))
	})
	want := "short|too_long@117|ok"
	if strings.Join(got, "|") != want {
		t.Fatalf("got %v, want %s", got, want)
	}
}

// countingReaderAt counts the reads made through it and the largest.
type countingReaderAt struct {
	r       *strings.Reader
	reads   int
	largest int
}

func (c *countingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	c.reads++
	c.largest = max(c.largest, len(p))
	return c.r.ReadAt(p, off)
}

// TestPlanMovesCutsOutOfLongLinesInOneProbe: a cut that falls in a line
// going on past the first probe moves on by a chunk instead of reading the
// line to its end, up to maxRangeChunks chunks a range; past that the
// line's end is looked for however far it is.
func TestPlanMovesCutsOutOfLongLinesInOneProbe(t *testing.T) {
	const chunk = 64 << 10
	short := strings.Repeat("s", 99) + "\n"
	for _, tc := range []struct {
		name       string
		content    string
		wantEnd    int64 // of the first range
		maxRead    int   // the largest read Plan may make
		wantProbes int   // reads to plan the first range
	}{
		{
			// The cut at 64 KiB falls in the 100 KiB line; the next, at
			// 128 KiB, in short lines: one probe each.
			name:    "a long line, then short lines",
			content: strings.Repeat("x", 100<<10) + "\n" + strings.Repeat(short, 2000),
			wantEnd: 131101, maxRead: firstProbe, wantProbes: 2,
		},
		{
			// Every cut up to the fourth chunk falls in the line: its end
			// is then read for.
			name:    "a line of 300 KiB",
			content: strings.Repeat("x", 300<<10) + "\n" + strings.Repeat(short, 2000),
			wantEnd: 300<<10 + 1, maxRead: probe, wantProbes: -1,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &countingReaderAt{r: strings.NewReader(tc.content)}
			var p Planner
			ranges, err := p.Plan(f, 0, int64(len(tc.content)), chunk, true)
			if err != nil {
				t.Fatal(err)
			}
			if ranges[0].End != tc.wantEnd {
				t.Fatalf("first range %v, want it to end at %d", ranges[0], tc.wantEnd)
			}
			if f.largest > tc.maxRead {
				t.Fatalf("a read of %d bytes, want at most %d", f.largest, tc.maxRead)
			}
			// The cuts after the first fall in short lines: one read each,
			// none for the last range, read to the end.
			if first := f.reads - (len(ranges) - 2); tc.wantProbes > 0 && first != tc.wantProbes {
				t.Fatalf("first range planned with %d reads, want %d", first, tc.wantProbes)
			}
			for i, rg := range ranges {
				if n := rg.End - rg.Start; n > maxRangeChunks*chunk && i > 0 {
					t.Fatalf("range %d holds %d bytes of short lines", i, n)
				}
			}
		})
	}
}

func TestPlanAtEOFReadsNothingWhenTheRestFitsInOneRange(t *testing.T) {
	for _, content := range []string{"a\nb\n", "a\nb\npartial", "partial"} {
		f := &countingReaderAt{r: strings.NewReader(content)}
		var p Planner
		ranges, err := p.Plan(f, 0, int64(len(content)), 64, true)
		if err != nil {
			t.Fatal(err)
		}
		want := []Range{{Start: 0, End: int64(len(content)), Unterminated: true}}
		if !slices.Equal(ranges, want) || f.reads != 0 {
			t.Errorf("%q: ranges %v after %d reads, want %v after none", content, ranges, f.reads, want)
		}
		// Not at EOF the plan must find the last line's end.
		f.reads = 0
		ranges, _ = p.Plan(f, 0, int64(len(content)), 64, false)
		if end := int64(strings.LastIndexByte(content, '\n') + 1); f.reads == 0 || end > 0 && ranges[len(ranges)-1].End != end || end == 0 && len(ranges) != 0 {
			t.Errorf("%q not at EOF: ranges %v after %d reads", content, ranges, f.reads)
		}
	}
}
