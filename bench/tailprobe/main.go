// Command tailprobe measures a running exporter daemon: its idle CPU and
// the latency from appending a request to a transcript to seeing it on the
// token counter a user graphs.
//
//	tailprobe -addr 127.0.0.1:PORT -pid PID -dir CLAUDE_DIR [-idle 60s] [-appends 50]
//
// It waits for /-/ready, lets the daemon settle, reads utime+stime from
// /proc/PID/stat over the idle window (nothing is scraped meanwhile), then
// appends one streamed request at a time to distinct transcript files under
// DIR, as Claude Code writes one: a placeholder line (stop_reason null, one
// output token), then, a moment later, the final line (stop_reason
// "end_turn", the final usage). From the final line's write it polls
// /metrics until claude_transcript_tokens_total{type="output"} (summed over
// models and projects) has grown by the request's output tokens, and also
// notes when claude_transcript_exporter_lines_read_total saw the line.
// Results are printed as key=value lines for bench/run.sh.
package main

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	mrand "math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

const linesMetric = "claude_transcript_exporter_lines_read_total"

func main() {
	addr := flag.String("addr", "", "daemon host:port")
	pid := flag.Int("pid", 0, "daemon process id (for /proc/PID/stat)")
	dir := flag.String("dir", "", "Claude config dir the daemon reads (appends go to its transcripts)")
	readyTimeout := flag.Duration("ready-timeout", 10*time.Minute, "how long to wait for /-/ready")
	settle := flag.Duration("settle", 5*time.Second, "wait after ready before the idle window")
	idle := flag.Duration("idle", 60*time.Second, "idle window (0 skips)")
	appends := flag.Int("appends", 50, "appended lines (0 skips)")
	afterAppends := flag.Duration("after-appends", 0, "wait this long after the appends (past a --state.flush-interval, so that a periodic state write is in the peak), then report the resident size and peak")
	pollEvery := flag.Duration("poll", 5*time.Millisecond, "how often /metrics is polled after an append")
	timeout := flag.Duration("timeout", 15*time.Second, "give up on one append after this long")
	gap := flag.Duration("gap", 50*time.Millisecond, "time between a request's placeholder line and its final line")
	clkTck := flag.Int("clk-tck", 100, "clock ticks per second of /proc/PID/stat (getconf CLK_TCK)")
	longMB := flag.Int("long-line-mb", 0, "at the end, append one line of this many MB and report the resident size once it is read (0 skips)")
	rescan := flag.Bool("rescan", false, "after the appends, start a session in a new project dir (the daemon walks every dir again) and report the resident size and peak 3 s after it is counted")
	flag.Parse()
	if *addr == "" || *pid == 0 || *dir == "" {
		fmt.Fprintln(os.Stderr, "usage: tailprobe -addr HOST:PORT -pid PID -dir CLAUDE_DIR [flags]")
		os.Exit(2)
	}
	base := "http://" + *addr
	client := &http.Client{Timeout: 10 * time.Second}

	// Ready.
	t0 := time.Now()
	for {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", *pid)); err != nil {
			fatal(fmt.Errorf("daemon (pid %d) exited before ready", *pid))
		}
		resp, err := client.Get(base + "/-/ready")
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Since(t0) > *readyTimeout {
			fatal(fmt.Errorf("not ready after %s", *readyTimeout))
		}
		time.Sleep(100 * time.Millisecond)
	}
	fmt.Printf("ready_after_s=%.2f\n", time.Since(t0).Seconds())
	body, err := scrape(client, base)
	if err != nil {
		fatal(err)
	}
	for _, m := range []string{"claude_transcript_exporter_files_watched", "claude_transcript_exporter_backfill_duration_seconds", linesMetric} {
		if v, ok := metric(body, m); ok {
			fmt.Printf("%s=%s\n", strings.TrimPrefix(m, "claude_transcript_exporter_"), strconv.FormatFloat(v, 'f', -1, 64))
		}
	}

	// Idle CPU.
	time.Sleep(*settle)
	if *idle > 0 {
		c0, err := cpuTicks(*pid)
		if err != nil {
			fatal(err)
		}
		w0 := time.Now()
		time.Sleep(*idle)
		c1, err := cpuTicks(*pid)
		if err != nil {
			fatal(err)
		}
		wall := time.Since(w0).Seconds()
		cpu := float64(c1-c0) / float64(*clkTck)
		fmt.Printf("idle_window_s=%.1f\nidle_cpu_s=%.3f\nidle_cpu_pct=%.3f\n", wall, cpu, 100*cpu/wall)
	}
	if rss, hwm, err := memStatus(*pid); err == nil {
		fmt.Printf("rss_mib=%.1f\nhwm_mib=%.1f\n", rss, hwm)
	}

	if *longMB > 0 {
		defer longLine(client, base, *dir, *pid, *longMB)
	}
	if *rescan {
		defer newProject(client, base, *dir, *pid, *timeout)
	}

	// Append latency.
	if *appends <= 0 {
		return
	}
	files, err := appendable(*dir, *appends)
	if err != nil {
		fatal(err)
	}
	var lat, linesLat []float64
	timeouts := 0
	for i, f := range files {
		time.Sleep(time.Duration(100+mrand.IntN(200)) * time.Millisecond) // off any tick phase
		sess := sessionOf(f)
		msgID := "msg_probe_" + uuid()
		out := 100 + i // the final line's output tokens
		if parent, ok := sessionTranscript(f); ok {
			// A subagent writes while its session runs, whose transcript
			// is written first (the Task call): a line there, counted by
			// no series, as the exporter meets it in the field (it
			// watches an old session's subagents/ again only then).
			if err := appendLines(parent, plumbingLine(sess)); err != nil {
				fatal(err)
			}
		}
		if err := appendLines(f, requestLine(sess, msgID, 1, "")); err != nil {
			fatal(err)
		}
		time.Sleep(*gap) // the response streams
		body, err := scrape(client, base)
		if err != nil {
			fatal(err)
		}
		beforeTokens := outputTokens(body)
		beforeLines, ok := metric(body, linesMetric)
		if !ok {
			fatal(fmt.Errorf("%s not on /metrics", linesMetric))
		}
		start := time.Now()
		if err := appendLines(f, requestLine(sess, msgID, out, "end_turn")); err != nil {
			fatal(err)
		}
		seen := false
		var linesAt time.Duration
		for time.Since(start) < *timeout {
			body, err := scrape(client, base)
			if err != nil {
				fatal(err)
			}
			if v, _ := metric(body, linesMetric); linesAt == 0 && v > beforeLines {
				linesAt = time.Since(start)
			}
			// The placeholder may or may not have been counted when the
			// final line arrives: either way the counter ends at +out.
			if outputTokens(body) >= beforeTokens+float64(out)-1 {
				seen = true
				if linesAt == 0 {
					linesAt = time.Since(start)
				}
				break
			}
			time.Sleep(*pollEvery)
		}
		if !seen {
			timeouts++
			continue
		}
		lat = append(lat, float64(time.Since(start).Microseconds())/1000)
		linesLat = append(linesLat, float64(linesAt.Microseconds())/1000)
	}
	sort.Float64s(lat)
	sort.Float64s(linesLat)
	fmt.Printf("appends=%d\nappend_timeouts=%d\n", len(files), timeouts)
	if len(lat) > 0 {
		fmt.Printf("append_p50_ms=%.1f\nappend_p99_ms=%.1f\nappend_max_ms=%.1f\nappend_min_ms=%.1f\n",
			quantile(lat, 0.50), quantile(lat, 0.99), lat[len(lat)-1], lat[0])
		fmt.Printf("lines_p50_ms=%.1f\nlines_p99_ms=%.1f\n", quantile(linesLat, 0.50), quantile(linesLat, 0.99))
	}
	time.Sleep(*afterAppends)
	if rss, hwm, err := memStatus(*pid); err == nil {
		fmt.Printf("rss_after_appends_mib=%.1f\nhwm_after_appends_mib=%.1f\n", rss, hwm)
	}
}

