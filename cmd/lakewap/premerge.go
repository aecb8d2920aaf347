package main

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lakewap/lakewap/audit"
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
	hooks := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "lakewap_premerge_hooks_total",
		Help: "lakeFS pre-merge webhook calls by decision (allow, block, error) and how it was reached (audit, unguarded, untouched)."},
		[]string{"decision", "via"})
	d.reg.MustRegister(hooks)
	for _, dv := range [][2]string{{"allow", "audit"}, {"block", "audit"}, {"error", "audit"}, {"allow", "unguarded"}, {"allow", "untouched"}} {
		hooks.WithLabelValues(dv[0], dv[1]) // the decisions the handler makes, at 0 from the start
	}
	return audit.NewPreMergeHandler(audit.PreMergeOptions{
		Guards: d.audits, Runner: d.audits, Diff: auditSource{d.lake},
		Timeout: d.cfg.HTTP.WebhookAuditTimeout.Std(),
		Logger:  d.log.With(slog.String("component", "premerge")),
		Observe: func(decision, via string) { hooks.WithLabelValues(decision, via).Inc() },
	})
}
