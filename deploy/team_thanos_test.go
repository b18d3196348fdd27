package deploy

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/compose-spec/compose-go/v2/types"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/testonly/testbackend"
)

const thanosCompose = "deploy/team/thanos/docker-compose.yml"

// loadThanosCompose loads deploy/team/thanos/docker-compose.yml as `docker
// compose` does (see loadCompose), with only env from the environment.
func loadThanosCompose(t *testing.T, env ...string) *types.Project {
	t.Helper()
	return loadComposeFile(t, repoPath(t, thanosCompose), t.TempDir(), env...)
}

// TestTeamThanosCollectorConfigValidates runs `otelcol-custom validate` on
// the Thanos variant's collector config.
func TestTeamThanosCollectorConfigValidates(t *testing.T) {
	runTool(t, nil, testbackend.CollectorBinary(t), "validate", "--config="+repoPath(t, "deploy/team/thanos/otel-collector.yaml"))
}

// TestTeamThanosComposePinnedAndLoopback: every image is pinned, every
// published port is on BIND_ADDRESS (127.0.0.1 by default), every mounted
// file exists.
func TestTeamThanosComposePinnedAndLoopback(t *testing.T) {
	p := loadThanosCompose(t)
	for name, svc := range p.Services {
		if why := checkImagePinned(svc.Image); why != "" {
			t.Errorf("service %s: image %s is not pinned: %s", name, svc.Image, why)
		}
		for _, port := range svc.Ports {
			if port.HostIP != "127.0.0.1" || port.Published == "" {
				t.Errorf("service %s: port %d published on %q:%q, want 127.0.0.1 and a fixed port", name, port.Target, port.HostIP, port.Published)
			}
		}
		for _, v := range svc.Volumes {
			if v.Type == types.VolumeTypeBind {
				if _, err := os.Stat(v.Source); err != nil {
					t.Errorf("service %s: mounted %s: %v", name, v.Source, err)
				}
			}
		}
	}
}

