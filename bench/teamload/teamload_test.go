// Package teamload is the team load step of `make bench` (bench/run.sh,
// step teamload): N simulated machines push the real expositions of the
// corpus trees over OTLP, as the exporter's --metrics.push does, through a
// real OpenTelemetry Collector into a real Thanos receive hashring (three
// receivers, replication factor 2, query in front), all on loopback, for a
// fixed time. It reports samples per second taken by the hashring, series,
// collector and receiver memory (RSS from /proc), push latency and refused
// samples.
//
// It is a test so that it can start the real backends through
// internal/testonly/testbackend; run without flags (as part of go test) it is a
// short run with 200 machines whose checks still hold: every machine's
// series reach query and nothing is refused.
package teamload

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	promBridge "go.opentelemetry.io/contrib/bridges/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/testonly/testbackend"
)

var (
	machines = flag.Int("teamload.machines", 200, "simulated machines (each a distinct service.instance.id)")
	duration = flag.Duration("teamload.duration", 15*time.Second, "how long the machines push")
	interval = flag.Duration("teamload.interval", 10*time.Second, "push interval of every machine")
	report   = flag.String("teamload.report", "", "also write the report to this file")
)

// tree is one corpus tree's exposition as the exporter serves it.
type tree struct {
	name     string
	families []*dto.MetricFamily
	samples  int // sample lines of the exposition (one per series)
}

// timedExporter measures every push and counts what was refused.
type timedExporter struct {
	sdkmetric.Exporter
	st *stats
}

type stats struct {
	mu        sync.Mutex
	latencies []time.Duration
	pushes    atomic.Int64
	failed    atomic.Int64
	failedPts atomic.Int64
	sentPts   atomic.Int64
	lastErr   atomic.Value
	// stopping is set when the machines shut down: an export the SDK
	// cancels then (context.Canceled, the periodic push in flight) is
	// counted in cut, not as refused; Shutdown pushes its data again.
	stopping atomic.Bool
	cut      atomic.Int64
}

func (e timedExporter) Export(ctx context.Context, rm *metricdata.ResourceMetrics) error {
	start := time.Now()
	err := e.Exporter.Export(ctx, rm)
	d := time.Since(start)
	pts := dataPoints(rm)
	e.st.pushes.Add(1)
	if err != nil && e.st.stopping.Load() && errors.Is(err, context.Canceled) {
		e.st.cut.Add(1)
	} else if err != nil {
		e.st.failed.Add(1)
		e.st.failedPts.Add(int64(pts))
		e.st.lastErr.Store(err.Error())
	} else {
		e.st.sentPts.Add(int64(pts))
	}
	e.st.mu.Lock()
	e.st.latencies = append(e.st.latencies, d)
	e.st.mu.Unlock()
	return err
}

func dataPoints(rm *metricdata.ResourceMetrics) int {
	n := 0
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[float64]:
				n += len(d.DataPoints)
			case metricdata.Sum[int64]:
				n += len(d.DataPoints)
			case metricdata.Gauge[float64]:
				n += len(d.DataPoints)
			case metricdata.Gauge[int64]:
				n += len(d.DataPoints)
			case metricdata.Histogram[float64]:
				n += len(d.DataPoints)
			case metricdata.Summary:
				n += len(d.DataPoints)
			}
		}
	}
	return n
}

