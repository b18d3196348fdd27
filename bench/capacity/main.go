// Command capacity measures the per-developer figures of docs/capacity.md
// on corpus trees (each a Claude configuration directory, one developer):
//
//   - series: sample lines of the exporter's exposition
//     (--oneshot --traces.exporter=none), one per series a push sends;
//   - spans, and active hours: distinct UTC clock hours holding at least
//     one span start; spans per active hour is their ratio;
//   - bytes per span: the protobuf size of the OTLP export requests the
//     exporter sends (--oneshot --traces.exporter=otlp --traces.since=0,
//     default capture: no text), received by a gRPC trace service on
//     loopback in this process.
//
// Usage: go run ./bench/capacity -bin <exporter binary> <tree>...
//
// It prints one line per tree and the summary (median and 99th percentile,
// nearest rank, of series per tree; totals for spans).
package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// sink is an OTLP trace service that tallies what it receives.
type sink struct {
	collectortrace.UnimplementedTraceServiceServer
	mu    sync.Mutex
	spans int
	bytes int
	hours map[int64]bool
}

func (s *sink) Export(_ context.Context, req *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bytes += proto.Size(req)
	for _, rs := range req.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			for _, sp := range ss.GetSpans() {
				s.spans++
				s.hours[int64(sp.GetStartTimeUnixNano()/3_600_000_000_000)] = true
			}
		}
	}
	return &collectortrace.ExportTraceServiceResponse{}, nil
}

func (s *sink) reset() (spans, size, hours int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	spans, size, hours = s.spans, s.bytes, len(s.hours)
	s.spans, s.bytes, s.hours = 0, 0, map[int64]bool{}
	return
}

type row struct {
	tree                string
	series, spans, size int
	hours               int
}

func main() {
	bin := flag.String("bin", "", "the claude-transcript-exporter binary")
	flag.Parse()
	if *bin == "" || flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: capacity -bin <exporter> <tree>...")
		os.Exit(2)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fail(err)
	}
	srv := grpc.NewServer(grpc.MaxRecvMsgSize(256 << 20))
	sk := &sink{hours: map[int64]bool{}}
	collectortrace.RegisterTraceServiceServer(srv, sk)
	go srv.Serve(lis)
	defer srv.Stop()

	var rows []row
	for _, tree := range flag.Args() {
		out, err := exec.Command(*bin, "--oneshot", "--traces.exporter=none", "--log.level=warn", "--claude.dir="+tree).Output()
		if err != nil {
			fail(fmt.Errorf("oneshot %s: %w", tree, err))
		}
		r := row{tree: filepath.Base(tree)}
		sc := bufio.NewScanner(bytes.NewReader(out))
		sc.Buffer(make([]byte, 1<<20), 1<<26)
		for sc.Scan() {
			if l := sc.Text(); l != "" && !strings.HasPrefix(l, "#") {
				r.series++
			}
		}
		sk.reset()
		cmd := exec.Command(*bin, "--oneshot", "--traces.exporter=otlp", "--otlp.endpoint="+lis.Addr().String(),
			"--otlp.insecure", "--traces.since=0", "--log.level=warn", "--claude.dir="+tree)
		cmd.Stdout = nil
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			fail(fmt.Errorf("oneshot spans %s: %w\n%s", tree, err, stderr.String()))
		}
		r.spans, r.size, r.hours = sk.reset()
		rows = append(rows, r)
	}

	fmt.Printf("%-24s %8s %8s %8s %10s %10s\n", "tree", "series", "spans", "act.h", "spans/act.h", "B/span")
	var series []int
	var spans, size, hours int
	for _, r := range rows {
		fmt.Printf("%-24s %8d %8d %8d %10.1f %10.0f\n", r.tree, r.series, r.spans, r.hours, ratio(r.spans, r.hours), ratio(r.size, r.spans))
		series = append(series, r.series)
		spans += r.spans
		size += r.size
		hours += r.hours
	}
	sort.Ints(series)
	fmt.Printf("trees %d; series per exporter: median %.0f, p99 %d (nearest rank), max %d\n",
		len(rows), median(series), nearestRank(series, 0.99), series[len(series)-1])
	fmt.Printf("spans %d over %d active hours: %.1f spans per active hour; %d bytes of OTLP protobuf: %.0f bytes per span\n",
		spans, hours, ratio(spans, hours), size, ratio(size, spans))
}

func ratio(a, b int) float64 {
	if b == 0 {
		return math.NaN()
	}
	return float64(a) / float64(b)
}

func median(s []int) float64 {
	n := len(s)
	if n%2 == 1 {
		return float64(s[n/2])
	}
	return float64(s[n/2-1]+s[n/2]) / 2
}

func nearestRank(s []int, p float64) int {
	return s[max(0, int(math.Ceil(p*float64(len(s))))-1)]
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "capacity:", err)
	os.Exit(1)
}
