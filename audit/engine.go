package audit

import (
	"cmp"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/duckdb/duckdb-go/v2"
	inflight "github.com/lakewap/lakewap/internal/flight"
	"github.com/lakewap/lakewap/schemas"
)

// Defaults of the audit's budgets (see Options).
const (
	DefaultMaxFiles        = 100_000
	DefaultMaxBytes        = 256 << 30
	DefaultMaxListObjects  = 1_000_000
	DefaultMaxLogFileBytes = 64 << 20
	DefaultClockSkew       = 5 * time.Minute
	DefaultQueryTimeout    = 5 * time.Minute
)

// ErrOverBudget is an audit over one of its budgets: a check error of the
// checks it concerns, not an infrastructure failure.
var ErrOverBudget = errors.New("over the audit's budget")

// errOverBudget marks a budget error on its way to a view.
type errOverBudget struct{ error }

func (e errOverBudget) Unwrap() error { return e.error }

// Errors returned by Run.
var (
	ErrInvalidSuite = errors.New("invalid audit suite")
	ErrClosed       = errors.New("audit engine closed")
)

// Options configure an Engine.
type Options struct {
	Source Source
	// WorkDir holds the engine's directory (removed by Close), with a
	// directory per run that downloads (made by its first download,
	// removed after the run) and DuckDB's spill files; default
	// os.TempDir().
	WorkDir string
	// CacheDir keeps downloaded objects by physical address across runs, so
	// the unchanged files of main are fetched once. Empty disables the cache.
	CacheDir string
	// CacheMaxBytes bounds CacheDir: after each run the least recently used
	// files not in use by a run are removed until it fits. 0: unbounded.
	CacheMaxBytes int64
	// MemoryLimit and Threads bound the engine's DuckDB, shared by
	// concurrent runs, e.g. "1GB" and 2; empty and 0 leave DuckDB's
	// defaults (80% of RAM, all cores).
	MemoryLimit string
	Threads     int
	// DownloadParallelism bounds concurrent downloads of a run; default 8.
	DownloadParallelism int
	// SampleRows is how many failing rows a failed check reports; default 5.
	SampleRows int
	// MaxSampleValueBytes bounds each value of a sample row (default
	// DefaultMaxSampleValueBytes); MaxReportBytes bounds a report (default
	// DefaultMaxReportBytes). See clipReport.
	MaxSampleValueBytes int
	MaxReportBytes      int
	Logger              *slog.Logger
	// History, when set, lets audits be incremental (see increment):
	// a batch whose foundation is an attested publish of the same suite
	// reads only its own rows for most checks.
	History History
	// AttestationKey, when set, signs attestations (HMAC): one without a
	// valid signature is not taken.
	AttestationKey []byte
	// StatsDir keeps lakewap's statistics of the files it audited across
	// restarts; empty keeps them in memory (rebuilt from the data after a
	// restart).
	StatsDir string
	// Failpoint, when set, is called at named points between a write and
	// what depends on it (crash tests).
	Failpoint func(name string)

	// Budgets of one audit. Over one, the checks that need what is over
	// it error (the batch is aborted) before anything is downloaded.
	// MaxFiles and MaxBytes bound the data files one audit downloads
	// (defaults DefaultMaxFiles, DefaultMaxBytes); MaxListObjects the
	// objects one listing of a table may return (DefaultMaxListObjects);
	// MaxLogFileBytes one Delta log file, as listed and as its actions
	// decode (DefaultMaxLogFileBytes).
	MaxFiles        int
	MaxBytes        int64
	MaxListObjects  int
	MaxLogFileBytes int64
	// ClockSkew is how far after now a freshness column's newest value may
	// be (writers' clocks differ); later, the check fails. Default
	// DefaultClockSkew.
	ClockSkew time.Duration
	// QueryTimeout bounds each custom query (sql, cross_table); default
	// DefaultQueryTimeout.
	QueryTimeout time.Duration
	// Blockstore, when set, reads the stored size of each object a batch
	// changes under a table's path (check stored_sizes), each call within
	// StatTimeout (default DefaultStatTimeout); without it the check does
	// not run.
	Blockstore  Blockstore
	StatTimeout time.Duration

	// trustStatistics leaves distrustedOptimizers on: only the benchmark
	// that measures what distrust costs sets it (package-internal).
	trustStatistics bool
}

// Engine runs audit suites. It is safe for concurrent use. It keeps one
// DuckDB database, so memory and threads are bounded for all runs together
// and a run does not pay for starting a database; each run has its own
// in-memory catalog in it (ATTACH ':memory:'), dropped when the run ends.
type Engine struct {
	opts Options
	dir  string // the engine's directory under WorkDir
	seq  atomic.Int64
	// fileSeq numbers the runs' downloads into filesDir.
	fileSeq atomic.Int64
	// duck is the engine's DuckDB (duckhandle.go), nil when a crash
	// retired it until the next run opens another; duckClosed by Close.
	// reopened counts those openings again. duck and duckClosed under
	// duckMu.
	duckMu     sync.Mutex
	duck       *duckDB
	duckClosed bool
	reopened   atomic.Int64
	// crashers are the audits (repository, dataset, ref) whose own
	// statement crashed DuckDB, lately (crashCause).
	crashers *boundedMap[struct{}]

	// targetEntries are the entries over a limit found on datasets'
	// targets (targetentries.go).
	targetEntries targetEntries

	mu     sync.Mutex
	closed bool
	runs   sync.WaitGroup
	cache  *fileCache
	stats  *StatsStore
	// foundations are the foundations incremental decisions found, by
	// repository and audited ref (Foundation).
	foundations *boundedMap[string]
	// beyond are foundations' first paths after a table's (mergehazard.go),
	// and beyondAsked those being asked for now.
	beyond      *boundedMap[beyondPath]
	beyondAsked inflight.Group[beyondPath]
	// added are the paths outside the tables sealed commits add that
	// claim their foundation's next path's checksum and size, by
	// foundation and sealed commit (mergehazard.go), and addedAsked those
	// being looked for now.
	added      *boundedMap[addedSet]
	addedAsked inflight.Group[addedSet]
	// dataPrefixes are the repositories' data prefixes (Namespaced), by
	// repository.
	dataPrefixes *boundedMap[string]
	// listings are the listings of commits made lately (listcache.go).
	listings *listingCache
	// flights are the listings of commits being made (listcache.go).
	flights *listFlights
	// derived is what derives listings of lakewap's own merges (derive.go).
	derived *derivations
	// ahead bounds the own merges whose listings are being derived in the
	// background (deriveAhead), aheads waits for them, and bg is their
	// context, cancelled by Close.
	ahead  chan struct{}
	aheads sync.WaitGroup
	bg     context.Context
	stopBG context.CancelFunc
	// memo keeps answers of queries over files known by physical address
	// (memo.go); nil turns it off.
	memo *queryMemo
	// summaries are the last summaries of unchanged files (summary.go);
	// nil turns them off.
	summaries *summaryCache
	// rowOnlyWheres are rowOnly's answers, and the columns the condition
	// names (whereColumns), by where condition.
	rowOnlyWheres *boundedMap[whereFacts]

	// groupedUniqueBytes: unique checks over a view of at least this many
	// bytes count duplicates and gather their sample in one grouped scan;
	// smaller views count them in the aggregate scan (cheaper to plan) and
	// scan again only for the sample of a failed check.
	groupedUniqueBytes int64
	// bitmapUniqueBytes: integer keys of smaller views are counted with
	// count(DISTINCT), which costs less than reading the footers' bounds.
	bitmapUniqueBytes int64

	// onStatement, when set, is called with each statement run on a run's
	// connection, and with a run's queries of no table on the engine's pool
	// (literalRow) (tests).
	onStatement func(q string)
	// columnsFault, when set, is the error of listing a table's files'
	// columns (columnCollision) (tests).
	columnsFault func() error
	// scanFault, when set, is the error of a reader guard's scan of a file
	// (scanFile) tagged tag, in place of the scan's own (tests).
	scanFault func(tag string) error
	// unfused turns off fusing the batch's aggregates (fuse.go), for tests
	// and benchmarks that compare.
	unfused bool
	// claimsUnchecked turns off refusing files whose row-group statistics
	// do not hold (claims.go), for the tests of the audit's own reading
	// of such a file
	claimsUnchecked bool
	// claimsNotInGo leaves every claim, a row group's or a page's, to
	// DuckDB (claimsgo.go), for the tests and benchmarks that compare.
	claimsNotInGo bool
}

