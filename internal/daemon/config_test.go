package daemon

import (
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// claudeDir makes a Claude config dir (one holding projects/).
func claudeDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "projects"), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestConfigRefusesHistoryAndFilesSettingsThatCannotWork(t *testing.T) {
	dir := claudeDir(t)
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
			checkRefusal(t, c.Validate(), tc.flag)
		})
	}
}

func TestConfigRefusesAUsageAPIPollTooOftenOrATokenInClear(t *testing.T) {
	dir := claudeDir(t)
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
			checkRefusal(t, c.Validate(), tc.flag)
		})
	}
}

func TestConfigRefusesAClaudeDirThatIsNotOne(t *testing.T) {
	good := claudeDir(t)
	empty := t.TempDir()
	parent := t.TempDir()
	if err := os.MkdirAll(filepath.Join(parent, ".claude", "projects"), 0o755); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "missing")
	for _, tc := range []struct {
		name     string
		dir      string
		dflt     bool // the default dirs ($CLAUDE_CONFIG_DIR or ~/.claude), not --claude.dir
		oneshot  bool
		wantText []string // empty: valid
	}{
		{"a Claude dir", good, false, false, nil},
		{"a Claude dir, one-shot", good, false, true, nil},
		{"a dir without projects/", empty, false, false, []string{"--claude.dir", empty, "no projects/"}},
		{"a dir without projects/, one-shot", empty, false, true, []string{"--claude.dir", empty, "no projects/"}},
		{"the dir above a Claude dir", parent, false, true, []string{"no projects/", filepath.Join(parent, ".claude"), "did you mean"}},
		{"a missing dir", missing, false, false, []string{"--claude.dir", missing, "does not exist"}},
		{"a missing default dir is waited for", missing, true, false, nil},
		{"a default dir without projects/ is waited for", empty, true, false, nil},
		{"a missing default dir, one-shot", missing, true, true, []string{"--claude.dir", missing, "CLAUDE_CONFIG_DIR", "--oneshot"}},
		{"a default dir without projects/, one-shot", empty, true, true, []string{"--claude.dir", empty, "CLAUDE_CONFIG_DIR", "no projects/"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewConfig()
			c.ClaudeDirs, c.ClaudeDirsDefault, c.Oneshot = []string{tc.dir}, tc.dflt, tc.oneshot
			if tc.dflt {
				c.ClaudeDirsOrigin = "from $CLAUDE_CONFIG_DIR"
			}
			err := c.Validate()
			if len(tc.wantText) == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted, want an error saying %q", tc.wantText)
			}
			for _, w := range tc.wantText {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

func TestStateLockProblemsSayWhy(t *testing.T) {
	denied := lockProblem("/s/state.lock", &fs.PathError{Op: "open", Path: "/s/state.lock", Err: syscall.EACCES})
	for _, w := range []string{"/s/state.lock", "another user", "--state.file"} {
		if !strings.Contains(denied, w) {
			t.Errorf("%q does not say %q", denied, w)
		}
	}
	dir := t.TempDir()
	release, why, err := lockState(filepath.Join(dir, "state"))
	if err != nil || release == nil || why != "" {
		t.Fatalf("a writable directory: release %v, why %q, err %v", release != nil, why, err)
	}
	defer release()
	if _, _, err := lockState(filepath.Join(dir, "state")); err == nil || !strings.Contains(err.Error(), "--state.file") {
		t.Errorf("a second lock: %v, want an error naming --state.file", err)
	}
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	release, why, err = lockState(filepath.Join(file, "state"))
	if err != nil || release != nil || !strings.Contains(why, "directory") {
		t.Errorf("a state file under a regular file: release %v, why %q, err %v", release != nil, why, err)
	}
}

func TestDefaultListenAddressIsLoopbackOnly(t *testing.T) {
	for _, a := range NewConfig().WebListenAddresses {
		host, _, err := net.SplitHostPort(a)
		if err != nil {
			t.Fatal(err)
		}
		if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
			t.Errorf("default --web.listen-address %s is not a loopback address: /metrics shows spend and project names", a)
		}
	}
}

func TestDefaultListensOnBothLoopbacksWhereTheyExist(t *testing.T) {
	if got := extraLoopback(NewConfig().WebListenAddresses); got != DefaultListenAddress6 {
		t.Errorf("the default adds %q, want %s", got, DefaultListenAddress6)
	}
	for _, chosen := range [][]string{{":9812"}, {"127.0.0.1:9812", "10.0.0.1:9812"}, {"127.0.0.1:9999"}} {
		if got := extraLoopback(chosen); got != "" {
			t.Errorf("addresses the user chose %v get %q too", chosen, got)
		}
	}
	cfg := NewConfig()
	cfg.WebListenAddresses = []string{"127.0.0.1:0"}
	ls, err := listenOn(&cfg, "[::1]:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	want := 1
	if probe, err := net.Listen("tcp", "[::1]:0"); err == nil {
		probe.Close()
		want = 2
	}
	if len(ls) != want {
		t.Errorf("%d listeners, want %d (IPv4 loopback, and IPv6 loopback where the host has it)", len(ls), want)
	}
	for _, l := range ls {
		if !l.Addr().(*net.TCPAddr).IP.IsLoopback() {
			t.Errorf("listening on %s, not loopback", l.Addr())
		}
	}
}

// checkRefusal checks Validate's answer: nil when flag is "", else an
// error naming flag.
func checkRefusal(t *testing.T, err error, flag string) {
	t.Helper()
	switch {
	case flag == "" && err != nil:
		t.Errorf("refused: %v", err)
	case flag != "" && err == nil:
		t.Errorf("accepted, want an error naming %s", flag)
	case flag != "" && !strings.Contains(err.Error(), flag):
		t.Errorf("error %q does not name %s", err, flag)
	}
}
