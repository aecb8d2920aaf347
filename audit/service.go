package audit

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lakewap/lakewap/schemas"
)

// Dataset is a configured dataset as the audit service sees it: the
// repository and target branch it publishes into, and its suite.
type Dataset struct {
	Repository, Target string
	Suite              Suite
	// Full makes every audit of the dataset full (the config's
	// audit_mode: full), never incremental.
	Full bool
	// AllowedPaths are the prefixes besides its tables' that a batch of
	// the dataset may change (the runner's tables-only rule): read only
	// by SuitesDigest, since the rule is a verdict on the batch too.
	AllowedPaths []string
}

// ServiceOptions configure a Service.
type ServiceOptions struct {
	// Engine runs a suite (an *Engine). Required.
	Engine Runner
	// Datasets maps a dataset name to its repository, target and suite.
	Datasets map[string]Dataset
	// Head, if set, resolves a ref to its commit id, so that a base given
	// as a branch is audited, and cached, as the commit it points at.
	Head func(ctx context.Context, repo, ref string) (string, error)
	// Concurrency bounds the webhook's audits running at once, and Budget
	// bounds one (it goes on after the call that started it gave up). Both
	// must be positive. lakewap's own publishes (Request.Own) have as many
	// slots again of their own, so no other caller can hold their hook back.
	Concurrency int
	Budget      time.Duration
	// Registerer, if set, gets the service's metrics.
	Registerer prometheus.Registerer
	// Logger, if set, is told of another dataset's check that fails on the
	// target already and so does not hold a batch back (neighbors.go).
	Logger *slog.Logger
}

// Service is the one way lakewap audits a dataset: the runner's audits of
// sealed commits (Audit) and the pre-merge webhook's (Run, Guarding) both
// go through it. It keeps the passing reports of commits, so that the hook
// lakeFS calls when lakewap merges a sealed commit it has just audited
// answers from memory instead of auditing the same commit again.
//
// The trust rule: a report is reused only for the same key, which is
// everything the verdict depends on: the commit id (never commit metadata:
// anyone merging can write metadata, while a commit id names exact
// content), the base's commit (volume, drift, uniqueness and batch scope
// compare with it) and the batch time (freshness is judged against it).
// Only reports this service computed are cached, and only passing ones.
//
// The webhook's audits are bounded in number (Concurrency) and run detached
// from the call: a call waits as long as its context allows, and an audit
// that takes longer (a cold cache after a restart) goes on in the
// background, so that the next call for the same commit (lakeFS re-running
// the hook, lakewap retrying its merge) gets its report.
type Service struct {
	o     ServiceOptions
	cache *reportCache // the runner's audits and rechecks, lakewap's own merges
	// others keeps the hook's passing reports of merges lakewap did not
	// make: anyone who may have a merge in progress into the target
	// chooses how many (one per event_time), and in one cache they pushed
	// lakewap's own reports out (TestHookCallersDoNotPushLakewapsReportsOut).
	others *reportCache
	*serviceMetrics
	slots    chan struct{} // audits of other callers' merges
	reserved chan struct{} // audits of lakewap's own publishes

	mu       sync.Mutex
	inflight map[reportKey]*flight

	suites map[string]string // SuitesDigest by dataset, fixed for the service's life
}

// flight is one webhook audit in progress; done is closed when rep and err
// are set.
type flight struct {
	done chan struct{}
	rep  schemas.AuditReport
	err  error
}

// reportCacheSize and reportCacheBytes bound the cached passing reports,
// in number and in bytes as JSON; the oldest goes first, and a report over
// the bytes alone is not kept. Counting reports alone let 4,096 of
// audit.max_report_bytes (32 KiB by default) be kept.
const (
	reportCacheSize  = 4096
	reportCacheBytes = 16 << 20
)

