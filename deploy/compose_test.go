package deploy

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/testonly/testbackend"
)

// wantServices are the services docker-compose.yml must define.
var wantServices = []string{"exporter", "otel-collector", "tempo", "jaeger", "prometheus", "grafana"}

// loadCompose loads docker-compose.yml with compose-go the way `docker
// compose` does (interpolation, normalization, consistency checks, resolved
// paths), with HOME set to home and only the extra variables in env: nothing
// from the caller's environment leaks in, so the defaults are what is tested.
func loadCompose(t *testing.T, home string, env ...string) *types.Project {
	t.Helper()
	return loadComposeFile(t, filepath.Join(testbackend.RepoRoot(t), "docker-compose.yml"), home, env...)
}

// loadComposeFile loads a compose file as docker compose would, in its
// own directory, with HOME at home and env as the environment.
func loadComposeFile(t *testing.T, path, home string, env ...string) *types.Project {
	t.Helper()
	t.Setenv("HOME", home) // compose-go expands ~ with os.UserHomeDir
	opts, err := cli.NewProjectOptions(
		[]string{path},
		cli.WithWorkingDirectory(filepath.Dir(path)),
		cli.WithEnv(append([]string{"HOME=" + home}, env...)),
		cli.WithInterpolation(true),
		cli.WithNormalization(true),
		cli.WithConsistency(true),
		cli.WithResolvedPaths(true),
	)
	if err != nil {
		t.Fatalf("compose options: %v", err)
	}
	project, err := opts.LoadProject(context.Background())
	if err != nil {
		t.Fatalf("load %s: %v", path, err)
	}
	return project
}

func TestComposeServices(t *testing.T) {
	p := loadCompose(t, t.TempDir())
	got := p.ServiceNames()
	sort.Strings(got)
	want := slices.Clone(wantServices)
	sort.Strings(want)
	if !slices.Equal(got, want) {
		t.Fatalf("services = %v, want %v", got, want)
	}
	for name, svc := range p.Services {
		if svc.NetworkMode == "host" {
			t.Errorf("service %s: network_mode host publishes every port on every interface", name)
		}
		if svc.HealthCheck == nil || svc.HealthCheck.Disable || len(svc.HealthCheck.Test) == 0 {
			t.Errorf("service %s: no healthcheck", name)
		}
		if svc.Restart == "" || svc.Restart == "no" {
			t.Errorf("service %s: restart policy %q, want one that restarts", name, svc.Restart)
		}
	}
}

// pinnedTag matches a version tag: v1.2, 1.2.3, 2.10.0, 1.26-bookworm.
var pinnedTag = regexp.MustCompile(`^v?\d+(\.\d+)+([-.+][0-9A-Za-z.-]+)?$`)

// checkImagePinned reports why ref is not pinned to a version tag or a
// digest ("" when it is). allowTags are accepted non-version tags.
func checkImagePinned(ref string, allowTags ...string) string {
	if strings.Contains(ref, "@sha256:") {
		return ""
	}
	name := ref
	if i := strings.LastIndex(name, "/"); i >= 0 {
		name = name[i+1:]
	}
	i := strings.LastIndex(name, ":")
	if i < 0 {
		return "no tag (means latest)"
	}
	tag := name[i+1:]
	switch {
	case tag == "latest":
		return "tag latest"
	case slices.Contains(allowTags, tag):
		return ""
	case !pinnedTag.MatchString(tag):
		return "tag " + tag + " is not a version"
	}
	return ""
}

func TestComposeImagesPinned(t *testing.T) {
	p := loadCompose(t, t.TempDir())
	for name, svc := range p.Services {
		if svc.Build != nil {
			continue // checked through its Dockerfile in TestComposeBuildsPinned
		}
		if svc.Image == "" {
			t.Errorf("service %s: neither image nor build", name)
			continue
		}
		if why := checkImagePinned(svc.Image); why != "" {
			t.Errorf("service %s: image %s is not pinned: %s", name, svc.Image, why)
		}
	}
}

