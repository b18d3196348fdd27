package checkpoint

import (
	"bytes"
	"crypto/sha256"
	"encoding/gob"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestWriteThenLoadRoundTrips(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "state")
	in := &File{WrittenAt: time.Unix(1700000000, 0).UTC(), Roots: []string{"/r"},
		Files:   []Entry{{Path: "/r/projects/p/s.jsonl", Fingerprint: "ab", FPLen: 2, Counted: 10, Exported: 10}},
		Metrics: []byte(`{"a":1}`), Assembler: []byte(`{"b":2}`)}
	if err := Write(path, in); err != nil {
		t.Fatal(err)
	}
	out, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if out.Files[0] != in.Files[0] || string(out.Metrics) != `{"a":1}` || !out.WrittenAt.Equal(in.WrittenAt) {
		t.Fatalf("round trip: %+v", out)
	}
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".state-*"))
	if len(left) != 0 {
		t.Fatalf("temp files left behind: %v", left)
	}
}

func TestMissingStateIsAFirstStart(t *testing.T) {
	f, err := Load(filepath.Join(t.TempDir(), "none.json"))
	if f != nil || err != nil {
		t.Fatalf("Load of a missing file = %v, %v", f, err)
	}
}

func TestBadStateIsAnErrorNamingFileAndResetFlag(t *testing.T) {
	dir := t.TempDir()
	cases := map[string]string{
		"corrupt":         `{"version":1,"files":[`,
		"wrong version":   `{"version":99}`,
		"not json at all": "\x00\x01",
	}
	for name, content := range cases {
		path := filepath.Join(dir, strings.ReplaceAll(name, " ", "_")+".json")
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := Load(path)
		if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), ResetFlag) {
			t.Errorf("%s: error %v does not name the file and %s", name, err, ResetFlag)
		}
	}
}

func TestSameFileByFingerprint(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f.jsonl")
	content := bytes.Repeat([]byte("line of a transcript\n"), 100)
	if err := os.WriteFile(p, content, 0o600); err != nil {
		t.Fatal(err)
	}
	f, _ := os.Open(p)
	fp, err := FingerprintOf(f)
	f.Close()
	if err != nil || fp.Len != FingerprintBytes {
		t.Fatalf("fingerprint %v %v", fp, err)
	}
	e := Entry{Path: p, Fingerprint: fp.Hex(), FPLen: int(fp.Len)}
	check := func(name string, data []byte, want bool) {
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		f, _ := os.Open(p)
		defer f.Close()
		same, err := SameFile(f, e)
		if err != nil || same != want {
			t.Errorf("%s: same=%v err=%v, want %v", name, same, err, want)
		}
	}
	check("appended", append(append([]byte{}, content...), "more\n"...), true)
	check("replaced", bytes.Repeat([]byte("other content\n"), 100), false)
	check("truncated below the prefix", content[:100], false)
}

func TestDefaultPathFollowsXDG(t *testing.T) {
	env := map[string]string{"XDG_STATE_HOME": "/xdg"}
	if got := DefaultPath(func(k string) string { return env[k] }, "/home/u"); got != "/xdg/claude-transcript-exporter/state" {
		t.Errorf("got %s", got)
	}
	if got := DefaultPath(func(string) string { return "" }, "/home/u"); got != "/home/u/.local/state/claude-transcript-exporter/state" {
		t.Errorf("got %s", got)
	}
}

func TestTruncatedOrForeignVersionStateIsAnError(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state")
	if err := Write(path, &File{Roots: []string{"/r"}, Metrics: bytes.Repeat([]byte("m"), 4096)}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b[:len(b)/2], 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), "corrupt") || !strings.Contains(err.Error(), ResetFlag) {
		t.Errorf("truncated state: %v", err)
	}
	var buf bytes.Buffer
	buf.WriteString(magic)
	if err := gob.NewEncoder(&buf).Encode(&File{Version: 99}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), "version 99") {
		t.Errorf("foreign version: %v", err)
	}
}

