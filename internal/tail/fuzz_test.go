package tail

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/testonly/testbackend"
)

// got is one line handed over by a reader, as the fuzz target records it.
type got struct {
	st   LineStatus
	line string
	end  int64
}

func (g got) String() string { return fmt.Sprintf("%d:%q@%d", g.st, g.line, g.end) }

// wantLines is what a reader must hand over for content: every complete
// line once, in order, with the offset just after its '\n'; lines over
// maxLine (when > 0) as LineTooLong without their bytes. With atEOF, the
// bytes after the last '\n' come last as LineUnterminated (or LineTooLong),
// except, for the streaming Reader (planned false), when they are only
// white space: it skips them (they hold no record) but still moves past them.
func wantLines(content []byte, maxLine int, atEOF, planned bool) []got {
	var out []got
	pos := int64(0)
	for {
		i := bytes.IndexByte(content, '\n')
		if i < 0 {
			if !atEOF || len(content) == 0 {
				return out
			}
			end := pos + int64(len(content))
			switch {
			case maxLine > 0 && len(content) > maxLine:
				out = append(out, got{LineTooLong, "", end})
			case planned || len(bytes.TrimSpace(content)) > 0:
				out = append(out, got{LineUnterminated, string(content), end})
			}
			return out
		}
		pos += int64(i) + 1
		if maxLine > 0 && i > maxLine {
			out = append(out, got{LineTooLong, "", pos})
		} else {
			out = append(out, got{LineOK, string(content[:i]), pos})
		}
		content = content[i+1:]
	}
}

// watermark is where a reader must stand after reading content: after the
// last '\n', or (atEOF) at its end.
func watermark(content []byte, atEOF bool) int64 {
	if atEOF {
		return int64(len(content))
	}
	return int64(bytes.LastIndexByte(content, '\n') + 1)
}

// fuzzSeedStreams reads the start of a few real transcripts: a handful of
// files, at most 4 KiB each (small inputs keep the fuzzer fast). It fails when the corpus is not there.
func fuzzSeedStreams(tb testing.TB) [][]byte {
	root := testbackend.CorpusDir(tb)
	const maxFiles, maxBytes = 6, 4 << 10
	var out [][]byte
	_ = filepath.WalkDir(root, func(p string, de fs.DirEntry, err error) error {
		if err != nil || de.IsDir() || !strings.HasSuffix(p, ".jsonl") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil || len(b) == 0 {
			return nil
		}
		if len(b) > maxBytes {
			b = b[:maxBytes] // usually ends mid-line: a partial last line
		}
		out = append(out, b)
		if len(out) >= maxFiles {
			return fs.SkipAll
		}
		return nil
	})
	if len(out) == 0 {
		tb.Fatalf("no transcript under %s", root)
	}
	return out
}

