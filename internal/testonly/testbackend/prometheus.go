package testbackend

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

const (
	// promStartTimeout bounds the wait for /-/ready after starting Prometheus.
	promStartTimeout = 30 * time.Second
	// pollInterval is how often readiness and wait helpers poll.
	pollInterval = 100 * time.Millisecond
	// logTailLines is how much of a backend's log is printed on failure.
	logTailLines = 40
	// SelfJob is the job name of Prometheus scraping itself (PromOptions.ScrapeSelf).
	SelfJob = "prometheus"
)

// PromOptions configures StartPrometheus.
type PromOptions struct {
	// ScrapeInterval is the global scrape_interval (and scrape_timeout);
	// default 1s.
	ScrapeInterval time.Duration
	// EvaluationInterval is the global evaluation_interval of rules;
	// default 1s.
	EvaluationInterval time.Duration
	// Targets are host:port addresses scraped at /metrics, one scrape job
	// each: Targets[i] is job JobName(i).
	Targets []string
	// ScrapeSelf adds a job SelfJob scraping the Prometheus server itself.
	ScrapeSelf bool
	// RuleFiles are paths of recording and alerting rule files (rule_files).
	RuleFiles []string
	// ExtraArgs are appended to the prometheus command line.
	ExtraArgs []string
	// DataDir is the TSDB directory to start on (e.g. one holding blocks
	// promtool made); default a new one.
	DataDir string
	// TargetJob, when set, is the one scrape job of every target (as
	// deploy/prometheus/prometheus.yml names the exporter's job), instead
	// of JobName(i).
	TargetJob string
	// OTLP turns on the OTLP receiver (/api/v1/otlp/v1/metrics), keeping
	// metric names as sent and making service.instance.id the instance
	// label, as deploy/team configures it.
	OTLP bool
}

// JobName is the scrape job name of PromOptions.Targets[i]: "target-<i>".
func JobName(i int) string { return fmt.Sprintf("target-%d", i) }

// Prometheus is a running Prometheus server started by StartPrometheus.
type Prometheus struct {
	QueryAPI
	dir     string
	jobs    []string
	proc    *process
	logPath string
}

// QueryAPI is a client of a Prometheus-compatible HTTP API (/api/v1/...):
// Prometheus itself, or Thanos query (ThanosHashring.Query).
type QueryAPI struct {
	url    string
	client *http.Client
}

// NewQueryAPI returns a client of the Prometheus-compatible HTTP API at
// baseURL (like http://127.0.0.1:40123).
func NewQueryAPI(baseURL string) QueryAPI {
	return QueryAPI{url: baseURL, client: &http.Client{Timeout: 10 * time.Second}}
}

// StartPrometheus starts Prometheus (PrometheusBinary: Prometheus 3 built
// from its Go module, or $CTE_PROMETHEUS_BIN) with a config
// generated from opts, on a free port of 127.0.0.1 and with its TSDB in a
// temporary directory, and waits until it is ready. It is stopped when the
// test ends; if the test failed, the tail of its log is printed.
func StartPrometheus(t testing.TB, opts PromOptions) *Prometheus {
	t.Helper()
	bin := PrometheusBinary(t)
	if opts.ScrapeInterval <= 0 {
		opts.ScrapeInterval = time.Second
	}
	if opts.EvaluationInterval <= 0 {
		opts.EvaluationInterval = time.Second
	}

	dir := t.TempDir()
	addr := fmt.Sprintf("127.0.0.1:%d", FreePort(t))
	cfg, jobs := promConfig(opts, addr)
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, cfg, 0o644); err != nil {
		t.Fatalf("start prometheus: %v", err)
	}
	dataDir := filepath.Join(dir, "data")
	if opts.DataDir != "" {
		dataDir = opts.DataDir
	}
	p := &Prometheus{
		QueryAPI: NewQueryAPI("http://" + addr),
		dir:      dir,
		jobs:     jobs,
		logPath:  filepath.Join(dir, "prometheus.log"),
	}
	args := []string{
		"--config.file=" + cfgPath,
		"--storage.tsdb.path=" + dataDir,
		"--web.listen-address=" + addr,
	}
	if opts.OTLP {
		args = append(args, "--web.enable-otlp-receiver")
	}
	args = append(args, opts.ExtraArgs...)
	var err error
	p.proc, err = startProcess("prometheus", bin, args, p.logPath)
	if err != nil {
		t.Fatalf("start prometheus: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("prometheus at %s\n%s", p.url, logTail(p.logPath, logTailLines))
		}
		if err := p.proc.stop(); err != nil {
			t.Errorf("prometheus: %v", err)
		}
	})

	if err := waitHTTPReady(p.proc, p.url+"/-/ready", promStartTimeout); err != nil {
		t.Fatalf("start prometheus: %v\nconfig:\n%s\n%s", err, cfg, logTail(p.logPath, logTailLines))
	}
	return p
}