func TestTeamLoad(t *testing.T) {
	if *machines < 1 || *duration <= 0 || *interval <= 0 {
		t.Fatalf("-teamload.machines %d, -teamload.duration %v, -teamload.interval %v: want positive", *machines, *duration, *interval)
	}
	trees := expositions(t)
	ring := testbackend.StartThanosHashring(t, testbackend.ThanosOptions{Receivers: 3, ReplicationFactor: 2})
	col := testbackend.StartMetricsCollector(t, ring.Receivers()[0].OTLPURL())

	pids := map[string]int{"collector": col.PID(), "query": ring.QueryPID()}
	for _, r := range ring.Receivers() {
		pids[r.Name()] = r.PID()
	}
	peak := map[string]int64{}
	var peakMu sync.Mutex
	stopSampling := make(chan struct{})
	var sampling sync.WaitGroup
	sampling.Add(1)
	go func() { // RSS every 500ms, peak kept
		defer sampling.Done()
		for {
			for name, pid := range pids {
				if kb, err := rssKB(pid); err == nil {
					peakMu.Lock()
					peak[name] = max(peak[name], kb)
					peakMu.Unlock()
				}
			}
			select {
			case <-stopSampling:
				return
			case <-time.After(500 * time.Millisecond):
			}
		}
	}()

	cpuBefore, rssBefore := map[string]float64{}, map[string]int64{}
	for name, pid := range pids {
		cpuBefore[name], _ = cpuSeconds(pid)
		rssBefore[name], _ = rssKB(pid)
	}
	appendedBefore := receiverSum(t, ring, "prometheus_tsdb_head_samples_appended_total")
	st := &stats{}
	ctx := context.Background()
	var providers []*sdkmetric.MeterProvider
	wantSeries := 0
	start := time.Now()
	for i := 0; i < *machines; i++ {
		tr := trees[i%len(trees)]
		wantSeries += tr.samples
		exp, err := otlpmetricgrpc.New(ctx, otlpmetricgrpc.WithEndpoint(col.Endpoint()), otlpmetricgrpc.WithInsecure())
		if err != nil {
			t.Fatal(err)
		}
		fams := tr.families
		g := prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) { return fams, nil })
		reader := sdkmetric.NewPeriodicReader(timedExporter{exp, st}, sdkmetric.WithInterval(*interval),
			sdkmetric.WithProducer(promBridge.NewMetricProducer(promBridge.WithGatherer(g))))
		res := resource.NewSchemaless(attribute.String("service.name", "claude-transcript-exporter"),
			attribute.String("service.instance.id", fmt.Sprintf("machine-%04d", i)))
		providers = append(providers, sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader), sdkmetric.WithResource(res)))
		// Spread the first pushes over one interval, as laptops are.
		time.Sleep(*interval / time.Duration(*machines) / 4)
	}
	time.Sleep(time.Until(start.Add(*duration)))
	st.stopping.Store(true)
	var wg sync.WaitGroup
	for _, mp := range providers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			_ = mp.Shutdown(sctx) // pushes once more; its error is counted by timedExporter
		}()
	}
	wg.Wait()
	pushEnd := time.Now()

	// Let the collector's queue drain into the hashring, then read.
	qctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var gotSeries, gotInstances float64
	for {
		gotInstances, _ = ring.QueryValue(qctx, `count(count by (instance) ({job="claude-transcript-exporter",instance=~"machine-.*"})) or vector(0)`)
		gotSeries, _ = ring.QueryValue(qctx, `count({job="claude-transcript-exporter",instance=~"machine-.*",__name__!="target_info"}) or vector(0)`)
		if int(gotInstances) == *machines || qctx.Err() != nil {
			break
		}
		time.Sleep(time.Second)
	}
	time.Sleep(3 * time.Second)
	elapsed := time.Since(start)
	appended := receiverSum(t, ring, "prometheus_tsdb_head_samples_appended_total") - appendedBefore
	headSeries := receiverSum(t, ring, "prometheus_tsdb_head_series")
	refusedOTLP := receiverSumWhere(t, ring, "http_requests_total", func(l map[string]string) bool {
		return l["handler"] == "otlp" && !strings.HasPrefix(l["code"], "2")
	})
	isOTLP := func(l map[string]string) bool { return l["handler"] == "otlp" }
	otlpSeconds := receiverSumWhere(t, ring, "http_request_duration_seconds", isOTLP)
	otlpRequests := receiverSumWhere(t, ring, "http_request_duration_seconds#count", isOTLP)
	close(stopSampling)
	sampling.Wait()
	finalRSS, cpu := map[string]int64{}, map[string]float64{}
	for name, pid := range pids {
		finalRSS[name], _ = rssKB(pid)
		c, _ := cpuSeconds(pid)
		cpu[name] = c - cpuBefore[name]
	}

	st.mu.Lock()
	lat := append([]time.Duration(nil), st.latencies...)
	st.mu.Unlock()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	q := func(p float64) time.Duration {
		if len(lat) == 0 {
			return 0
		}
		return lat[min(len(lat)-1, int(math.Ceil(p*float64(len(lat))))-1)]
	}
	var b strings.Builder
	fmt.Fprintf(&b, "team load: %d machines over %d corpus trees, push every %v for %v (plus a last push at shutdown); collector -> 3 thanos receivers (RF 2) on loopback\n",
		*machines, len(trees), *interval, *duration)
	fmt.Fprintf(&b, "pushes: %d (%d failed, %d in flight cut by the shutdown and pushed again by it), data points sent %d, refused %d (failed pushes' points)\n",
		st.pushes.Load(), st.failed.Load(), st.cut.Load(), st.sentPts.Load(), st.failedPts.Load())
	fmt.Fprintf(&b, "push latency (exporter Export, to the collector): p50 %v  p90 %v  p99 %v  max %v\n",
		q(0.50).Round(time.Microsecond), q(0.90).Round(time.Microsecond), q(0.99).Round(time.Microsecond), q(1).Round(time.Microsecond))
	push := pushEnd.Sub(start).Seconds()
	fmt.Fprintf(&b, "samples taken: %.0f appended by the receivers (both replicas): %.0f samples/s over the %.1fs push phase, %.0f distinct samples/s (/RF 2)\n",
		appended, appended/push, push, appended/2/push)
	fmt.Fprintf(&b, "offered: %d series (sum of the trees' exposition lines) every %v = %.0f samples/s\n",
		wantSeries, *interval, float64(wantSeries)/interval.Seconds())
	fmt.Fprintf(&b, "series: %.0f through query (dedup, without target_info), %.0f instances; head series over the receivers %.0f (RF 2)\n",
		gotSeries, gotInstances, headSeries)
	fmt.Fprintf(&b, "refused by the receivers: %.0f OTLP requests answered non-2xx\n", refusedOTLP)
	if otlpRequests > 0 {
		fmt.Fprintf(&b, "collector -> receiver OTLP writes: %.0f requests, mean %.1f ms (receiver's http_request_duration_seconds, incl. replication)\n",
			otlpRequests, otlpSeconds/otlpRequests*1000)
	}
	names := make([]string, 0, len(pids))
	for n := range pids {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(&b, "%-10s RSS start %6.1f MiB  peak %6.1f MiB  end %6.1f MiB  CPU %6.1f s (%.0f%% of one core over %.1fs)\n", n,
			float64(rssBefore[n])/1024, float64(peak[n])/1024, float64(finalRSS[n])/1024, cpu[n], cpu[n]/elapsed.Seconds()*100, elapsed.Seconds())
	}
	var grown int64
	for _, r := range ring.Receivers() {
		grown += finalRSS[r.Name()] - rssBefore[r.Name()]
	}
	if headSeries > 0 {
		fmt.Fprintf(&b, "receivers' RSS growth per head series: %.2f KiB (%.0f KiB over %.0f head series)\n",
			float64(grown)/headSeries, float64(grown), headSeries)
	}
	t.Log("\n" + b.String())
	if *report != "" {
		if err := os.WriteFile(*report, []byte(b.String()), 0o644); err != nil {
			t.Error(err)
		}
	}

	if int(gotInstances) != *machines {
		t.Errorf("instances through query = %v, want %d", gotInstances, *machines)
	}
	if int(gotSeries) != wantSeries {
		t.Errorf("series through query = %v, want %d (the trees' expositions, once per machine)", gotSeries, wantSeries)
	}
	if st.failed.Load() != 0 || refusedOTLP != 0 {
		t.Errorf("refused: %d pushes failed (last: %v), %v OTLP requests non-2xx", st.failed.Load(), st.lastErr.Load(), refusedOTLP)
	}
}

