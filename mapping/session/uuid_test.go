package session

import "testing"

func TestPackedIDsReadBackAsTheyWereGiven(t *testing.T) {
	for _, tc := range []struct {
		id   string
		uuid bool
	}{
		{"0f8fad5b-d9cb-469f-a165-70867728950e", true},
		{"00000000-0000-0000-0000-000000000000", true},
		{"ffffffff-ffff-ffff-ffff-ffffffffffff", true},
		{"0F8FAD5B-D9CB-469F-A165-70867728950E", false}, // upper case: String would not give it back
		{"0f8fad5bd9cb469fa16570867728950e", false},
		{"0f8fad5b-d9cb-469f-a165-70867728950", false},
		{"0f8fad5b-d9cb-469f-a165-70867728950e0", false},
		{"0f8fad5b_d9cb-469f-a165-70867728950e", false},
		{"0f8fad5b-d9cb-469f-a165-70867728950g", false},
		{"u1-21891", false},
		{"", false},
	} {
		if _, ok := uuidOf(tc.id); ok != tc.uuid {
			t.Errorf("uuidOf(%q) ok = %v, want %v", tc.id, ok, tc.uuid)
		}
		b := appendID([]byte{7}, tc.id)
		if want := 1 + 17; tc.uuid && len(b) != want {
			t.Errorf("%q packed in %d bytes, want %d", tc.id, len(b), want)
		}
		u := unpacker{b: append(b[1:], 9)}
		if got := u.id(); got != tc.id || u.err != nil || len(u.b) != 1 || u.b[0] != 9 {
			t.Errorf("%q read back as %q (err %v, %d bytes left)", tc.id, got, u.err, len(u.b))
		}
		for n := range len(b) - 1 {
			if u := (unpacker{b: b[1 : 1+n]}); u.id() != "" || u.err == nil && tc.id != "" {
				t.Errorf("%q cut to %d bytes read without an error", tc.id, n)
			}
		}
	}
}