// FuzzTail writes a byte stream to a file in chunks cut at fuzz-chosen
// points and reads after each chunk, the way the daemon follows a file
// being written: with the planner (Plan, ReadRange, Lines, and the
// streaming Reader over each range, as a decode worker does for long
// ranges) and with the streaming Reader alone from its own watermark. The
// lines handed over across all reads must be exactly the complete lines of
// the final content, each once, in order, with the right end offsets; the
// unterminated tail only at the final read AtEOF. Lines over the cap come
// as LineTooLong.
func FuzzTail(f *testing.F) {
	for i, s := range fuzzSeedStreams(f) {
		f.Add(s, []byte{byte(i * 37), 200, 3, 0, 90}, uint16(100*i+1), uint16(i*500), uint8(i))
	}
	for _, s := range []string{
		"", "\n", "\n\n\n", "a", "a\n", "a\nbb\nccc", "  \t", "x\n  \n \t", "\xff\xfe\n\x00\n",
		"{\"type\":\"user\"}\n{\"type\":\"assis", strings.Repeat("y", 300) + "\nz\n" + strings.Repeat("w", 100),
		"\r\n\r\n", "a\rb\n",
	} {
		f.Add([]byte(s), []byte{1, 0, 2, 5}, uint16(7), uint16(0), uint8(0))
		f.Add([]byte(s), []byte{0}, uint16(1), uint16(3), uint8(255))
	}
	// One file per process, emptied for each input (a fuzz worker runs
	// inputs one at a time): cheaper than a directory per input.
	path := filepath.Join(f.TempDir(), "t.jsonl")
	f.Fuzz(func(t *testing.T, content, cuts []byte, planChunk, maxLine16 uint16, bufSel uint8) {
		chunk := int64(planChunk%4096) + 1
		maxLine := int(maxLine16 % 1024) // 0: no cap
		bufSize := 16 + int(bufSel)%64   // small: long lines cross the buffer

		w, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		fh, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer fh.Close()

		var (
			planner            Planner
			planned, streamed  []got
			offPlan, offStream int64
			written            int
			buf                []byte
		)
		stream := NewReader(bufSize, maxLine)
		rangeReader := NewReader(bufSize, maxLine)

		read := func(atEOF bool) {
			size := int64(written)
			// The daemon's path: plan ranges from the watermark.
			ranges, err := planner.Plan(fh, offPlan, size, chunk, atEOF)
			if err != nil {
				t.Fatal(err)
			}
			for _, rg := range ranges {
				if rg.Start != offPlan || rg.End <= rg.Start || rg.End > size {
					t.Fatalf("range %+v after watermark %d, size %d", rg, offPlan, size)
				}
				if !rg.Unterminated && content[rg.End-1] != '\n' {
					t.Fatalf("range %+v does not end after a newline", rg)
				}
				if rg.Unterminated && (!atEOF || rg.End != size) {
					t.Fatalf("unterminated range %+v (atEOF %v, size %d)", rg, atEOF, size)
				}
				if buf, err = ReadRange(fh, rg, buf); err != nil {
					t.Fatal(err)
				}
				var inRange []got
				Lines(buf, rg, maxLine, func(line []byte, _ int, end int64, st LineStatus) {
					inRange = append(inRange, got{st, string(line), end})
				})
				// A worker streams long ranges instead: same lines, except
				// a blank unterminated tail, which it skips.
				var viaReader []got
				end, err := rangeReader.ReadFrom(fh, rg.Start, ReadOptions{Limit: rg.End, AtEOF: rg.Unterminated},
					func(line []byte, end int64, st LineStatus) error {
						viaReader = append(viaReader, got{st, string(line), end})
						return nil
					})
				if err != nil || end != rg.End {
					t.Fatalf("ReadFrom over range %+v ended at %d: %v", rg, end, err)
				}
				wantVia := slices.DeleteFunc(slices.Clone(inRange), func(g got) bool {
					return g.st == LineUnterminated && len(strings.TrimSpace(g.line)) == 0
				})
				if !slices.Equal(viaReader, wantVia) {
					t.Fatalf("range %+v: Lines %v, ReadFrom %v", rg, inRange, viaReader)
				}
				planned = append(planned, inRange...)
				offPlan = rg.End
			}
			// The streaming reader alone, from its own watermark.
			off, err := stream.ReadFrom(fh, offStream, ReadOptions{AtEOF: atEOF}, func(line []byte, end int64, st LineStatus) error {
				streamed = append(streamed, got{st, string(line), end})
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			offStream = off

			sofar := content[:written]
			wm := watermark(sofar, atEOF)
			if offPlan != wm || offStream != wm {
				t.Fatalf("after %d bytes (atEOF %v): planned watermark %d, streamed %d, want %d", written, atEOF, offPlan, offStream, wm)
			}
			if want := wantLines(sofar, maxLine, atEOF, true); !slices.Equal(planned, want) {
				t.Fatalf("after %d bytes (atEOF %v): planned lines\n%v\nwant\n%v", written, atEOF, planned, want)
			}
			if want := wantLines(sofar, maxLine, atEOF, false); !slices.Equal(streamed, want) {
				t.Fatalf("after %d bytes (atEOF %v): streamed lines\n%v\nwant\n%v", written, atEOF, streamed, want)
			}
		}

		// Each cut byte is the length of the next chunk (0: read again
		// with nothing new); the rest of the content comes last. At most
		// 64 chunks: every read re-checks all lines so far.
		for _, c := range cuts[:min(len(cuts), 64)] {
			n := min(int(c), len(content)-written)
			if _, err := w.Write(content[written : written+n]); err != nil {
				t.Fatal(err)
			}
			written += n
			read(false)
		}
		if _, err := w.Write(content[written:]); err != nil {
			t.Fatal(err)
		}
		written = len(content)
		read(false)
		read(true)
		// Nothing more is handed over once everything was read.
		n := len(planned)
		read(true)
		if len(planned) != n {
			t.Fatalf("a second read at EOF handed over %v", planned[n:])
		}
	})
}