// promConfig renders the Prometheus configuration (JSON, which is YAML) and
// returns the job names in order.
func promConfig(opts PromOptions, selfAddr string) ([]byte, []string) {
	type staticConfig struct {
		Targets []string `json:"targets"`
	}
	type scrapeConfig struct {
		JobName       string         `json:"job_name"`
		MetricsPath   string         `json:"metrics_path"`
		StaticConfigs []staticConfig `json:"static_configs"`
	}
	var jobs []string
	var scrapes []scrapeConfig
	add := func(job, target string) {
		jobs = append(jobs, job)
		scrapes = append(scrapes, scrapeConfig{
			JobName:       job,
			MetricsPath:   "/metrics",
			StaticConfigs: []staticConfig{{Targets: []string{target}}},
		})
	}
	for i, target := range opts.Targets {
		if opts.TargetJob != "" && i > 0 {
			scrapes[len(scrapes)-1].StaticConfigs[0].Targets = append(scrapes[len(scrapes)-1].StaticConfigs[0].Targets, target)
			continue
		}
		job := JobName(i)
		if opts.TargetJob != "" {
			job = opts.TargetJob
		}
		add(job, target)
	}
	if opts.ScrapeSelf {
		add(SelfJob, selfAddr)
	}
	cfg := map[string]any{
		"global": map[string]string{
			"scrape_interval":     promDuration(opts.ScrapeInterval),
			"scrape_timeout":      promDuration(opts.ScrapeInterval),
			"evaluation_interval": promDuration(opts.EvaluationInterval),
		},
		"scrape_configs": scrapes,
	}
	if len(opts.RuleFiles) > 0 {
		cfg["rule_files"] = opts.RuleFiles
	}
	if opts.OTLP {
		cfg["otlp"] = map[string]any{
			"translation_strategy":        "NoTranslation",
			"promote_resource_attributes": []string{"host.name", "user.name"},
		}
	}
	data, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		panic(err) // plain maps and slices of strings always marshal
	}
	return data, jobs
}

// promDuration renders d as a Prometheus duration ("1500ms", "1000ms").
func promDuration(d time.Duration) string {
	return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
}

// URL returns the base URL of the server, like http://127.0.0.1:40123.
func (p *QueryAPI) URL() string { return p.url }

// Jobs returns the configured scrape job names, in configuration order
// (JobName(i) for each target, then SelfJob if ScrapeSelf).
func (p *Prometheus) Jobs() []string { return append([]string(nil), p.jobs...) }

// LogPath returns the file that holds the server's output.
func (p *Prometheus) LogPath() string { return p.logPath }

// API sends GET path?params to the server (path like "/api/v1/rules") and
// returns the response body. A non-2xx status is an error that includes the
// body.
func (p *QueryAPI) API(ctx context.Context, path string, params url.Values) ([]byte, error) {
	u := p.url + path
	if len(params) > 0 {
		u += "?" + params.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("prometheus api %s: %w", path, err)
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("prometheus api %s: %w", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("prometheus api %s: %w", path, err)
	}
	if resp.StatusCode/100 != 2 {
		return body, fmt.Errorf("prometheus api %s: %s: %s", path, resp.Status, strings.TrimSpace(string(body)))
	}
	return body, nil
}

// apiEnvelope is the common shape of /api/v1 responses.
type apiEnvelope struct {
	Status    string          `json:"status"`
	Data      json.RawMessage `json:"data"`
	ErrorType string          `json:"errorType"`
	Error     string          `json:"error"`
	Warnings  []string        `json:"warnings"`
}

// apiData calls API and returns the "data" member of a successful response.
func (p *QueryAPI) apiData(ctx context.Context, path string, params url.Values) (json.RawMessage, []string, error) {
	body, err := p.API(ctx, path, params)
	var env apiEnvelope
	if jerr := json.Unmarshal(body, &env); jerr != nil {
		if err != nil {
			return nil, nil, err
		}
		return nil, nil, fmt.Errorf("prometheus api %s: decode: %w", path, jerr)
	}
	if env.Status != "success" {
		return nil, env.Warnings, fmt.Errorf("prometheus api %s: %s: %s", path, env.ErrorType, env.Error)
	}
	if err != nil {
		return nil, env.Warnings, err
	}
	return env.Data, env.Warnings, nil
}

// QueryResult is the result of an instant query.
type QueryResult struct {
	// Type is the result type: "vector", "matrix", "scalar" or "string".
	Type string
	// Samples holds one sample per series of a vector, one per point of each
	// series of a matrix, and a single unlabeled sample for a scalar. A
	// string result is in String.
	Samples []Sample
	// String is the value of a string result.
	String string
	// Warnings are the warnings the server returned.
	Warnings []string
}

// Sample is one value of a query result.
type Sample struct {
	Labels map[string]string
	Value  float64
	Time   time.Time
}

// String renders the sample like the Prometheus UI: {a="b"} => 1.
func (s Sample) String() string {
	keys := make([]string, 0, len(s.Labels))
	for k := range s.Labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%q", k, s.Labels[k])
	}
	return fmt.Sprintf("{%s} => %v", strings.Join(parts, ", "), s.Value)
}

