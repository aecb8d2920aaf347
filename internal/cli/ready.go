package cli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/lakewap/lakewap/internal/daemon"
	"github.com/lakewap/lakewap/internal/runs"
)

// ReadyOptions are lakewap ready's flags.
type ReadyOptions struct {
	Config, URL string
	Timeout     time.Duration
	JSON        bool
}

// readyAnswer is what lakewap ready -json prints.
type readyAnswer struct {
	URL    string `json:"url"`
	Status int    `json:"status"`
	Body   string `json:"body"`
}

// Ready is the container health check: it asks a running daemon's
// /readyz (on the config's http.listen, or o.URL) and exits 0 only on
// 200. The image has no curl or wget; this needs nothing but the binary.
func Ready(ctx context.Context, o ReadyOptions, stdout, stderr io.Writer) int {
	url := o.URL
	if url == "" {
		cfg, ok := LoadConfig(o.Config, stderr)
		if !ok {
			return 2
		}
		if cfg.HTTP.Listen == "" {
			failf(stderr, "lakewap ready: %s sets no http.listen, so the daemon serves no /readyz", o.Config)
			return 2
		}
		url = daemon.ReadyURL(cfg.HTTP.Listen)
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		failf(stderr, "lakewap ready: %v", err)
		return 2
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		failf(stderr, "lakewap ready: %v", err)
		return 1
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	answer := readyAnswer{URL: url, Status: resp.StatusCode, Body: strings.TrimSpace(string(body))}
	if o.JSON {
		_ = writeIndented(stdout, answer)
	}
	if resp.StatusCode != http.StatusOK {
		failf(stderr, "lakewap ready: %s: %s %s", url, resp.Status, answer.Body)
		return 1
	}
	if !o.JSON {
		fmt.Fprintln(stdout, runs.Printable(url+": "+answer.Body))
	}
	return 0
}
