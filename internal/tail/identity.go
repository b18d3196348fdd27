package tail

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
)

// FingerprintBytes is how many leading bytes identify a file.
const FingerprintBytes = 1024

// SumBytes is how much of the SHA-256 a Fingerprint keeps: 128 bits
// tell files apart as well as the whole sum does (a collision by chance
// is out of reach), and a daemon holds one per file: the other 16 bytes
// were 1.6 MB at 100,000 files, and took its file entry to a larger size
// class.
const SumBytes = 16

// Fingerprint identifies a file by its first bytes: the SHA-256 of up to
// FingerprintBytes bytes (its first SumBytes bytes), and how many bytes it
// covers. A file that grows keeps the fingerprint it had: its first Len
// bytes do not change. The sum is kept as bytes (as a hex string it took
// more bytes each); Hex and ParseFingerprint give the hex form a state
// file holds.
type Fingerprint struct {
	Sum [SumBytes]byte
	Len int32 // at most FingerprintBytes (int32 keeps a daemon's file entry in a smaller size class)
}

// Hex returns the sum in hex.
func (fp Fingerprint) Hex() string { return hex.EncodeToString(fp.Sum[:]) }

// ParseFingerprint reads a fingerprint from its hex sum and length. It
// reports false when sum is not SumBytes in hex, nor a whole SHA-256 in
// hex (state files before version 6 hold those: their first SumBytes are
// kept), or n not a length from 1 to FingerprintBytes. Length 0 is the
// zero Fingerprint, whatever sum.
func ParseFingerprint(sum string, n int) (Fingerprint, bool) {
	if n == 0 {
		return Fingerprint{}, true
	}
	size := hex.DecodedLen(len(sum))
	if n < 0 || n > FingerprintBytes || size != SumBytes && size != sha256.Size {
		return Fingerprint{}, false
	}
	var whole [sha256.Size]byte
	if _, err := hex.Decode(whole[:size], []byte(sum)); err != nil {
		return Fingerprint{}, false
	}
	fp := Fingerprint{Len: int32(n)}
	copy(fp.Sum[:], whole[:])
	return fp, true
}

// FingerprintOf reads the fingerprint of an open file: its first
// FingerprintBytes bytes, or all of it while it is shorter.
func FingerprintOf(f io.ReaderAt) (Fingerprint, error) {
	return new(Scratch).FingerprintOf(f)
}

// Scratch is the buffer a fingerprint is read into: a caller that looks
// at many files keeps one and allocates nothing per file (a daemon's
// backfill of 100,000 files allocated 100 MB in 1 KiB buffers). It is
// not safe for concurrent use.
type Scratch [FingerprintBytes]byte

// FingerprintOf is the package's FingerprintOf, read into s.
func (s *Scratch) FingerprintOf(f io.ReaderAt) (Fingerprint, error) {
	n, err := f.ReadAt(s[:], 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return Fingerprint{}, fmt.Errorf("fingerprint: %w", err)
	}
	return fingerprintBytes(s[:n]), nil
}

func fingerprintBytes(b []byte) Fingerprint {
	sum := sha256.Sum256(b)
	return Fingerprint{Sum: [SumBytes]byte(sum[:SumBytes]), Len: int32(len(b))}
}

// Matches reports whether f is the file fp was taken of: its first Len
// bytes hash to Sum. A file shorter than Len is not the same file (or was
// truncated). The zero Fingerprint (an empty file's, or none) matches
// every file.
func (fp Fingerprint) Matches(f io.ReaderAt) (bool, error) {
	return new(Scratch).Matches(fp, f)
}

// Matches is fp.Matches, read into s.
func (s *Scratch) Matches(fp Fingerprint, f io.ReaderAt) (bool, error) {
	if fp.Len == 0 {
		return true, nil
	}
	if fp.Len < 0 || fp.Len > FingerprintBytes {
		return false, nil
	}
	buf := s[:fp.Len]
	n, err := f.ReadAt(buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return false, fmt.Errorf("fingerprint: %w", err)
	}
	if n < int(fp.Len) {
		return false, nil
	}
	return fingerprintBytes(buf).Sum == fp.Sum, nil
}

// EndsLine reports whether the byte before off is a '\n', that is whether
// off still starts a line of f: every offset a reader hands back is a
// line's end, so a file rewritten in place past the offset no longer ends
// a line there (mostly). An offset past the end of f is io.EOF.
func EndsLine(f io.ReaderAt, off int64) (bool, error) {
	if off <= 0 {
		return true, nil
	}
	var b [1]byte
	if _, err := f.ReadAt(b[:], off-1); err != nil {
		return false, err
	}
	return b[0] == '\n', nil
}
