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
	"github.com/lakewap/lakewap/pipeline/runner"
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

// TestRunsPageOnLoopbackAnswersOnlyLoopbackHosts: on loopback /runs takes
// no token, since only local users reach the port; but a web page can
// reach it too, through the browser of a local user, by DNS rebinding: its
// own name (evil.example) made to resolve to 127.0.0.1 after the page
// loaded, so the browser takes http://evil.example:9090/runs for the
// page's own origin and lets its script read every run's errors and
// observed values. Such a request names the page's host in Host, not
// the listener's: the tokenless page answers only requests addressed to
// localhost or a loopback address. Before, it served them all.
func TestRunsPageOnLoopbackAnswersOnlyLoopbackHosts(t *testing.T) {
	d := &Daemon{cfg: &config.Config{HTTP: config.HTTP{Webhook: config.WebhookOff}},
		log: slog.New(slog.NewTextHandler(io.Discard, nil)), runner: &runner.Runner{}} // a zero runner holds no run
	mux := http.NewServeMux()
	must(t, d.mountRuns(mux, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9090}))
	for host, want := range map[string]int{
		"127.0.0.1:9090": http.StatusOK, "localhost:9090": http.StatusOK, "LOCALHOST:9090": http.StatusOK,
		"[::1]:9090": http.StatusOK, "127.0.0.1": http.StatusOK, "localhost": http.StatusOK, "127.8.9.10:9090": http.StatusOK,
		"evil.example:9090": http.StatusForbidden, "evil.example": http.StatusForbidden,
		"localhost.evil.example:9090": http.StatusForbidden, "127.0.0.1.nip.io:9090": http.StatusForbidden,
		"0.0.0.0:9090": http.StatusForbidden, "192.0.2.10:9090": http.StatusForbidden, "": http.StatusForbidden,
	} {
		req := httptest.NewRequest(http.MethodGet, "/runs", nil)
		req.Host = host
		req.Header.Set("Accept", "application/json")
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, req)
		if rec.Code != want {
			t.Errorf("GET /runs with Host %q: %d, want %d (%s)", host, rec.Code, want, strings.TrimSpace(rec.Body.String()))
		}
		if want == http.StatusForbidden && strings.Contains(rec.Body.String(), "runs") && strings.Contains(rec.Body.String(), "{") {
			t.Errorf("GET /runs with Host %q answered the page: %s", host, rec.Body.String())
		}
	}
}
