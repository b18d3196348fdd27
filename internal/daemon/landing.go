package daemon

import (
	"html/template"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/version"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/exporter/prom"
)

// DocsURL is where the landing page sends readers for the metrics'
// reference.
const DocsURL = "https://github.com/claude-transcript-exporter/claude-transcript-exporter/blob/main/docs/metrics.md"

// landing serves the landing page: what the exporter reads and how far it
// has got, with links to the metrics, health endpoints and docs. The Claude
// dirs' paths are shown only to a browser on this machine (a loopback
// peer): the page may be served to the network.
type landing struct {
	cfg   *Config
	reg   prometheus.Gatherer
	ready *atomic.Bool
	now   func() time.Time
}

type landingData struct {
	Version, MetricsPath, DocsURL string
	Dirs                          []string // nil for a remote peer
	DirsHidden                    bool
	Ready                         bool
	BackfillSeconds               float64
	Files                         float64
	LastActivity                  string
	Pprof                         bool
}

var landingTemplate = template.Must(template.New("landing").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Claude Transcript Exporter</title>
<style>body{font-family:sans-serif;max-width:48em;margin:2em auto;padding:0 1em}td{padding:.2em 1em .2em 0;vertical-align:top}code{font-size:95%}</style>
</head><body>
<h1>Claude Transcript Exporter</h1>
<p>Prometheus metrics and OpenTelemetry traces from Claude Code transcripts, read-only. Version {{.Version}}.</p>
<table>
<tr><td>Claude dirs read</td><td>{{if .DirsHidden}}(shown to a browser on this machine only){{else}}{{range .Dirs}}<code>{{.}}</code><br>{{end}}{{end}}</td></tr>
<tr><td>Backfill</td><td>{{if .Ready}}done in {{printf "%.1f" .BackfillSeconds}} s: every file present at start is counted{{else}}reading the files present at start; usage series appear when it is done{{end}}</td></tr>
<tr><td>Files followed</td><td>{{printf "%.0f" .Files}}</td></tr>
<tr><td>Last activity</td><td>{{if .LastActivity}}{{.LastActivity}}{{else}}none yet{{end}}</td></tr>
</table>
<ul>
<li><a href="{{.MetricsPath}}">Metrics</a></li>
<li><a href="/-/healthy">Health</a> and <a href="/-/ready">readiness</a></li>
<li><a href="{{.DocsURL}}">What each metric means</a></li>
{{if .Pprof}}<li><a href="/debug/pprof/">Profiles</a></li>{{end}}
</ul>
</body></html>
`))

func (l landing) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/" {
		http.NotFound(w, r)
		return
	}
	d := landingData{Version: version.Version, MetricsPath: l.cfg.TelemetryPath, DocsURL: DocsURL,
		Ready: l.ready.Load(), Pprof: l.cfg.WebEnablePprof}
	if d.Version == "" {
		d.Version = "unknown"
	}
	if loopbackPeer(r.RemoteAddr) {
		d.Dirs = l.cfg.ClaudeDirs
	} else {
		d.DirsHidden = true
	}
	if mfs, err := l.reg.Gather(); err == nil {
		var last float64
		for _, mf := range mfs {
			for _, m := range mf.GetMetric() {
				v := m.GetGauge().GetValue()
				switch mf.GetName() {
				case prom.Namespace + "_exporter_files_watched":
					d.Files = v
				case prom.Namespace + "_exporter_backfill_duration_seconds":
					d.BackfillSeconds = v
				case prom.Namespace + "_last_activity_timestamp_seconds":
					last = max(last, v)
				}
			}
		}
		if last > 0 {
			t := time.Unix(int64(last), 0).UTC()
			d.LastActivity = t.Format(time.RFC3339) + " (" + l.now().Sub(t).Round(time.Second).String() + " ago)"
		}
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_ = landingTemplate.Execute(w, d)
}

// loopbackPeer reports whether a request comes from this machine.
func loopbackPeer(remote string) bool {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}