// newProject starts a session in a project dir of its own, as Claude Code
// does in a directory it never ran in: the daemon learns of the new dir
// and walks every dir again (a rescan, with the whole tree's file list
// once gathered in memory), then reports the resident size and peak
// 3 s after the session's file is counted.
func newProject(client *http.Client, base, dir string, pid int, timeout time.Duration) {
	body, err := scrape(client, base)
	if err != nil {
		fatal(err)
	}
	before, ok := metric(body, "claude_transcript_exporter_files_watched")
	if !ok {
		fatal(fmt.Errorf("files_watched not on /metrics"))
	}
	proj := filepath.Join(dir, "projects", "-bench-probe-new-project")
	if err := os.MkdirAll(proj, 0o755); err != nil {
		fatal(err)
	}
	sess := uuid()
	if err := os.WriteFile(filepath.Join(proj, sess+".jsonl"), []byte(requestLine(sess, "msg_probe_"+uuid(), 5, "end_turn")), 0o644); err != nil {
		fatal(err)
	}
	start := time.Now()
	waitAbove(client, base, "claude_transcript_exporter_files_watched", before, timeout, "a session in a new project dir was not counted")
	fmt.Printf("new_project_counted_ms=%.1f\n", float64(time.Since(start).Microseconds())/1000)
	time.Sleep(3 * time.Second)
	if rss, hwm, err := memStatus(pid); err == nil {
		fmt.Printf("rss_after_rescan_mib=%.1f\nhwm_after_rescan_mib=%.1f\n", rss, hwm)
	}
}

