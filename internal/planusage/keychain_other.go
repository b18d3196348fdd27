//go:build !darwin

package planusage

import "context"

// platformKeychain: there is no Keychain outside macOS; the login is in
// .credentials.json.
func platformKeychain(context.Context) ([]byte, bool, error) { return nil, false, nil }
