package deploy

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

const dashboardsGlob = "deploy/grafana/dashboards/*.json"

// Values substituted for Grafana's built-in variables when a dashboard query
// is evaluated as an instant query "now". The real-corpus test runs for
// well under rateWindow, so rate() and increase() see every sample it
// scraped; rangeWindow stands for the dashboard's time range.
const (
	rateWindow  = "10m"
	rangeWindow = "1h"
)

// dashQuery is one PromQL expression found in a dashboard.
type dashQuery struct {
	Dashboard string // file, repository-relative
	Panel     string // panel title, or "variable <name>"
	RefID     string
	Expr      string // as written, with Grafana variables
}

func (q dashQuery) String() string {
	return fmt.Sprintf("%s: %s [%s]", q.Dashboard, q.Panel, q.RefID)
}

// dashboard is the part of a dashboard's JSON the tests read; Panels stay
// raw so that every nesting (rows holding panels) is walked.
type dashboard struct {
	UID        string            `json:"uid"`
	Title      string            `json:"title"`
	Tags       []string          `json:"tags"`
	Panels     []json.RawMessage `json:"panels"`
	Links      []dashLink        `json:"links"`
	Templating struct {
		List []dashVar `json:"list"`
	} `json:"templating"`
}

type dashLink struct {
	Title string `json:"title"`
	URL   string `json:"url"`
	Type  string `json:"type"`
}

type dashVar struct {
	Name       string          `json:"name"`
	Type       string          `json:"type"`
	Query      json.RawMessage `json:"query"`
	Definition string          `json:"definition"`
	IncludeAll bool            `json:"includeAll"`
	AllValue   string          `json:"allValue"`
	Current    struct {
		Value any `json:"value"`
	} `json:"current"`
}

// queryString returns the variable's query whether it is a string or an
// object with a "query" member (newer Grafana).
func (v dashVar) queryString() string {
	var s string
	if json.Unmarshal(v.Query, &s) == nil {
		return s
	}
	var o struct {
		Query string `json:"query"`
	}
	if json.Unmarshal(v.Query, &o) == nil && o.Query != "" {
		return o.Query
	}
	return v.Definition
}

// loadDashboards parses every dashboard file.
func loadDashboards(t *testing.T) map[string]dashboard {
	t.Helper()
	out := map[string]dashboard{}
	for _, f := range globRepo(t, dashboardsGlob) {
		data, err := os.ReadFile(repoPath(t, f))
		if err != nil {
			t.Fatal(err)
		}
		var d dashboard
		if err := json.Unmarshal(data, &d); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out[f] = d
	}
	return out
}

// walkJSON calls fn for every JSON object inside v (v included).
func walkJSON(v any, fn func(map[string]any)) {
	switch x := v.(type) {
	case map[string]any:
		fn(x)
		for _, c := range x {
			walkJSON(c, fn)
		}
	case []any:
		for _, c := range x {
			walkJSON(c, fn)
		}
	}
}

// isPrometheusTarget reports whether a target queries Prometheus: its own
// datasource, else its panel's, is of type prometheus (or unset: the
// default data source is Prometheus).
func isPrometheusTarget(target, panel map[string]any) bool {
	for _, obj := range []map[string]any{target, panel} {
		if ds, ok := obj["datasource"].(map[string]any); ok {
			return ds["type"] == "prometheus"
		}
	}
	return true
}

