package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestRunExitCodes(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/ok" {
			w.WriteHeader(http.StatusOK)
			return
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close()

	tests := []struct {
		name string
		args []string
		want int
	}{
		{"healthy answers 2xx", []string{srv.URL + "/ok"}, 0},
		{"unhealthy answers 503", []string{srv.URL + "/not-ready"}, 1},
		{"nothing listening", []string{closedURL}, 1},
		{"no url", nil, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := run(tt.args, io.Discard); got != tt.want {
				t.Errorf("run(%q) = %d, want %d", tt.args, got, tt.want)
			}
		})
	}
}