var memoryLimit = regexp.MustCompile(`(?i)^\s*\d+(\.\d+)?\s*(B|KB|MB|GB|TB|KIB|MIB|GIB|TIB)?\s*$`)

// New returns an Engine; it creates CacheDir if needed.
func New(opts Options) (*Engine, error) {
	if opts.Source == nil {
		return nil, errors.New("audit: Options.Source is required")
	}
	if opts.MemoryLimit != "" && !memoryLimit.MatchString(opts.MemoryLimit) {
		return nil, fmt.Errorf("audit: bad memory limit %q (want e.g. 1GB)", opts.MemoryLimit)
	}
	if opts.Threads < 0 || opts.DownloadParallelism < 0 || opts.SampleRows < 0 || opts.MaxFiles < 0 || opts.MaxBytes < 0 ||
		opts.MaxListObjects < 0 || opts.MaxLogFileBytes < 0 || opts.ClockSkew < 0 || opts.QueryTimeout < 0 || opts.StatTimeout < 0 {
		return nil, errors.New("audit: Threads, DownloadParallelism, SampleRows, budgets, ClockSkew, QueryTimeout and StatTimeout must not be negative")
	}
	opts.MaxFiles = cmp.Or(opts.MaxFiles, DefaultMaxFiles)
	opts.MaxBytes = cmp.Or(opts.MaxBytes, DefaultMaxBytes)
	opts.MaxListObjects = cmp.Or(opts.MaxListObjects, DefaultMaxListObjects)
	opts.MaxLogFileBytes = cmp.Or(opts.MaxLogFileBytes, DefaultMaxLogFileBytes)
	opts.ClockSkew = cmp.Or(opts.ClockSkew, DefaultClockSkew)
	opts.QueryTimeout = cmp.Or(opts.QueryTimeout, DefaultQueryTimeout)
	opts.StatTimeout = cmp.Or(opts.StatTimeout, DefaultStatTimeout)
	opts.DownloadParallelism = cmp.Or(opts.DownloadParallelism, 8)
	opts.SampleRows = cmp.Or(opts.SampleRows, 5)
	opts.MaxSampleValueBytes = cmp.Or(max(opts.MaxSampleValueBytes, 0), DefaultMaxSampleValueBytes)
	opts.MaxReportBytes = cmp.Or(max(opts.MaxReportBytes, 0), DefaultMaxReportBytes)
	opts.WorkDir = cmp.Or(opts.WorkDir, os.TempDir())
	opts.Logger = cmp.Or(opts.Logger, slog.New(slog.DiscardHandler))
	for _, d := range []*string{&opts.WorkDir, &opts.CacheDir} {
		if *d == "" {
			continue
		}
		abs, err := filepath.Abs(*d)
		if err != nil {
			return nil, fmt.Errorf("audit: %w", err)
		}
		if err := os.MkdirAll(abs, 0o755); err != nil {
			return nil, fmt.Errorf("audit: %w", err)
		}
		*d = abs
	}
	opts.History = keepCommits(opts.History) // commits are immutable: read each once (derive.go)
	e := &Engine{opts: opts, cache: newFileCache(opts.CacheDir, opts.CacheMaxBytes), groupedUniqueBytes: 16 << 20, bitmapUniqueBytes: 1 << 20}
	var err error
	if e.stats, err = NewStatsStore(opts.StatsDir); err != nil {
		return nil, err
	}
	e.stats.failpoint = opts.Failpoint
	e.foundations = newBoundedMap[string](reportCacheSize)
	e.beyond = newBoundedMap[beyondPath](reportCacheSize)
	e.added = newBoundedMap[addedSet](1024)
	e.dataPrefixes = newBoundedMap[string](1024)
	e.rowOnlyWheres = newBoundedMap[whereFacts](1024)
	e.crashers = newBoundedMap[struct{}](1024)
	e.listings = newListingCache(listingCacheObjects)
	e.flights = &listFlights{m: map[string]chan struct{}{}}
	e.derived = newDerivations()
	e.ahead = make(chan struct{}, maxDerivingAhead)
	e.bg, e.stopBG = context.WithCancel(context.Background())
	e.memo = newQueryMemo(memoMaxEntries, memoMaxBytes)
	e.summaries = newSummaryCache(summaryMaxEntries, summaryMaxBytes)
	if e.dir, err = os.MkdirTemp(opts.WorkDir, "lakewap-audit-*"); err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	if err := os.Mkdir(e.filesDir(), 0o700); err != nil {
		os.RemoveAll(e.dir)
		return nil, fmt.Errorf("audit: %w", err)
	}
	if e.duck, err = e.openDuck(); err != nil {
		os.RemoveAll(e.dir)
		return nil, err
	}
	return e, nil
}

// filesDir is the directory of the runs' downloads outside the cache.
func (e *Engine) filesDir() string { return filepath.Join(e.dir, "files") }

// distrustedOptimizers are the DuckDB optimizers that read a Parquet
// footer's column statistics (min, max, null_count) as facts about the
// data. The writer controls the footer, so a forged one would let them
// answer max(x) from it, fold x > 100 or y IS NULL to false, and skip row
// groups through filters pushed into the scan, from a WHERE, a FILTER
// clause, a join or a subquery (TestForgedStatisticsEveryKind). With them
// off, every check reads the data pages.
const distrustedOptimizers = "filter_pushdown,statistics_propagation,join_filter_pushdown"

// openDuckDB opens the engine's DuckDB, confined to the engine's directory
// and the cache, with the configuration locked so that custom SQL cannot
// undo it. The optimizers that trust Parquet statistics are off from the
// database's creation (a global setting, in the DSN), so every connection
// the pool opens has them off.
func openDuckDB(dir string, opts Options) (*sql.DB, error) {
	dsn := "?autoinstall_known_extensions=false&autoload_known_extensions=false"
	if !opts.trustStatistics {
		dsn += "&disabled_optimizers=" + distrustedOptimizers
	}
	connector, err := duckdb.NewConnector(dsn, nil)
	if err != nil {
		return nil, fmt.Errorf("audit: open duckdb: %w", err)
	}
	db := sql.OpenDB(connector)
	allowed := []string{dir + string(filepath.Separator)}
	if opts.CacheDir != "" {
		allowed = append(allowed, opts.CacheDir+string(filepath.Separator))
	}
	// Settings are global to the database, so any pooled connection will do.
	for _, s := range setupSQL(filepath.Join(dir, "duckdb-tmp"), opts.MemoryLimit, opts.Threads, allowed) {
		if _, err := db.Exec(s); err != nil {
			db.Close()
			return nil, fmt.Errorf("audit: duckdb setup %q: %w", s, err)
		}
	}
	return db, nil
}

// Close waits for running audits, makes later Run calls fail and releases
// the database and the engine's directory.
func (e *Engine) Close() error {
	e.mu.Lock()
	closed := e.closed
	e.closed = true
	e.mu.Unlock()
	if closed {
		return nil
	}
	if e.stopBG != nil {
		e.stopBG()
	}
	e.aheads.Wait()
	e.runs.Wait()
	err := e.closeDuck()
	if rerr := os.RemoveAll(e.dir); err == nil {
		err = rerr
	}
	return err
}

