package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/lakewap/lakewap/internal/config"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// /healthz answers while the process lives; /readyz only once lakeFS
// answers and the partitions are assigned and restored.
func TestHealthAndReadiness(t *testing.T) {
	e := startE2E(t, func(c *config.Config) { c.HTTP.Listen = "127.0.0.1:0"; c.HTTP.WebhookToken = "test-token" })
	base := "http://" + e.d.HTTPAddr()
	if code, _ := get(t, base+"/healthz"); code != http.StatusOK {
		t.Errorf("/healthz = %d", code)
	}
	waitFor(t, func() bool { code, _ := get(t, base+"/readyz"); return code == http.StatusOK })
	// lakewap ready, the image's health check, says the same.
	var out, errOut strings.Builder
	if rc := run([]string{"ready", "-url", base + "/readyz"}, &out, &errOut); rc != 0 {
		t.Errorf("lakewap ready on a ready daemon: exit %d: %s", rc, errOut.String())
	}

	// A second daemon whose lakeFS endpoint answers nothing is alive but
	// not ready, and says why.
	cfg := *e.cfg
	cfg.LakeFS.Endpoint = "http://127.0.0.1:1"
	cfg.HTTP.Listen = "127.0.0.1:0"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var logs lockedBuffer
	d, err := newDaemon(ctx, &cfg, daemonOptions{Logger: slog.New(slog.NewTextHandler(&logs, nil)), Console: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = d.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	other := "http://" + d.HTTPAddr()
	if code, _ := get(t, other+"/healthz"); code != http.StatusOK {
		t.Errorf("/healthz of the second daemon = %d", code)
	}
	code, body := get(t, other+"/readyz")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "lakefs") {
		t.Errorf("/readyz with lakeFS unreachable = %d %q, want 503 naming lakefs", code, body)
	}
	// The answer names the part, not its address or error: that is logged.
	if strings.Contains(body, "127.0.0.1:1") || strings.Contains(body, "refused") {
		t.Errorf("/readyz body %q shows internal details", body)
	}
	if l := logs.String(); !strings.Contains(l, "not ready: lakeFS does not answer") || !strings.Contains(l, "127.0.0.1:1") {
		t.Errorf("the log does not have the details: %s", l)
	}
	// Every phase of a request is bounded.
	if s := d.http; s.ReadHeaderTimeout <= 0 || s.ReadTimeout <= 0 || s.WriteTimeout <= 0 || s.IdleTimeout <= 0 || s.MaxHeaderBytes <= 0 {
		t.Errorf("http server limits: header %s read %s write %s idle %s max header %d", s.ReadHeaderTimeout, s.ReadTimeout, s.WriteTimeout, s.IdleTimeout, s.MaxHeaderBytes)
	}
	errOut.Reset()
	if rc := run([]string{"ready", "-url", other + "/readyz"}, &out, &errOut); rc != 1 || !strings.Contains(errOut.String(), "503") {
		t.Errorf("lakewap ready on a daemon that is not ready: exit %d %q, want 1 naming the 503", rc, errOut.String())
	}
}

// lockedBuffer is a bytes.Buffer safe for a logger and a reader at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()

}

func TestReadyCommandFindsTheListenerInTheConfig(t *testing.T) {
	for listen, want := range map[string]string{":9090": "127.0.0.1:9090", "0.0.0.0:9090": "127.0.0.1:9090",
		"[::]:9090": "127.0.0.1:9090", "10.1.2.3:9090": "10.1.2.3:9090"} {
		if got := localAddr(listen); got != want {
			t.Errorf("localAddr(%q) = %q, want %q", listen, got, want)
		}
	}
	var out, errOut strings.Builder
	if rc := run([]string{"ready", "-config", "/nonexistent/lakewap.yaml"}, &out, &errOut); rc != 2 || !strings.Contains(errOut.String(), "nonexistent") {
		t.Errorf("lakewap ready with a missing config: exit %d %q, want 2 naming it", rc, errOut.String())
	}
}