// dockerfileFroms returns the external images of a Dockerfile's FROM lines,
// with ARG defaults substituted, skipping references to earlier stages.
func dockerfileFroms(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("open Dockerfile: %v", err)
	}
	defer f.Close()
	args := map[string]string{}
	stages := map[string]bool{}
	var images []string
	argRe := regexp.MustCompile(`\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?`)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		switch strings.ToUpper(fields[0]) {
		case "ARG":
			if k, v, ok := strings.Cut(fields[1], "="); ok {
				args[k] = v
			}
		case "FROM":
			rest := fields[1:]
			for len(rest) > 0 && strings.HasPrefix(rest[0], "--") {
				rest = rest[1:]
			}
			if len(rest) == 0 {
				t.Fatalf("%s: FROM without image", path)
			}
			img := argRe.ReplaceAllStringFunc(rest[0], func(m string) string {
				return args[argRe.FindStringSubmatch(m)[1]]
			})
			if !stages[img] {
				images = append(images, img)
			}
			if len(rest) >= 3 && strings.EqualFold(rest[1], "AS") {
				stages[rest[2]] = true
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return images
}

func TestCheckImagePinned(t *testing.T) {
	for ref, pinned := range map[string]bool{
		"grafana/tempo:2.10.0":                      true,
		"prom/prometheus:v3.5.0":                    true,
		"golang:1.26-bookworm":                      true,
		"localhost:5000/img:1.2.3":                  true,
		"busybox@sha256:" + strings.Repeat("a", 64): true,
		"grafana/grafana":                           false,
		"grafana/grafana:latest":                    false,
		"localhost:5000/img":                        false,
		"jaegertracing/jaeger:edge":                 false,
	} {
		if got := checkImagePinned(ref) == ""; got != pinned {
			t.Errorf("checkImagePinned(%s) pinned = %v, want %v", ref, got, pinned)
		}
	}
}

func TestDockerfileFroms(t *testing.T) {
	path := filepath.Join(t.TempDir(), "Dockerfile")
	src := "ARG GO_VERSION=1.26\nFROM --platform=$BUILDPLATFORM golang:${GO_VERSION}-bookworm AS build\n" +
		"FROM build AS again\nFROM gcr.io/distroless/static-debian12:nonroot\n"
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	got := dockerfileFroms(t, path)
	want := []string{"golang:1.26-bookworm", "gcr.io/distroless/static-debian12:nonroot"}
	if !slices.Equal(got, want) {
		t.Errorf("dockerfileFroms = %q, want %q", got, want)
	}
}

func TestComposeBuildsPinned(t *testing.T) {
	p := loadCompose(t, t.TempDir())
	builds := 0
	for name, svc := range p.Services {
		if svc.Build == nil {
			continue
		}
		builds++
		dockerfile := svc.Build.Dockerfile
		if !filepath.IsAbs(dockerfile) {
			dockerfile = filepath.Join(svc.Build.Context, dockerfile)
		}
		if _, err := os.Stat(dockerfile); err != nil {
			t.Errorf("service %s: Dockerfile: %v", name, err)
			continue
		}
		images := dockerfileFroms(t, dockerfile)
		if len(images) == 0 {
			t.Errorf("service %s: %s has no FROM", name, dockerfile)
		}
		for _, img := range images {
			// distroless publishes no version tags; "nonroot" is its
			// documented non-root variant (pin a digest in production).
			if why := checkImagePinned(img, "nonroot"); why != "" {
				t.Errorf("service %s: %s: FROM %s is not pinned: %s", name, dockerfile, img, why)
			}
		}
	}
	if builds != 2 {
		t.Errorf("%d services are built, want 2 (exporter, otel-collector)", builds)
	}
}

func TestComposeExporterMountsClaudeDirReadOnly(t *testing.T) {
	home := t.TempDir()
	for _, tc := range []struct {
		name string
		env  []string
		want string
	}{
		{"default ~/.claude", nil, filepath.Join(home, ".claude")},
		{"CLAUDE_DIR override", []string{"CLAUDE_DIR=/srv/claude"}, "/srv/claude"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := loadCompose(t, home, tc.env...)
			svc, err := p.GetService("exporter")
			if err != nil {
				t.Fatal(err)
			}
			var claude, state *types.ServiceVolumeConfig
			for i, v := range svc.Volumes {
				switch v.Target {
				case "/claude":
					claude = &svc.Volumes[i]
				case "/var/lib/claude-transcript-exporter":
					state = &svc.Volumes[i]
				}
			}
			if claude == nil {
				t.Fatalf("exporter: no mount at /claude: %+v", svc.Volumes)
			}
			if claude.Type != types.VolumeTypeBind || claude.Source != tc.want || !claude.ReadOnly {
				t.Errorf("exporter /claude mount = %s %s read_only=%v, want bind %s read-only",
					claude.Type, claude.Source, claude.ReadOnly, tc.want)
			}
			if claude.Bind == nil || claude.Bind.CreateHostPath {
				t.Errorf("exporter /claude mount creates a missing host dir: want create_host_path false")
			}
			if state == nil || state.Type != types.VolumeTypeVolume {
				t.Errorf("exporter: state must be a named volume at /var/lib/claude-transcript-exporter, got %+v", state)
			}
			for _, v := range svc.Volumes {
				if v.Type == types.VolumeTypeBind && !v.ReadOnly {
					t.Errorf("exporter: bind mount %s is writable", v.Source)
				}
			}
			uid, _, _ := strings.Cut(svc.User, ":")
			if svc.User == "" || uid == "0" || uid == "root" {
				t.Errorf("exporter user = %q, want a non-root uid", svc.User)
			}
			cmd := strings.Join(svc.Command, " ")
			for _, flag := range []string{
				"--claude.dir=/claude",
				"--state.file=/var/lib/claude-transcript-exporter/state",
				"--otlp.endpoint=otel-collector:4317",
				"--otlp.insecure",
			} {
				if !slices.Contains(svc.Command, flag) {
					t.Errorf("exporter command %q lacks %s", cmd, flag)
				}
			}
		})
	}
}