// NewService returns a service; see ServiceOptions for what is required.
func NewService(o ServiceOptions) (*Service, error) {
	switch {
	case o.Engine == nil:
		return nil, errors.New("audit: ServiceOptions.Engine is required")
	case o.Concurrency <= 0:
		return nil, fmt.Errorf("audit: ServiceOptions.Concurrency %d must be positive", o.Concurrency)
	case o.Budget <= 0:
		return nil, fmt.Errorf("audit: ServiceOptions.Budget %s must be positive", o.Budget)
	}
	m, err := newServiceMetrics(o.Registerer, o.Engine)
	if err != nil {
		return nil, err
	}
	return &Service{o: o, cache: newReportCache(reportCacheSize), others: newReportCache(reportCacheSize), inflight: map[reportKey]*flight{},
		slots: make(chan struct{}, o.Concurrency), reserved: make(chan struct{}, o.Concurrency), serviceMetrics: m,
		suites: suitesDigests(o.Datasets, verdictSettings(o.Engine))}, nil
}

// verdictSettings is the text of the engine's options a verdict depends
// on besides the suites, when the engine is an *Engine: the excuse of a
// check failing on the target already compares sample rows (as many as
// audit.sample_rows, whole: neither clipped to max_sample_value_bytes nor
// dropped for max_report_bytes; neighbors.go), and freshness allows
// clock_skew. Defaults are filled in by New: unset and set to the default
// read alike. Budgets and timeouts are left out: over them an audit errs
// (an infrastructure error, retried), it does not pass or fail otherwise.
func verdictSettings(r Runner) string {
	e, ok := r.(*Engine)
	if !ok {
		return ""
	}
	return fmt.Sprintf("sample_rows=%d max_sample_value_bytes=%d max_report_bytes=%d clock_skew=%s",
		e.opts.SampleRows, e.opts.MaxSampleValueBytes, e.opts.MaxReportBytes, e.opts.ClockSkew)
}

// SuitesDigest is the digest of the suites that can judge a batch of
// dataset: its own, and those of every other dataset publishing into the
// same repository and target (any of them is a neighbor when the batch
// touches one of its tables, neighbors.go), with their names. The runner
// records it with a batch's verdict, and rechecks a batch whose recorded
// digest is not the one in force when it publishes (a restart, or another
// instance, with another config). Every dataset of the target counts, not
// only the neighbors the audit judged: a dataset added, or a table added
// to one, may make a neighbor of a dataset the audit did not judge, and
// which ones the batch touches is known only from its diff. The engine's
// settings a verdict depends on are named too (verdictSettings), and the
// dataset's allowed paths: the tables-only rule, which a publish onto a
// target that did not move holds the batch to again only on a recheck. Empty
// for a dataset not in the config.
func (s *Service) SuitesDigest(dataset string) string { return s.suites[dataset] }

// suitesDigests is SuitesDigest of each dataset of ds, under the engine's
// settings (verdictSettings).
func suitesDigests(ds map[string]Dataset, settings string) map[string]string {
	own := make(map[string]string, len(ds))
	for name, d := range ds {
		own[name] = SuiteDigest(d.Suite)
	}
	out := make(map[string]string, len(ds))
	for name, d := range ds {
		h := sha256.New()
		if settings != "" { // none: the digests an engine without settings gave before
			fmt.Fprintf(h, "settings\x00%s\n", settings)
		}
		fmt.Fprintf(h, "%s\x00%s\n", name, own[name])
		if len(d.AllowedPaths) > 0 { // none: the digest as before
			fmt.Fprintf(h, "allowed_paths\x00%s\n", strings.Join(slices.Sorted(slices.Values(d.AllowedPaths)), "\x00"))
		}
		for _, other := range slices.Sorted(maps.Keys(ds)) {
			if e := ds[other]; other != name && e.Repository == d.Repository && e.Target == d.Target {
				fmt.Fprintf(h, "%s\x00%s\n", other, own[other])
			}
		}
		out[name] = hex.EncodeToString(h.Sum(nil)[:16])
	}
	return out
}