// dashboardQueries extracts every PromQL expression of every dashboard:
// every "expr" of every Prometheus target of every panel at any depth, and
// every Prometheus query variable (label_values(...) turned into the PromQL
// whose series it lists).
func dashboardQueries(t *testing.T) []dashQuery {
	t.Helper()
	var out []dashQuery
	for file, d := range loadDashboards(t) {
		for _, raw := range d.Panels {
			var p any
			if err := json.Unmarshal(raw, &p); err != nil {
				t.Fatal(err)
			}
			walkJSON(p, func(panel map[string]any) {
				targets, ok := panel["targets"].([]any)
				if !ok {
					return
				}
				title, _ := panel["title"].(string)
				for _, tg := range targets {
					target, ok := tg.(map[string]any)
					if !ok || !isPrometheusTarget(target, panel) {
						continue
					}
					expr, _ := target["expr"].(string)
					ref, _ := target["refId"].(string)
					if strings.TrimSpace(expr) == "" {
						t.Errorf("%s: panel %q target %s queries Prometheus without an expr", file, title, ref)
						continue
					}
					out = append(out, dashQuery{Dashboard: file, Panel: title, RefID: ref, Expr: expr})
				}
			})
		}
		for _, v := range d.Templating.List {
			if v.Type != "query" {
				continue
			}
			expr, err := labelValuesExpr(v.queryString())
			if err != nil {
				t.Errorf("%s: variable %s: %v", file, v.Name, err)
				continue
			}
			out = append(out, dashQuery{Dashboard: file, Panel: "variable " + v.Name, RefID: "-", Expr: expr})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

var labelValuesRe = regexp.MustCompile(`^label_values\(\s*(.+?)\s*,\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\)$`)

// labelValuesExpr turns label_values(selector, label) into the PromQL that
// yields one series per value: count by (label) (selector).
func labelValuesExpr(q string) (string, error) {
	m := labelValuesRe.FindStringSubmatch(strings.TrimSpace(q))
	if m == nil {
		return "", fmt.Errorf("query %q is not label_values(<selector>, <label>)", q)
	}
	return fmt.Sprintf("count by (%s) (%s)", m[2], m[1]), nil
}

var grafanaVarRe = regexp.MustCompile(`\$\{([A-Za-z0-9_]+)(?::[A-Za-z]+)?\}|\$([A-Za-z_][A-Za-z0-9_]*)|\[\[([A-Za-z0-9_]+)\]\]`)

// substituteVars replaces Grafana variables in expr the way Grafana would
// with every multi-value variable on "All" (its allValue), textboxes and
// constants at their value, and the built-in intervals at the windows
// above. An undefined variable is an error.
func substituteVars(expr string, vars []dashVar) (string, error) {
	values := map[string]string{
		"__rate_interval": rateWindow,
		"__interval":      "1m",
		"__range":         rangeWindow,
	}
	for _, v := range vars {
		switch {
		case v.IncludeAll && v.AllValue != "":
			values[v.Name] = v.AllValue
		case v.IncludeAll:
			values[v.Name] = ".*"
		case v.Type == "constant" || v.Type == "textbox":
			values[v.Name] = v.queryString()
		default:
			values[v.Name] = fmt.Sprint(v.Current.Value)
		}
	}
	var missing []string
	out := grafanaVarRe.ReplaceAllStringFunc(expr, func(m string) string {
		sm := grafanaVarRe.FindStringSubmatch(m)
		name := sm[1] + sm[2] + sm[3]
		val, ok := values[name]
		if !ok {
			missing = append(missing, name)
			return m
		}
		return val
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("undefined variables %v in %q", missing, expr)
	}
	return out, nil
}

// resolvedDashboardQueries returns every dashboard query with its variables
// substituted.
func resolvedDashboardQueries(t *testing.T) []dashQuery {
	t.Helper()
	dashes := loadDashboards(t)
	var out []dashQuery
	for _, q := range dashboardQueries(t) {
		expr, err := substituteVars(q.Expr, dashes[q.Dashboard].Templating.List)
		if err != nil {
			t.Errorf("%s: %v", q, err)
			continue
		}
		q.Expr = expr
		out = append(out, q)
	}
	return out
}

// ruleExprs returns every rule's expression, named by file and rule.
func ruleExprs(t *testing.T) []dashQuery {
	t.Helper()
	var out []dashQuery
	for file, rules := range loadRules(t) {
		for _, r := range rules {
			name := r.Alert
			if name == "" {
				name = r.Record
			}
			out = append(out, dashQuery{Dashboard: file, Panel: name, RefID: "-", Expr: r.Expr})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

func TestDashboardsStructure(t *testing.T) {
	dashes := loadDashboards(t)
	if len(dashes) < 4 {
		t.Fatalf("%d dashboards, want overview, tools, compaction and exporter health", len(dashes))
	}
	uids := map[string]string{}
	for file, d := range dashes {
		if d.UID == "" || d.Title == "" {
			t.Errorf("%s: uid %q title %q: both are needed for provisioning", file, d.UID, d.Title)
		}
		if other, dup := uids[d.UID]; dup {
			t.Errorf("%s and %s share uid %s", file, other, d.UID)
		}
		uids[d.UID] = file
		names := map[string]bool{}
		for _, v := range d.Templating.List {
			names[v.Name] = true
		}
		if !names["datasource"] {
			t.Errorf("%s: no $datasource variable (panels select Prometheus through it)", file)
		}
		for _, raw := range d.Panels {
			var p map[string]any
			if err := json.Unmarshal(raw, &p); err != nil {
				t.Fatal(err)
			}
			if p["type"] == "row" {
				continue
			}
			if _, ok := p["gridPos"].(map[string]any); !ok {
				t.Errorf("%s: panel %v has no gridPos", file, p["title"])
			}
			if _, ok := p["datasource"].(map[string]any); !ok {
				t.Errorf("%s: panel %v has no datasource", file, p["title"])
			}
		}
	}
	queries := dashboardQueries(t)
	if len(queries) < 40 {
		t.Errorf("only %d dashboard queries found: the extraction is broken", len(queries))
	}
	resolvedDashboardQueries(t) // undefined variables fail here
}

// The dashboard's time range as Grafana substitutes it in links
// (milliseconds since the epoch): sample values for the tests.
const (
	sampleFrom = "1762000000000"
	sampleTo   = "1762600000000"
)

// sampleLink substitutes sample values for the variables a link carries.
func sampleLink(link string) string {
	return strings.NewReplacer("${session}", "0b9f2c1e-aaaa-bbbb-cccc-123456789abc",
		"${__field.labels.project}", "my-repo", "${jaeger_url}", "http://localhost:16686",
		"${__from}", sampleFrom, "${__to}", sampleTo).Replace(link)
}

// tempoPane decodes the Explore pane of a Grafana Explore link after
// substituting sample values for the variables it carries, and fails the
// test unless the pane searches the dashboard's own time range (a fixed
// range such as the last 7 days misses older sessions).
func tempoPane(t *testing.T, link string) (datasource, query string) {
	t.Helper()
	u, err := url.Parse(sampleLink(link))
	if err != nil {
		t.Fatalf("link %q: %v", link, err)
	}
	panes := u.Query().Get("panes")
	if panes == "" {
		return "", ""
	}
	var p map[string]struct {
		Datasource string `json:"datasource"`
		Queries    []struct {
			Query string `json:"query"`
		} `json:"queries"`
		Range struct {
			From string `json:"from"`
			To   string `json:"to"`
		} `json:"range"`
	}
	if err := json.Unmarshal([]byte(panes), &p); err != nil {
		t.Fatalf("link %q: panes is not JSON: %v", link, err)
	}
	for _, pane := range p {
		if pane.Range.From != sampleFrom || pane.Range.To != sampleTo {
			t.Errorf("link %q: Explore range %s..%s, want the dashboard's ${__from}..${__to}", link, pane.Range.From, pane.Range.To)
		}
		if len(pane.Queries) > 0 {
			return pane.Datasource, pane.Queries[0].Query
		}
	}
	return "", ""
}

// TestDashboardTraceLinks checks the trace links: metrics carry no session
// id (label cardinality), so the session links are dashboard links driven
// by the $session box (gen_ai.conversation.id) into Tempo and Jaeger, and
// per-project panels link to that project's session traces in Tempo.
func TestDashboardTraceLinks(t *testing.T) {
	for file, d := range loadDashboards(t) {
		if strings.HasSuffix(file, "/exporter.json") {
			continue // the exporter's own health: no sessions
		}
		var tempo, jaeger bool
		for _, l := range d.Links {
			if !strings.Contains(l.URL, "${session}") {
				continue
			}
			if ds, q := tempoPane(t, l.URL); ds == "tempo" && strings.Contains(q, `span.gen_ai.conversation.id = "0b9f2c1e`) {
				tempo = true
			}
			if strings.HasPrefix(l.URL, "${jaeger_url}/search?") {
				u, _ := url.Parse(sampleLink(l.URL))
				q := u.Query()
				var tags map[string]string
				if json.Unmarshal([]byte(q.Get("tags")), &tags) == nil && tags["gen_ai.conversation.id"] == "0b9f2c1e-aaaa-bbbb-cccc-123456789abc" &&
					q.Get("service") == "claude-code" {
					jaeger = true
				}
				// Jaeger's search form takes microseconds; without a range
				// it searches the last hour and finds no older session.
				if q.Get("lookback") != "custom" || q.Get("start") != sampleFrom+"000" || q.Get("end") != sampleTo+"000" {
					t.Errorf("%s: Jaeger link %q: lookback %q start %q end %q, want custom over the dashboard's range in µs",
						file, l.URL, q.Get("lookback"), q.Get("start"), q.Get("end"))
				}
			}
		}
		if !tempo || !jaeger {
			t.Errorf("%s: session links: Tempo %v, Jaeger %v; want both, by gen_ai.conversation.id", file, tempo, jaeger)
		}
		projectLinks := 0
		for _, raw := range d.Panels {
			var p any
			_ = json.Unmarshal(raw, &p)
			walkJSON(p, func(o map[string]any) {
				links, _ := o["links"].([]any)
				for _, l := range links {
					lm, _ := l.(map[string]any)
					u, _ := lm["url"].(string)
					if strings.Contains(u, "${__field.labels.project}") {
						ds, q := tempoPane(t, u)
						if ds != "tempo" || !strings.Contains(q, `name =~ "session .*" && span.claude_code.project = "my-repo"`) {
							t.Errorf("%s: project link %q: datasource %q query %q", file, lm["title"], ds, q)
						}
						projectLinks++
					}
				}
			})
		}
		if projectLinks == 0 {
			t.Errorf("%s: no per-project trace link", file)
		}
	}
}

// TestDashboardSpanNames: the dashboards' TraceQL uses the span names and
// attributes the exporter sends (the root span is "session <project>
// <id8>", the project attribute claude_code.project), none of the old ones.
func TestDashboardSpanNames(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("grafana", "dashboards", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("dashboards: %v %v", files, err)
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		text, err := url.QueryUnescape(strings.ReplaceAll(string(raw), "+", "%2B"))
		if err != nil {
			text = string(raw)
		}
		for _, old := range []string{`name = \"session\"`, `name = \\\"session\\\"`, "claude_code.project.path", "claude_code.session.id"} {
			if strings.Contains(text, old) {
				t.Errorf("%s: stale span name or attribute %s", f, old)
			}
		}
	}
}

func TestSubstituteVars(t *testing.T) {
	vars := []dashVar{
		{Name: "project", Type: "query", IncludeAll: true, AllValue: ".*"},
		{Name: "tool", Type: "query", IncludeAll: true},
		{Name: "session", Type: "textbox", Query: json.RawMessage(`"abc"`)},
	}
	got, err := substituteVars(`rate(x{project=~"$project",tool=~"${tool}",s="[[session]]"}[$__rate_interval])`, vars)
	want := `rate(x{project=~".*",tool=~".*",s="abc"}[` + rateWindow + `])`
	if err != nil || got != want {
		t.Errorf("substituteVars = %q, %v; want %q", got, err, want)
	}
	if _, err := substituteVars(`x{a="$nope"}`, vars); err == nil {
		t.Error("an undefined variable was accepted")
	}
	if e, err := labelValuesExpr(`label_values(up{job=~"$job"}, instance)`); err != nil || e != `count by (instance) (up{job=~"$job"})` {
		t.Errorf("labelValuesExpr = %q, %v", e, err)
	}
}