// Request is one audit: a dataset's suite against a ref.
type Request struct {
	Dataset    string
	Suite      Suite
	Repository string
	// Ref is audited; BaseRef (usually main) is what volume_change,
	// schema_drift and scope: batch compare with. Checks that need it fail
	// with status error when it is empty.
	Ref, BaseRef string
	// BaseName is how reports name the base (say "main" when BaseRef is
	// the commit main pointed at); default BaseRef.
	BaseName string
	// BatchTime is the reference for freshness; zero means now.
	BatchTime time.Time
	// Changes, when set, is what Ref changes against BaseRef as the caller
	// already diffed it (the runner's audit step): the batch scope's files
	// are taken from it. Nil: they are asked of Source.Changed per table.
	Changes *Changes
	// Own marks a pre-merge hook's audit of a merge lakewap itself makes
	// (verified with lakeFS): Service.Run runs it with the capacity kept for
	// lakewap's publishes. The engine ignores it.
	Own bool
	// MergeOf, on the hook's audit of what lakewap's own merge (Own)
	// leaves (its merge commit, or its source when that holds the
	// target's head), names the merge commit's parents as lakeFS gave
	// them: the target's head and the commit merged. A passing recheck of
	// that commit onto that head (Service.Recheck) answers it: a
	// publish's, or a revert's audit of its scratch commit onto a head
	// that did not move. The engine ignores it.
	MergeOf [2]string
	// Full asks for a full audit even where it could be incremental.
	Full bool
	// fullBecause is why Engine.Run runs the audit full again (errRefull).
	fullBecause string
	// Onto audits the table as merging Ref into BaseRef would leave it:
	// BaseRef's files with the batch's changes (Ref's against its
	// merge-base with BaseRef) applied. It is the check, before a merge, of
	// a batch whose target moved since its audit (Service.Recheck).
	Onto bool
	// BeforeRead, when set, is called once, before the run first reads a
	// byte of the batch or of a table (a download, a Delta log, a footer)
	// or opens its DuckDB connection; a run that the memo and the stored
	// statistics answer never calls it. Before that point the run reads
	// only lakewap's own records (memo, statistics, derived listings) and
	// lakeFS's listings, commits and stored sizes. Its error fails the run
	// (ErrInfrastructure): nothing is read and nothing passes. The runner
	// records a recheck's attempt there (issue 21).
	BeforeRead func(context.Context) error
	// part names a run of part of a suite made to judge a result of the
	// whole (ownRowsFail): Service.Run keeps its report apart from the
	// suite's at the same commit. The engine ignores it.
	part string
	// plainQuery, when set, is the failing-row query that the run's one
	// custom check compares at two refs by shadowing the tables' plain
	// names (newFailingRows): the check errs unless every table the query
	// names is named plainly, as DuckDB's parser reads it (plainTables).
	plainQuery string
}

// Changes is what a ref changes against its base (lakeFS's three-dot
// diff): the objects added or changed, and, when Removals is set, the
// paths it removes (then the changes are the whole diff).
type Changes struct {
	Objects  []Object
	Removed  []string
	Removals bool
}

// changed is what the batch adds or changes under prefix: from the request
// when the caller diffed already, else from Source.Changed. With a cache
// the files need their physical addresses, which a diff does not give:
// they are listed once, under the deepest folder that holds every changed
// file (the batch's own folder, usually), so the listing does not grow
// with the table.
func (r *run) changed(ctx context.Context, prefix string) ([]Object, error) {
	// The batch scope and the unaudited-objects rule ask for the same changes.
	if objs, ok := r.changedMemo[prefix]; ok {
		return slices.Clone(objs), nil
	}
	objs, err := r.changes(ctx, prefix)
	if err == nil {
		if r.changedMemo == nil {
			r.changedMemo = map[string][]Object{}
		}
		r.changedMemo[prefix] = slices.Clone(objs)
	}
	return objs, err
}

func (r *run) changes(ctx context.Context, prefix string) ([]Object, error) {
	req := r.req
	var objs []Object
	if req.Changes != nil {
		for _, o := range req.Changes.Objects {
			if strings.HasPrefix(o.Path, prefix) {
				objs = append(objs, o)
			}
		}
	} else {
		var err error
		if objs, err = r.e.opts.Source.Changed(ctx, req.Repository, req.BaseRef, req.Ref, prefix); errors.Is(err, ErrOverBudget) {
			return nil, errOverBudget{err} // the Source stopped a listing over its limit
		} else if err != nil {
			return nil, err
		}
	}
	if len(objs) == 0 || r.e.opts.CacheDir == "" {
		return objs, nil
	}
	paths := make([]string, len(objs))
	for i, o := range objs {
		paths[i] = o.Path
	}
	listed, err := r.list(ctx, req.Ref, commonFolder(prefix, paths)) // kept per commit: a derived listing of the seal made it (derive.go)
	if err != nil {
		return nil, err
	}
	byPath := make(map[string]Object, len(listed))
	for _, o := range listed {
		byPath[o.Path] = o
	}
	var out []Object
	for _, p := range paths {
		if o, ok := byPath[p]; ok {
			out = append(out, o)
		}
	}
	return out, nil
}

// commonFolder is the longest folder prefix ("a/b/") shared by paths, no
// shorter than prefix.
func commonFolder(prefix string, paths []string) string {
	common := paths[0][:strings.LastIndex(paths[0], "/")+1]
	for _, p := range paths[1:] {
		for !strings.HasPrefix(p, common) {
			common = common[:strings.LastIndex(strings.TrimSuffix(common, "/"), "/")+1]
		}
	}
	if len(common) < len(prefix) {
		return prefix
	}
	return common
}

// Run audits req.Ref. Failed checks are in the report; the error is for an
// audit that could not run: an invalid suite, lakeFS or local I/O failing,
// or ctx ending.
func (e *Engine) Run(ctx context.Context, req Request) (schemas.AuditReport, error) {
	start := time.Now()
	report := schemas.AuditReport{Dataset: req.Dataset, Ref: req.Ref}
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return report, ErrClosed
	}
	e.runs.Add(1)
	e.mu.Unlock()
	defer e.runs.Done()

	if req.Ref == "" {
		return report, errors.New("audit: Request.Ref is required")
	}
	if errs := req.Suite.Validate("suite"); len(errs) > 0 {
		return report, fmt.Errorf("%w: %w", ErrInvalidSuite, errors.Join(errs...))
	}
	if req.BatchTime.IsZero() {
		req.BatchTime = time.Now()
	}
	report, err := e.run(ctx, req, start)
	if rf := (errRefull{}); errors.As(err, &rf) && !errors.Is(err, ErrInfrastructure) { // not over a crash (duckhandle.go)
		e.opts.Logger.Info("audit: incremental audit given up, auditing full", "dataset", req.Dataset, "ref", req.Ref, "why", rf.reason)
		req.Full, req.fullBecause = true, rf.reason
		report, err = e.run(ctx, req, start)
	}
	return report, err
}

