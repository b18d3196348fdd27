//go:build darwin

package planusage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
)

// KeychainService is the macOS Keychain item Claude Code keeps its login
// in (the same JSON as .credentials.json).
const KeychainService = "Claude Code-credentials"

// errItemNotFound is security(1)'s exit status for a missing item.
const errItemNotFound = 44

// platformKeychain reads the item with security(1). macOS may ask the user
// once to let the exporter read it. The item's text goes to the parser
// only; security's messages are not kept (they could quote it).
func platformKeychain(ctx context.Context) ([]byte, bool, error) {
	out, err := exec.CommandContext(ctx, "/usr/bin/security", "find-generic-password", "-s", KeychainService, "-w").Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			if ee.ExitCode() == errItemNotFound {
				return nil, false, nil
			}
			return nil, false, fmt.Errorf("security find-generic-password: exit status %d", ee.ExitCode())
		}
		return nil, false, fmt.Errorf("security find-generic-password: %w", err)
	}
	return bytes.TrimSpace(out), true, nil
}
