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
// same commit again. The key is everything the verdict depends on: the
// commit id (never commit metadata: anyone merging can write metadata,
// while a commit id names exact content), the base's commit (volume,
// drift, uniqueness and batch scope compare with it) and the batch time
// (freshness is judged against it).
//
// The webhook's audits are bounded in number (webhook_concurrency) and run
// detached from the call: a call waits webhook_audit_timeout, and an audit
// that takes longer (a cold cache after a restart) goes on in the
// background, so that the next call for the same commit (lakeFS re-running
// the hook, lakewap retrying its merge) gets its report.
type cachedAuditor struct {
	engine   audit.Runner
	datasets map[string]config.Dataset
	cache    *reportCache
	lookups  *prometheus.CounterVec
	duration *prometheus.HistogramVec
	// head resolves a ref to its commit id.
	head func(ctx context.Context, repo, ref string) (string, error)
	// batchTime, if set, gives the batch time of a sealed commit this
	// daemon is publishing: the hook of lakewap's own merge is judged as
	// the run's audit was, not by the event time in the call.
	batchTime func(repo, sealed string) (time.Time, bool)
	// slots bounds the webhook's audits running at once; budget bounds one.
	slots  chan struct{}
	budget time.Duration

	mu       sync.Mutex
	inflight map[reportKey]*flight
}

// flight is one webhook audit in progress; done is closed when rep and err
// are set.
type flight struct {
	done chan struct{}
	rep  schemas.AuditReport
	err  error
}

func newCachedAuditor(engine audit.Runner, datasets map[string]config.Dataset, reg prometheus.Registerer) *cachedAuditor {
	a := &cachedAuditor{engine: engine, datasets: datasets, cache: newReportCache(4096), inflight: map[reportKey]*flight{},
		slots: make(chan struct{}, 2), budget: 5 * time.Minute,
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
	areq := audit.Request{Dataset: req.Dataset, Suite: d.Suite, Repository: req.Repository,
		Ref: req.Ref, BaseRef: req.BaseRef, BatchTime: req.BatchTime}
	if err := a.pinBase(ctx, &areq); err != nil {
		return schemas.AuditReport{}, fmt.Errorf("%w: %w", pipeline.ErrTransient, err)
	}
	rep, err := a.run(ctx, areq)
	if errors.Is(err, audit.ErrInfrastructure) {
		// Out of memory and the like: retried within runner.retry_budget,
		// then the batch fails (not aborted: its data was never judged).
		err = fmt.Errorf("%w: %w", pipeline.ErrTransient, err)
	}
	return rep, err
}

// pinBase replaces the request's base ref by the commit it points at, so
// the audit and its cache key name the same base.
func (a *cachedAuditor) pinBase(ctx context.Context, req *audit.Request) error {
	if a.head == nil || req.BaseRef == "" || commitID.MatchString(req.BaseRef) {
		return nil
	}
	id, err := a.head(ctx, req.Repository, req.BaseRef)
	if err != nil {
		return fmt.Errorf("resolve base %s: %w", req.BaseRef, err)
	}
	if req.BaseName == "" {
		req.BaseName = req.BaseRef
	}
	req.BaseRef = id
	return nil
}

// Run is the webhook's audit: a passing report of the same commit, base
// commit and batch time answers it, else the suite runs (or the run
// already in progress for the same key is awaited).
func (a *cachedAuditor) Run(ctx context.Context, req audit.Request) (schemas.AuditReport, error) {
	if a.batchTime != nil {
		if t, ok := a.batchTime(req.Repository, req.Ref); ok {
			req.BatchTime = t
		}
	}
	if err := a.pinBase(ctx, &req); err != nil {
		return schemas.AuditReport{}, err
	}
	k := keyOf(req)
	if rep, ok := a.cache.get(k); ok {
		a.lookups.WithLabelValues("hit").Inc()
		return rep, nil
	}
	a.lookups.WithLabelValues("miss").Inc()
	a.mu.Lock()
	f := a.inflight[k]
	if f == nil {
		select {
		case a.slots <- struct{}{}:
		default:
			a.mu.Unlock()
			return schemas.AuditReport{}, fmt.Errorf("%d pre-merge audits are running (http.webhook_concurrency); try again", cap(a.slots))
		}
		f = &flight{done: make(chan struct{})}
		a.inflight[k] = f
		go func() {
			defer func() { <-a.slots }()
			actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), a.budget)
			defer cancel()
			f.rep, f.err = a.run(actx, req)
			a.mu.Lock()
			delete(a.inflight, k)
			a.mu.Unlock()
			close(f.done)
		}()
	}
	a.mu.Unlock()
	select {
	case <-f.done:
		return f.rep, f.err
	case <-ctx.Done():
		return schemas.AuditReport{}, fmt.Errorf("audit of %s still running after the hook's timeout (http.webhook_audit_timeout); "+
			"it goes on, and its report answers the next call: %w", req.Ref, ctx.Err())
	}
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
	if err == nil && rep.Passed && commitID.MatchString(req.Ref) && !req.BatchTime.IsZero() {
		a.cache.put(keyOf(req), rep)
	}
	return rep, err
}

// commitID matches lakeFS commit ids. Only those are cached: a branch name
// names whatever the branch holds when it is read.
var commitID = regexp.MustCompile(`^[0-9a-f]{40,64}$`)

// reportKey is what a verdict depends on besides the suite (fixed for the
// daemon's life): the audited commit, the base commit, the batch time.
type reportKey struct {
	repo, dataset, ref, base string
	batchTime                int64 // UnixNano
}

func keyOf(req audit.Request) reportKey {
	return reportKey{repo: req.Repository, dataset: req.Dataset, ref: req.Ref, base: req.BaseRef, batchTime: req.BatchTime.UnixNano()}
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
		Timeout: d.cfg.HTTP.WebhookAuditTimeout.Std(),
		Logger:  d.log.With(slog.String("component", "premerge")),
		Observe: func(decision, via string) { hooks.WithLabelValues(decision, via).Inc() },
	})
}
