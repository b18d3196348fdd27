package main

import (
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/version"
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
