// Command exactcheck checks the exporter's one-shot counters on an
// amplified corpus (../shared/tools/amplify) against copies × the counters
// of a one-shot run on the source trees, and optionally against the
// independent count (internal/testonly/indepcount) of the amplified corpus itself.
//
//	exactcheck -copies N -source src.prom -amplified amp.prom [-indep DIR] [-ccusage cc.json]
//
// It prints one line per compared series and PASS or FAIL; the exit
// status is 0 on PASS, 1 on FAIL, 2 on bad input. ccusage's totals, when
// given, are printed for information only (its rules differ).
//
// The expositions are parsed as plain text: one sample per line,
// `name{label="value",...} value`.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/internal/testonly/indepcount"
)

const ns = "claude_transcript_"

type sample struct {
	name   string
	labels map[string]string
	value  float64
}

func main() {
	copies := flag.Int("copies", 0, "number of copies amplify made (copies=N)")
	source := flag.String("source", "", "exposition of --oneshot over every source tree")
	amplified := flag.String("amplified", "", "exposition of --oneshot over the amplified corpus")
	indep := flag.String("indep", "", "amplified Claude config dir to count independently (slow: encoding/json into map[string]any)")
	ccusage := flag.String("ccusage", "", "ccusage claude daily --json output on the amplified corpus (information only)")
	flag.Parse()
	if *copies < 1 || *source == "" || *amplified == "" {
		fmt.Fprintln(os.Stderr, "usage: exactcheck -copies N -source src.prom -amplified amp.prom [-indep DIR] [-ccusage cc.json]")
		os.Exit(2)
	}
	src, err := parseFile(*source)
	if err != nil {
		fatal(err)
	}
	amp, err := parseFile(*amplified)
	if err != nil {
		fatal(err)
	}
	want := summarize(src)
	got := summarize(amp)
	ok := true

	fmt.Printf("exactness: amplified one-shot vs %d x source-tree one-shot\n", *copies)
	copiesOK := compare(os.Stdout, got, scale(want, *copies), "copies x source")
	ok = copiesOK

	indepOK := true
	if *indep != "" {
		t0 := time.Now()
		tot, err := indepcount.Count(*indep)
		if err != nil {
			fatal(fmt.Errorf("independent count: %w", err))
		}
		fmt.Printf("exactness: amplified one-shot vs independent count of the amplified corpus (%d files, %.0f s)\n",
			tot.Files, time.Since(t0).Seconds())
		indepOK = compare(os.Stdout, got, fromIndep(tot), "independent")
		ok = ok && indepOK
	}
	fmt.Printf("verdict copies=%s\n", verdict(copiesOK))
	if *indep != "" {
		fmt.Printf("verdict indep=%s\n", verdict(indepOK))
		if !copiesOK && indepOK {
			fmt.Println("  diagnosis: the independent count agrees with the exporter, so the corpus is not source x copies:")
			fmt.Println("  amplify rewrites uuids and msg_/req_/toolu_ ids only; copies of records with other ids (gateway")
			fmt.Println("  models' message ids, call_* tool ids) stay identical and global deduplication rightly folds them.")
		}
	}

	if *ccusage != "" {
		if err := printCcusage(*ccusage, got); err != nil {
			fmt.Printf("  ccusage totals: unreadable: %v\n", err)
		}
	}

	if ok {
		fmt.Println("exactness: PASS")
		return
	}
	fmt.Println("exactness: FAIL")
	os.Exit(1)
}

func verdict(ok bool) string {
	if ok {
		return "PASS"
	}
	return "FAIL"
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "exactcheck:", err)
	os.Exit(2)
}

// summary holds the compared series: key -> value.
type summary map[string]float64

// summarize sums the counters the issue names: tokens by type, requests,
// tool calls by outcome, compactions; and, as finer checks, tokens by
// model and type, requests by model, compactions by trigger.
func summarize(ss []sample) summary {
	out := summary{}
	for _, s := range ss {
		switch s.name {
		case ns + "tokens_total":
			out["tokens{type="+s.labels["type"]+"}"] += s.value
			out["tokens{model="+s.labels["model"]+",type="+s.labels["type"]+"}"] += s.value
		case ns + "requests_total":
			out["requests"] += s.value
			out["requests{model="+s.labels["model"]+"}"] += s.value
		case ns + "tool_calls_total":
			out["tool_calls{outcome="+s.labels["outcome"]+"}"] += s.value
			out["tool_calls"] += s.value
		case ns + "compactions_total":
			out["compactions"] += s.value
			out["compactions{trigger="+s.labels["trigger"]+"}"] += s.value
		}
	}
	return out
}