func TestComposePortsLoopbackOnly(t *testing.T) {
	p := loadCompose(t, t.TempDir())
	published := 0
	for name, svc := range p.Services {
		for _, port := range svc.Ports {
			published++
			if port.HostIP != "127.0.0.1" {
				t.Errorf("service %s: port %d published on %q, want 127.0.0.1", name, port.Target, port.HostIP)
			}
			if port.Published == "" {
				t.Errorf("service %s: port %d published on a random host port", name, port.Target)
			}
		}
	}
	if published == 0 {
		t.Fatal("no published ports: the UIs would be unreachable")
	}

	// BIND_ADDRESS is the one switch to publish elsewhere.
	p = loadCompose(t, t.TempDir(), "BIND_ADDRESS=192.0.2.1")
	for name, svc := range p.Services {
		for _, port := range svc.Ports {
			if port.HostIP != "192.0.2.1" {
				t.Errorf("with BIND_ADDRESS set, service %s port %d is on %q", name, port.Target, port.HostIP)
			}
		}
	}
}

// TestComposeReferencedFilesExist checks every bind-mounted file or folder
// and build context under the repository, and that each config path a
// service's command names is mounted.
func TestComposeReferencedFilesExist(t *testing.T) {
	root := testbackend.RepoRoot(t)
	p := loadCompose(t, t.TempDir())
	for name, svc := range p.Services {
		var targets []string
		for _, v := range svc.Volumes {
			targets = append(targets, v.Target)
			if v.Type != types.VolumeTypeBind || !strings.HasPrefix(v.Source, root+string(filepath.Separator)) {
				continue
			}
			fi, err := os.Stat(v.Source)
			if err != nil {
				t.Errorf("service %s: mounted %s does not exist: %v", name, v.Source, err)
				continue
			}
			if fi.IsDir() {
				entries, _ := os.ReadDir(v.Source)
				if len(entries) == 0 {
					t.Errorf("service %s: mounted folder %s is empty", name, v.Source)
				}
			}
		}
		if svc.Build != nil {
			if fi, err := os.Stat(svc.Build.Context); err != nil || !fi.IsDir() {
				t.Errorf("service %s: build context %s: %v", name, svc.Build.Context, err)
			}
		}
		for _, arg := range svc.Command {
			_, val, ok := strings.Cut(arg, "=")
			if !ok || !strings.HasPrefix(val, "/etc/") {
				continue
			}
			mounted := false
			for _, tg := range targets {
				if val == tg || strings.HasPrefix(val, tg+"/") {
					mounted = true
				}
			}
			if !mounted {
				t.Errorf("service %s: command names %s but nothing is mounted there (mounts %v)", name, val, targets)
			}
		}
	}
}

