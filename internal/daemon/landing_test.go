package daemon

import (
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/claude-transcript-exporter/claude-transcript-exporter/exporter/prom"
)

func TestLandingPageShowsWhatIsReadAndHidesPathsFromTheNetwork(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	reg := prometheus.NewRegistry()
	usage := prom.NewMetrics(reg, time.Minute, func() time.Time { return now })
	self := prom.NewSelf(reg)
	self.FilesWatched.Set(42)
	self.BackfillSeconds.Set(1.5)
	usage.Activity("s1", "proj", now.Add(-90*time.Second))
	cfg := NewConfig()
	cfg.ClaudeDirs = []string{"/home/someone/.claude"}
	for _, tc := range []struct {
		name   string
		remote string
		ready  bool
		want   []string
		never  []string
	}{
		{"this machine, backfill done", "127.0.0.1:5555", true,
			[]string{"/home/someone/.claude", "done in 1.5 s", "<td>42</td>", "2026-11-25T11:58:30Z (1m30s ago)", `href="/metrics"`, `href="/-/ready"`, DocsURL}, nil},
		{"this machine over IPv6, reading", "[::1]:5555", false,
			[]string{"/home/someone/.claude", "reading the files present at start"}, []string{"done in"}},
		{"another machine", "192.0.2.7:5555", true,
			[]string{"shown to a browser on this machine only", `href="/metrics"`}, []string{"/home/someone"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ready atomic.Bool
			ready.Store(tc.ready)
			req := httptest.NewRequest("GET", "/", nil)
			req.RemoteAddr = tc.remote
			rec := httptest.NewRecorder()
			landing{cfg: &cfg, reg: reg, ready: &ready, now: func() time.Time { return now }}.ServeHTTP(rec, req)
			body := rec.Body.String()
			for _, w := range tc.want {
				if !strings.Contains(body, w) {
					t.Errorf("page lacks %q:\n%s", w, body)
				}
			}
			for _, n := range tc.never {
				if strings.Contains(body, n) {
					t.Errorf("page shows %q:\n%s", n, body)
				}
			}
		})
	}
	rec := httptest.NewRecorder()
	landing{cfg: &cfg, reg: reg, ready: &atomic.Bool{}, now: time.Now}.ServeHTTP(rec, httptest.NewRequest("GET", "/nope", nil))
	if rec.Code != 404 {
		t.Errorf("GET /nope: %d, want 404", rec.Code)
	}
}