// Query evaluates the PromQL expression expr at the current time through
// /api/v1/query.
func (p *QueryAPI) Query(ctx context.Context, expr string) (QueryResult, error) {
	data, warnings, err := p.apiData(ctx, "/api/v1/query", url.Values{"query": {expr}})
	if err != nil {
		return QueryResult{}, fmt.Errorf("query %q: %w", expr, err)
	}
	res, err := decodeQueryData(data)
	if err != nil {
		return QueryResult{}, fmt.Errorf("query %q: %w", expr, err)
	}
	res.Warnings = warnings
	return res, nil
}

// QueryAt evaluates expr at time at.
func (p *QueryAPI) QueryAt(ctx context.Context, expr string, at time.Time) (QueryResult, error) {
	data, warnings, err := p.apiData(ctx, "/api/v1/query", url.Values{"query": {expr},
		"time": {strconv.FormatFloat(float64(at.UnixMilli())/1000, 'f', 3, 64)}})
	if err != nil {
		return QueryResult{}, fmt.Errorf("query %q at %s: %w", expr, at, err)
	}
	res, err := decodeQueryData(data)
	if err != nil {
		return QueryResult{}, fmt.Errorf("query %q at %s: %w", expr, at, err)
	}
	res.Warnings = warnings
	return res, nil
}

// QueryValue evaluates expr and returns its value, which must be a scalar or
// a vector of exactly one sample.
func (p *QueryAPI) QueryValue(ctx context.Context, expr string) (float64, error) {
	res, err := p.Query(ctx, expr)
	if err != nil {
		return 0, err
	}
	if (res.Type != "vector" && res.Type != "scalar") || len(res.Samples) != 1 {
		return 0, fmt.Errorf("query %q: want one sample, got %s with %d samples %v",
			expr, res.Type, len(res.Samples), res.Samples)
	}
	return res.Samples[0].Value, nil
}

// decodeQueryData decodes the "data" member of a query response.
func decodeQueryData(data json.RawMessage) (QueryResult, error) {
	var raw struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return QueryResult{}, fmt.Errorf("decode result: %w", err)
	}
	res := QueryResult{Type: raw.ResultType}
	switch raw.ResultType {
	case "vector":
		var series []struct {
			Metric map[string]string `json:"metric"`
			Value  [2]any            `json:"value"`
		}
		if err := json.Unmarshal(raw.Result, &series); err != nil {
			return res, fmt.Errorf("decode vector: %w", err)
		}
		for _, s := range series {
			ts, v, err := decodePoint(s.Value)
			if err != nil {
				return res, err
			}
			res.Samples = append(res.Samples, Sample{Labels: s.Metric, Value: v, Time: ts})
		}
	case "matrix":
		var series []struct {
			Metric map[string]string `json:"metric"`
			Values [][2]any          `json:"values"`
		}
		if err := json.Unmarshal(raw.Result, &series); err != nil {
			return res, fmt.Errorf("decode matrix: %w", err)
		}
		for _, s := range series {
			for _, pt := range s.Values {
				ts, v, err := decodePoint(pt)
				if err != nil {
					return res, err
				}
				res.Samples = append(res.Samples, Sample{Labels: s.Metric, Value: v, Time: ts})
			}
		}
	case "scalar":
		var pt [2]any
		if err := json.Unmarshal(raw.Result, &pt); err != nil {
			return res, fmt.Errorf("decode scalar: %w", err)
		}
		ts, v, err := decodePoint(pt)
		if err != nil {
			return res, err
		}
		res.Samples = []Sample{{Labels: map[string]string{}, Value: v, Time: ts}}
	case "string":
		var pt [2]any
		if err := json.Unmarshal(raw.Result, &pt); err != nil {
			return res, fmt.Errorf("decode string: %w", err)
		}
		s, _ := pt[1].(string)
		res.String = s
	default:
		return res, fmt.Errorf("unknown result type %q", raw.ResultType)
	}
	return res, nil
}