// run is one run of Run's audit.
func (e *Engine) run(ctx context.Context, req Request, start time.Time) (report schemas.AuditReport, err error) {
	report = schemas.AuditReport{Dataset: req.Dataset, Ref: req.Ref}
	duck, err := e.acquire()
	if err != nil {
		return report, err
	}
	log := e.opts.Logger.With("dataset", req.Dataset, "repository", req.Repository, "ref", req.Ref)
	// The run's downloads outside the cache are files of the engine's one
	// files directory, named by a number no other run takes, and removed
	// when the run ends (a directory of its own per run would cost a
	// mkdir and an rmdir more per batch, the costliest file-system calls
	// of a small batch's audit).
	seq := e.seq.Add(1)

	r := &run{e: e, duck: duck, req: req, log: log, catalog: fmt.Sprintf("run_%d", seq),
		views: map[viewKey]*view{}, types: map[string]string{}, deltaSnaps: map[string]deltaResult{}, planned: map[int]string{},
		collisions: map[string]error{}}
	defer func() {
		for _, f := range r.made {
			_ = os.Remove(f)
		}
		e.cache.unpin(r.pinned)
		if freed, err := e.cache.evict(); err != nil {
			log.Warn("audit cache eviction", "err", err)
		} else if freed > 0 {
			log.Info("audit cache evicted least recently used files", "bytes", freed)
		}
	}()
	defer func() {
		if err == nil && req.BaseRef != "" {
			e.targetEntries.found(log, r)
		}
	}()
	defer func() {
		r.close()
		// A run that saw an error asks whether DuckDB crashed: then it
		// drops the database for the next run, and the run's results,
		// made on a database that failed every statement after the
		// crash, are not a verdict: it is retried (infrastructure). A
		// run whose own statement crashed DuckDB (crashCause), when the
		// same audit crashed it before, is refused instead: retried, it
		// would crash it again, failing every run in flight each time.
		if (err != nil || !report.Passed) && e.crashed(duck) {
			e.retire(duck)
			cause := crashCause(cmp.Or(err, r.infra))
			key := req.Repository + "\x00" + req.Dataset + "\x00" + req.Ref + "\x00" + req.part
			if _, again := e.crashers.get(key); cause != nil && again {
				report, err = r.crashRefusal(report, cause, start), nil
			} else if !errors.Is(err, ErrInfrastructure) && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
				err = fmt.Errorf("%w: DuckDB crashed during the audit and its database was opened again: %w", ErrInfrastructure, cmp.Or(err, r.infra, errors.New("checks failed on it")))
				report.Passed = false
			}
			if cause != nil {
				e.crashers.put(key, struct{}{})
			}
		}
		e.release(duck)
	}()
	report.Mode, report.ModeReason = r.decide(ctx)
	if err := r.prepare(ctx); err != nil {
		return report, err
	}
	r.planFusion(ctx) // runs nothing in DuckDB: no view is asked for before the probation is settled
	if err := r.settleProbation(ctx); err != nil {
		return report, err
	}
	checks := r.checkAll(ctx)
	if r.inc != nil && ctx.Err() == nil && r.infra == nil && r.refull != "" {
		return report, errRefull{r.refull}
	}
	if r.inc != nil && ctx.Err() == nil && r.infra == nil {
		why, err := r.schemaDisagreement(ctx)
		switch {
		case err != nil && r.infra == nil:
			r.infra = fmt.Errorf("%w: %w", ErrInfrastructure, err)
		case why != "":
			return report, errRefull{why}
		}
	}
	if r.inc != nil && ctx.Err() == nil && r.infra == nil {
		if why := r.planFailed(); why != "" {
			return report, errRefull{why}
		}
	}
	report.Checks = append(checks, r.unaudited(ctx)...)
	report.Checks = append(report.Checks, r.foreignAddresses(ctx)...)
	report.Checks = append(report.Checks, r.storedSizes(ctx)...)
	report.Checks = append(report.Checks, r.relinked(ctx)...)
	report.Checks = append(report.Checks, r.mergeHazards(ctx)...)
	if err := ctx.Err(); err != nil {
		return report, err
	}
	if r.infra != nil {
		log.Warn("audit could not run; to be retried", "err", r.infra)
		return report, r.infra
	}
	report.Passed = len(report.Failed()) == 0
	finiteSamples(report.Checks)
	r.nameObjects(report.Checks)
	report = clipReport(report, e.opts.MaxSampleValueBytes, e.opts.MaxReportBytes)
	report.DurationMs = time.Since(start).Milliseconds()
	p, f, w := report.Counts()
	log.Info("audit done", "passed", report.Passed, "checks_passed", p, "checks_failed", f, "checks_warned", w,
		"duration_ms", report.DurationMs)
	return report, nil
}

type viewKey struct{ schema, table string } // table in lower case

// view is one table in one schema of the run's DuckDB.
type view struct {
	table     Table
	ref       string
	objects   []Object
	files     []string
	synthetic bool // no file of the table anywhere: columns made up from the checks
	delta     *deltaSnapshot
	broken    bool // a Delta log the reader does not understand (colsErr says why): no view
	cols      []column
	colsErr   error
}

type column struct{ name, typ string }

type run struct {
	e *Engine
	// duck is the engine's DuckDB the run holds (acquire); pool is its
	// sql.DB.
	duck *duckDB
	req  Request
	log  *slog.Logger
	// catalog is the run's in-memory database inside the engine's DuckDB;
	// conn uses it (USE) and is the run's only connection, opened when a
	// query first needs it (lazyConn).
	catalog string
	conn    *lazyConn
	views   map[viewKey]*view
	// types caches DuckDB's canonical type names.
	types map[string]string
	// pinned are the cache files this run uses, kept from eviction.
	pinned []string
	// made are the files of the engine's files directory this run named
	// for its downloads (downloader.local), removed when it ends.
	made []string
	// deltaSnaps are the Delta tables read, by ref and table.
	deltaSnaps map[string]deltaResult
	// planned are expressions a kind's plan chose for a check (by index)
	// instead of the first of its agg, e.g. unique's bitmap count; dropped
	// when the scan fails, to count the plain way.
	planned map[int]string
	// held are the entries over a limit this run found on its target
	// (onBase), path to the target's name; under heldMu.
	heldMu sync.Mutex
	held   map[string]string
	// changedMemo are the changes under each table prefix, asked once.
	changedMemo map[string][]Object
	// collisions are the column-name collisions of each table (by lower-case name).
	collisions map[string]error
	// laterClaims are the row-group claims of the batch's one file of each
	// table (by lower-case name) that the fused statement settles (claims.go).
	laterClaims map[string]*claimsPlan
	// footerCols are the top-level columns of each local Parquet file
	// as its footer names them, once columnCollision found them unique
	// (fileSchema takes a batch file's types from the fused statement).
	footerCols map[string][]fileColumn
	// viewIDs are the views' definitions by their files' identities, for
	// the memo (memoView); "" for a view without.
	viewIDs map[viewKey]string
	// foreign are the paths foreign_addresses refused.
	foreign map[string]bool
	// jsonTypes are the column types (by lower-case name, upper case) of
	// each local JSON lines file read alone (pandasJSONFiles), probed once.
	jsonTypes map[string]map[string]string
	// infra is the first failure caused by the machine or lakeFS, not the
	// data: a check's (wrapping ErrInfrastructure) or a download's (ready).
	// The run returns it, to be retried.
	infra error
	// inc is the run's incremental plan; nil for a full audit.
	inc *increment
	// refull is why an incremental run is given up for a full one, found
	// while judging its checks (pandasColumn), or "".
	refull string
	// dl brings the run's files to local files.
	dl downloader
	// toGet are the files named (plan) and not downloaded yet, with their
	// local names; getErr is why a download failed (ready).
	toGet      []fetch
	toGetLocal []string
	getErr     error
	// fused are the aggregates of batch views fetched together, by the
	// text of each query (fuse.go).
	fused map[string]*fusion
	// probation are the batch views openDB left for the fused statement
	// to prove before they are made (settleProbation).
	probation []probe
	// readOnce calls Request.BeforeRead (reading); readErr is its error.
	readOnce sync.Once
	readErr  error
	// diffsAhead are two-dot diffs asked for before it was known they
	// would be needed (deriveAhead), by from, to and prefix.
	diffsAhead map[[3]string]*diffAhead
}

