package main

import (
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/internal/harness"
	"github.com/lakewap/lakewap/internal/status"
	"github.com/lakewap/lakewap/schemas"
)

// The daemon serves /runs: a published and an aborted batch are there,
// with their states and checks, as JSON for a client that asks for it.
func TestRunsPageOnTheDaemon(t *testing.T) {
	e := startE2E(t, func(c *config.Config) { c.HTTP.Listen = "127.0.0.1:0"; c.HTTP.WebhookToken = "test-token" })
	good := e.runBatch(t, "runs-good-1", harness.GoodBillingRows)
	bad := e.runBatch(t, "runs-bad-1", harness.BadBillingRows)
	if good.EventType() != schemas.TypeBatchPublished || bad.EventType() != schemas.TypeBatchAborted {
		t.Fatalf("outcomes %s and %s", good.EventType(), bad.EventType())
	}
	req, _ := http.NewRequest(http.MethodGet, "http://"+e.d.HTTPAddr()+"/runs?dataset=billing", nil)
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	defer resp.Body.Close()
	var pg status.Page
	if err := json.NewDecoder(resp.Body).Decode(&pg); err != nil || resp.StatusCode != 200 {
		t.Fatalf("/runs: %d %v", resp.StatusCode, err)
	}
	states := map[string]string{}
	failed := map[string][]string{}
	for _, r := range pg.Runs {
		states[r.BatchID] = r.State
		for _, c := range r.Checks {
			if c.Status == schemas.StatusFail {
				failed[r.BatchID] = append(failed[r.BatchID], c.Name)
			}
		}
		if len(r.Checks) > 0 && r.Checks[0].SampleRows != nil {
			t.Errorf("%s: sample rows shown without http.runs_samples", r.BatchID)
		}
	}
	if states["runs-good-1"] != "published" || states["runs-bad-1"] != "aborted" ||
		strings.Join(failed["runs-bad-1"], ",") != "billing_id_not_null" || len(failed["runs-good-1"]) != 0 {
		t.Errorf("/runs says states %v, failed checks %v", states, failed)
	}
}

// Off loopback the page asks for the webhook's token; without a token to
// ask for it is not served at all.
func TestRunsPageNeedsTheTokenOffLoopback(t *testing.T) {
	public := &net.TCPAddr{IP: net.ParseIP("192.0.2.10"), Port: 9090}
	cases := []struct {
		name   string
		http   config.HTTP
		served bool
		auth   bool
	}{
		{"loopback, no token", config.HTTP{Webhook: config.WebhookOff}, true, false},
		{"public, token", config.HTTP{WebhookToken: "s3cret"}, true, true},
		{"public, webhook off", config.HTTP{Webhook: config.WebhookOff}, false, false},
		{"public, runs off", config.HTTP{WebhookToken: "s3cret", Runs: "off"}, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := &daemon{cfg: &config.Config{HTTP: tc.http}, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
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
		})
	}
}
