package tail

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestFingerprintTellsTheSameFileFromAnother(t *testing.T) {
	content := bytes.Repeat([]byte("line of a transcript\n"), 100)
	fp, err := FingerprintOf(bytes.NewReader(content))
	if err != nil || fp.Len != FingerprintBytes {
		t.Fatalf("fingerprint %v %v", fp, err)
	}
	short := []byte("a short file\n")
	shortFP, err := FingerprintOf(bytes.NewReader(short))
	if err != nil || int(shortFP.Len) != len(short) {
		t.Fatalf("fingerprint of a short file %v %v", shortFP, err)
	}
	var scratch Scratch
	for _, tc := range []struct {
		name string
		fp   Fingerprint
		now  []byte
		want bool
	}{
		{"the same bytes", fp, content, true},
		{"appended to", fp, append(bytes.Clone(content), "more\n"...), true},
		{"replaced", fp, bytes.Repeat([]byte("other content\n"), 100), false},
		{"truncated below the fingerprint", fp, content[:100], false},
		{"a byte changed in the first KiB", fp, append([]byte("L"), content[1:]...), false},
		{"a byte changed after the first KiB", fp, append(bytes.Clone(content[:FingerprintBytes]), strings.Repeat("x", 500)...), true},
		{"a short file grown", shortFP, append(bytes.Clone(short), content...), true},
		{"a short file rewritten", shortFP, []byte("a short filE\n"), false},
		{"no fingerprint matches anything", Fingerprint{}, []byte("anything"), true},
	} {
		got, err := tc.fp.Matches(bytes.NewReader(tc.now))
		if err != nil || got != tc.want {
			t.Errorf("%s: matches=%v err=%v, want %v", tc.name, got, err, tc.want)
		}
		// A scratch kept from the case before gives the same answer.
		if got, err := scratch.Matches(tc.fp, bytes.NewReader(tc.now)); err != nil || got != tc.want {
			t.Errorf("%s: with a used scratch matches=%v err=%v, want %v", tc.name, got, err, tc.want)
		}
	}
	if got := (Fingerprint{Len: FingerprintBytes + 1}); must(scratch.Matches(got, bytes.NewReader(content))) {
		t.Errorf("a fingerprint longer than FingerprintBytes (a damaged one) matched")
	}
}

func must(ok bool, err error) bool {
	if err != nil {
		panic(err)
	}
	return ok
}

func TestScratchFingerprintsWithoutAllocating(t *testing.T) {
	var s Scratch
	long := bytes.NewReader(bytes.Repeat([]byte("line of a transcript\n"), 100))
	short := bytes.NewReader([]byte("a short file\n"))
	for _, r := range []*bytes.Reader{long, short} {
		want, _ := FingerprintOf(r)
		got, err := s.FingerprintOf(r)
		if err != nil || got != want {
			t.Errorf("scratch fingerprint %x/%d (%v), want %x/%d", got.Sum, got.Len, err, want.Sum, want.Len)
		}
	}
	allocs := testing.AllocsPerRun(100, func() {
		fp, _ := s.FingerprintOf(long)
		if _, err := s.Matches(fp, short); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per fingerprint and match, want 0", allocs)
	}
}

func TestEndsLineTellsALinesEndFromItsMiddle(t *testing.T) {
	data := []byte("first\nsecond\nthird")
	for _, tc := range []struct {
		name    string
		off     int64
		want    bool
		wantEOF bool
	}{
		{"the start of the file", 0, true, false},
		{"after the first line", 6, true, false},
		{"after the second line", 13, true, false},
		{"inside a line", 3, false, false},
		{"the end of an unterminated line", int64(len(data)), false, false},
		{"past the end of the file", int64(len(data)) + 5, false, true},
	} {
		got, err := EndsLine(bytes.NewReader(data), tc.off)
		if got != tc.want || errors.Is(err, io.EOF) != tc.wantEOF || (err != nil && !tc.wantEOF) {
			t.Errorf("%s (offset %d): ends a line %v, err %v; want %v, EOF %v", tc.name, tc.off, got, err, tc.want, tc.wantEOF)
		}
	}
}

// TestFingerprintHexRoundTrips: the hex form a state file holds reads
// back to the same fingerprint, so does the whole SHA-256 older state
// files hold, and what is not one is refused.
func TestFingerprintHexRoundTrips(t *testing.T) {
	data := []byte("{\"type\":\"user\"}\n")
	fp, err := FingerprintOf(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if len(fp.Hex()) != 2*SumBytes {
		t.Errorf("hex %q: %d digits, want %d", fp.Hex(), len(fp.Hex()), 2*SumBytes)
	}
	if got, ok := ParseFingerprint(fp.Hex(), int(fp.Len)); !ok || got != fp {
		t.Errorf("ParseFingerprint(%q, %d) = %+v, %v; want %+v", fp.Hex(), fp.Len, got, ok, fp)
	}
	whole := sha256.Sum256(data)
	if got, ok := ParseFingerprint(hex.EncodeToString(whole[:]), len(data)); !ok || got != fp {
		t.Errorf("a whole SHA-256 (state files before version 6) reads as %+v, %v; want %+v", got, ok, fp)
	}
	if got, ok := ParseFingerprint("whatever", 0); !ok || got != (Fingerprint{}) {
		t.Errorf("length 0: %+v, %v; want the zero fingerprint", got, ok)
	}
	for _, bad := range []struct {
		sum string
		n   int
	}{{fp.Hex()[:30], int(fp.Len)}, {fp.Hex() + "00", int(fp.Len)}, {"zz" + fp.Hex()[2:], int(fp.Len)}, {fp.Hex(), -1}, {fp.Hex(), FingerprintBytes + 1},
		{hex.EncodeToString(whole[:])[:62], len(data)}, {"zz" + hex.EncodeToString(whole[:])[2:], len(data)}} {
		if got, ok := ParseFingerprint(bad.sum, bad.n); ok {
			t.Errorf("ParseFingerprint(%q, %d) = %+v, want refused", bad.sum, bad.n, got)
		}
	}
}