func (r *run) close() {
	if r.conn == nil || r.conn.conn == nil {
		return
	}
	// Cleanup runs even when the run's context has ended.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if r.emptyCatalog(ctx) && r.catalogs().put(pooledCatalog{conn: r.conn.conn, name: r.catalog}) {
		return
	}
	for _, s := range teardownSQL(r.catalog) {
		if _, err := r.conn.ExecContext(ctx, s); err != nil {
			r.log.Warn("audit cleanup failed", "sql", s, "err", err)
			// A connection in an unknown state must not go back to the pool.
			r.conn.conn.Raw(func(any) error { return driver.ErrBadConn })
			break
		}
	}
	r.conn.conn.Close()
}

// emptyCatalog drops the views the run made in its catalog, leaving it as
// runSQL made it, for the next run (runCatalogs); false when runSQL did not
// finish making it, a drop failed or a statement changed the connection's
// search path.
func (r *run) emptyCatalog(ctx context.Context) bool {
	if !r.conn.made || r.conn.searchPath {
		return false
	}
	for _, v := range r.conn.views {
		if _, err := r.conn.conn.ExecContext(ctx, "DROP VIEW IF EXISTS "+v); err != nil {
			return false
		}
	}
	return true
}

// runCatalogs are run catalogs made by runSQL and emptied by the runs
// that used them, each on its connection: a run takes one instead of
// attaching and tearing down its own (ATTACH, two CREATE SCHEMA, two USE
// and DETACH cost about 0.9 ms of CPU per run against 0.2 for dropping its
// one view, TestRunCatalogsAreReused). At most maxRunCatalogs are kept.
type runCatalogs struct {
	ch chan pooledCatalog
}

type pooledCatalog struct {
	conn *sql.Conn
	name string
}

const maxRunCatalogs = 16

func newRunCatalogs() *runCatalogs { return &runCatalogs{ch: make(chan pooledCatalog, maxRunCatalogs)} }

func (p *runCatalogs) take() (pooledCatalog, bool) {
	if p == nil {
		return pooledCatalog{}, false
	}
	select {
	case pc := <-p.ch:
		return pc, true
	default:
		return pooledCatalog{}, false
	}
}

// put keeps pc for a later run; false when the pool is full.
func (p *runCatalogs) put(pc pooledCatalog) bool {
	if p == nil {
		return false
	}
	select {
	case p.ch <- pc:
		return true
	default:
		return false
	}
}

// close tears down the kept catalogs and closes their connections.
func (p *runCatalogs) close() {
	if p == nil {
		return
	}
	for {
		select {
		case pc := <-p.ch:
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			for _, s := range teardownSQL(pc.name) {
				if _, err := pc.conn.ExecContext(ctx, s); err != nil {
					break
				}
			}
			cancel()
			pc.conn.Close()
		default:
			return
		}
	}
}

func (r *run) table(name string) Table {
	for _, t := range r.req.Suite.Tables {
		if strings.EqualFold(t.Name, name) {
			return t
		}
	}
	return Table{}
}

var mentionsBase = regexp.MustCompile(`(?i)\bbase\s*\.`)

// mentionsSchema matches a text naming something of the schema (main.t).
var mentionsSchema = map[string]*regexp.Regexp{
	schemaMain:  regexp.MustCompile(`(?i)\bmain\s*\.`),
	schemaBatch: regexp.MustCompile(`(?i)\bbatch\s*\.`),
	schemaBase:  mentionsBase,
}

// baseErr is why a check cannot run, if it needs the base ref and has none.
func (r *run) baseErr(c Check) error {
	k := kindOf(c)
	needsBase := c.scope() == ScopeBatch || k.compares || (k.custom && mentionsBase.MatchString(c.SQL))
	if needsBase && r.req.BaseRef == "" {
		return errors.New("no base ref to compare with")
	}
	return nil
}

// needed lists the views the checks use. Custom SQL may name any table, so
// it brings in every table of its scope.
func (r *run) needed(ctx context.Context) map[viewKey]bool {
	need := map[viewKey]bool{}
	hasBase := r.req.BaseRef != ""
	addAll := func(schema string) {
		for _, t := range r.req.Suite.Tables {
			need[viewKey{schema, strings.ToLower(t.Name)}] = true
		}
	}
	for i, c := range r.req.Suite.Checks {
		if c.scope() == ScopeBatch && !hasBase {
			continue
		}
		if r.inc != nil && r.inc.planned[i] {
			need[viewKey{schemaBatch, strings.ToLower(c.Table)}] = true
			continue
		}
		schema := schemaOf(c)
		if hasBase && r.table(c.Table).format() == FormatDelta && interimFailing(c) != "" {
			need[viewKey{schemaInterim, strings.ToLower(c.Table)}] = true // deltainterim.go
		}
		if k := kindOf(c); k.custom {
			addAll(schema)
			if hasBase && mentionsBase.MatchString(c.SQL) {
				addAll(schemaBase)
			}
		} else {
			need[viewKey{schema, strings.ToLower(c.Table)}] = true // main for a kind that compares (validated)
			if k.compares && hasBase {
				need[viewKey{schemaBase, strings.ToLower(c.Table)}] = true
			}
			// A where condition may read other tables in a subquery: they
			// are its to read whether or not another check reads them. One
			// of the row's values alone (rowOnly) reads none, whatever
			// words it holds: an incremental audit reads no more for it.
			for _, t := range whereTables(c, r.req.Suite.Tables) {
				if r.e.rowOnly(ctx, c.Where) {
					break
				}
				need[viewKey{schema, t}] = true
				// A subquery may name another schema's table (batch.customers).
				for _, sc := range []string{schemaMain, schemaBatch, schemaBase} {
					if mentionsSchema[sc].MatchString(c.Where) && (hasBase || sc == schemaMain) {
						need[viewKey{sc, t}] = true
					}
				}
			}
		}
	}
	return need
}

