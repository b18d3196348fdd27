package deploy

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
)

// The compose stack shows the exporter's exemplars (the request span
// behind a count): Prometheus stores them, the Prometheus data source
// links their trace_id to Tempo and to Jaeger, and the spend and token
// time series panels ask for them.

func TestComposePrometheusStoresExemplars(t *testing.T) {
	p := loadCompose(t, t.TempDir())
	svc, err := p.GetService("prometheus")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(svc.Command, "--enable-feature=exemplar-storage") {
		t.Errorf("prometheus command %q lacks --enable-feature=exemplar-storage", svc.Command)
	}
}

func TestPrometheusDataSourceLinksExemplarsToTempoAndJaeger(t *testing.T) {
	var ds struct {
		Datasources []struct {
			Type     string `yaml:"type"`
			UID      string `yaml:"uid"`
			JSONData struct {
				Destinations []struct {
					Name          string `yaml:"name"`
					DatasourceUID string `yaml:"datasourceUid"`
				} `yaml:"exemplarTraceIdDestinations"`
			} `yaml:"jsonData"`
		} `yaml:"datasources"`
	}
	readYAML(t, "deploy/grafana/provisioning/datasources/datasources.yml", &ds)
	uids := map[string]bool{}
	for _, d := range ds.Datasources {
		uids[d.UID] = true
	}
	for _, d := range ds.Datasources {
		if d.Type != "prometheus" {
			continue
		}
		linked := map[string]bool{}
		for _, dst := range d.JSONData.Destinations {
			if dst.Name != "trace_id" || !uids[dst.DatasourceUID] {
				t.Errorf("exemplar destination %+v: want label trace_id (the exporter's) and a provisioned data source", dst)
			}
			linked[dst.DatasourceUID] = true
		}
		if !linked["tempo"] || !linked["jaeger"] {
			t.Errorf("Prometheus exemplars link to %v, want tempo and jaeger", linked)
		}
	}
}

// Every time series panel of the overview and spend dashboards that
// plots spend or tokens (not a ratio) asks for exemplars.
func TestSpendAndTokenPanelsShowExemplars(t *testing.T) {
	n := 0
	for _, file := range []string{"deploy/grafana/dashboards/overview.json", "deploy/grafana/dashboards/spend.json"} {
		data, err := os.ReadFile(repoPath(t, file))
		if err != nil {
			t.Fatal(err)
		}
		var d any
		if err := json.Unmarshal(data, &d); err != nil {
			t.Fatal(err)
		}
		walkJSON(d, func(panel map[string]any) {
			targets, ok := panel["targets"].([]any)
			if !ok || panel["type"] != "timeseries" {
				return
			}
			for _, tg := range targets {
				target, _ := tg.(map[string]any)
				expr, _ := target["expr"].(string)
				if !strings.Contains(expr, "claude_transcript_cost_usd_total") && !strings.Contains(expr, "claude_transcript_tokens_total") || strings.Contains(expr, " / ") {
					continue
				}
				n++
				if target["exemplar"] != true {
					t.Errorf("%s: panel %q plots %s without exemplars", file, panel["title"], expr)
				}
			}
		})
	}
	if n == 0 {
		t.Error("no spend or token time series panel found")
	}
}