// expositions runs the exporter's one-shot on every corpus tree of the
// repository and parses what it prints.
func expositions(t *testing.T) []tree {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "claude-transcript-exporter")
	// Version ldflags as `make build` sets them: without them build_info
	// has version="" and branch="", a series Thanos receive refuses.
	v := "github.com/prometheus/common/version"
	cmd := exec.Command("go", "build", "-o", bin, "-ldflags",
		"-X "+v+".Version=teamload -X "+v+".Revision=teamload -X "+v+".Branch=teamload", "./cmd/claude-transcript-exporter")
	cmd.Dir = testbackend.RepoRoot(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	var trees []tree
	for _, dir := range testbackend.CorpusTrees(t) {
		out, err := exec.Command(bin, "--oneshot", "--traces.exporter=none", "--log.level=warn", "--claude.dir="+dir).Output()
		if err != nil {
			t.Fatalf("oneshot %s: %v", dir, err)
		}
		p := expfmt.NewTextParser(model.UTF8Validation)
		mfs, err := p.TextToMetricFamilies(strings.NewReader(string(out)))
		if err != nil {
			t.Fatalf("parse %s: %v", dir, err)
		}
		tr := tree{name: filepath.Base(dir)}
		for _, mf := range mfs {
			tr.families = append(tr.families, mf)
		}
		sort.Slice(tr.families, func(i, j int) bool { return tr.families[i].GetName() < tr.families[j].GetName() })
		sc := bufio.NewScanner(strings.NewReader(string(out)))
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		for sc.Scan() {
			if line := sc.Text(); line != "" && !strings.HasPrefix(line, "#") {
				tr.samples++
			}
		}
		trees = append(trees, tr)
	}
	if len(trees) == 0 {
		t.Fatal("no corpus trees")
	}
	return trees
}