// prepare lists and downloads the table files and sets up DuckDB.
func (r *run) prepare(ctx context.Context) error {
	req := r.req
	var pinMu sync.Mutex
	dl := downloader{src: r.e.opts.Source, repo: req.Repository, cacheDir: r.e.opts.CacheDir,
		workDir: r.e.filesDir(), parallel: r.e.opts.DownloadParallelism, cache: r.e.cache, files: &r.e.fileSeq,
		pinned: func(p string) { pinMu.Lock(); r.pinned = append(r.pinned, p); pinMu.Unlock() },
		made:   func(p string) { pinMu.Lock(); r.made = append(r.made, p); pinMu.Unlock() }, before: r.reading}
	r.dl = dl
	listStart := time.Now()
	for k := range r.needed(ctx) {
		t := r.table(k.table)
		v := &view{table: t, ref: req.Ref}
		if k.schema == schemaBase {
			v.ref = req.BaseRef
		}
		r.views[k] = v
		if t.format() == FormatDelta {
			if err := r.deltaView(ctx, dl, k, v); err != nil {
				return err
			}
			if k.schema == schemaInterim && !v.broken && len(v.objects) == 0 {
				delete(r.views, k) // the batch's versions removed no file they added
			}
			continue
		}
		var err error
		switch k.schema {
		case schemaMain, schemaBase:
			if k.schema == schemaMain && req.Onto {
				v.objects, err = r.mergedObjects(ctx, t)
				break
			}
			v.objects, err = r.list(ctx, v.ref, t.Path)
		case schemaBatch:
			v.objects, err = r.changed(ctx, t.Path)
			if n := r.e.opts.MaxListObjects; err == nil && len(v.objects) > n {
				err = errOverBudget{fmt.Errorf("%w: %d changed objects under %s, over the listing budget of %d (audit.max_list_objects)",
					ErrOverBudget, len(v.objects), t.Path, n)}
			}
		}
		if errors.As(err, new(errOverBudget)) {
			v.broken, v.colsErr, v.objects = true, fmt.Errorf("table %s: %w", t.Name, err), nil
			continue
		}
		if err != nil {
			return fmt.Errorf("audit: list %s of table %s at %s: %w", k.schema, t.Name, v.ref, err)
		}
		v.objects = tableFiles(t.Path, v.objects)
	}
	// One download per distinct file: main and batch share the changed
	// files, and with a cache main and base share the unchanged ones.
	var fetches []fetch
	index := map[string]int{}
	slots := map[viewKey][]int{}
	var bytes int64
	for k, v := range r.views {
		for _, o := range v.objects {
			key := cmp.Or(o.at, v.ref) + "\x00" + o.Path
			if r.e.opts.CacheDir != "" && o.Address != "" {
				key = cacheName(req.Repository, o)
			}
			i, ok := index[key]
			if !ok {
				i = len(fetches)
				index[key] = i
				fetches = append(fetches, fetch{ref: cmp.Or(o.at, v.ref), obj: o})
				bytes += o.Size
			}
			slots[k] = append(slots[k], i)
		}
	}
	if n, b := r.e.opts.MaxFiles, r.e.opts.MaxBytes; len(fetches) > n || bytes > b {
		// Nothing is downloaded: every check errors, naming the budget.
		err := fmt.Errorf("%w: %d files of %d bytes, over the budget of %d files (audit.max_files) and %d bytes (audit.max_bytes)",
			ErrOverBudget, len(fetches), bytes, n, b)
		for _, v := range r.views {
			v.broken, v.colsErr, v.objects = true, err, nil
		}
		r.log.Warn("audit over its budget", "err", err)
		return r.openDB(ctx, nil)
	}
	local := r.plan(fetches)
	for k, v := range r.views {
		v.files = each(slots[k], func(i int) string { return local[i] })
	}
	r.log.Debug("audit files listed", "views", len(r.views), "files", len(fetches), "bytes", bytes,
		"list_ms", time.Since(listStart).Milliseconds())

	schemaFiles, err := r.schemaFiles(ctx, dl)
	if err != nil {
		return err
	}
	return r.openDB(ctx, schemaFiles)
}

// schemaFiles finds, for each view without files, a file of the same table
// that gives it its columns (schemaFile). Tables with no file anywhere are
// left out (their views are synthetic).
func (r *run) schemaFiles(ctx context.Context, dl downloader) (map[viewKey]string, error) {
	out := map[viewKey]string{}
	byTable := map[string]string{} // views of the same table share one
	for k, v := range r.views {
		if len(v.files) > 0 || v.broken {
			continue
		}
		f, ok := byTable[k.table]
		if !ok {
			var err error
			if f, err = r.schemaFile(ctx, dl, k.table, v.table); err != nil {
				return nil, err
			}
			byTable[k.table] = f
		}
		if f != "" {
			out[k] = f
		}
	}
	return out, nil
}

// schemaFile is a file of table t (key: its lower-case name): another
// view's, else the first file of the table at the ref or the base ref; ""
// when it has none.
func (r *run) schemaFile(ctx context.Context, dl downloader, key string, t Table) (string, error) {
	for _, s := range []string{schemaMain, schemaBatch, schemaBase} {
		if o := r.views[viewKey{s, key}]; o != nil && len(o.files) > 0 {
			return o.files[0], nil
		}
	}
	for _, ref := range []string{r.req.Ref, r.req.BaseRef} {
		if ref == "" {
			continue
		}
		var objs []Object
		if t.format() == FormatDelta {
			if snap, err := r.deltaLoad(ctx, dl, ref, t); err == nil {
				objs = snap.objects()
			} else if !errors.As(err, new(errDeltaTable)) {
				return "", fmt.Errorf("audit: %w", err)
			}
		} else {
			var err error
			objs, err = r.e.opts.Source.List(ctx, r.req.Repository, ref, t.Path)
			if err != nil {
				return "", fmt.Errorf("audit: list table %s at %s: %w", t.Name, ref, err)
			}
			objs = tableFiles(t.Path, objs)
		}
		if len(objs) == 0 {
			continue
		}
		return r.plan([]fetch{{ref: ref, obj: objs[0]}})[0], nil
	}
	return "", nil
}

// plan names the local files of fs; they are downloaded when something
// first reads a local file (ready), so that a run whose checks the memo
// and the statistics answer downloads nothing (issue 21).
func (r *run) plan(fs []fetch) []string {
	local := each(fs, r.dl.local)
	r.toGet = append(r.toGet, fs...)
	r.toGetLocal = append(r.toGetLocal, local...)
	return local
}

// ready downloads the files planned so far, before anything reads a local
// file: DuckDB (lazyConn) and the footers' columns (columnCollision). A
// failed download is not the data's verdict: the run errors with it,
// whichever check asked, as it did when it downloaded before the checks
// (the error keeps the class the Source gave it).
func (r *run) ready(ctx context.Context) error {
	if err := r.reading(ctx); err != nil {
		return err
	}
	if r.getErr != nil || len(r.toGet) == 0 {
		return r.getErr
	}
	start := time.Now()
	if err := r.dl.getAll(ctx, r.toGet, r.toGetLocal); err != nil {
		r.getErr = fmt.Errorf("audit: %w", err)
		if r.infra == nil {
			r.infra = r.getErr
		}
		return r.getErr
	}
	r.log.Debug("audit files downloaded", "files", len(r.toGet), "download_ms", time.Since(start).Milliseconds())
	r.toGet, r.toGetLocal = nil, nil
	return nil
}

// reading is called before the run first reads a byte of the batch or of
// a table (ready, every download, relink's comparisons): the first call
// calls Request.BeforeRead, and every call returns its error, which is
// also the run's (infra).
func (r *run) reading(ctx context.Context) error {
	r.readOnce.Do(func() {
		if r.req.BeforeRead == nil {
			return
		}
		if err := r.req.BeforeRead(ctx); err != nil {
			r.readErr = fmt.Errorf("%w: audit: before reading: %w", ErrInfrastructure, err)
		}
	})
	if r.readErr != nil && r.infra == nil {
		r.infra = r.readErr
	}
	return r.readErr
}

// openDB prepares the run's catalog in the engine's DuckDB and defines the
// views of the run's files in it.
//
// The connection opens when a query first needs it (lazyConn): a view whose
// definition DuckDB took before over the same files (goodView) waits for
// it; any other is created now, which opens it.
func (r *run) openDB(ctx context.Context, schemaFiles map[viewKey]string) error {
	r.conn = &lazyConn{r: r}
	for k, v := range r.views {
		if v.broken {
			continue // its checks report why
		}
		if err := r.columnCollision(ctx, k); err != nil {
			v.colsErr = fmt.Errorf("cannot read table %s (%s): %w", v.table.Name, v.ref, err)
			continue
		}
		var s string
		switch f := schemaFiles[k]; {
		case len(v.files) > 0 && v.table.format() == FormatDelta:
			s = deltaViewSQL(k.schema, v.table.Name, v.delta, v.objects, v.files)
		case len(v.files) > 0:
			s = viewSQL(k.schema, v.table.Name, v.table.format(), v.files)
		case f != "":
			s = emptyViewSQL(k.schema, v.table.Name, v.table.format(), f)
		default:
			v.synthetic = true
			s = syntheticEmptyViewSQL(k.schema, v.table.Name, r.guessColumns(v.table.Name))
		}
		// Made now or when the connection opens: dropped at the run's end.
		r.conn.views = append(r.conn.views, qualified(k.schema, v.table.Name))
		good, memo := r.goodView(ctx, k)
		// A Delta view is made now: its types are compared with the log's.
		if memo && r.conn.conn == nil && r.e.memo.has(good) && v.delta == nil {
			r.conn.deferred = append(r.conn.deferred, s)
			continue
		}
		if r.provable(k, v) {
			r.probation = append(r.probation, probe{key: k, sql: s})
			continue
		}
		if err := r.createView(ctx, k, v, s); err != nil {
			return err
		}
	}
	return nil
}

