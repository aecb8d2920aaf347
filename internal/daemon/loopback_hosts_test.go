package daemon

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lakewap/lakewap/consumer"
	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/internal/status"
	"github.com/lakewap/lakewap/pipeline/lakefs"
	"github.com/lakewap/lakewap/pipeline/runner"
)

// TestLoopbackEndpointsAnswerOnlyLoopbackHosts (review 51): on a loopback
// listener every endpoint that takes no token (/metrics, /healthz,
// /readyz, /runs, and the webhook served open) answers only requests
// addressed to localhost or a loopback address. A page a local user's
// browser opens reaches the port too, and by DNS rebinding (its own name
// resolving to 127.0.0.1) reads the answer as its own origin's: the
// metrics name every dataset, repository and target with their counts.
// Before, only /runs checked the Host (review 47).
func TestLoopbackEndpointsAnswerOnlyLoopbackHosts(t *testing.T) {
	lake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
		consumer: &consumer.Consumer{}, runner: &runner.Runner{}}
	must(t, d.serveHTTP("127.0.0.1:0"))
	defer d.close()
	addr := d.httpLn.Addr().String()
	_, port, _ := strings.Cut(addr, ":")
	call := func(method, path, host string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, "http://"+addr+path, strings.NewReader(`{}`))
		must(t, err)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		must(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, ep := range []struct{ method, path string }{
		{"GET", "/metrics"}, {"GET", "/healthz"}, {"GET", "/readyz"}, {"GET", status.Path}, {"POST", PreMergePath},
	} {
		for _, host := range []string{"evil.example:" + port, "localhost.evil.example", "127.0.0.1.nip.io:" + port} {
			if code, body := call(ep.method, ep.path, host); code != http.StatusForbidden {
				t.Errorf("%s %s with Host %q on a loopback listener: %d, want 403 (%.200s)", ep.method, ep.path, host, code, body)
			}
		}
		for _, host := range []string{addr, "localhost:" + port, "[::1]:" + port} {
			if code, body := call(ep.method, ep.path, host); code == http.StatusForbidden {
				t.Errorf("%s %s with Host %q: 403, want it answered (%.200s)", ep.method, ep.path, host, body)
			}
		}
	}
}
