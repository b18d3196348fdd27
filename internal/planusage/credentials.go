package planusage

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/safefile"
	"github.com/claude-transcript-exporter/claude-transcript-exporter/mapping/planusage"
)

// CredentialsFile is Claude Code's login file in a Claude dir.
const CredentialsFile = ".credentials.json"

// maxCredentialsBytes caps the login file read (it is under a kilobyte).
const maxCredentialsBytes = 64 << 10

// login finds the Claude Code login: the first Claude dir's
// .credentials.json holding a Claude.ai OAuth login, else the macOS
// Keychain item. reason is "" when found; detail never holds the token.
func (p *Poller) login(ctx context.Context) (planusage.Credentials, string, string) {
	for _, d := range p.cfg.Dirs {
		path := filepath.Join(d, CredentialsFile)
		b, err := safefile.ReadFile(path, maxCredentialsBytes)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return planusage.Credentials{}, planusage.ReasonCredentials, err.Error()
		}
		c, err := planusage.ParseCredentials(b)
		if errors.Is(err, planusage.ErrNoOAuth) {
			continue
		}
		if err != nil {
			return planusage.Credentials{}, planusage.ReasonCredentials, path + ": " + err.Error()
		}
		return c, "", ""
	}
	b, found, err := p.cfg.Keychain(ctx)
	if err != nil {
		return planusage.Credentials{}, planusage.ReasonCredentials, "macOS Keychain: " + err.Error()
	}
	if found {
		c, err := planusage.ParseCredentials(b)
		if err == nil {
			return c, "", ""
		}
		if !errors.Is(err, planusage.ErrNoOAuth) {
			return planusage.Credentials{}, planusage.ReasonCredentials, "macOS Keychain: " + err.Error()
		}
	}
	if p.cfg.Getenv("ANTHROPIC_API_KEY") != "" || p.cfg.Getenv("ANTHROPIC_AUTH_TOKEN") != "" {
		return planusage.Credentials{}, planusage.ReasonAPIKeyUser, ""
	}
	return planusage.Credentials{}, planusage.ReasonNoLogin, ""
}