// Audit runs the suite of req.Dataset (req.Suite is ignored) and remembers
// the report if it passed. When it passed and req.Changes touches a table
// of another dataset publishing into the same target, that dataset's
// checks the change can break are judged too (withNeighbors). An error the audit could not help (a base that
// cannot be resolved, DuckDB out of memory) is an ErrInfrastructure.
func (s *Service) Audit(ctx context.Context, req Request) (schemas.AuditReport, error) {
	d, ok := s.o.Datasets[req.Dataset]
	if !ok {
		return schemas.AuditReport{}, fmt.Errorf("dataset %q is not in the config", req.Dataset)
	}
	req.Suite = d.Suite
	req.Full = req.Full || d.Full
	if err := s.pinBase(ctx, &req); err != nil {
		return schemas.AuditReport{}, fmt.Errorf("%w: %w", ErrInfrastructure, err)
	}
	rep, err := s.run(ctx, req, s.cache)
	if err != nil {
		return rep, err
	}
	return s.withNeighbors(ctx, req, d, rep)
}

// Recheck audits the batch req.Ref (a sealed commit) as merging it into
// req.BaseRef (the target's head now, a commit id or a branch, which is
// resolved first) would leave the table: the target's files with the
// batch's changes applied (Request.Onto). It is the check of a batch whose
// target moved since its audit: when the target's head is an attested
// publish of the same suite, it reads only the batch and what can collide
// with it (incremental); otherwise it reads the merged table whole. The
// report's Ref stays the sealed commit; a unique check that fails names,
// in its message, the files already holding the batch's keys. A passing
// recheck answers the pre-merge hook's audit of lakewap's own merge of
// the sealed commit onto that head (Request.MergeOf), whose table is the
// one the recheck audited: lakewap merges without a strategy, so the
// merge commit holds the head's files with the batch's changes applied.
// So does the runner's audit of a revert, of its scratch revert commit
// onto the head it was made from: merged onto that head, unmoved, it is
// what the merge leaves (review 54).
func (s *Service) Recheck(ctx context.Context, req Request) (schemas.AuditReport, error) {
	d, ok := s.o.Datasets[req.Dataset]
	if !ok {
		return schemas.AuditReport{}, fmt.Errorf("dataset %q is not in the config", req.Dataset)
	}
	if req.BaseRef == "" {
		return schemas.AuditReport{}, errors.New("audit: a recheck needs the target's head (BaseRef)")
	}
	req.Suite = d.Suite
	req.Full = req.Full || d.Full
	req.Onto = true
	if err := s.pinBase(ctx, &req); err != nil {
		return schemas.AuditReport{}, fmt.Errorf("%w: %w", ErrInfrastructure, err)
	}
	rep, err := s.o.Engine.Run(ctx, req)
	if err != nil {
		return rep, err
	}
	if rep.Passed && IsCommitID(req.Ref) && IsCommitID(req.BaseRef) && !req.BatchTime.IsZero() {
		s.cache.put(ontoKey(req.Repository, req.Dataset, req.Ref, req.BaseRef, req.BatchTime), rep)
	}
	return s.withNeighbors(ctx, req, d, rep)
}

// PrepareRecheck reads ahead what a recheck of req.Ref asks about its
// foundation whatever the target's head (Engine.PrepareRecheck), when the
// engine does.
func (s *Service) PrepareRecheck(ctx context.Context, req Request, foundation string) {
	d, ok := s.o.Datasets[req.Dataset]
	e, ok2 := s.o.Engine.(recheckPreparer)
	if !ok || !ok2 {
		return
	}
	req.Suite, req.Onto = d.Suite, true
	e.PrepareRecheck(ctx, req, foundation)
}

type recheckPreparer interface {
	PrepareRecheck(ctx context.Context, req Request, foundation string)
}

// Merged tells the engine that lakewap merged sealed and lakeFS answered
// with commit (Engine.RecordMerge), when the engine derives listings.
func (s *Service) Merged(repo, commit, sealed string) {
	if e, ok := s.o.Engine.(mergeRecorder); ok {
		e.RecordMerge(repo, commit, sealed)
	}
}