// createView makes view k (definition s) now, on the run's connection, as
// openDB makes a view DuckDB may refuse: a view over files DuckDB cannot
// read fails here and its checks report why (v.colsErr); the others still
// run. The error is the machine's (no connection) or the context's.
func (r *run) createView(ctx context.Context, k viewKey, v *view, s string) error {
	good, memo := r.goodView(ctx, k)
	if err := r.conn.open(ctx); err != nil {
		return err
	}
	// A view over files DuckDB cannot read fails here; its checks report
	// the error and the others still run.
	if _, err := r.conn.ExecContext(ctx, s); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if f := r.unreadableFile(ctx, v); f != "" {
			err = fmt.Errorf("%s cannot be read: %w", f, err)
		}
		v.colsErr = fmt.Errorf("cannot read table %s (%s): %w", v.table.Name, v.ref, err)
		r.log.Warn("audit view failed", "schema", k.schema, "table", v.table.Name, "err", err)
	} else if err := cmp.Or(r.deltaTypeDisagreement(ctx, k, v), r.deltaRecordDisagreement(ctx, v), r.deltaClaimsDisagreement(ctx, k, v)); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		v.colsErr = fmt.Errorf("cannot read table %s (%s): %w", v.table.Name, v.ref, refused(err))
		// A refused table has no view, as one columnCollision refuses:
		// custom SQL naming it errs with the refusal (refusedTable)
		// instead of reading it (TestDeltaRefusedTableErrsCustomSQL).
		if _, err := r.conn.ExecContext(ctx, "DROP VIEW "+qualified(k.schema, v.table.Name)); err != nil {
			return fmt.Errorf("audit: drop the view of refused table %s: %w", v.table.Name, err)
		}
	} else if memo {
		r.e.memo.put(good, true, int64(len(s)))
	}
	return nil
}

// readable: DuckDB binds a read of files in format (a Delta table's files
// as Parquet).
func (r *run) readable(ctx context.Context, format string, files []string) bool {
	ok, _ := r.binds(ctx, format, files)
	return ok
}

// columnCollision is a column of a table's files (those of all its views:
// the ref, the batch and the base) whose name collides with another when
// case is ignored (see caseCollision): Parquet and Delta by their footers,
// CSV and JSON as DuckDB reads each file alone. A file DuckDB cannot read
// is left for the view to report.
func (r *run) columnCollision(ctx context.Context, k viewKey) error {
	if err, ok := r.collisions[k.table]; ok {
		return err
	}
	var files []string
	objPath := map[string]string{}
	ids := map[string]string{} // the files' identities, for the memo
	var table, parts []string
	var nested map[string][]string // the Delta schema's struct fields
	format, tablePath := "", ""
	for _, s := range []string{schemaMain, schemaBase, schemaBatch, schemaInterim} {
		v := r.views[viewKey{s, k.table}]
		if v == nil {
			continue
		}
		format, tablePath = v.table.format(), v.table.Path
		objs := v.objects
		if r.e.memo != nil && len(objs) == len(v.files) {
			objs = r.addressed(ctx, v)
		}
		for i, f := range v.files {
			if _, ok := objPath[f]; !ok {
				files = append(files, f)
				objPath[f] = objs[i].Path
				if id, ok := r.fileIdentity(objs[i], cmp.Or(objs[i].at, v.ref)); ok && r.e.memo != nil {
					ids[f] = id
				}
			}
		}
		if v.delta != nil && table == nil {
			table = each(v.delta.schema, func(c ColumnType) string { return c.Name })
			parts = each(v.delta.partition, func(c ColumnType) string { return c.Name })
			if v.delta.meta != nil {
				nested = deltaStructPaths(v.delta.meta.SchemaString)
			}
		}
	}
	var err error
	if len(files) > 0 {
		columns := func(ctx context.Context, files []string) (map[string][]fileColumn, error) {
			return r.parquetColumnsMemo(ctx, files, ids)
		}
		if format == FormatCSV || format == FormatJSONL {
			columns = func(ctx context.Context, files []string) (map[string][]fileColumn, error) {
				return r.textColumns(ctx, format, files)
			}
		}
		if format == FormatJSONL {
			// Before DuckDB reads a byte of them: a line nested deep
			// enough crashed it (jsondepth.go).
			if err := r.ready(ctx); err != nil {
				return err // the run's, not the table's
			}
			if err := refused(jsonDepths(ctx, files, objPath)); err != nil {
				r.collisions[k.table] = err
				return err
			}
		}
		cols, qerr := columns(ctx, files)
		if r.e.columnsFault != nil && qerr == nil {
			qerr = r.e.columnsFault()
		}
		if invalidating(qerr) {
			// DuckDB crashed listing them: the error is the run's
			// (infrastructure, duckhandle.go), not a verdict on the
			// files, and no later query of the run reads them.
			err = qerr
		} else if deep := (errTooDeep{}); errors.As(qerr, &deep) {
			err = fmt.Errorf("file %s: its schema nests groups more than %d deep, which DuckDB's reader cannot take without overflowing its stack: it is not read", objPath[deep.file], maxDuckDBSchemaDepth)
		} else if unlisted := (errUnlisted{}); errors.As(qerr, &unlisted) {
			err = quote(fmt.Errorf("file %s: DuckDB reads it but cannot list its columns (%v): readers may disagree on them", objPath[unlisted.file], unlisted.err), unlisted.err)
		}
		if qerr == nil {
			err = caseCollision(cols, files, objPath, table, parts, nested)
			if err == nil && format == FormatParquet {
				if r.footerCols == nil {
					r.footerCols = map[string][]fileColumn{}
				}
				maps.Copy(r.footerCols, cols)
			}
			if err == nil && format == FormatParquet {
				err = pandasRenamed(cols, files, objPath)
			}
			if err == nil && format == FormatParquet {
				err = arrowRestored(cols, files, objPath, columnsRead(r.req.Suite.Checks, k.table))
			}
			if err == nil && format == FormatParquet {
				err = enumText(cols, files, objPath, r.req.Suite.Checks, k.table)
			}
			if err == nil && format == FormatParquet {
				err = textBesideOther(cols, files, objPath, r.req.Suite.Checks, k.table)
			}
			if err == nil && format == FormatParquet {
				err = r.integersBesideText(ctx, cols, files, objPath, ids, r.req.Suite.Checks, k.table)
			}
			if err == nil && format == FormatParquet {
				err = r.unionValues(ctx, cols, files, objPath, ids, r.req.Suite.Checks, k.table)
			}
			if err == nil && format == FormatParquet {
				err = r.unionRendered(ctx, cols, files, objPath, r.req.Suite.Checks, k.table)
			}
			if err == nil && format == FormatParquet {
				err = sparkSchemaDisagreement(cols, files, objPath)
			}
			if err == nil && format == FormatParquet {
				err = sparkIntsApart(cols, files, objPath)
			}
			if err == nil && format == FormatParquet {
				err = r.sparkChars(ctx, cols, files, objPath, ids)
			}
			if err == nil && format == FormatParquet {
				err = sparkDefaultsMissing(cols, files, objPath)
			}
			if err == nil && format == FormatDelta {
				err = r.deltaSparkChars(ctx, k.table, cols, files, objPath, ids)
			}
			if err == nil && format == FormatDelta {
				err = r.deltaExistsDefaults(k.table, cols, files, objPath)
			}
			if err == nil && format == FormatParquet {
				err = r.int96Nanos(ctx, cols, files, objPath, ids, r.req.Suite.Checks, k.table)
			}
			if err == nil && format != FormatDelta {
				err = hiveCollision(cols, files, objPath, tablePath)
			}
			if err == nil && format != FormatDelta {
				err = partitionLayout(files, objPath, tablePath)
			}
			if err == nil && format == FormatCSV {
				err = csvHeaders(cols, files, objPath)
			}
			if err == nil && (format == FormatParquet || format == FormatDelta) {
				err = r.int96Range(ctx, cols, files, objPath, ids)
			}
			if err == nil && (format == FormatParquet || format == FormatDelta) {
				err = r.sparkRebase(ctx, cols, files, objPath, ids)
			}
			if err == nil && (format == FormatParquet || format == FormatDelta) {
				err = r.extremeTimes(ctx, cols, files, objPath, ids, r.req.Suite.Checks, k.table)
			}
			if err == nil && (format == FormatParquet || format == FormatDelta) {
				err = legacyLists(cols, files, objPath, r.req.Suite.Checks, k.table)
			}
			if err == nil && (format == FormatParquet || format == FormatDelta) {
				err = wideDecimals(cols, files, objPath, r.req.Suite.Checks, k.table)
			}
			if err == nil && (format == FormatParquet || format == FormatDelta) {
				err = halfFloats(cols, files, objPath, r.req.Suite.Checks, k.table)
			}
			if err == nil && format == FormatDelta {
				err = deltaNanoTimes(ctx, files, objPath)
			}
			if err == nil && (format == FormatParquet || format == FormatDelta) {
				err = r.readerIndexes(ctx, files, objPath, ids)
			}
			if err == nil && (format == FormatParquet || format == FormatDelta) && !r.e.claimsUnchecked {
				err = r.claimsHold(ctx, k.table, files, objPath, ids)
			}
		}
		if err == nil && format == FormatCSV {
			err = r.nullSpelling(ctx, files, objPath)
		}
		if err == nil && (format == FormatCSV || format == FormatJSONL) {
			textChecked := map[string]bool{}
			for _, c := range r.req.Suite.Checks {
				if strings.EqualFold(c.Table, k.table) && (c.Kind == KindAcceptedValues || c.Kind == KindRegex || c.Kind == KindUnique) {
					for _, col := range c.columns() {
						textChecked[strings.ToLower(col)] = true
					}
				}
			}
			err = r.typedSpelling(ctx, format, files, objPath, textChecked)
		}
		if unlisted := (errUnlisted{}); err == nil && qerr != nil && !errors.As(qerr, &unlisted) && ctx.Err() == nil && r.readable(ctx, format, files) {
			// Files DuckDB reads whose columns or metadata could not be
			// listed (a CSV file with an empty first line read alone): the
			// reader checks above that need the listing were skipped, and
			// the table would pass them unseen. A table DuckDB cannot read
			// is left for its view to report.
			err = quote(fmt.Errorf("table %s: DuckDB reads its files but cannot list their columns or metadata (%v): readers may disagree on them", k.table, qerr), qerr)
		}
	}
	// A refusal names the data, whose words must not make it the
	// machine's (refused).
	err = refused(err)
	r.collisions[k.table] = err
	return err
}

