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

// Fingerprint identifies a file by its first bytes: the hex SHA-256 of up
// to FingerprintBytes bytes, and how many bytes it covers. A file that
// grows keeps the fingerprint it had: its first Len bytes do not change.
type Fingerprint struct {
	Sum string
	Len int
}

// FingerprintOf reads the fingerprint of an open file: its first
// FingerprintBytes bytes, or all of it while it is shorter.
func FingerprintOf(f io.ReaderAt) (Fingerprint, error) {
	buf := make([]byte, FingerprintBytes)
	n, err := f.ReadAt(buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return Fingerprint{}, fmt.Errorf("fingerprint: %w", err)
	}
	return fingerprintBytes(buf[:n]), nil
}

func fingerprintBytes(b []byte) Fingerprint {
	s := sha256.Sum256(b)
	return Fingerprint{Sum: hex.EncodeToString(s[:]), Len: len(b)}
}

// Matches reports whether f is the file fp was taken of: its first Len
// bytes hash to Sum. A file shorter than Len is not the same file (or was
// truncated). The zero Fingerprint (an empty file's, or none) matches
// every file.
func (fp Fingerprint) Matches(f io.ReaderAt) (bool, error) {
	if fp.Len == 0 {
		return true, nil
	}
	buf := make([]byte, fp.Len)
	n, err := f.ReadAt(buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return false, fmt.Errorf("fingerprint: %w", err)
	}
	if n < fp.Len {
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
