package testbackend

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"testing"
	"time"
)

// CcusageBinEnv names ccusage's binary (npm install --prefix DIR
// ccusage@<version>; DIR/node_modules/.bin/ccusage). Unset, the tests
// that compare with ccusage check its figures recorded under testdata.
const CcusageBinEnv = "CTE_CCUSAGE_BIN"

// RunCcusage runs ccusage with args over the Claude dir tree alone: an
// empty HOME keeps the user's own ~/.claude and ccusage's config out. It
// returns what ccusage printed on stdout and stderr.
func RunCcusage(t testing.TB, bin, tree string, args ...string) (out, errOut []byte, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "CLAUDE_CONFIG_DIR=" + tree, "NO_COLOR=1"}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	return stdout.Bytes(), stderr.Bytes(), err
}
