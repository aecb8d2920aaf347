// Package janitor deletes lakewap's batch branches once nobody needs them:
// the branches of aborted and failed runs after their dataset's retention,
// and `wap-` branches without a live run (published batches, runs the state
// store no longer has, leftovers) after a grace period. It never deletes a
// branch that a dataset publishes to or branches from (its target, source
// and source_refs), nor the branch of a run that is still in progress.
//
// It may import pipeline (for Run), pipeline/lakefs (for the branch and
// commit types its Lake returns), schemas and the standard library.
package janitor

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/pipeline/lakefs"
	"github.com/lakewap/lakewap/schemas"
)

// Lake is what the janitor needs from lakeFS; *lakefs.Client has it.
type Lake interface {
	ListBranches(ctx context.Context, repo, prefix string) ([]lakefs.Branch, error)
	GetCommit(ctx context.Context, repo, ref string) (lakefs.Commit, error)
	DeleteBranch(ctx context.Context, repo, branch string) error
}

// Dataset is what the janitor knows of a configured dataset.
type Dataset struct {
	Name       string
	Repository string
	Target     string // never deleted
	Source     string // never deleted; empty means Target
	// SourceRefs are the other refs a batch may branch from; never deleted.
	SourceRefs []string
	// AbortedRetention is how long the branch of an aborted or failed run
	// is kept for inspection (default 72h).
	AbortedRetention time.Duration
}

// Config wires a Janitor.
type Config struct {
	Lake Lake
	// Release, if set, frees what Runs and Cancel read through (their
	// Kafka connections); Close calls it.
	Release func()
	// Runs returns every run the state store holds, across all partitions.
	// An error stops the sweep: without the runs, no branch can be judged.
	Runs     func(ctx context.Context) ([]pipeline.Run, error)
	Datasets []Dataset
	// AbandonedAfter is how old the head commit of a branch without a live
	// run must be before it is deleted; for a published run it is counted
	// from the publish (default 24h).
	AbandonedAfter time.Duration
	// Prefix of the branches the janitor looks at (default schemas.BranchPrefix).
	Prefix string
	Now    func() time.Time
	Logger *slog.Logger
	// Registerer, if set, gets the janitor's metrics (metrics.go): the
	// branches deleted, by repository and why.
	Registerer prometheus.Registerer
	// MaxRunAge (0: never) is the longest a run may be in progress since it
	// landed (config's MaxRunAge). An older run is stuck (its partition has
	// no owner, say): Cancel asks the daemon to cancel it, and its branch is
	// then an aborted run's branch.
	MaxRunAge time.Duration
	// Cancel asks the daemon to cancel run (a BatchCancelled on the input
	// topic: one path per effect). Required with MaxRunAge.
	Cancel func(ctx context.Context, run pipeline.Run, reason string) error
	// Own, if set, is lakewap's lakeFS user as lakeFS names the committer
	// of the commits it makes (lakefs.Client.Committer), asked once a sweep
	// when a branch without a run is found. A branch without a run whose
	// head commit lakewap made (a seal: the store forgot its run, which
	// max_finished_runs newer runs of a producer's can make it do before the
	// retention ends) is kept as long as an aborted run's branch of its
	// repository, not AbandonedAfter. No writer can make a commit lakeFS
	// names so.
	Own func(ctx context.Context) (string, error)
}

// Defaults.
const (
	DefaultAbortedRetention = 72 * time.Hour
	DefaultAbandonedAfter   = 24 * time.Hour
)

// Why a branch is deleted.
const (
	WhyAbortedExpired = "aborted_expired" // aborted or failed run, retention passed
	WhyPublished      = "published"       // its batch is on the target; the branch is a leftover
	WhyAbandoned      = "abandoned"       // no run in the state store
	// WhyOverdue: the run outlived MaxRunAge; it is cancelled, not deleted.
	WhyOverdue = "overdue"
)

// Stager is a Lake that says when a branch's uncommitted changes were
// made (lakefs.Client.NewestStaged): the newest of the first limit added
// or changed, and whether there are any.
type Stager interface {
	NewestStaged(ctx context.Context, repo, branch string, limit int) (newest time.Time, staged bool, err error)
}

// maxStagedLooked bounds the uncommitted changes of a run-less branch
// judged abandoned whose times are read (one listing each): a branch whose
// first changes by path are all older than the abandon age is deleted
// whatever the later ones.
const maxStagedLooked = 10

