package checkpoint

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/gob"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/safefile"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/tail"
)

// Version is the state file format version. Version 6 holds the files'
// fingerprints as 128 bits (tail.SumBytes) where version 5 held whole
// SHA-256 sums; those are still read (their first half is kept). Version
// 5 streams the subagents after the assembler's other large parts (the
// daemon's snapshot.payloads), where version 4 held them in the
// assembler's head; version 4 is still read. Version 4 writes the file
// table after the File as chunks (see Chunked), so that no encoded buffer
// holds it whole; version 3 (the table inside the File) is still read.
// Version 3 added a SHA-256 of the payload, so a damaged file is an error
// instead of bogus counters; version 2 (the same without it) is still
// read. Version 2 was the first gob-encoded one (version 1 was JSON, which
// took seconds to read for a large history).
const Version = 6

// chunkLen is how many elements one gob value of a Chunked payload holds:
// the encoder buffers one value whole, so this bounds that buffer (a
// history of 100,000 files is tens of megabytes encoded).
const chunkLen = 2048

// checksumPrefix starts the last line of version 3 files: the hex SHA-256
// of the encoded payload between the magic and that line follows it. It
// comes last so that the payload is streamed to disk while it is hashed,
// never held whole in memory.
const checksumPrefix = "sha256:"

// trailerLen is the length of that last line.
const trailerLen = len(checksumPrefix) + 2*sha256.Size + 1

// MaxBytes caps the state file read at start (a large history's state is
// tens of megabytes).
const MaxBytes = 1 << 30

// magic starts every state file, so that a file of another kind is told
// apart from a corrupt one.
const magic = "claude-transcript-exporter state\n"

// ResetFlag is the flag that discards a state file.
const ResetFlag = "--state.reset"

// FingerprintBytes is how many leading bytes identify a file
// (tail.FingerprintBytes: following a file lives in internal/tail).
const FingerprintBytes = tail.FingerprintBytes

// File is the content of the state file.
type File struct {
	Version   int       `json:"version"`
	WrittenAt time.Time `json:"written_at"`
	Roots     []string  `json:"roots"`
	Files     []Entry   `json:"files"`
	// FileStream, when set, is written instead of Files (a chunk at a
	// time); a loaded File has Files.
	FileStream Stream[Entry] `json:"-"`
	// Metrics and Assembler are the daemon's payloads in version 2 files,
	// opaque here. Version 3 streams the payloads after the File as gob
	// values of their own (see Write and Next) and leaves these empty.
	Metrics   []byte `json:"metrics"`
	Assembler []byte `json:"assembler"`

	// rest decodes the payload values after the File (version 3 on);
	// closer is the file it reads.
	rest   *gob.Decoder
	closer io.Closer
}

// Next decodes the next payload value of a version 3 or 4 file into v, in
// the order Write was given them. A payload given to Write as Chunked is
// read with NextChunked.
func (f *File) Next(v any) error {
	if f.rest == nil {
		return errors.New("state file has no payload values")
	}
	return f.rest.Decode(v)
}

// Chunked is a slice payload that Write encodes as a run of gob values of
// at most chunkLen elements and an empty one that ends it (as a Stream of
// it), so that a large slice is never held encoded in memory whole.
// NextChunked reads it back, and the runs older versions wrote (the last
// chunk marked instead).
type Chunked[T any] []T

// chunk is one gob value of a Chunked payload.
type chunk[T any] struct {
	Items []T
	More  bool // more chunks of the same payload follow
}

// chunkEncoder is implemented by Chunked and Stream.
type chunkEncoder interface{ encodeChunks(enc *gob.Encoder) error }

func (c Chunked[T]) encodeChunks(enc *gob.Encoder) error {
	return Stream[T](func(yield func([]T) error) error {
		for i := 0; i < len(c); i += chunkLen {
			if err := yield(c[i:min(i+chunkLen, len(c))]); err != nil {
				return err
			}
		}
		return nil
	}).encodeChunks(enc)
}

// Stream is a slice payload produced a chunk at a time: Write calls it
// with a yield that encodes each chunk it is given (any length; the slice
// may be reused once yield returns), so the whole slice never exists in
// memory, neither as values nor encoded. It reads back as Chunked does,
// with NextChunked. A Stream that returns an error fails the Write.
type Stream[T any] func(yield func([]T) error) error