// TestEveryBitFlipIsAnErrorNamingTheResetFlag flips each bit of a written
// state file in turn: each damaged file must fail to load with an error
// naming --state.reset, never load with other counters.
func TestEveryBitFlipIsAnErrorNamingTheResetFlag(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state")
	in := &File{WrittenAt: time.Unix(1700000000, 0).UTC(), Roots: []string{"/r"},
		Files:   []Entry{{Path: "/r/projects/p/s.jsonl", Fingerprint: "ab", FPLen: 2, Counted: 10, Exported: 10}},
		Metrics: []byte(`type="output"`), Assembler: []byte(`seen`)}
	if err := Write(path, in); err != nil {
		t.Fatal(err)
	}
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	accepted := 0
	for i := range orig {
		for bit := 0; bit < 8; bit++ {
			b := bytes.Clone(orig)
			b[i] ^= 1 << bit
			if err := os.WriteFile(path, b, 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := Load(path)
			if err == nil {
				accepted++
				continue
			}
			if !strings.Contains(err.Error(), ResetFlag) || !strings.Contains(err.Error(), path) {
				t.Fatalf("flip of bit %d of byte %d: error %q names neither %s nor the file", bit, i, err, ResetFlag)
			}
		}
	}
	if accepted != 0 {
		t.Errorf("%d of %d single-bit flips were accepted", accepted, 8*len(orig))
	}
}

// TestVersion2StateWithoutChecksumStillLoads reads a state written by the
// previous release (version 2: no checksum line), so that an upgrade keeps
// its counters.
func TestVersion2StateWithoutChecksumStillLoads(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state")
	var buf bytes.Buffer
	buf.WriteString(magic)
	in := File{Version: 2, Roots: []string{"/r"}, Metrics: []byte("m")}
	if err := gob.NewEncoder(&buf).Encode(&in); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := Load(path)
	if err != nil || string(out.Metrics) != "m" || out.Roots[0] != "/r" {
		t.Fatalf("version 2 state: %+v, %v", out, err)
	}
}

// TestPayloadValuesStreamAfterTheHeader writes two payload values after
// the File and reads them back in order.
func TestPayloadValuesStreamAfterTheHeader(t *testing.T) {
	type counters struct{ Output map[string]float64 }
	type asm struct{ Seen []uint64 }
	path := filepath.Join(t.TempDir(), "state")
	c := counters{Output: map[string]float64{`type="output"`: 42}}
	a := asm{Seen: []uint64{1, 2, 3}}
	if err := Write(path, &File{Roots: []string{"/r"}}, &c, &a); err != nil {
		t.Fatal(err)
	}
	f, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	var c2 counters
	var a2 asm
	if err := f.Next(&c2); err != nil {
		t.Fatal(err)
	}
	if err := f.Next(&a2); err != nil {
		t.Fatal(err)
	}
	if c2.Output[`type="output"`] != 42 || len(a2.Seen) != 3 || a2.Seen[2] != 3 {
		t.Fatalf("read back %+v %+v", c2, a2)
	}
	if err := f.Next(&a2); err == nil {
		t.Error("a third value read from two")
	}
}

func TestUnreadableStateFileIsAPermissionProblemNotAReset(t *testing.T) {
	denied := &fs.PathError{Op: "open", Path: "/s/state", Err: syscall.EACCES}
	err := readError("/s/state", denied)
	if !errors.Is(err, fs.ErrPermission) {
		t.Errorf("%v does not wrap the permission error", err)
	}
	for _, w := range []string{"/s/state", "permission problem", "owner", "--state.file", "throw its counters away"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%q does not say %q", err, w)
		}
	}
	if strings.Contains(err.Error(), "to discard it") {
		t.Errorf("%q advises discarding the state for a permission problem", err)
	}
	other := readError("/s/state", errors.New("input/output error"))
	if !strings.Contains(other.Error(), ResetFlag) {
		t.Errorf("%q: a damaged file should still name %s", other, ResetFlag)
	}
}