// StagedYoung is why a run-less branch whose head commit is old is kept:
// a writer staged changes on it lately.
const StagedYoung = "no run, uncommitted changes younger than the abandon age"

// HeadMoved is why a branch judged to be deleted is kept: its head is not
// the one the sweep's listing gave (a writer committed since); the next
// sweep judges it by its new head.
const HeadMoved = "head moved since the sweep listed it"

// Decision is the janitor's verdict on one branch.
type Decision struct {
	Repository string         `json:"repository"`
	Branch     string         `json:"branch"`
	BatchID    string         `json:"batch_id,omitempty"`
	Dataset    string         `json:"dataset,omitempty"`
	State      pipeline.State `json:"state,omitempty"` // "" when no run has the branch
	Age        time.Duration  `json:"age"`             // since the abort/failure/publish, or of the head commit
	Delete     bool           `json:"delete"`
	Why        string         `json:"why"`             // one of the Why* constants when Delete, else why it stays
	Deleted    bool           `json:"deleted"`         // the delete was done (not in a dry run)
	Cancelled  bool           `json:"cancelled"`       // an overdue run was asked to cancel (not in a dry run)
	Err        string         `json:"error,omitempty"` // a delete or a lookup that failed
}

// Janitor decides and deletes.
type Janitor struct {
	cfg     Config
	log     *slog.Logger
	metrics *metrics
}

// New checks cfg and fills its defaults.
func New(cfg Config) (*Janitor, error) {
	switch {
	case cfg.Lake == nil:
		return nil, errors.New("janitor: Config.Lake is required")
	case cfg.Runs == nil:
		return nil, errors.New("janitor: Config.Runs is required")
	case cfg.AbandonedAfter < 0:
		return nil, errors.New("janitor: AbandonedAfter must not be negative")
	case cfg.MaxRunAge > 0 && cfg.Cancel == nil:
		return nil, errors.New("janitor: Config.Cancel is required with MaxRunAge")
	}
	cfg.AbandonedAfter = cmp.Or(cfg.AbandonedAfter, DefaultAbandonedAfter)
	cfg.Prefix = cmp.Or(cfg.Prefix, schemas.BranchPrefix)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	m, err := newMetrics(cfg.Registerer, cfg.Datasets)
	if err != nil {
		return nil, fmt.Errorf("janitor: metrics: %w", err)
	}
	return &Janitor{cfg: cfg, log: cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler)), metrics: m}, nil
}

type branchKey struct{ repo, branch string }

// Close frees what the janitor's Config reads through (Config.Release).
func (j *Janitor) Close() {
	if j.cfg.Release != nil {
		j.cfg.Release()
	}
}

// Sweep is Walk collecting every Decision, in the order Walk visits them
// (by repository, then as lakeFS lists branches: by name; the branches of
// runs it deletes last, once their runs are read again). It holds one
// Decision per branch looked at, which writers can make many of: for
// tests and small lakes; the daemon and lakewap janitor use Walk.
func (j *Janitor) Sweep(ctx context.Context, dryRun bool) ([]Decision, error) {
	var out []Decision
	_, err := j.Walk(ctx, dryRun, func(d Decision) { out = append(out, d) })
	return out, err
}

// maxSweepErrors is how many errors on single branches a sweep's error
// names; the rest are counted (a writer can make a branch whose head
// cannot be read, a million times over).
const maxSweepErrors = 10

