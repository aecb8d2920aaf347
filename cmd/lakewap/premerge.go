package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lakewap/lakewap/audit"
	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/schemas"
)

// preMergePath is where the daemon's HTTP listener answers lakeFS's
// pre-merge webhook.
const preMergePath = "/webhooks/lakefs/pre-merge"

// cachedAuditor is the daemon's auditor. The runner's audits and the
// pre-merge webhook's both go through it, and it keeps the passing reports
// of commits, so that the hook lakeFS calls when the runner merges a sealed
// commit it has just audited answers from memory instead of auditing the
// same commit again. The key is the commit id, never commit metadata:
// anyone merging can write metadata, while a commit id names exact content.
type cachedAuditor struct {
	engine   *audit.Engine
	datasets map[string]config.Dataset
	cache    *reportCache
	lookups  *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

func newCachedAuditor(engine *audit.Engine, datasets map[string]config.Dataset, reg prometheus.Registerer) *cachedAuditor {
	a := &cachedAuditor{engine: engine, datasets: datasets, cache: newReportCache(4096),
		lookups: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "lakewap_audit_cache_lookups_total",
			Help: "Pre-merge webhook audits answered from the cache of passing reports by commit (hit) or run (miss)."}, []string{"result"})}
	a.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "lakewap_audit_duration_seconds",
		Help:    "Audits that ran (download, DuckDB checks, report), by dataset and result (passed, failed, error).",
		Buckets: prometheus.ExponentialBuckets(0.01, 2, 16)}, []string{"dataset", "result"})
	if reg != nil {
		reg.MustRegister(a.lookups, a.duration)
	}
	a.lookups.WithLabelValues("hit") // exported at 0 from the start, for rate() and alerts
	a.lookups.WithLabelValues("miss")
	return a
}

// Audit runs the runner's audit of a sealed commit and remembers it if it
// passed.
func (a *cachedAuditor) Audit(ctx context.Context, req pipeline.AuditRequest) (schemas.AuditReport, error) {
	d, ok := a.datasets[req.Dataset]
	if !ok {
		return schemas.AuditReport{}, fmt.Errorf("dataset %q is not in the config", req.Dataset)
	}
	rep, err := a.run(ctx, audit.Request{Dataset: req.Dataset, Suite: d.Suite, Repository: req.Repository,
		Ref: req.Ref, BaseRef: req.BaseRef, BatchTime: req.BatchTime})
	if errors.Is(err, audit.ErrInfrastructure) {
		// Out of memory and the like: retried within runner.retry_budget,
		// then the batch fails (not aborted: its data was never judged).
		err = fmt.Errorf("%w: %w", pipeline.ErrTransient, err)
	}
	return rep, err
}

// Run is the webhook's audit: a passing report of the same commit against
// the same base answers it, else the suite runs.
func (a *cachedAuditor) Run(ctx context.Context, req audit.Request) (schemas.AuditReport, error) {
	if rep, ok := a.cache.get(keyOf(req)); ok {
		a.lookups.WithLabelValues("hit").Inc()
		return rep, nil
	}
	a.lookups.WithLabelValues("miss").Inc()
	return a.run(ctx, req)
}

func (a *cachedAuditor) run(ctx context.Context, req audit.Request) (schemas.AuditReport, error) {
	start := time.Now()
	rep, err := a.engine.Run(ctx, req)
	result := "passed"
	switch {
	case err != nil:
		result = "error"
	case !rep.Passed:
		result = "failed"
	}
	a.duration.WithLabelValues(req.Dataset, result).Observe(time.Since(start).Seconds())
	if err == nil && rep.Passed && commitID.MatchString(req.Ref) {
		a.cache.put(keyOf(req), rep)
	}
	return rep, err
}

// commitID matches lakeFS commit ids. Only those are cached: a branch name
// names whatever the branch holds when it is read.
var commitID = regexp.MustCompile(`^[0-9a-f]{40,64}$`)

type reportKey struct{ repo, dataset, ref, base string }

func keyOf(req audit.Request) reportKey {
	return reportKey{repo: req.Repository, dataset: req.Dataset, ref: req.Ref, base: req.BaseRef}
}

// reportCache is a bounded map of passing reports; the oldest entry goes
// first. A restart empties it: the hook then audits again.
type reportCache struct {
	mu    sync.Mutex
	max   int
	m     map[reportKey]schemas.AuditReport
	order []reportKey
}

func newReportCache(max int) *reportCache {
	return &reportCache{max: max, m: map[reportKey]schemas.AuditReport{}}
}

func (c *reportCache) get(k reportKey) (schemas.AuditReport, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.m[k]
	return r, ok
}

func (c *reportCache) put(k reportKey, r schemas.AuditReport) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[k]; !ok {
		c.order = append(c.order, k)
	}
	c.m[k] = r
	for len(c.order) > c.max {
		delete(c.m, c.order[0])
		c.order = c.order[1:]
	}
}

// datasetGuards are the config's datasets as guards of their targets.
type datasetGuards map[string]config.Dataset

func (g datasetGuards) Guarding(repo, branch string) []audit.Guard {
	var out []audit.Guard
	names := make([]string, 0, len(g))
	for name := range g {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if d := g[name]; d.Repository == repo && d.Target == branch {
			out = append(out, audit.Guard{Dataset: name, Suite: d.Suite})
		}
	}
	return out
}

// Touches reports whether merging ref into base brings any change under
// prefix (lakeFS's three-dot diff, removals included).
func (s auditSource) Touches(ctx context.Context, repo, base, ref, prefix string) (bool, error) {
	changes, err := s.lake.Diff(ctx, repo, base, ref, prefix)
	return len(changes) > 0, err
}

// preMergeHandler is the webhook handler of the daemon's HTTP listener.
func (d *daemon) preMergeHandler() (http.Handler, error) {
	hooks := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "lakewap_premerge_hooks_total",
		Help: "lakeFS pre-merge webhook calls by decision (allow, block, error) and how it was reached (audit, unguarded, untouched)."},
		[]string{"decision", "via"})
	d.reg.MustRegister(hooks)
	for _, dv := range [][2]string{{"allow", "audit"}, {"block", "audit"}, {"error", "audit"}, {"allow", "unguarded"}, {"allow", "untouched"}} {
		hooks.WithLabelValues(dv[0], dv[1]) // the decisions the handler makes, at 0 from the start
	}
	return audit.NewPreMergeHandler(audit.PreMergeOptions{
		Guards: datasetGuards(d.cfg.Datasets), Runner: d.audits, Diff: auditSource{d.lake},
		Logger:  d.log.With(slog.String("component", "premerge")),
		Observe: func(decision, via string) { hooks.WithLabelValues(decision, via).Inc() },
	})
}
