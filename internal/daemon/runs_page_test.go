package daemon

import (
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/internal/config"
)

// Off loopback the page asks for http.runs_token; without one it is not
// served at all. The webhook's token never opens it: lakeFS hands that
// token to every action file, so every writer has it (trust model), and
// the page shows every dataset's observed values.
func TestRunsPageNeedsTheTokenOffLoopback(t *testing.T) {
	public := &net.TCPAddr{IP: net.ParseIP("192.0.2.10"), Port: 9090}
	cases := []struct {
		name   string
		http   config.HTTP
		served bool
		auth   bool
	}{
		{"loopback, no token", config.HTTP{Webhook: config.WebhookOff}, true, false},
		{"public, runs token", config.HTTP{WebhookToken: "s3cret", RunsToken: "operators-only"}, true, true},
		{"public, webhook token only", config.HTTP{WebhookToken: "s3cret"}, false, false},
		{"public, webhook off", config.HTTP{Webhook: config.WebhookOff}, false, false},
		{"public, runs off", config.HTTP{RunsToken: "operators-only", Runs: "off"}, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := &Daemon{cfg: &config.Config{HTTP: tc.http}, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
			addr := net.Addr(public)
			if strings.HasPrefix(tc.name, "loopback") {
				addr = &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9090}
			}
			mux := http.NewServeMux()
			must(t, d.mountRuns(mux, addr))
			req := httptest.NewRequest(http.MethodGet, "/runs", nil)
			if _, pattern := mux.Handler(req); (pattern != "") != tc.served {
				t.Fatalf("served %v, want %v", pattern != "", tc.served)
			}
			if !tc.auth {
				return
			}
			// Without the token: refused before any run is read (the
			// daemon here has no runner).
			rec := httptest.NewRecorder()
			mux.ServeHTTP(rec, req)
			if rec.Code != http.StatusUnauthorized {
				t.Errorf("/runs without the token: %d, want 401", rec.Code)
			}
			// With the webhook's token: refused as well.
			rec = httptest.NewRecorder()
			withHook := httptest.NewRequest(http.MethodGet, "/runs", nil)
			withHook.Header.Set("Authorization", "Bearer "+tc.http.WebhookToken)
			mux.ServeHTTP(rec, withHook)
			if rec.Code != http.StatusUnauthorized {
				t.Errorf("/runs with the webhook's token: %d, want 401", rec.Code)
			}
		})
	}
}