// ChunkLen is the chunk length a Stream should yield: the one Chunked
// uses.
const ChunkLen = chunkLen

func (s Stream[T]) encodeChunks(enc *gob.Encoder) error {
	err := s(func(items []T) error {
		if len(items) == 0 {
			return nil
		}
		return enc.Encode(chunk[T]{Items: items, More: true})
	})
	if err != nil {
		return err
	}
	return enc.Encode(chunk[T]{})
}

// NextChunked decodes the next payload, written as Chunked[T] or Stream[T], appending
// its elements to dst.
func NextChunked[T any](f *File, dst []T) ([]T, error) {
	for {
		var c chunk[T]
		if err := f.Next(&c); err != nil {
			return dst, err
		}
		dst = append(dst, c.Items...)
		if !c.More {
			return dst, nil
		}
	}
}

// encodePayload encodes one payload value, chunked when it is Chunked.
func encodePayload(enc *gob.Encoder, p any) error {
	if c, ok := p.(chunkEncoder); ok {
		return c.encodeChunks(enc)
	}
	return enc.Encode(p)
}

// Entry is one transcript file's identity and watermarks.
type Entry struct {
	Path        string `json:"path"`
	Fingerprint string `json:"fp"`
	FPLen       int    `json:"fp_len"`
	// Counted: the metrics include every line before it. Exported: every
	// span completed by a line before it was acknowledged. The daemon
	// writes a state only once its spans are acknowledged, so the two are
	// equal in files it writes; they are kept apart for readers.
	Counted  int64 `json:"counted"`
	Exported int64 `json:"exported"`
}

// Fingerprint identifies a file by its first bytes (tail.Fingerprint).
type Fingerprint = tail.Fingerprint

// FingerprintOf reads the fingerprint of an open file (tail.FingerprintOf).
func FingerprintOf(f io.ReaderAt) (Fingerprint, error) { return tail.FingerprintOf(f) }

// SameFile reports whether f is the file a saved entry describes: its
// first FPLen bytes hash to the saved fingerprint. A file shorter than the
// saved prefix is not the same file (or was truncated).
func SameFile(f io.ReaderAt, e Entry) (bool, error) {
	fp, ok := EntryFingerprint(e)
	if !ok {
		return false, nil
	}
	return fp.Matches(f)
}

// EntryFingerprint returns the fingerprint a saved entry holds. It
// reports false when the entry's is damaged (tail.ParseFingerprint).
func EntryFingerprint(e Entry) (Fingerprint, bool) {
	return tail.ParseFingerprint(e.Fingerprint, e.FPLen)
}

// DefaultPath is the state file under $XDG_STATE_HOME, else
// ~/.local/state.
func DefaultPath(getenv func(string) string, home string) string {
	base := getenv("XDG_STATE_HOME")
	if base == "" {
		base = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(base, "claude-transcript-exporter", "state")
}

// Load reads the state file. A missing file is (nil, nil): a first start.
// Anything else that goes wrong is an error naming the file and the flag
// that resets it.
//
// The file is read twice and never held whole in memory: once through the
// hash, to check the checksum, then through the decoder. The payload
// values are decoded as File.Next is called; Close releases the file.
func Load(path string) (*File, error) {
	r, fi, err := safefile.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, readError(path, err)
	}
	f, err := load(path, r, fi.Size())
	if err != nil {
		r.Close()
		return nil, err
	}
	f.closer = r
	return f, nil
}

