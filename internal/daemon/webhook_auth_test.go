package daemon

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lakewap/lakewap/internal/config"
)

// An empty or whitespace token never opens the pre-merge endpoint: it is a
// config error naming the field, from the YAML (a ${VAR} set to "") or
// from an empty token file at start-up. An open endpoint is a setting.
func TestEmptyWebhookTokenIsAConfigError(t *testing.T) {
	base := hookConfig
	for _, tc := range []struct{ name, http, env, want string }{
		{"empty variable", `  listen: "127.0.0.1:0"` + "\n  webhook_token: ${HOOK_TOKEN}\n", "", "http.webhook_token: empty"},
		{"whitespace", `  listen: "127.0.0.1:0"` + "\n  webhook_token: \"  \"\n", "", "http.webhook_token: empty"},
		{"no token at all", `  listen: "127.0.0.1:0"` + "\n", "", "http.webhook_token: empty"},
		{"token and open", `  listen: "127.0.0.1:0"` + "\n  webhook: open\n  webhook_token: x\n", "", "http.webhook_token: set, but http.webhook is open"},
		{"unknown mode", `  listen: "127.0.0.1:0"` + "\n  webhook: maybe\n", "", `http.webhook: "maybe" is not token, open or off`},
		{"hook timeout over the call timeout", `  listen: "127.0.0.1:0"` + "\n  webhook_token: x\n  webhook_audit_timeout: 55s\n", "",
			"http.webhook_audit_timeout: 55s is not below lakefs.timeout 30s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := config.ParseIn([]byte(base+tc.http), func(k string) (string, bool) { return tc.env, k == "HOOK_TOKEN" }, "")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("config error %v, want %q", err, tc.want)
			}
		})
	}
	for _, ok := range []string{"  listen: \"127.0.0.1:0\"\n  webhook: open\n", "  listen: \"127.0.0.1:0\"\n  webhook: off\n",
		"  listen: \"127.0.0.1:0\"\n  webhook_token_file: /run/secrets/t\n"} {
		if _, err := config.ParseIn([]byte(base+ok), func(string) (string, bool) { return "", false }, ""); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}

	// An empty token file stops the daemon at start-up, naming the field.
	empty := filepath.Join(t.TempDir(), "token")
	must(t, os.WriteFile(empty, []byte(" \n"), 0o600))
	cfg, err := config.ParseIn([]byte(base+"  listen: \"127.0.0.1:0\"\n  webhook_token_file: "+empty+"\n"), func(string) (string, bool) { return "", false }, "")
	must(t, err)
	cfg.Audit.WorkDir = t.TempDir()
	d := &Daemon{cfg: cfg, log: slog.New(slog.DiscardHandler), reg: prometheus.NewRegistry()}
	if err := d.serveHTTP("127.0.0.1:0"); err == nil || !strings.Contains(err.Error(), "http.webhook_token_file") || !strings.Contains(err.Error(), "is empty") {
		t.Errorf("serveHTTP with an empty token file: %v", err)
	}
}

// hookConfig is a config of one dataset, billing, publishing to main of
// repository lake; its http section is the test's to write.
const hookConfig = `
kafka: {brokers: ["127.0.0.1:9092"]}
lakefs: {endpoint: "http://127.0.0.1:8000", access_key_id: AK, secret_access_key: SK}
datasets:
  billing:
    repository: lake
    tables: [{name: t, path: gold/t/}]
    checks: [{kind: row_count, table: t, min: 1}]
http:
`

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