// Sealed tells the engine that lakewap committed a batch's branch and
// lakeFS answered with commit (Engine.RecordSeal).
func (s *Service) Sealed(repo, commit string) {
	if e, ok := s.o.Engine.(mergeRecorder); ok {
		e.RecordSeal(repo, commit)
	}
}

// mergeRecorder is an engine that derives listings of own merges and
// seals (*Engine).
type mergeRecorder interface {
	RecordMerge(repo, merge, sealed string)
	RecordSeal(repo, commit string)
}

// ontoKey is the cache key of a passing recheck of sealed onto head.
func ontoKey(repo, dataset, sealed, head string, batchTime time.Time) reportKey {
	return reportKey{repo: repo, dataset: dataset, ref: "onto:" + sealed, base: head, batchTime: batchTime.UnixNano()}
}

// Guarding is the datasets publishing into branch of repo: the pre-merge
// webhook runs their suites.
func (s *Service) Guarding(repo, branch string) []Guard {
	var out []Guard
	for name, d := range s.o.Datasets {
		if d.Repository == repo && d.Target == branch {
			out = append(out, Guard{Dataset: name, Suite: d.Suite})
		}
	}
	slices.SortFunc(out, func(a, b Guard) int { return strings.Compare(a.Dataset, b.Dataset) })
	return out
}

// pinBase replaces the request's base ref by the commit it points at, so
// the audit and its cache key name the same base.
func (s *Service) pinBase(ctx context.Context, req *Request) error {
	if s.o.Head == nil || req.BaseRef == "" || IsCommitID(req.BaseRef) {
		return nil
	}
	id, err := s.o.Head(ctx, req.Repository, req.BaseRef)
	if err != nil {
		return fmt.Errorf("resolve base %s: %w", req.BaseRef, err)
	}
	req.BaseName, req.BaseRef = cmp.Or(req.BaseName, req.BaseRef), id
	return nil
}

// Run is the webhook's audit (a Runner): a passing report of the same
// commit, base commit and batch time answers it, else the suite runs (or
// the run already in progress for the same key is awaited).
func (s *Service) Run(ctx context.Context, req Request) (schemas.AuditReport, error) {
	slots := s.slots
	if req.Own {
		slots = s.reserved
	}
	if err := s.pinBase(ctx, &req); err != nil {
		return schemas.AuditReport{}, err
	}
	k := keyOf(req)
	if rep, ok := s.cached(k); ok {
		s.lookups.WithLabelValues("hit").Inc()
		return rep, nil
	}
	if head, sealed := req.MergeOf[0], req.MergeOf[1]; req.Own && head != "" && sealed != "" {
		if rep, ok := s.cache.get(ontoKey(req.Repository, req.Dataset, sealed, head, req.BatchTime)); ok {
			s.lookups.WithLabelValues("hit").Inc()
			return rep, nil
		}
	}
	s.lookups.WithLabelValues("miss").Inc()
	s.mu.Lock()
	f := s.inflight[k]
	if f == nil {
		select {
		case slots <- struct{}{}:
		default:
			s.mu.Unlock()
			return schemas.AuditReport{}, fmt.Errorf("%w: %d pre-merge audits are running (http.webhook_concurrency); try again", ErrAuditsBusy, cap(slots))
		}
		f = &flight{done: make(chan struct{})}
		s.inflight[k] = f
		go func() {
			defer func() { <-slots }()
			actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.o.Budget)
			defer cancel()
			keep := s.others
			if req.Own {
				keep = s.cache
			}
			f.rep, f.err = s.run(actx, req, keep)
			s.mu.Lock()
			delete(s.inflight, k)
			s.mu.Unlock()
			close(f.done)
		}()
	}
	s.mu.Unlock()
	select {
	case <-f.done:
		return f.rep, f.err
	case <-ctx.Done():
		return schemas.AuditReport{}, fmt.Errorf("audit of %s still running after the hook's timeout (http.webhook_audit_timeout); "+
			"it goes on, and its report answers the next call: %w", req.Ref, ctx.Err())
	}
}