// Walk judges every prefixed branch of every configured repository and,
// unless dryRun, deletes those it may, calling visit (if not nil) with each
// Decision as it is made, and returns their Tally. It holds no Decision:
// what it keeps per sweep follows the configuration and the runs (which
// lakewap made), not the branches writers made. Errors on single branches
// are in their Decision (and the first maxSweepErrors joined into the
// error, with a count of the rest); the sweep goes on.
func (j *Janitor) Walk(ctx context.Context, dryRun bool, visit func(Decision)) (Tally, error) {
	tally := Tally{Kept: map[string]int{}}
	protected := map[branchKey]bool{}
	retention := map[string]time.Duration{}
	// sealKept is how long a branch without a run whose head lakewap made
	// is kept, by repository: its longest aborted retention.
	sealKept := map[string]time.Duration{}
	branches := map[string][]lakefs.Branch{} // of each repository
	for _, d := range j.cfg.Datasets {
		target := cmp.Or(d.Target, "main")
		for _, b := range append([]string{target, cmp.Or(d.Source, target), "main"}, d.SourceRefs...) {
			protected[branchKey{d.Repository, b}] = true
		}
		retention[d.Name] = cmp.Or(max(d.AbortedRetention, 0), DefaultAbortedRetention)
		sealKept[d.Repository] = max(sealKept[d.Repository], j.cfg.AbandonedAfter, retention[d.Name])
		branches[d.Repository] = nil
	}
	repos := slices.Sorted(maps.Keys(branches))

	// Branches first, runs second: the runner stores a run before it creates
	// its branch, so every branch listed here has its run in what is loaded
	// next, however recent the branch. A repository that cannot be listed
	// (unreachable, or holding more branches than a listing takes, which
	// anyone with a writer's key there can make) is reported and skipped:
	// it does not stop the sweep of the others.
	var errs []error
	for _, repo := range repos {
		bs, err := j.cfg.Lake.ListBranches(ctx, repo, j.cfg.Prefix)
		if err != nil {
			errs = append(errs, fmt.Errorf("janitor: list branches of %s: %w", repo, err))
			continue
		}
		branches[repo] = bs
	}
	if ctx.Err() != nil || len(errs) == len(repos) && len(repos) > 0 {
		return tally, errors.Join(errs...) // nothing to judge
	}
	runs, err := j.cfg.Runs(ctx)
	if err != nil {
		return tally, fmt.Errorf("janitor: load runs: %w", err)
	}
	more := 0 // errors past maxSweepErrors
	fail := func(err error) {
		if len(errs) < maxSweepErrors {
			errs = append(errs, err)
		} else {
			more++
		}
	}
	byBranch := map[branchKey]pipeline.Run{}
	for _, r := range runs {
		if r.Branch != "" {
			byBranch[branchKey{r.Repository, r.Branch}] = r
		}
	}

	// act deletes the branch b of repo d says to delete, unless its head
	// moved since the listing, then tallies and visits d.
	act := func(repo string, b lakefs.Branch, d Decision) {
		if d.Delete && !dryRun && b.CommitID != "" {
			// Judged by the head the listing gave (a run-less branch by
			// its age): a writer who committed since (a fix on an
			// aborted batch's kept branch, to be retried; new work) moved
			// it, and the branch is not the one judged. lakeFS deletes a
			// branch whatever its head (no delete conditional on it), so
			// the head is read again just before the delete, which leaves
			// one round trip for a commit to land unseen
			// (TestMerge63BranchWhoseHeadMovedAfterTheListingIsKept).
			cur, err := j.cfg.Lake.GetCommit(ctx, repo, b.Name)
			switch {
			case err != nil:
				d.Delete, d.Why, d.Err = false, "head unreadable before its delete", err.Error()
				fail(fmt.Errorf("janitor: %s/%s: %w", repo, b.Name, err))
			case cur.ID != b.CommitID:
				d.Delete, d.Why = false, HeadMoved
			}
		}
		if d.Delete && !dryRun {
			if err := j.cfg.Lake.DeleteBranch(ctx, repo, b.Name); err != nil {
				d.Err = err.Error()
				fail(fmt.Errorf("janitor: delete %s/%s: %w", repo, b.Name, err))
			} else {
				d.Deleted = true
				j.metrics.deleted.WithLabelValues(repo, d.Why).Inc()
			}
		}
		if d.Delete {
			j.log.Info("janitor: branch expired", "repository", repo, "branch", b.Name, "batch_id", d.BatchID,
				"dataset", d.Dataset, "state", string(d.State), "why", d.Why, "age", d.Age.Round(time.Second),
				"dry_run", dryRun, "deleted", d.Deleted, "err", d.Err)
		}
		tally.Branches++
		if d.Delete {
			tally.Expired++
		} else {
			tally.Kept[d.Why]++
		}
		if visit != nil {
			visit(d)
		}
	}
	// The branches of runs judged to be deleted, judged again once the
	// sweep is through (again): a retry may have taken the run up since.
	var again []runBranch
	now := j.cfg.Now()
	// The reasons a run-less branch is kept, made once, not per branch.
	young := fmt.Sprintf("no run, head commit younger than %s", j.cfg.AbandonedAfter)
	sealWhy := map[time.Duration]string{}
	own, ownAsked := "", false
	for _, repo := range repos {
		for _, b := range branches[repo] {
			k := branchKey{repo, b.Name}
			d := Decision{Repository: repo, Branch: b.Name}
			run, hasRun := byBranch[k]
			if hasRun {
				d.BatchID, d.Dataset, d.State = run.BatchID, run.Dataset, run.State
			}
			switch {
			case protected[k]:
				d.Why = "a dataset publishes to or branches from it"
			case hasRun:
				j.judgeRun(&d, run, retention, now)
			default:
				head, err := j.cfg.Lake.GetCommit(ctx, repo, b.CommitID)
				if err != nil {
					d.Err = err.Error()
					d.Why = "head commit unreadable"
					fail(fmt.Errorf("janitor: %s/%s: %w", repo, b.Name, err))
					break
				}
				d.Age = now.Sub(head.CreationDate)
				keep := j.cfg.AbandonedAfter
				if j.cfg.Own != nil && !ownAsked {
					ownAsked = true
					if own, err = j.cfg.Own(ctx); err != nil {
						errs = append(errs, fmt.Errorf("janitor: lakewap's lakeFS user: %w", err))
					}
				}
				switch {
				case j.cfg.Own != nil && own == "":
					// Unknown: a seal cannot be told from a writer's commit.
					d.Why = "no run; lakewap's lakeFS user unknown, so whether lakewap made its head commit is too"
					d.Err = "lakewap's lakeFS user is unknown"
					keep = -1
				case own != "" && head.Committer == own:
					keep = sealKept[repo]
				}
				switch {
				case keep < 0:
				case d.Age >= keep:
					d.Delete, d.Why = true, WhyAbandoned
					// Uncommitted changes are a writer's, and do not move
					// the head: a producer that makes its batch's branch
					// itself from an old head and stages its files before
					// lakewap reads its BatchLanded had them deleted with
					// the branch, and the batch published without them
					// (TestMerge64RunlessBranchWithFreshUncommittedWritesIsKept).
					if s, ok := j.cfg.Lake.(Stager); ok {
						newest, staged, err := s.NewestStaged(ctx, repo, b.Name, maxStagedLooked)
						switch {
						case err != nil:
							d.Delete, d.Why, d.Err = false, "uncommitted changes unreadable", err.Error()
							fail(fmt.Errorf("janitor: %s/%s: %w", repo, b.Name, err))
						case staged && !newest.IsZero() && now.Sub(newest) < keep:
							d.Delete, d.Why = false, StagedYoung
						}
					}
				case keep > j.cfg.AbandonedAfter:
					if sealWhy[keep] == "" {
						sealWhy[keep] = fmt.Sprintf("no run, head commit made by lakewap (a forgotten run's seal) younger than %s, the aborted retention", keep)
					}
					d.Why = sealWhy[keep]
				default:
					d.Why = young
				}
			}
			if d.Why == WhyOverdue && !dryRun {
				reason := fmt.Sprintf("lakewap janitor: run in progress for %s, longer than the maximum of %s",
					d.Age.Round(time.Second), j.cfg.MaxRunAge)
				if err := j.cfg.Cancel(ctx, run, reason); err != nil {
					d.Err = err.Error()
					fail(fmt.Errorf("janitor: cancel overdue run %s/%s: %w", run.Dataset, run.BatchID, err))
				} else {
					d.Cancelled = true
				}
				j.log.Warn("janitor: overdue run cancelled", "batch_id", run.BatchID, "dataset", run.Dataset,
					"state", string(run.State), "age", d.Age.Round(time.Second), "err", d.Err)
			}
			if d.Delete && hasRun && !dryRun {
				// Judged by the run as the sweep read it: judged again by
				// the run as it is just before the delete (again).
				again = append(again, runBranch{repo: repo, b: b, d: d, run: run})
				continue
			}
			act(repo, b, d)
		}
	}
	if len(again) > 0 {
		j.again(ctx, again, retention, now, act, fail)
	}
	if more > 0 {
		errs = append(errs, fmt.Errorf("janitor: and %d more error(s) on single branches", more))
	}
	return tally, errors.Join(errs...)
}