// TestTeamThanosWiring checks that the pieces point at each other: the
// collector's metrics exporter at the receivers' shared alias and
// remote-write port, the hashring at every receiver's local endpoint, query
// at every receiver and the ruler, the ruler at query.
func TestTeamThanosWiring(t *testing.T) {
	p := loadThanosCompose(t)
	receivers := map[string]*types.ServiceConfig{}
	for name, svc := range p.Services {
		if len(svc.Command) > 0 && svc.Command[0] == "receive" {
			receivers[name] = &svc
		}
	}
	if len(receivers) != 3 {
		t.Fatalf("receivers %v, want 3", keys(receivers))
	}
	var ring []struct {
		Endpoints []string `json:"endpoints"`
	}
	data, err := os.ReadFile(repoPath(t, "deploy/team/thanos/hashring.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &ring); err != nil || len(ring) != 1 {
		t.Fatalf("hashring.json: %v (%d hashrings, want 1)", err, len(ring))
	}
	var col struct {
		Exporters map[string]struct {
			MetricsEndpoint string `yaml:"metrics_endpoint"`
		} `yaml:"exporters"`
	}
	readYAML(t, "deploy/team/thanos/otel-collector.yaml", &col)
	metricsTo := col.Exporters["otlphttp/thanos"].MetricsEndpoint
	for name, svc := range receivers {
		local := flagValue(svc.Command, "--receive.local-endpoint")
		if !slices.Contains(ring[0].Endpoints, local) || local != name+":10901" || flagValue(svc.Command, "--grpc-address") != "0.0.0.0:10901" {
			t.Errorf("%s: local endpoint %q, grpc %q; hashring %v", name, local, flagValue(svc.Command, "--grpc-address"), ring[0].Endpoints)
		}
		if rf := flagValue(svc.Command, "--receive.replication-factor"); rf != "2" {
			t.Errorf("%s: replication factor %q, want 2", name, rf)
		}
		_, port, _ := strings.Cut(flagValue(svc.Command, "--remote-write.address"), ":")
		if want := "http://thanos-receive:" + port + "/api/v1/otlp"; metricsTo != want {
			t.Errorf("collector sends metrics to %q, want %q (the receivers' alias and remote-write port)", metricsTo, want)
		}
		if n := svc.Networks["default"]; n == nil || !slices.Contains(n.Aliases, "thanos-receive") {
			t.Errorf("%s: not on the alias thanos-receive", name)
		}
		if !slices.Contains(p.Services["query"].Command, "--endpoint="+local) {
			t.Errorf("query does not read %s", local)
		}
	}
	if len(ring[0].Endpoints) != 3 {
		t.Errorf("hashring endpoints %v, want the 3 receivers", ring[0].Endpoints)
	}
	if !slices.Contains(p.Services["query"].Command, "--endpoint=rule:10901") {
		t.Errorf("query does not read the ruler's recorded series")
	}
	if q := flagValue(p.Services["rule"].Command, "--query"); q != "http://query:9090" || flagValue(p.Services["query"].Command, "--http-address") != "0.0.0.0:9090" {
		t.Errorf("rule asks %q; query listens on %q", q, flagValue(p.Services["query"].Command, "--http-address"))
	}
}

// TestTeamThanosStartsFromCompose starts the real Thanos binary with the
// compose file's own commands for every receiver, query and the ruler (the
// Docker host names and ports mapped to free loopback ports, the mounted
// files to the repository's, the hashring rewritten alike): every flag
// parses, the hashring loads, the ruler loads deploy/prometheus/rules, and
// query sees the three receivers and the ruler.
func TestTeamThanosStartsFromCompose(t *testing.T) {
	p := loadThanosCompose(t)
	dir := t.TempDir()
	hostPort := regexp.MustCompile(`\b(0\.0\.0\.0|[a-z][a-z0-9-]*):(\d+)\b`)
	addrs := map[string]string{} // "service:port" -> 127.0.0.1:free
	mapped := func(service, port string) string {
		k := service + ":" + port
		if addrs[k] == "" {
			addrs[k] = fmt.Sprintf("127.0.0.1:%d", testbackend.FreePort(t))
		}
		return addrs[k]
	}
	rewrite := func(service, s string) string {
		return hostPort.ReplaceAllStringFunc(s, func(m string) string {
			sm := hostPort.FindStringSubmatch(m)
			host := sm[1]
			if host == "0.0.0.0" {
				host = service
			}
			if _, ok := p.Services[host]; !ok {
				return m
			}
			return mapped(host, sm[2])
		})
	}
	ring, err := os.ReadFile(repoPath(t, "deploy/team/thanos/hashring.json"))
	if err != nil {
		t.Fatal(err)
	}
	ringCopy := filepath.Join(dir, "hashring.json")
	if err := os.WriteFile(ringCopy, []byte(rewrite("", string(ring))), 0o644); err != nil {
		t.Fatal(err)
	}
	argsOf := func(name string) []string {
		svc := p.Services[name]
		var args []string
		for _, a := range svc.Command {
			a = rewrite(name, a)
			for _, v := range svc.Volumes {
				src := v.Source
				if v.Type == types.VolumeTypeVolume {
					src = filepath.Join(dir, name+"-"+v.Source)
				} else if filepath.Base(src) == "hashring.json" {
					src = ringCopy
				}
				if k, val, ok := strings.Cut(a, "="); ok && (val == v.Target || strings.HasPrefix(val, v.Target+"/")) {
					a = k + "=" + src + strings.TrimPrefix(val, v.Target)
				}
			}
			args = append(args, a)
		}
		return args
	}
	var names []string
	for name, svc := range p.Services {
		if strings.HasPrefix(svc.Image, "quay.io/thanos/thanos:") {
			names = append(names, name)
		}
	}
	slices.Sort(names) // query, receive-0..2, rule: rule last, it asks query
	if len(names) != 5 {
		t.Fatalf("thanos services %v, want 3 receivers, query and rule", names)
	}
	for _, name := range names {
		args := argsOf(name)
		httpAddr := flagValue(args, "--http-address")
		testbackend.StartThanos(t, name, args, "http://"+httpAddr+"/-/ready")
	}
	query := testbackend.NewQueryAPI("http://" + addrs["query:9090"])
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		body, err := query.API(ctx, "/api/v1/stores", nil)
		var env struct {
			Data map[string][]struct {
				Name      string `json:"name"`
				LastError any    `json:"lastError"`
			} `json:"data"`
		}
		healthy := 0
		if err == nil && json.Unmarshal(body, &env) == nil {
			for _, stores := range env.Data {
				for _, s := range stores {
					if s.LastError == nil {
						healthy++
					}
				}
			}
		}
		if healthy == 4 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("query sees %d healthy stores, want 4 (3 receivers, rule): %s %v", healthy, body, err)
		case <-time.After(time.Second):
		}
	}
	rule := testbackend.NewQueryAPI("http://" + addrs["rule:10902"])
	body, err := rule.API(ctx, "/api/v1/rules", nil)
	if err != nil {
		t.Fatal(err)
	}
	var rules struct {
		Data struct {
			Groups []struct {
				File  string            `json:"file"`
				Rules []json.RawMessage `json:"rules"`
			} `json:"groups"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &rules); err != nil {
		t.Fatal(err)
	}
	files, n := map[string]bool{}, 0
	for _, g := range rules.Data.Groups {
		files[filepath.Base(g.File)] = true
		n += len(g.Rules)
	}
	for _, f := range globRepo(t, "deploy/prometheus/rules/*.yml") {
		if !files[filepath.Base(f)] {
			t.Errorf("thanos rule did not load %s (loaded %v)", f, files)
		}
	}
	if n == 0 {
		t.Errorf("thanos rule loaded no rules")
	}
}

// flagValue returns the value of --name=value in args ("" if absent).
func flagValue(args []string, name string) string {
	for _, a := range args {
		if k, v, ok := strings.Cut(a, "="); ok && k == name {
			return v
		}
	}
	return ""
}

func keys[V any](m map[string]V) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
