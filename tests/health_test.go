package tests

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
	"github.com/lakewap/lakewap/internal/daemon"
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
	if rc, _, errOut := runCLI(t, "ready", "-url", base+"/readyz"); rc != 0 {
		t.Errorf("lakewap ready on a ready daemon: exit %d: %s", rc, errOut)
	}

	// A second daemon whose lakeFS endpoint answers nothing is alive but
	// not ready, and says why.
	cfg := *e.cfg
	cfg.LakeFS.Endpoint = "http://127.0.0.1:1"
	cfg.HTTP.Listen = "127.0.0.1:0"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var logs lockedBuffer
	d, err := daemon.New(ctx, &cfg, daemon.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil)), Console: io.Discard})
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
	if rc, _, errOut := runCLI(t, "ready", "-url", other+"/readyz"); rc != 1 || !strings.Contains(errOut, "503") {
		t.Errorf("lakewap ready on a daemon that is not ready: exit %d %q, want 1 naming the 503", rc, errOut)
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
