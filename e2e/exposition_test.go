package e2e

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// fetch fetches /metrics with the request headers given and returns the
// body (gunzipped when it came compressed) and the response's headers.
// query ("" or "?...") is added to the path.
func fetch(t *testing.T, addr, query string, headers map[string]string) ([]byte, http.Header) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+addr+"/metrics"+query, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	// Set by hand, the transport leaves a gzipped body as it came.
	req.Header.Set("Accept-Encoding", headers["Accept-Encoding"])
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %s", resp.Status)
	}
	var body io.Reader = resp.Body
	if resp.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		body = zr
	}
	b, err := io.ReadAll(body)
	if err != nil {
		t.Fatal(err)
	}
	return b, resp.Header
}

// families splits a text exposition into its families' blocks, by name,
// leaving out the ones whose values move between two scrapes (the Go
// runtime's, the process', the state file's age, and the active sessions,
// where a project whose sessions left the window shows 0 once).
func families(text string) map[string]string {
	out := map[string]string{}
	var name string
	for line := range strings.SplitSeq(text, "\n") {
		if rest, ok := strings.CutPrefix(line, "# HELP "); ok {
			name, _, _ = strings.Cut(rest, " ")
		}
		if line == "" || line == "# EOF" {
			continue
		}
		out[name] += line + "\n"
	}
	for n := range out {
		if strings.HasPrefix(n, "go_") || strings.HasPrefix(n, "process_") ||
			n == "claude_transcript_exporter_state_file_age_seconds" || n == "claude_transcript_sessions_active" {
			delete(out, n)
		}
	}
	return out
}

// The usage series are written straight from the exporter's store in the
// text formats, everything else is gathered by client_golang; protobuf and
// name[] filters still go through promhttp for every family. On every
// tree, each text format carries what promhttp serves for the same request,
// family by family, byte for byte, with its headers and compression.
func TestTextFormatsServeWhatPromhttpServesOnEveryTree(t *testing.T) {
	const (
		proto      = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited"
		prometheus = "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.5,application/openmetrics-text;version=0.0.1;q=0.4,text/plain;version=1.0.0;escaping=allow-utf-8;q=0.3,text/plain;version=0.0.4;q=0.2,*/*;q=0.1"
	)
	requests := []struct {
		name    string
		headers map[string]string
		want    expfmt.FormatType
		gzip    bool
	}{
		{"as Prometheus asks", map[string]string{"Accept": prometheus, "Accept-Encoding": "gzip"}, expfmt.TypeOpenMetrics, true},
		{"as curl asks", map[string]string{"Accept": "*/*"}, expfmt.TypeTextPlain, false},
		{"text, gzip preferred to nothing", map[string]string{"Accept": "text/plain;version=0.0.4", "Accept-Encoding": "identity;q=0.5, gzip"}, expfmt.TypeTextPlain, true},
		{"OpenMetrics 0.0.1, gzip refused", map[string]string{"Accept": "application/openmetrics-text;version=0.0.1", "Accept-Encoding": "gzip;q=0, identity"}, expfmt.TypeOpenMetrics, false},
	}
	for _, tree := range allTrees(t) {
		t.Run(filepath.Base(tree), func(t *testing.T) {
			t.Parallel()
			addr, _ := startServe(t, "--claude.dir="+tree)
			raw, hdr := fetch(t, addr, "", map[string]string{"Accept": proto})
			if ct := hdr.Get("Content-Type"); !strings.HasPrefix(ct, "application/vnd.google.protobuf") {
				t.Fatalf("protobuf asked, %q served", ct)
			}
			var mfs []*dto.MetricFamily
			dec := expfmt.NewDecoder(bytes.NewReader(raw), expfmt.NewFormat(expfmt.TypeProtoDelim))
			for {
				mf := &dto.MetricFamily{}
				if err := dec.Decode(mf); errors.Is(err, io.EOF) {
					break
				} else if err != nil {
					t.Fatal(err)
				}
				mfs = append(mfs, mf)
			}
			usage := 0
			for _, mf := range mfs {
				if strings.HasPrefix(mf.GetName(), "claude_transcript_") && !strings.HasPrefix(mf.GetName(), "claude_transcript_exporter_") {
					usage += len(mf.Metric)
				}
			}
			if usage == 0 {
				t.Fatal("no usage series served: nothing compared")
			}
			var all bytes.Buffer
			for _, mf := range mfs {
				if _, err := expfmt.MetricFamilyToText(&all, mf); err != nil {
					t.Fatal(err)
				}
			}
			kept := families(all.String())
			// A name[] filter sends a request to promhttp's handler:
			// naming every family, its exposition is the reference.
			q := url.Values{}
			for _, mf := range mfs {
				q.Add("name[]", mf.GetName())
			}
			for _, rq := range requests {
				got, hdr := fetch(t, addr, "", rq.headers)
				ref, refHdr := fetch(t, addr, "?"+q.Encode(), rq.headers)
				for _, h := range []string{"Content-Type", "Content-Encoding", "Vary"} {
					if g, w := hdr.Values(h), refHdr.Values(h); !slices.Equal(g, w) {
						t.Errorf("%s: %s %q, promhttp's %q", rq.name, h, g, w)
					}
				}
				if f := expfmt.Format(hdr.Get("Content-Type")); f.FormatType() != rq.want {
					t.Errorf("%s: served %q", rq.name, f)
				}
				if gz := hdr.Get("Content-Encoding") == "gzip"; gz != rq.gzip {
					t.Errorf("%s: gzipped %v, want %v", rq.name, gz, rq.gzip)
				}
				if rq.want == expfmt.TypeOpenMetrics && !bytes.HasSuffix(got, []byte("\n# EOF\n")) {
					t.Errorf("%s: OpenMetrics without its # EOF", rq.name)
				}
				w, g := families(string(ref)), families(string(got))
				if len(w) != len(kept) {
					t.Fatalf("%s: promhttp's reference has %d families, the protobuf exposition %d", rq.name, len(w), len(kept))
				}
				for name, block := range w {
					if g[name] != block {
						t.Errorf("%s: %s differs from promhttp's:\n got: %.600s\nwant: %.600s", rq.name, name, g[name], block)
					}
				}
				for name := range g {
					if _, ok := w[name]; !ok {
						t.Errorf("%s: %s served by the fast path only", rq.name, name)
					}
				}
			}
			t.Logf("%d families, %d usage series compared in %d requests", len(mfs), usage, len(requests))
		})
	}
}