func load(path string, r *os.File, size int64) (*File, error) {
	if size > MaxBytes {
		return nil, readError(path, fmt.Errorf("%w: %d bytes, the limit is %d", safefile.ErrTooLarge, size, MaxBytes))
	}
	corrupt := func(why string) error {
		return fmt.Errorf("read state file %s: corrupt: %s (start with %s to discard it)", path, why, ResetFlag)
	}
	head := make([]byte, len(magic))
	if _, err := io.ReadFull(r, head); err != nil || string(head) != magic {
		return nil, fmt.Errorf("read state file %s: not a state file of this exporter, or from an older version (start with %s to discard it)", path, ResetFlag)
	}
	payloadLen, sum := size-int64(len(magic)), []byte(nil)
	if payloadLen >= int64(trailerLen) {
		trailer := make([]byte, trailerLen)
		if _, err := r.ReadAt(trailer, size-int64(trailerLen)); err != nil {
			return nil, readError(path, err)
		}
		if bytes.HasPrefix(trailer, []byte(checksumPrefix)) && trailer[trailerLen-1] == '\n' {
			sum, payloadLen = trailer[len(checksumPrefix):trailerLen-1], payloadLen-int64(trailerLen)
			h := sha256.New()
			if _, err := io.Copy(h, io.NewSectionReader(r, int64(len(magic)), payloadLen)); err != nil {
				return nil, readError(path, err)
			}
			if string(sum) != hex.EncodeToString(h.Sum(nil)) {
				return nil, corrupt("checksum mismatch")
			}
		}
	}
	var f File
	dec := gob.NewDecoder(bufio.NewReaderSize(io.NewSectionReader(r, int64(len(magic)), payloadLen), 64<<10))
	f.rest = dec
	if err := dec.Decode(&f); err != nil {
		return nil, corrupt(err.Error())
	}
	switch {
	case f.Version >= 3 && f.Version <= Version && sum == nil:
		return nil, corrupt("checksum missing")
	case f.Version == 2 && sum != nil, f.Version < 2 || f.Version > Version:
		return nil, fmt.Errorf("read state file %s: version %d, this exporter reads %d (start with %s to discard it)", path, f.Version, Version, ResetFlag)
	}
	if f.Version >= 4 {
		var err error
		if f.Files, err = NextChunked(&f, f.Files[:0]); err != nil {
			return nil, corrupt("file table: " + err.Error())
		}
	}
	return &f, nil
}

// Close releases the state file Load opened. The payload values cannot be
// read after it.
func (f *File) Close() error {
	if f == nil || f.closer == nil {
		return nil
	}
	err := f.closer.Close()
	f.closer, f.rest = nil, nil
	return err
}

// Write writes the state file atomically: a temp file in the same
// directory, fsync, rename over the old one, fsync of the directory. The
// payload values follow the File in one gob stream, encoded straight to
// the file (a large history's state is never held encoded in memory
// whole); Load's File.Next reads them back in order.
func Write(path string, f *File, payloads ...any) error {
	f.Version = Version
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("write state file %s: %w", path, err)
	}
	tmp, err := os.CreateTemp(dir, ".state-*.tmp")
	if err != nil {
		return fmt.Errorf("write state file %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	// Stream: magic, the payload through the hash, the checksum line.
	w := bufio.NewWriterSize(tmp, 64<<10)
	h := sha256.New()
	w.WriteString(magic)
	enc := gob.NewEncoder(io.MultiWriter(w, h))
	// The file table follows the File in chunks.
	head := *f
	head.Files, head.FileStream, head.rest, head.closer = nil, nil, nil, nil
	err = enc.Encode(&head)
	if err == nil && f.FileStream != nil {
		err = f.FileStream.encodeChunks(enc)
	} else if err == nil {
		err = Chunked[Entry](f.Files).encodeChunks(enc)
	}
	for _, p := range payloads {
		if err == nil {
			err = encodePayload(enc, p)
		}
	}
	if err == nil {
		w.WriteString(checksumPrefix)
		w.WriteString(hex.EncodeToString(h.Sum(nil)))
		w.WriteByte('\n')
		err = w.Flush()
	}
	if err != nil {
		tmp.Close()
		return fmt.Errorf("write state file %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("write state file %s: sync: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write state file %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write state file %s: rename: %w", path, err)
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// Remove deletes the state file (for --state.reset).
func Remove(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove state file %s: %w", path, err)
	}
	return nil
}

// readError names what to do about a state file that cannot be read. A
// permission problem is the user's to fix (owner, mode, another file):
// discarding the state would throw the counters away, so it is not what the
// message advises.
func readError(path string, err error) error {
	if errors.Is(err, fs.ErrPermission) {
		return fmt.Errorf("read state file %s: %w: a permission problem, not a damaged file: run the exporter as the user that owns it, "+
			"fix its owner or mode, or give another --state.file (%s would throw its counters away)", path, err, ResetFlag)
	}
	return fmt.Errorf("read state file %s: %w (start with %s to discard it)", path, err, ResetFlag)
}