// waitAbove polls /metrics until the series name is above before, and
// fails the probe with what (and the time waited) after timeout.
func waitAbove(client *http.Client, base, name string, before float64, timeout time.Duration, what string) {
	start := time.Now()
	for {
		body, err := scrape(client, base)
		if err != nil {
			fatal(err)
		}
		if v, _ := metric(body, name); v > before {
			return
		}
		if time.Since(start) > timeout {
			fatal(fmt.Errorf("%s within %s", what, timeout))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// outputTokens sums claude_transcript_tokens_total{type="output"} over
// its other labels.
func outputTokens(body []byte) float64 {
	var sum float64
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "claude_transcript_tokens_total{") || !strings.Contains(line, `type="output"`) {
			continue
		}
		if i := strings.LastIndexByte(line, ' '); i > 0 {
			if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
				sum += v
			}
		}
	}
	return sum
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "tailprobe:", err)
	fmt.Printf("error=%q\n", err.Error())
	os.Exit(1)
}

// quantile of sorted xs, nearest rank.
func quantile(xs []float64, q float64) float64 {
	i := int(q*float64(len(xs))+0.999999) - 1
	if i < 0 {
		i = 0
	}
	if i >= len(xs) {
		i = len(xs) - 1
	}
	return xs[i]
}

func scrape(c *http.Client, base string) ([]byte, error) {
	resp, err := c.Get(base + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("/metrics: %s", resp.Status)
	}
	return io.ReadAll(resp.Body)
}

// metric returns the value of an unlabelled sample.
func metric(body []byte, name string) (float64, bool) {
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	prefix := name + " "
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, prefix) {
			v, err := strconv.ParseFloat(strings.TrimSpace(line[len(prefix):]), 64)
			return v, err == nil
		}
	}
	return 0, false
}

// cpuTicks is utime+stime of the whole process (fields 14 and 15 of
// /proc/PID/stat), in clock ticks.
func cpuTicks(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces; fields restart after ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, errors.New("bad /proc stat")
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state); utime is field 14 -> f[11], stime f[12].
	if len(f) < 13 {
		return 0, errors.New("short /proc stat")
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, errors.New("bad /proc stat times")
	}
	return u + st, nil
}

// memStatus returns VmRSS and VmHWM in MiB.
func memStatus(pid int) (rss, hwm float64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseFloat(f[1], 64)
		switch f[0] {
		case "VmRSS:":
			rss = kb / 1024
		case "VmHWM:":
			hwm = kb / 1024
		}
	}
	return rss, hwm, nil
}