// rssKB reads VmRSS of pid from /proc.
func rssKB(pid int) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest)
			if len(f) >= 1 {
				return strconv.ParseInt(f[0], 10, 64)
			}
		}
	}
	return 0, errors.New("no VmRSS")
}

// cpuSeconds reads user+system CPU time of pid from /proc/<pid>/stat
// (fields 14 and 15, in clock ticks of 100 Hz, Linux's USER_HZ).
func cpuSeconds(pid int) (float64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')') // the command name may hold spaces
	if i < 0 {
		return 0, errors.New("bad stat")
	}
	f := strings.Fields(s[i+1:]) // f[0] is field 3 (state)
	if len(f) < 13 {
		return 0, errors.New("short stat")
	}
	utime, err1 := strconv.ParseFloat(f[11], 64)
	stime, err2 := strconv.ParseFloat(f[12], 64)
	if err1 != nil || err2 != nil {
		return 0, errors.New("bad stat times")
	}
	return (utime + stime) / 100, nil
}

// receiverSum sums a metric over every sample of every receiver's /metrics.
func receiverSum(t *testing.T, ring *testbackend.ThanosHashring, name string) float64 {
	return receiverSumWhere(t, ring, name, func(map[string]string) bool { return true })
}

// receiverSumWhere sums the samples of a metric whose labels keep accepts,
// over every receiver's /metrics; of a histogram it sums the sums, or with
// a name ending in "#count" the counts.
func receiverSumWhere(t *testing.T, ring *testbackend.ThanosHashring, name string, keep func(map[string]string) bool) float64 {
	t.Helper()
	name, histCount := strings.CutSuffix(name, "#count")
	var sum float64
	for _, r := range ring.Receivers() {
		resp, err := http.Get(r.MetricsURL())
		if err != nil {
			t.Fatalf("%s: %v", r.Name(), err)
		}
		p := expfmt.NewTextParser(model.UTF8Validation)
		mfs, err := p.TextToMetricFamilies(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("%s /metrics: %v", r.Name(), err)
		}
		mf := mfs[name]
		if mf == nil {
			continue
		}
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, lp := range m.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			if !keep(l) {
				continue
			}
			switch {
			case m.Counter != nil:
				sum += m.GetCounter().GetValue()
			case m.Gauge != nil:
				sum += m.GetGauge().GetValue()
			case m.Untyped != nil:
				sum += m.GetUntyped().GetValue()
			case m.Histogram != nil && histCount:
				sum += float64(m.GetHistogram().GetSampleCount())
			case m.Histogram != nil:
				sum += m.GetHistogram().GetSampleSum()
			}
		}
	}
	return sum
}
