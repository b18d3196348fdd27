package main

import (
	"os"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/version"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/daemon"
)

func TestVersionComesFromBuildInfoWhenLdflagsAreEmpty(t *testing.T) {
	saved := [3]string{version.Version, version.Revision, version.BuildDate}
	t.Cleanup(func() { version.Version, version.Revision, version.BuildDate = saved[0], saved[1], saved[2] })
	for _, tc := range []struct {
		name    string
		ldflags [3]string // version, revision, date set by make build
		bi      *debug.BuildInfo
		want    [3]string
	}{
		{"go build in a clone: VCS settings", [3]string{}, &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"}, {Key: "vcs.time", Value: "2026-11-25T19:00:00Z"}, {Key: "vcs.modified", Value: "false"}}},
			[3]string{"devel", "0123456789ab", "2026-11-25T19:00:00Z"}},
		{"a modified tree", [3]string{}, &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123456789abcdef"}, {Key: "vcs.modified", Value: "true"}}},
			[3]string{"devel", "0123456789ab-dirty", ""}},
		{"go install @latest of a tag", [3]string{}, &debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"}}, [3]string{"v1.4.0", "", ""}},
		{"go install @main: a pseudo-version", [3]string{}, &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261125190102-abcdef012345"}},
			[3]string{"v0.0.0-20261125190102-abcdef012345", "abcdef012345", "2026-11-25T19:01:02Z"}},
		{"make build: ldflags win", [3]string{"v1.2.3", "fedcba", "x"}, &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261125190102-abcdef012345"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123456789abcdef"}, {Key: "vcs.time", Value: "2026-11-25T19:00:00Z"}}},
			[3]string{"v1.2.3", "fedcba", "x"}},
		{"no build info", [3]string{}, nil, [3]string{"devel", "", ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			version.Version, version.Revision, version.BuildDate = tc.ldflags[0], tc.ldflags[1], tc.ldflags[2]
			versionFromBuildInfo(tc.bi, tc.bi != nil)
			if got := [3]string{version.Version, version.Revision, version.BuildDate}; got != tc.want {
				t.Errorf("version, revision, date = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestDurationsShowAsTheReadmeWritesThem(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{7 * 24 * time.Hour, "7d"},
		{24 * time.Hour, "1d"},
		{30 * 24 * time.Hour, "30d"},
		{time.Hour, "1h"},
		{90 * time.Minute, "1h30m"},
		{3 * time.Second, "3s"},
		{0, "0s"},
	} {
		if got := showDuration(tc.d); got != tc.want {
			t.Errorf("showDuration(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}

func TestOneshotNamesTheFlagsItDoesNotUse(t *testing.T) {
	for _, tc := range []struct {
		set  []string
		want string
	}{
		{[]string{"claude.dir", "oneshot", "traces.since"}, ""},
		{[]string{"oneshot", "state.file", "web.listen-address", "web.listen-address", "otlp.spool-dir"}, "--state.file --web.listen-address --otlp.spool-dir"},
		{[]string{"state.reset", "web.config.file", "metrics.push.endpoint"}, "--state.reset --web.config.file"},
	} {
		if got := strings.Join(oneshotIgnores(tc.set), " "); got != tc.want {
			t.Errorf("%v: %q, want %q", tc.set, got, tc.want)
		}
	}
}

// theirHelp are the flags whose help texts come from exporter-toolkit and
// promslog, not from this command.
var theirHelp = map[string]bool{"help": true, "version": true, "web.listen-address": true, "web.config.file": true,
	"web.systemd-socket": true, "log.level": true, "log.format": true}

// maxHelp is the longest help text of a flag of ours: about two lines of
// --help; the rest belongs in docs/configuration.md.
const maxHelp = 80

func TestHelpGivesEachFlagAShortLine(t *testing.T) {
	cfg := daemon.NewConfig()
	app, _ := newApp(&cfg, "/home/u", []string{"/home/u/.claude"})
	n := 0
	for _, f := range app.Model().Flags {
		if f.Hidden || theirHelp[f.Name] {
			continue
		}
		n++
		if len(f.Help) > maxHelp {
			t.Errorf("--%s: help of %d characters, over %d: move the detail to docs/configuration.md", f.Name, len(f.Help), maxHelp)
		}
		if f.Help == "" {
			t.Errorf("--%s has no help", f.Name)
		}
	}
	if n < 40 {
		t.Fatalf("only %d flags of ours found", n)
	}
}

// flagRow is a flag's row in the tables of docs/configuration.md.
var flagRow = regexp.MustCompile("(?m)^\\| `--([a-z][a-z0-9.-]*)` \\|")

func TestEveryFlagHasItsRowInTheConfigurationDoc(t *testing.T) {
	doc, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]int{}
	for _, m := range flagRow.FindAllStringSubmatch(string(doc), -1) {
		rows[m[1]]++
	}
	cfg := daemon.NewConfig()
	app, _ := newApp(&cfg, "/home/u", []string{"/home/u/.claude"})
	flags := map[string]bool{}
	for _, f := range app.Model().Flags {
		if f.Hidden || f.Name == "help" || f.Name == "version" {
			continue
		}
		flags[f.Name] = true
		if rows[f.Name] != 1 {
			t.Errorf("--%s has %d rows in docs/configuration.md, want 1", f.Name, rows[f.Name])
		}
	}
	for name := range rows {
		if !flags[name] {
			t.Errorf("docs/configuration.md documents --%s, which the exporter does not have", name)
		}
	}
}
