package session

import "encoding/binary"

// A closed session's turn keeps its prompt's UUID, and sometimes its own
// session's and turn's: as text 36 bytes each, as their bytes 16
// (appendID). Only the canonical form (8-4-4-4-12 lowercase hex digits,
// as Claude Code writes them) is packed so, so that an id always reads
// back exactly as it was given.

// uuidKey is a canonical UUID's 16 bytes.
type uuidKey [16]byte

// uuidOf reads s as a canonical UUID.
func uuidOf(s string) (uuidKey, bool) { return ParseUUID(s) }

// ParseUUID reads s as a canonical UUID (8-4-4-4-12 lowercase hex
// digits, as Claude Code writes session and message ids) and returns its
// 16 bytes; AppendUUID writes them back as the same text.
func ParseUUID(s string) ([16]byte, bool) {
	var u uuidKey
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return u, false
	}
	j := 0 // the hex digit's place
	for i := range 36 {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			continue // a hyphen, checked above
		}
		d, ok := LowerHexDigit(s[i])
		if !ok {
			return [16]byte{}, false
		}
		u[j/2] |= d << (4 * (1 - j%2))
		j++
	}
	return u, true
}

// LowerHexDigit returns the value of a lowercase hex digit.
func LowerHexDigit(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

// String is the UUID in its canonical form.
func (u uuidKey) String() string {
	var b [36]byte
	return string(AppendUUID(b[:0], u))
}

// AppendUUID appends the canonical text of a UUID's 16 bytes.
func AppendUUID(b []byte, u [16]byte) []byte {
	const digits = "0123456789abcdef"
	for i, c := range u {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			b = append(b, '-')
		}
		b = append(b, digits[c>>4], digits[c&15])
	}
	return b
}

// appendID appends an id: a canonical UUID as a 0 and its 16 bytes, any
// other as its length plus one and its bytes.
func appendID(b []byte, id string) []byte {
	if u, ok := uuidOf(id); ok {
		return append(append(b, 0), u[:]...)
	}
	b = binary.AppendUvarint(b, uint64(len(id))+1)
	return append(b, id...)
}

// id reads what appendID appended.
func (u *unpacker) id() string {
	n := u.uvarint()
	if n == 0 {
		if len(u.b) < len(uuidKey{}) {
			u.err, u.b = errPacked, nil
			return ""
		}
		id := uuidKey(u.b[:16]).String()
		u.b = u.b[16:]
		return id
	}
	if n-1 > uint64(len(u.b)) {
		u.err, u.b = errPacked, nil
		return ""
	}
	s := string(u.b[:n-1])
	u.b = u.b[n-1:]
	return s
}
