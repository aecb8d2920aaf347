package daemon

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lakewap/lakewap/consumer"
	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/internal/status"
	"github.com/lakewap/lakewap/pipeline/lakefs"
)

// TestHTTPServerClosesSlowClients attacks the daemon's HTTP server (built by
// newHTTPServer, as the daemon builds it) with a slowloris that sends part of
// a request header and then nothing, and with a client that connects and
// sends nothing: the server must close both connections once the header
// timeout has passed. Each client waits for the close under a bounded read
// deadline far above the header timeout; hitting that deadline means the
// server held the connection.
func TestHTTPServerClosesSlowClients(t *testing.T) {
	const header = 200 * time.Millisecond
	srv := newHTTPServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}), 5*time.Minute)
	srv.ReadHeaderTimeout = header
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = srv.Serve(ln); close(done) }()
	defer func() { _ = srv.Close(); <-done }()
	addr := ln.Addr().String()

	// A well-behaved client is served by the same server.
	resp, err := http.Get("http://" + addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(body) != "ok" {
		t.Fatalf("normal request: %d %q", resp.StatusCode, body)
	}

	for _, tc := range []struct{ name, send string }{
		{"partial header", "GET / HTTP/1.1\r\nHost: lakewap\r\nX-Slow: a"},
		{"nothing", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The clock starts before the dial: the server's header timer
			// starts at its accept, which can come before this goroutine
			// runs again on a loaded machine.
			start := time.Now()
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if tc.send != "" {
				if _, err := io.WriteString(conn, tc.send); err != nil {
					t.Fatal(err)
				}
			}
			must(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
			got, err := io.ReadAll(conn) // returns once the server closes (EOF) or resets
			if errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("the server still held the connection after %s (header timeout %s)", time.Since(start), header)
			}
			if elapsed := time.Since(start); elapsed < header {
				t.Errorf("closed after %s, before the header timeout %s: not the timeout at work", elapsed, header)
			}
			// The server closes without answering a request it never got in full.
			if len(got) > 0 && !strings.HasPrefix(string(got), "HTTP/1.1 408") {
				t.Errorf("server answered %q to an unfinished request", got)
			}
		})
	}
}

// TestDefaultHTTPLimits: the daemon's server keeps its limits.
func TestDefaultHTTPLimits(t *testing.T) {
	s := newHTTPServer(nil, time.Minute)
	got := [5]any{s.ReadHeaderTimeout, s.ReadTimeout, s.WriteTimeout, s.IdleTimeout, s.MaxHeaderBytes}
	want := [5]any{5 * time.Second, 30 * time.Second, 90 * time.Second, 2 * time.Minute, 64 << 10}
	if got != want {
		t.Errorf("server limits (header, read, write, idle, max header bytes) = %v, want %v", got, want)
	}
	// The daemon's listener is served by such a server.
	cfg := &config.Config{}
	cfg.HTTP.Webhook = "off"
	cfg.Runner.StepTimeout = config.Duration(time.Minute)
	d := &Daemon{cfg: cfg, log: slog.New(slog.DiscardHandler), reg: prometheus.NewRegistry()}
	must(t, d.serveHTTP("127.0.0.1:0"))
	defer d.close()
	s = d.http
	if got := [5]any{s.ReadHeaderTimeout, s.ReadTimeout, s.WriteTimeout, s.IdleTimeout, s.MaxHeaderBytes}; got != want {
		t.Errorf("the daemon's server limits = %v, want %v", got, want)
	}
}

func TestReadyURLDialsThisHost(t *testing.T) {
	for listen, want := range map[string]string{":9090": "127.0.0.1:9090", "0.0.0.0:9090": "127.0.0.1:9090",
		"[::]:9090": "127.0.0.1:9090", "10.1.2.3:9090": "10.1.2.3:9090"} {
		if got := ReadyURL(listen); got != "http://"+want+"/readyz" {
			t.Errorf("ReadyURL(%q) = %q, want http://%s/readyz", listen, got, want)
		}
	}
}

// TestEveryEndpointAnswersOnlyItsMethods: each endpoint of the daemon's
// listener answers the methods it is for and refuses every other with 405
// and an Allow header naming its methods, before its handler runs (a POST
// to /metrics made lakewap gather every metric; to /readyz, call lakeFS).
func TestEveryEndpointAnswersOnlyItsMethods(t *testing.T) {
	var lakeCalls atomic.Int64
	lake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		lakeCalls.Add(1)
		if strings.HasSuffix(r.URL.Path, "/healthcheck") {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		http.Error(w, `{"message":"no"}`, http.StatusUnauthorized)
	}))
	defer lake.Close()
	lc, err := lakefs.New(lakefs.Config{Endpoint: lake.URL, AccessKeyID: "AK", SecretAccessKey: "SK"})
	must(t, err)
	cfg := &config.Config{}
	cfg.HTTP.Webhook = "open"
	cfg.Runner.StepTimeout = config.Duration(time.Minute)
	d := &Daemon{cfg: cfg, log: slog.New(slog.DiscardHandler), reg: prometheus.NewRegistry(), lake: lc,
		consumer: &consumer.Consumer{}} // a zero consumer holds its (no) partitions
	must(t, d.serveHTTP("127.0.0.1:0"))
	defer d.close()
	base := "http://" + d.httpLn.Addr().String()

	call := func(method, path string) *http.Response {
		t.Helper()
		req, err := http.NewRequest(method, base+path, strings.NewReader(""))
		must(t, err)
		resp, err := http.DefaultClient.Do(req)
		must(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	for _, tc := range []struct {
		path  string
		allow []string
	}{
		{"/metrics", []string{"GET", "HEAD"}},
		{"/healthz", []string{"GET", "HEAD"}},
		{"/readyz", []string{"GET", "HEAD"}},
		{status.Path, []string{"GET", "HEAD"}},
		{PreMergePath, []string{"POST"}},
	} {
		for _, method := range []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "PROPFIND"} {
			if slices.Contains(tc.allow, method) {
				continue
			}
			before := lakeCalls.Load()
			resp := call(method, tc.path)
			if resp.StatusCode != http.StatusMethodNotAllowed {
				t.Errorf("%s %s: %d, want 405", method, tc.path, resp.StatusCode)
				continue
			}
			if got := strings.Join(strings.FieldsFunc(resp.Header.Get("Allow"), func(r rune) bool { return r == ',' || r == ' ' }), ","); got != strings.Join(tc.allow, ",") {
				t.Errorf("%s %s: Allow %q, want %v", method, tc.path, resp.Header.Get("Allow"), tc.allow)
			}
			if n := lakeCalls.Load() - before; n != 0 {
				t.Errorf("%s %s: lakewap called lakeFS %d times for a refused method", method, tc.path, n)
			}
		}
	}
	// The methods an endpoint is for are still answered.
	for _, path := range []string{"/metrics", "/healthz", "/readyz"} {
		for _, method := range []string{"GET", "HEAD"} {
			if resp := call(method, path); resp.StatusCode != http.StatusOK {
				t.Errorf("%s %s: %d, want 200", method, path, resp.StatusCode)
			}
		}
	}
}