// appendable picks n distinct transcript files (random, but the same for a
// given tree) whose last byte is a newline, so an appended line is a line
// of its own.
func appendable(dir string, n int) ([]string, error) {
	var all []string
	err := filepath.WalkDir(filepath.Join(dir, "projects"), func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !de.IsDir() && strings.HasSuffix(p, ".jsonl") && !strings.HasPrefix(de.Name(), ".") {
			all = append(all, p)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(all)
	r := mrand.New(mrand.NewPCG(1, 2))
	r.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	var out []string
	for _, p := range all {
		if len(out) == n {
			break
		}
		if endsWithNewline(p) {
			out = append(out, p)
		}
	}
	if len(out) < n {
		return nil, fmt.Errorf("only %d of %d wanted files end with a newline", len(out), n)
	}
	return out, nil
}

func endsWithNewline(p string) bool {
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.Size() == 0 {
		return false
	}
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, st.Size()-1); err != nil {
		return false
	}
	return b[0] == '\n'
}

var sessionRE = regexp.MustCompile(`"sessionId":"([^"]+)"`)

// sessionOf is the session id of a transcript's last record.
func sessionOf(p string) string {
	if b, err := tail(p, 64<<10); err == nil {
		if m := sessionRE.FindAllSubmatch(b, -1); len(m) > 0 {
			return string(m[len(m)-1][1])
		}
	}
	return "bench-probe"
}

// sessionTranscript returns the transcript of the session a subagent's
// file (<enc>/<session>/subagents/agent-*.jsonl) belongs to, when it has
// one.
func sessionTranscript(p string) (string, bool) {
	sub := filepath.Dir(p)
	if filepath.Base(sub) != "subagents" {
		return "", false
	}
	parent := filepath.Dir(sub) + ".jsonl"
	if !endsWithNewline(parent) {
		return "", false
	}
	return parent, true
}

// plumbingLine is a session line that no series counts.
func plumbingLine(sess string) string {
	return fmt.Sprintf(`{"type":"agent-setting","sessionId":"%s","timestamp":"%s","uuid":"%s"}`+"\n",
		sess, time.Now().UTC().Format("2006-01-02T15:04:05.000Z"), uuid())
}

// requestLine is one line of a streamed request: stop "" writes null.
func requestLine(sess, msgID string, out int, stop string) string {
	stopJSON := "null"
	if stop != "" {
		stopJSON = strconv.Quote(stop)
	}
	return fmt.Sprintf(`{"type":"assistant","isSidechain":false,"userType":"external","uuid":"%s","parentUuid":null,"sessionId":"%s","timestamp":"%s","message":{"id":"%s","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"probe"}],"stop_reason":%s,"usage":{"input_tokens":3,"output_tokens":%d}}}`+"\n",
		uuid(), sess, time.Now().UTC().Format("2006-01-02T15:04:05.000Z"), msgID, stopJSON, out)
}

// appendLines appends text to p in one write.
func appendLines(p, text string) error {
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(text); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func tail(p string, n int64) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	off := st.Size() - n
	if off < 0 {
		off = 0
	}
	b := make([]byte, st.Size()-off)
	_, err = f.ReadAt(b, off)
	return b, err
}

func uuid() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// longLine appends one line of mb MB to a transcript, waits until the
// daemon has read it (lines_read_total grows), gives it a second, and
// reports the resident size: the buffers grown for the line must not stay.
func longLine(client *http.Client, base, dir string, pid, mb int) {
	files, err := appendable(dir, 1)
	if err != nil || len(files) == 0 {
		fatal(fmt.Errorf("long line: no transcript to append to: %v", err))
	}
	body, err := scrape(client, base)
	if err != nil {
		fatal(err)
	}
	before, _ := metric(body, linesMetric)
	line := `{"type":"user","uuid":"probe-long-` + uuid() + `","sessionId":"` + sessionOf(files[0]) +
		`","message":{"role":"user","content":"` + strings.Repeat("y", mb<<20) + `"}}` + "\n"
	if err := appendLines(files[0], line); err != nil {
		fatal(err)
	}
	start := time.Now()
	waitAbove(client, base, linesMetric, before, time.Minute, "long line: not read")
	time.Sleep(time.Second)
	if rss, hwm, err := memStatus(pid); err == nil {
		fmt.Printf("long_line_mb=%d\nlong_line_read_s=%.2f\nrss_after_long_line_mib=%.1f\nhwm_with_long_line_mib=%.1f\n", mb, time.Since(start).Seconds()-1, rss, hwm)
	}
}
