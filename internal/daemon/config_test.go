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
