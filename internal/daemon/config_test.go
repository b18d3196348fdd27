package daemon

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestConfigRefusesHistoryAndFilesSettingsThatCannotWork(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		set  func(c *Config)
		flag string // "" when valid
	}{
		{"defaults", func(c *Config) {}, ""},
		{"a history file in one-shot", func(c *Config) { c.Oneshot, c.OneshotHistoryFile = true, filepath.Join(dir, "h.om") }, ""},
		{"a history file without one-shot", func(c *Config) { c.OneshotHistoryFile = filepath.Join(dir, "h.om") }, "--oneshot.history-file"},
		{"a history file that is a directory", func(c *Config) { c.Oneshot, c.OneshotHistoryFile = true, dir }, "--oneshot.history-file"},
		{"a history file in no directory", func(c *Config) { c.Oneshot, c.OneshotHistoryFile = true, filepath.Join(dir, "no", "h.om") }, "--oneshot.history-file"},
		{"a day step", func(c *Config) { c.OneshotHistoryStep = 24 * time.Hour }, ""},
		{"a week step", func(c *Config) { c.OneshotHistoryStep = 7 * 24 * time.Hour }, ""},
		{"a 5m step", func(c *Config) { c.OneshotHistoryStep = 5 * time.Minute }, ""},
		{"a 7m step", func(c *Config) { c.OneshotHistoryStep = 7 * time.Minute }, "--oneshot.history-step"},
		{"a 36h step", func(c *Config) { c.OneshotHistoryStep = 36 * time.Hour }, "--oneshot.history-step"},
		{"an end on a step", func(c *Config) { c.OneshotHistoryEnd = time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC) }, ""},
		{"an end between steps", func(c *Config) { c.OneshotHistoryEnd = time.Date(2026, 11, 1, 10, 30, 0, 0, time.UTC) }, "--oneshot.history-end"},
		{"no job", func(c *Config) {
			c.Oneshot, c.OneshotHistoryFile, c.OneshotHistoryJob = true, filepath.Join(dir, "h.om"), ""
		}, "--oneshot.history-job"},
		{"files read too often", func(c *Config) { c.FilesInterval = time.Millisecond }, "--claude.files-interval"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewConfig()
			c.ClaudeDirs = []string{dir}
			tc.set(&c)
			err := c.Validate()
			switch {
			case tc.flag == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.flag != "" && err == nil:
				t.Errorf("accepted, want an error naming %s", tc.flag)
			case tc.flag != "" && !strings.Contains(err.Error(), tc.flag):
				t.Errorf("error %q does not name %s", err, tc.flag)
			}
		})
	}
}

func TestConfigRefusesAUsageAPIPollTooOftenOrATokenInClear(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		set  func(l *LimitsConfig)
		flag string // "" when valid
	}{
		{"defaults", func(l *LimitsConfig) {}, ""},
		{"on", func(l *LimitsConfig) { l.UsageAPI = true }, ""},
		{"every 5 minutes", func(l *LimitsConfig) { l.UsageAPIInterval = 5 * time.Minute }, ""},
		{"every 59 seconds", func(l *LimitsConfig) { l.UsageAPIInterval = 59 * time.Second }, "--limits.usage-api.interval"},
		{"every 0s", func(l *LimitsConfig) { l.UsageAPIInterval = 0 }, "--limits.usage-api.interval"},
		{"https elsewhere", func(l *LimitsConfig) { l.UsageAPIURL = "https://proxy.example:8443/anthropic" }, ""},
		{"http to loopback", func(l *LimitsConfig) { l.UsageAPIURL = "http://127.0.0.1:8080" }, ""},
		{"http to localhost", func(l *LimitsConfig) { l.UsageAPIURL = "http://localhost:8080" }, ""},
		{"http to IPv6 loopback", func(l *LimitsConfig) { l.UsageAPIURL = "http://[::1]:8080" }, ""},
		{"http across the network", func(l *LimitsConfig) { l.UsageAPIURL = "http://api.anthropic.com" }, "--limits.usage-api.url"},
		{"http to a LAN address", func(l *LimitsConfig) { l.UsageAPIURL = "http://192.168.1.5" }, "--limits.usage-api.url"},
		{"no scheme", func(l *LimitsConfig) { l.UsageAPIURL = "api.anthropic.com" }, "--limits.usage-api.url"},
		{"another scheme", func(l *LimitsConfig) { l.UsageAPIURL = "ftp://api.anthropic.com" }, "--limits.usage-api.url"},
		{"a query", func(l *LimitsConfig) { l.UsageAPIURL = "https://api.anthropic.com?x=1" }, "--limits.usage-api.url"},
		{"a user", func(l *LimitsConfig) { l.UsageAPIURL = "https://me:pw@api.anthropic.com" }, "--limits.usage-api.url"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewConfig()
			c.ClaudeDirs = []string{dir}
			tc.set(&c.Limits)
			err := c.Validate()
			switch {
			case tc.flag == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.flag != "" && err == nil:
				t.Errorf("accepted, want an error naming %s", tc.flag)
			case tc.flag != "" && !strings.Contains(err.Error(), tc.flag):
				t.Errorf("error %q does not name %s", err, tc.flag)
			}
		})
	}
}