// cached is the passing report of k, from either cache: both hold only
// reports this service computed, keyed by what the verdict depends on.
func (s *Service) cached(k reportKey) (schemas.AuditReport, bool) {
	if rep, ok := s.cache.get(k); ok {
		return rep, true
	}
	return s.others.get(k)
}

// run audits req and keeps a passing report of a commit id in keep.
func (s *Service) run(ctx context.Context, req Request, keep *reportCache) (schemas.AuditReport, error) {
	start := time.Now()
	rep, err := s.o.Engine.Run(ctx, req)
	result := "passed"
	switch {
	case err != nil:
		result = "error"
	case !rep.Passed:
		result = "failed"
	}
	s.duration.WithLabelValues(req.Dataset, result).Observe(time.Since(start).Seconds())
	if err == nil && rep.Passed && IsCommitID(req.Ref) && !req.BatchTime.IsZero() {
		keep.put(keyOf(req), rep)
	}
	return rep, err
}

// IsCommitID reports whether ref has the form of a lakeFS commit id: 64
// lower-case hex digits, a SHA-256 (review 54: 40 to 64 were taken).
// What is read at such a ref is kept as immutable (reports, listings,
// downloads by address, statistics), while a branch name names whatever
// the branch holds when it is read. The form
// alone does not tell them apart: lakeFS resolves a ref that is no
// commit's full id as a branch first, and a writer may name a branch with
// hex digits. So a ref of this form given to the engine must be a
// commit's own id as lakeFS answered it (the hook's commit_id is checked
// so: TestReview49HookCallNamingAHexBranchDoesNotKeyBytesByAnotherAddress).
// A loop, not a regular expression: the summary asks it of every file of
// the table at every audit, where a regular expression was 4% of the
// daemon's CPU at 8 batches in flight.
func IsCommitID(ref string) bool {
	if len(ref) != 64 {
		return false
	}
	for i := 0; i < len(ref); i++ {
		if c := ref[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// reportKey is what a verdict depends on besides the suite (fixed for the
// service's life): the audited commit, the base commit, the batch time.
type reportKey struct {
	repo, dataset, ref, base string
	batchTime                int64  // UnixNano
	part                     string // Request.part: a run of part of the suite
}

func keyOf(req Request) reportKey {
	return reportKey{repo: req.Repository, dataset: req.Dataset, ref: req.Ref, base: req.BaseRef, batchTime: req.BatchTime.UnixNano(), part: req.part}
}

// reportCache is a bounded map of passing reports; the oldest entry goes
// first. A restart empties it: the hook then audits again.
type reportCache struct {
	mu    sync.Mutex
	max   int
	m     map[reportKey]cachedReport
	order []reportKey
	bytes int // of the reports kept, as JSON (with their keys)
}

type cachedReport struct {
	rep  schemas.AuditReport
	size int
}

func newReportCache(max int) *reportCache {
	return &reportCache{max: max, m: map[reportKey]cachedReport{}}
}

func (c *reportCache) get(k reportKey) (schemas.AuditReport, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.m[k]
	return r.rep, ok
}

func (c *reportCache) put(k reportKey, r schemas.AuditReport) {
	b, err := json.Marshal(r)
	size := len(b) + len(k.repo) + len(k.dataset) + len(k.ref) + len(k.base) + len(k.part) + 64
	if err != nil || size > reportCacheBytes {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.m[k]; ok {
		c.bytes -= old.size
	} else {
		c.order = append(c.order, k)
	}
	c.m[k] = cachedReport{rep: r, size: size}
	c.bytes += size
	for len(c.order) > c.max || c.bytes > reportCacheBytes {
		c.bytes -= c.m[c.order[0]].size
		delete(c.m, c.order[0])
		c.order = c.order[1:]
	}
}
