package deploy

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

var (
	// flagUse matches a flag as written in a command line: --name or --name=value.
	flagUse = regexp.MustCompile(`(?:^|[\s"\[,])--([a-z][a-z0-9.-]*[a-z0-9])`)
	// flagHelp matches a flag in kingpin's --help output, bools as --[no-]name.
	flagHelp = regexp.MustCompile(`--(?:\[no-\])?([a-z][a-z0-9.-]*[a-z0-9])`)
)

// TestDeployFlagsExist checks every exporter flag that the deploy kit passes
// (compose command, Dockerfile CMD, systemd ExecStart, launchd arguments)
// against the built exporter's --help, so that a renamed flag cannot leave
// a unit that fails at start.
func TestDeployFlagsExist(t *testing.T) {
	out, err := exec.Command(buildExporter(t), "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("claude-transcript-exporter --help: %v\n%s", err, out)
	}
	known := map[string]bool{}
	for _, m := range flagHelp.FindAllStringSubmatch(string(out), -1) {
		known[m[1]] = true
		if strings.HasPrefix(m[0], "--[no-]") {
			known["no-"+m[1]] = true // a bool flag turned off
		}
	}
	if !known["web.listen-address"] || !known["claude.dir"] {
		t.Fatalf("could not read flags from --help:\n%s", out)
	}

	uses := map[string][]string{} // where -> flags
	p := loadCompose(t, t.TempDir())
	svc, err := p.GetService("exporter")
	if err != nil {
		t.Fatal(err)
	}
	uses["docker-compose.yml exporter command"] = flagsIn(strings.Join(svc.Command, " "))

	read := func(rel string) string {
		data, err := os.ReadFile(repoPath(t, rel))
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	dockerfile := read("deploy/Dockerfile")
	if i := strings.Index(dockerfile, "\nCMD "); i >= 0 {
		uses["deploy/Dockerfile CMD"] = flagsIn(dockerfile[i:])
	} else {
		t.Error("deploy/Dockerfile has no CMD")
	}
	unit := read(systemdUnitPath)
	if i := strings.Index(unit, "\nExecStart="); i >= 0 {
		execStart := unit[i:]
		if j := strings.Index(execStart, "\nRestart="); j >= 0 {
			execStart = execStart[:j]
		}
		uses[systemdUnitPath+" ExecStart"] = flagsIn(execStart)
	} else {
		t.Errorf("%s has no ExecStart", systemdUnitPath)
	}
	f, err := os.Open(repoPath(t, launchdPlist))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	plist, err := decodePlist(f)
	if err != nil {
		t.Fatal(err)
	}
	var argv []string
	for _, a := range plist["ProgramArguments"].([]plistValue) {
		argv = append(argv, a.(string))
	}
	uses[launchdPlist+" ProgramArguments"] = flagsIn(" " + strings.Join(argv, " "))

	// make backfill runs the exporter once: its flags, not promtool's.
	makefile := read("Makefile")
	if i := strings.Index(makefile, "\nbackfill:"); i >= 0 {
		recipe := makefile[i:]
		if j := strings.Index(recipe, "docker compose run"); j >= 0 {
			recipe = recipe[:j]
		}
		uses["Makefile backfill"] = flagsIn(recipe)
	} else {
		t.Error("Makefile has no backfill target")
	}

	for where, flags := range uses {
		if len(flags) == 0 {
			t.Errorf("%s: no flags found", where)
		}
		for _, fl := range flags {
			if !known[fl] {
				t.Errorf("%s passes --%s, which the exporter does not have", where, fl)
			}
		}
	}
}

func flagsIn(s string) []string {
	var out []string
	for _, m := range flagUse.FindAllStringSubmatch(s, -1) {
		out = append(out, m[1])
	}
	return out
}