// decodePoint decodes [<unix seconds>, "<value>"].
func decodePoint(pt [2]any) (time.Time, float64, error) {
	sec, ok := pt[0].(float64)
	if !ok {
		return time.Time{}, 0, fmt.Errorf("bad sample timestamp %v", pt[0])
	}
	s, ok := pt[1].(string)
	if !ok {
		return time.Time{}, 0, fmt.Errorf("bad sample value %v", pt[1])
	}
	v, err := strconv.ParseFloat(s, 64) // also parses NaN, +Inf, -Inf
	if err != nil {
		return time.Time{}, 0, fmt.Errorf("bad sample value %q: %w", s, err)
	}
	whole, frac := math.Modf(sec)
	return time.Unix(int64(whole), int64(math.Round(frac*1e3))*int64(time.Millisecond)), v, nil
}

// Target is an active scrape target as reported by /api/v1/targets.
type Target struct {
	Job       string
	ScrapeURL string
	Health    string // "up", "down" or "unknown"
	LastError string
}

// Targets returns the active scrape targets.
func (p *Prometheus) Targets(ctx context.Context) ([]Target, error) {
	data, _, err := p.apiData(ctx, "/api/v1/targets", url.Values{"state": {"active"}})
	if err != nil {
		return nil, err
	}
	var raw struct {
		ActiveTargets []struct {
			Labels    map[string]string `json:"labels"`
			ScrapeURL string            `json:"scrapeUrl"`
			Health    string            `json:"health"`
			LastError string            `json:"lastError"`
		} `json:"activeTargets"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("decode targets: %w", err)
	}
	targets := make([]Target, len(raw.ActiveTargets))
	for i, at := range raw.ActiveTargets {
		targets[i] = Target{Job: at.Labels["job"], ScrapeURL: at.ScrapeURL, Health: at.Health, LastError: at.LastError}
	}
	return targets, nil
}

// WaitForTargetsUp polls /api/v1/targets until every configured job has an
// active target and every target's health is "up".
func (p *Prometheus) WaitForTargetsUp(ctx context.Context) error {
	var state string
	for {
		targets, err := p.Targets(ctx)
		if err == nil {
			state = fmt.Sprintf("%+v", targets)
			if p.allUp(targets) {
				return nil
			}
		} else {
			state = err.Error()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for targets up (jobs %v): %w; last state: %s", p.jobs, ctx.Err(), state)
		case <-time.After(pollInterval):
		}
	}
}

func (p *Prometheus) allUp(targets []Target) bool {
	if len(targets) < len(p.jobs) {
		return false
	}
	seen := map[string]bool{}
	for _, tg := range targets {
		if tg.Health != "up" {
			return false
		}
		seen[tg.Job] = true
	}
	for _, job := range p.jobs {
		if !seen[job] {
			return false
		}
	}
	return true
}

// WaitForScrapes waits until every configured job has been scraped at least
// n times (count_over_time(up[1h]) >= n), successful or not. rate() and
// increase() need n >= 2.
func (p *Prometheus) WaitForScrapes(ctx context.Context, n int) error {
	var state string
	for {
		res, err := p.Query(ctx, "count_over_time(up[1h])")
		if err == nil {
			state = fmt.Sprint(res.Samples)
			if p.scrapedEnough(res.Samples, n) {
				return nil
			}
		} else {
			state = err.Error()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for %d scrapes of jobs %v: %w; last count_over_time(up[1h]): %s",
				n, p.jobs, ctx.Err(), state)
		case <-time.After(pollInterval):
		}
	}
}

func (p *Prometheus) scrapedEnough(samples []Sample, n int) bool {
	counts := map[string]float64{}
	for _, s := range samples {
		counts[s.Labels["job"]] = s.Value
	}
	for _, job := range p.jobs {
		if counts[job] < float64(n) {
			return false
		}
	}
	return true
}

// ExemplarSeries is one series of a /api/v1/query_exemplars answer with
// its exemplars.
type ExemplarSeries struct {
	SeriesLabels map[string]string `json:"seriesLabels"`
	Exemplars    []struct {
		Labels    map[string]string `json:"labels"`
		Value     string            `json:"value"`
		Timestamp float64           `json:"timestamp"`
	} `json:"exemplars"`
}

// QueryExemplars returns the exemplars of the series that expr selects
// between start and end (GET /api/v1/query_exemplars; the server needs
// --enable-feature=exemplar-storage).
func (p *Prometheus) QueryExemplars(ctx context.Context, expr string, start, end time.Time) ([]ExemplarSeries, error) {
	params := url.Values{}
	params.Set("query", expr)
	params.Set("start", strconv.FormatFloat(float64(start.UnixMilli())/1000, 'f', 3, 64))
	params.Set("end", strconv.FormatFloat(float64(end.UnixMilli())/1000, 'f', 3, 64))
	data, _, err := p.apiData(ctx, "/api/v1/query_exemplars", params)
	if err != nil {
		return nil, err
	}
	var out []ExemplarSeries
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("query_exemplars %s: %w", expr, err)
	}
	return out, nil
}