// setupSQL configures the engine's DuckDB: resource limits first, then
// file access restricted to the engine's directories, then the lock. The
// temporary directory must be set while external access is still on.
func setupSQL(tempDir, memoryLimit string, threads int, allowed []string) []string {
	s := []string{
		"SET temp_directory = " + quoteLiteral(tempDir),
		"SET GLOBAL TimeZone = 'UTC'",
		// In file order a LIMITed sample query stops at the first failing
		// rows; unordered, DuckDB scans every row group (issue 13). Audits
		// write no tables, so the order costs their aggregates nothing.
		"SET preserve_insertion_order = true",
	}
	if memoryLimit != "" {
		s = append(s, "SET memory_limit = "+quoteLiteral(memoryLimit))
	}
	if threads > 0 {
		s = append(s, "SET threads = "+strconv.Itoa(threads))
	}
	return append(s,
		"SET allowed_directories = "+literalList(allowed),
		"SET enable_external_access = false",
		"SET lock_configuration = true",
	)
}

// runSQL makes a run's catalog with its three schemas and makes it the
// connection's default, so that plain and schema-qualified names (t,
// base.t) resolve inside the run.
func runSQL(catalog string) []string {
	c := quoteIdent(catalog)
	return []string{
		"ATTACH ':memory:' AS " + c,
		"CREATE SCHEMA " + c + "." + quoteIdent(schemaBatch),
		"CREATE SCHEMA " + c + "." + quoteIdent(schemaBase),
		"CREATE SCHEMA " + c + "." + quoteIdent(schemaInterim),
		"USE " + c,
	}
}

func teardownSQL(catalog string) []string {
	return []string{"USE memory", "DETACH DATABASE IF EXISTS " + quoteIdent(catalog)}
}

// guessColumns gives a table that has no file anywhere the columns its
// checks name, typed as the checks expect them.
func (r *run) guessColumns(table string) []ColumnType {
	var cols []ColumnType
	seen := map[string]bool{}
	add := func(name, typ string) {
		if name != "" && !seen[strings.ToLower(name)] {
			seen[strings.ToLower(name)] = true
			cols = append(cols, ColumnType{Name: name, Type: typ})
		}
	}
	checks := slices.DeleteFunc(slices.Clone(r.req.Suite.Checks), func(c Check) bool { return !strings.EqualFold(c.Table, table) })
	for _, c := range checks { // the types a schema contract gives first
		for _, ct := range c.Schema {
			add(ct.Name, ct.Type)
		}
	}
	for _, c := range checks {
		typ := cmp.Or(kindOf(c).columnType, "VARCHAR")
		for _, col := range c.columns() {
			add(col, typ)
		}
	}
	return cols
}

// describe returns the columns of a view.
func (r *run) describe(ctx context.Context, schema, table string) ([]column, error) {
	v := r.views[viewKey{schema, strings.ToLower(table)}]
	if v == nil {
		return nil, fmt.Errorf("table %s not loaded", table)
	}
	if v.cols != nil || v.colsErr != nil {
		return v.cols, v.colsErr
	}
	v.cols, v.colsErr = r.queryColumns(ctx, "DESCRIBE "+qualified(schema, v.table.Name))
	if v.colsErr != nil {
		v.colsErr = fmt.Errorf("cannot read table %s (%s): %w", table, v.ref, v.colsErr)
	}
	return v.cols, v.colsErr
}

func (r *run) queryColumns(ctx context.Context, q string) ([]column, error) {
	return queryColumnsOn(ctx, r.conn, q)
}

// queryColumnsOn is queryColumns on db (the engine's pool, for a query
// made before the run's connection is).
func queryColumnsOn(ctx context.Context, db interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, q string) ([]column, error) {
	rows, err := db.QueryContext(ctx, q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	names, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	cols := []column{}
	for rows.Next() {
		vals, err := scanValues(rows.Scan, len(names))
		if err != nil {
			return nil, err
		}
		cols = append(cols, column{name: fmt.Sprint(vals[0]), typ: fmt.Sprint(vals[1])})
	}
	return cols, rows.Err()
}

// canonicalType is DuckDB's own name for a type written in config (INT -> INTEGER).
func (r *run) canonicalType(ctx context.Context, t string) (string, error) {
	t = strings.TrimSpace(t)
	if c, ok := r.types[strings.ToUpper(t)]; ok {
		return c, nil
	}
	if !typeName.MatchString(t) {
		return "", fmt.Errorf("%q is not a type name", t)
	}
	var c string
	if err := r.conn.QueryRowContext(ctx, "SELECT typeof(CAST(NULL AS "+t+"))").Scan(&c); err != nil {
		return "", fmt.Errorf("unknown type %q: %w", t, err)
	}
	r.types[strings.ToUpper(t)] = c
	return c, nil
}