// runBranch is a run's branch a sweep judged to be deleted, with the run
// as the sweep read it.
type runBranch struct {
	repo string
	b    lakefs.Branch
	d    Decision
	run  pipeline.Run
}

// again acts on the branches of runs the sweep judged to be deleted,
// judged again by their runs as the store holds them now (Config.Runs read
// once more, only when there are such branches). The runs were read before
// the sweep judged every branch, which takes a lakeFS call per branch
// without a run: an operator's retry of an aborted or failed run in the
// meantime takes the run up on its kept branch, whose writer may have
// staged a fix there, and the branch was deleted by the run's old state
// (TestMerge63RetriedRunsBranchIsNotDeletedByItsOldState). A retry
// between this read and the delete is still not seen.
func (j *Janitor) again(ctx context.Context, pend []runBranch, retention map[string]time.Duration, now time.Time,
	act func(string, lakefs.Branch, Decision), fail func(error)) {
	runs, err := j.cfg.Runs(ctx)
	if err != nil {
		fail(fmt.Errorf("janitor: load runs again before deleting their branches: %w", err))
	}
	byBranch := map[branchKey]pipeline.Run{}
	for _, r := range runs {
		if r.Branch != "" {
			byBranch[branchKey{r.Repository, r.Branch}] = r
		}
	}
	for _, p := range pend {
		d := p.d
		cur, ok := byBranch[branchKey{p.repo, p.b.Name}]
		switch {
		case err != nil:
			d.Delete, d.Why, d.Err = false, "its run could not be read again before the delete", err.Error()
		case !ok:
			d.Delete, d.Why = false, "its run left the store during the sweep"
		case cur.State != p.run.State || !cur.StateSince.Equal(p.run.StateSince) || cur.Retries != p.run.Retries:
			d = Decision{Repository: p.repo, Branch: p.b.Name, BatchID: cur.BatchID, Dataset: cur.Dataset, State: cur.State}
			j.judgeRun(&d, cur, retention, now)
			if d.Why == WhyOverdue {
				d.Why = "run in progress" // its cancel is the next sweep's
			}
		}
		act(p.repo, p.b, d)
	}
}