func fromIndep(t *indepcount.Totals) summary {
	out := summary{}
	for model, types := range t.Tokens {
		for typ, n := range types {
			out["tokens{type="+typ+"}"] += float64(n)
			out["tokens{model="+model+",type="+typ+"}"] += float64(n)
		}
	}
	for model, n := range t.Requests {
		out["requests"] += float64(n)
		out["requests{model="+model+"}"] += float64(n)
	}
	for _, outs := range t.ToolCalls {
		for o, n := range outs {
			out["tool_calls{outcome="+o+"}"] += float64(n)
			out["tool_calls"] += float64(n)
		}
	}
	for trig, n := range t.Compactions {
		out["compactions"] += float64(n)
		out["compactions{trigger="+trig+"}"] += float64(n)
	}
	return out
}

func scale(s summary, k int) summary {
	out := summary{}
	for key, v := range s {
		out[key] = v * float64(k)
	}
	return out
}

// headline says whether a key is printed even when it matches.
func headline(key string) bool {
	return !strings.Contains(key, "model=") && !strings.Contains(key, "trigger=")
}

// compare prints the headline series and every mismatch; it reports
// whether everything matched exactly.
func compare(w io.Writer, got, want summary, wantName string) bool {
	keys := map[string]bool{}
	for k := range got {
		keys[k] = true
	}
	for k := range want {
		keys[k] = true
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	ok, fine := true, 0
	for _, k := range sorted {
		g, e := got[k], want[k]
		match := g == e
		if !match {
			ok = false
		} else if !headline(k) {
			fine++
			continue
		}
		mark := "ok"
		if !match {
			mark = fmt.Sprintf("MISMATCH (diff %+.0f)", g-e)
		}
		fmt.Fprintf(w, "  %-34s exporter=%-14s %s=%-14s %s\n", k, num(g), wantName, num(e), mark)
	}
	fmt.Fprintf(w, "  (+%d per-model/per-trigger series, all equal)\n", fine)
	return ok
}

func num(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// printCcusage prints ccusage's token totals beside the exporter's. The
// tools have their own deduplication and line rules, so this is context,
// not a check.
func printCcusage(path string, got summary) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var doc struct {
		Totals struct {
			Input       float64 `json:"inputTokens"`
			Output      float64 `json:"outputTokens"`
			CacheWrite  float64 `json:"cacheCreationTokens"`
			CacheRead   float64 `json:"cacheReadTokens"`
			TotalTokens float64 `json:"totalTokens"`
		} `json:"totals"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return err
	}
	t := doc.Totals
	cw := got["tokens{type=cache_write_5m}"] + got["tokens{type=cache_write_1h}"]
	fmt.Println("  for information, ccusage claude daily totals on the same corpus (different dedup rules):")
	fmt.Printf("    %-12s ccusage=%-14s exporter=%s\n", "input", num(t.Input), num(got["tokens{type=input}"]))
	fmt.Printf("    %-12s ccusage=%-14s exporter=%s\n", "output", num(t.Output), num(got["tokens{type=output}"]))
	fmt.Printf("    %-12s ccusage=%-14s exporter=%s\n", "cache_read", num(t.CacheRead), num(got["tokens{type=cache_read}"]))
	fmt.Printf("    %-12s ccusage=%-14s exporter=%s\n", "cache_write", num(t.CacheWrite), num(cw))
	return nil
}

func parseFile(path string) ([]sample, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ss, err := parse(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return ss, nil
}

// parse reads the text exposition format (comments skipped).
func parse(r io.Reader) ([]sample, error) {
	var out []sample
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		s, err := parseLine(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		out = append(out, s)
	}
	return out, sc.Err()
}

func parseLine(line string) (sample, error) {
	s := sample{labels: map[string]string{}}
	i := strings.IndexAny(line, "{ ")
	if i < 0 {
		return s, fmt.Errorf("no value: %q", line)
	}
	s.name = line[:i]
	rest := line[i:]
	if rest[0] == '{' {
		rest = rest[1:]
		for {
			rest = strings.TrimLeft(rest, " ,")
			if strings.HasPrefix(rest, "}") {
				rest = rest[1:]
				break
			}
			eq := strings.IndexByte(rest, '=')
			if eq < 0 || len(rest) < eq+2 || rest[eq+1] != '"' {
				return s, fmt.Errorf("bad labels: %q", line)
			}
			key := strings.TrimSpace(rest[:eq])
			rest = rest[eq+2:]
			var val strings.Builder
			j := 0
			for ; j < len(rest) && rest[j] != '"'; j++ {
				if rest[j] == '\\' && j+1 < len(rest) {
					j++
					switch rest[j] {
					case 'n':
						val.WriteByte('\n')
					default:
						val.WriteByte(rest[j])
					}
					continue
				}
				val.WriteByte(rest[j])
			}
			if j >= len(rest) {
				return s, fmt.Errorf("unterminated label value: %q", line)
			}
			s.labels[key] = val.String()
			rest = rest[j+1:]
		}
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		return s, fmt.Errorf("no value: %q", line)
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return s, fmt.Errorf("bad value: %q", line)
	}
	s.value = v
	return s, nil
}
