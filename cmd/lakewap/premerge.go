package main

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/lakewap/lakewap/audit"
	"github.com/lakewap/lakewap/internal/metrics"
)

// preMergePath is where the daemon's HTTP listener answers lakeFS's
// pre-merge webhook.
const preMergePath = "/webhooks/lakefs/pre-merge"

// Touches reports whether merging ref into base brings any change under
// prefix (lakeFS's three-dot diff, removals included).
func (s auditSource) Touches(ctx context.Context, repo, base, ref, prefix string) (bool, error) {
	changes, err := s.lake.Diff(ctx, repo, base, ref, prefix)
	return len(changes) > 0, err
}

// preMergeHandler is the webhook handler of the daemon's HTTP listener: the
// audit service guards and audits, from its cache of passing reports when
// it can.
func (d *daemon) preMergeHandler() (http.Handler, error) {
	token, err := d.cfg.HTTP.Token()
	if err != nil {
		return nil, err
	}
	return audit.NewPreMergeHandler(audit.PreMergeOptions{
		Guards: d.audits, Runner: d.audits, Diff: auditSource{d.lake}, Token: token,
		Timeout: d.cfg.HTTP.WebhookAuditTimeout.Std(),
		Logger:  d.log.With(slog.String("component", "premerge")),
		Observe: metrics.PreMergeHooks(d.reg),
	})
}