func (j *Janitor) judgeRun(d *Decision, run pipeline.Run, retention map[string]time.Duration, now time.Time) {
	d.Age = now.Sub(run.StateSince)
	switch run.State {
	case pipeline.StateAborted, pipeline.StateFailed:
		keep := cmp.Or(retention[run.Dataset], DefaultAbortedRetention)
		if d.Age >= keep {
			d.Delete, d.Why = true, WhyAbortedExpired
		} else {
			d.Why = fmt.Sprintf("%s run kept for inspection for %s", run.State, keep)
		}
	case pipeline.StatePublished:
		if d.Age >= j.cfg.AbandonedAfter {
			d.Delete, d.Why = true, WhyPublished
		} else {
			d.Why = fmt.Sprintf("published less than %s ago", j.cfg.AbandonedAfter)
		}
	default:
		since := run.LandedAt
		if since.IsZero() {
			since = run.StateSince
		}
		if age := now.Sub(since); j.cfg.MaxRunAge > 0 && age >= j.cfg.MaxRunAge {
			d.Age, d.Why = age, WhyOverdue
			return
		}
		d.Why = "run in progress"
	}
}

// Tally counts what a sweep judged.
type Tally struct {
	Branches int // looked at
	Expired  int // to delete (Decision.Delete)
	// Kept counts the branches kept, by their Decision.Why.
	Kept map[string]int
}

// Run sweeps every interval until ctx ends; the first sweep is one interval
// after the start, so a restarting daemon first restores its partitions.
func (j *Janitor) Run(ctx context.Context, interval time.Duration, dryRun bool) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		// Counts, not decisions: a branch deleted is logged as it is, the
		// kept ones are counted by why (reasons follow the configuration,
		// not the branches writers made).
		t, err := j.Walk(ctx, dryRun, nil)
		if err != nil && ctx.Err() == nil {
			j.log.Warn("janitor sweep had errors", "branches", t.Branches, "expired", t.Expired, "kept", t.Kept, "err", err)
			continue
		}
		j.log.Info("janitor sweep done", "branches", t.Branches, "expired", t.Expired, "kept", t.Kept, "dry_run", dryRun)
	}
}
