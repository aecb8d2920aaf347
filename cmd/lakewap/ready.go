package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/lakewap/lakewap/internal/daemon"
)

// cmdReady is the container health check: it asks a running daemon's
// /readyz (on the config's http.listen, or -url) and exits 0 only on 200.
// The image has no curl or wget; this needs nothing but the binary.
func cmdReady(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("ready")
	path := fs.String("config", "/etc/lakewap/lakewap.yaml", "config whose http.listen the daemon serves")
	url := fs.String("url", "", "readiness URL (default: http://<http.listen>/readyz from -config)")
	timeout := fs.Duration("timeout", 5*time.Second, "give up after this long")
	if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
		return code
	}
	if *url == "" {
		cfg, ok := loadConfig(*path, stderr)
		if !ok {
			return 2
		}
		if cfg.HTTP.Listen == "" {
			fmt.Fprintf(stderr, "lakewap ready: %s sets no http.listen, so the daemon serves no /readyz\n", *path)
			return 2
		}
		*url = daemon.ReadyURL(cfg.HTTP.Listen)
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, *url, nil)
	if err != nil {
		fmt.Fprintf(stderr, "lakewap ready: %v\n", err)
		return 2
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintf(stderr, "lakewap ready: %v\n", err)
		return 1
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintf(stderr, "lakewap ready: %s: %s %s\n", *url, resp.Status, strings.TrimSpace(string(body)))
		return 1
	}
	fmt.Fprintf(stdout, "%s: %s\n", *url, strings.TrimSpace(string(body)))
	return 0
}