// TestChunkedPayloadsAndFileTableRoundTripAtEveryChunkBoundary writes the
// file table and chunked slices of lengths around the chunk size, with
// plain values between them, and reads everything back in order.
func TestChunkedPayloadsAndFileTableRoundTripAtEveryChunkBoundary(t *testing.T) {
	for _, n := range []int{0, 1, chunkLen - 1, chunkLen, chunkLen + 1, 3*chunkLen + 7} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "state")
			in := &File{Roots: []string{"/r"}}
			keys := make([]uint64, n)
			for i := range n {
				in.Files = append(in.Files, Entry{Path: fmt.Sprintf("/r/projects/p/%d.jsonl", i), Fingerprint: "ab", FPLen: 2, Counted: int64(i), Exported: int64(i)})
				keys[i] = uint64(i) * 7
			}
			names := []string{"a", "b"}
			if err := Write(path, in, Chunked[uint64](keys), &names, Chunked[string](nil)); err != nil {
				t.Fatal(err)
			}
			f, err := Load(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if len(f.Files) != n || n > 0 && f.Files[n-1] != in.Files[n-1] {
				t.Fatalf("file table: %d entries, want %d", len(f.Files), n)
			}
			got, err := NextChunked(f, []uint64(nil))
			if err != nil || len(got) != n || n > 0 && got[n-1] != keys[n-1] {
				t.Fatalf("chunked keys: %d, %v, want %d", len(got), err, n)
			}
			var names2 []string
			if err := f.Next(&names2); err != nil || strings.Join(names2, ",") != "a,b" {
				t.Fatalf("value after the chunks: %q, %v", names2, err)
			}
			if empty, err := NextChunked(f, []string(nil)); err != nil || len(empty) != 0 {
				t.Fatalf("empty chunked slice: %q, %v", empty, err)
			}
			if err := f.Next(&names2); err == nil {
				t.Error("a value read past the last one")
			}
		})
	}
}

// TestVersion3StateStillLoads reads a state written by the previous
// release (version 3: the file table inside the File, payloads whole), so
// that an upgrade keeps its counters.
func TestVersion3StateStillLoads(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state")
	var payload bytes.Buffer
	enc := gob.NewEncoder(&payload)
	in := File{Version: 3, Roots: []string{"/r"}, Files: []Entry{{Path: "/r/projects/p/s.jsonl", Counted: 5, Exported: 5}}}
	seen := []uint64{4, 5}
	if err := enc.Encode(&in); err != nil {
		t.Fatal(err)
	}
	if err := enc.Encode(&seen); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(payload.Bytes())
	b := append(append([]byte(magic), payload.Bytes()...), checksumPrefix+hex.EncodeToString(sum[:])+"\n"...)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var seen2 []uint64
	if len(f.Files) != 1 || f.Files[0].Counted != 5 || f.Next(&seen2) != nil || len(seen2) != 2 {
		t.Fatalf("version 3 state: %+v, %v", f.Files, seen2)
	}
}

// TestStreamPayloadReadsBackLikeChunked writes a payload produced chunk by
// chunk from a reused buffer and reads it back whole.
func TestStreamPayloadReadsBackLikeChunked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state")
	const n = 5000
	produce := Stream[uint64](func(yield func([]uint64) error) error {
		buf := make([]uint64, 0, 700)
		for i := range uint64(n) {
			if len(buf) == cap(buf) {
				if err := yield(buf); err != nil {
					return err
				}
				buf = buf[:0] // reused: the chunk was encoded
			}
			buf = append(buf, i*3)
		}
		return yield(buf)
	})
	after := "after"
	if err := Write(path, &File{}, produce, Stream[uint64](func(func([]uint64) error) error { return nil }), &after); err != nil {
		t.Fatal(err)
	}
	f, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := NextChunked(f, []uint64(nil))
	if err != nil || len(got) != n {
		t.Fatalf("streamed payload: %d values, %v; want %d", len(got), err, n)
	}
	for i, v := range got {
		if v != uint64(i)*3 {
			t.Fatalf("value %d = %d, want %d", i, v, i*3)
		}
	}
	if empty, err := NextChunked(f, []uint64(nil)); err != nil || len(empty) != 0 {
		t.Fatalf("empty stream: %v, %v", empty, err)
	}
	var s string
	if err := f.Next(&s); err != nil || s != after {
		t.Fatalf("value after the streams: %q, %v", s, err)
	}
	failing := Stream[uint64](func(func([]uint64) error) error { return errors.New("producer failed") })
	if err := Write(path, &File{}, failing); err == nil || !strings.Contains(err.Error(), "producer failed") {
		t.Errorf("a failing stream wrote the file: %v", err)
	}
}