// TestComposeWiring checks that the configs inside deploy/ point at the
// compose services: the scrape target, the collector's exporters, the
// Grafana data sources and dashboard folder.
func TestComposeWiring(t *testing.T) {
	p := loadCompose(t, t.TempDir())
	hostPort := func(service string, port uint32) string {
		if _, err := p.GetService(service); err != nil {
			t.Fatalf("no service %s", service)
		}
		return service + ":" + strconv.FormatUint(uint64(port), 10)
	}

	var prom struct {
		ScrapeConfigs []struct {
			JobName       string `yaml:"job_name"`
			StaticConfigs []struct {
				Targets []string `yaml:"targets"`
			} `yaml:"static_configs"`
		} `yaml:"scrape_configs"`
	}
	readYAML(t, "deploy/prometheus/prometheus.yml", &prom)
	found := false
	for _, sc := range prom.ScrapeConfigs {
		if sc.JobName == "claude-transcript-exporter" {
			for _, s := range sc.StaticConfigs {
				found = found || slices.Contains(s.Targets, hostPort("exporter", 9812))
			}
		}
	}
	if !found {
		t.Errorf("prometheus.yml: job claude-transcript-exporter does not scrape exporter:9812 (the alert rules select that job)")
	}

	var col struct {
		Exporters map[string]struct {
			Endpoint string `yaml:"endpoint"`
		} `yaml:"exporters"`
	}
	readYAML(t, "deploy/otel-collector/config.yaml", &col)
	var endpoints []string
	for _, e := range col.Exporters {
		endpoints = append(endpoints, e.Endpoint)
	}
	for _, want := range []string{hostPort("tempo", 4317), hostPort("jaeger", 4317)} {
		if !slices.Contains(endpoints, want) {
			t.Errorf("collector exporters %v do not send to %s", endpoints, want)
		}
	}

	var ds struct {
		Datasources []struct {
			Type string `yaml:"type"`
			UID  string `yaml:"uid"`
			URL  string `yaml:"url"`
		} `yaml:"datasources"`
	}
	readYAML(t, "deploy/grafana/provisioning/datasources/datasources.yml", &ds)
	wantDS := map[string]string{
		"prometheus": "http://" + hostPort("prometheus", 9090),
		"tempo":      "http://" + hostPort("tempo", 3200),
		"jaeger":     "http://" + hostPort("jaeger", 16686),
	}
	for _, d := range ds.Datasources {
		if want, ok := wantDS[d.Type]; ok {
			if d.URL != want || d.UID != d.Type {
				t.Errorf("data source %s: url %s uid %s, want url %s uid %s", d.Type, d.URL, d.UID, want, d.Type)
			}
			delete(wantDS, d.Type)
		}
	}
	if len(wantDS) > 0 {
		t.Errorf("data sources missing: %v", wantDS)
	}

	var prov struct {
		Providers []struct {
			Options struct {
				Path string `yaml:"path"`
			} `yaml:"options"`
		} `yaml:"providers"`
	}
	readYAML(t, "deploy/grafana/provisioning/dashboards/dashboards.yml", &prov)
	graf, _ := p.GetService("grafana")
	for _, pr := range prov.Providers {
		ok := false
		for _, v := range graf.Volumes {
			if v.Target == pr.Options.Path && strings.HasSuffix(v.Source, filepath.FromSlash("deploy/grafana/dashboards")) {
				ok = true
			}
		}
		if !ok {
			t.Errorf("dashboard provider path %s is not where docker-compose.yml mounts deploy/grafana/dashboards", pr.Options.Path)
		}
	}
}
