package runner

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lakewap/lakewap/internal/backoff"
	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/schemas"
)

// Publishing into one target is serial in lakeFS: a commit or merge holds
// the branch's lock, and concurrent merges fail "branch is currently
// locked" and back off. Within one instance the runner therefore queues
// the publishes per (repository, target) and runs them one at a time, in
// the order their audits finished, with nothing slept between them. Branch
// creation, seal commits and audits stay parallel. A lock held by someone
// else (another instance, a person merging by hand) is retried by the
// publish holding the turn with a short jittered backoff.

type targetKey struct{ repo, target string }

// publishTicket is one run waiting for, or holding, its target's turn.
type publishTicket struct {
	run    pipeline.Run
	queued time.Time
	turn   <-chan struct{} // closed when the publish queued before this one is done
	done   chan struct{}   // closed when this one is done or given up (and its turn came)
}

// publishQueue is the line of one target while it is not empty.
type publishQueue struct {
	last    chan struct{} // done of the ticket queued last
	waiting int           // tickets whose turn has not come, nor been given up
}

// enqueue adds run's publish to its target's queue. Called with p.mu held,
// right after the transition that asked for the publish was persisted: that
// is the audit order.
func (r *Runner) enqueue(run pipeline.Run) *publishTicket {
	k := targetKey{run.Repository, run.Target}
	r.qmu.Lock()
	defer r.qmu.Unlock()
	q := r.queues[k]
	if q == nil {
		q = &publishQueue{last: make(chan struct{})}
		close(q.last)
		r.queues[k] = q
	}
	t := &publishTicket{run: run, queued: time.Now(), turn: q.last, done: make(chan struct{})}
	q.last = t.done
	q.waiting++
	r.queueDepth(k, q.waiting)
	return t
}

// awaitPublish waits for t's turn and publishes. A revoked partition gives
// up its tickets whose turn has not come (the next owner publishes them
// from the stored state) and waits for a running one within the
// revocation's grace; the turn passes on when the publish is done.
func (r *Runner) awaitPublish(p *partition, t *publishTicket) pipeline.Input {
	waiting := func() func() {
		// The turn is taken: the sealed commit's diff, which a recheck in
		// the turn needs, is taken meanwhile.
		r.prepareDiff(pipeline.WithCallCounter(p.ctx, r.calls(p, t.run.Key())), t.run)
		return func() { r.dropDiff(t.run) }
	}
	var settle func() pipeline.Input
	in := r.inTurn(p, t, waiting, func() pipeline.Input {
		var in pipeline.Input
		in, settle = r.publishTurn(p, t)
		return in
	}, true)
	if in == nil || settle == nil {
		return in
	}
	// After the turn: the next publish to the target need not wait for it.
	return settle()
}

// inTurn waits for t's turn on its target and runs do in it. waiting, if
// set, is called when the turn is taken, and what it returns when the
// partition is revoked before the turn came. A revoked partition gives up
// its tickets whose turn has not come and waits for a running one within
// the revocation's grace; the turn passes on when do is done. publish
// says t is a publish, else a revert (its wait is timed under that kind).
func (r *Runner) inTurn(p *partition, t *publishTicket, waiting func() func(), do func() pipeline.Input, publish bool) pipeline.Input {
	k := targetKey{t.run.Repository, t.run.Target}
	select {
	case <-t.turn:
	default:
		gaveUp := func() {}
		if waiting != nil {
			gaveUp = waiting()
		}
		select {
		case <-t.turn:
		case <-p.stop:
			gaveUp()
			r.left(k)
			go func() { <-t.turn; r.pass(k, t) }()
			return nil
		}
	}
	r.left(k)
	r.metrics.queueWait(k.repo, k.target, publish, time.Since(t.queued))
	result := make(chan pipeline.Input, 1) // buffered: do never blocks on a waiter that left
	go func() {
		defer r.pass(k, t)
		result <- do()
	}()
	select {
	case in := <-result:
		return in
	case <-p.ctx.Done():
		return nil
	}
}

// revertInTurn reverts a published batch (DoRevert) in its target's turn:
// a revert is a commit on the target like a merge, and a publish between
// its look and its merge must find the target where the look left it
// (the merge lands on the head its recheck judged). Before, the revert ran
// beside the publish turn, and a batch rechecked onto the head holding the
// reverted batch was merged onto the revert commit, a state no audit had
// judged (TestRevertDoesNotMoveTheTargetUnderARecheckedPublish).
func (r *Runner) revertInTurn(j job) pipeline.Input {
	return r.inTurn(j.p, j.ticket, nil, func() pipeline.Input {
		j.p.mu.Lock()
		stop := j.p.closing
		j.p.mu.Unlock()
		if stop {
			return nil // revoked: the next owner reverts from the stored state
		}
		begin := r.revertAttempt(j.p, j.run.Key())
		return stepped(func(r *Runner, ctx context.Context, log *slog.Logger, run pipeline.Run) pipeline.Input {
			return r.revert(ctx, log, run, begin)
		})(r, j)
	}, false)
}

// left takes a ticket out of its queue's waiting count.
func (r *Runner) left(k targetKey) {
	r.qmu.Lock()
	defer r.qmu.Unlock()
	q := r.queues[k]
	q.waiting--
	r.queueDepth(k, q.waiting)
}

// pass hands the turn on from t; the queue goes when t was its last.
func (r *Runner) pass(k targetKey, t *publishTicket) {
	r.qmu.Lock()
	defer r.qmu.Unlock()
	close(t.done)
	if r.queues[k].last == t.done {
		delete(r.queues, k)
	}
}

func (r *Runner) queueDepth(k targetKey, n int) {
	r.metrics.publishQueue(k.repo, k.target, n)
}

// publishInTurn waits for the run's turn on its target and publishes
// (DoPublish).
func (r *Runner) publishInTurn(j job) pipeline.Input { return r.awaitPublish(j.p, j.ticket) }

// publishTurn runs one publish while it holds its target's turn, up to
// its merge; what the merge landed on is found by the function it returns
// (nil when there is nothing to find), after the turn has passed on.
func (r *Runner) publishTurn(p *partition, t *publishTicket) (pipeline.Input, func() pipeline.Input) {
	run := t.run
	defer r.dropDiff(run) // the diff taken while it waited, used or not
	p.mu.Lock()
	current := p.runs[run.Key()]
	stop := p.closing
	p.mu.Unlock()
	if stop || current.State != pipeline.StatePublishing || current.SealedCommit != run.SealedCommit {
		return nil, nil // revoked, or the run moved on while it waited
	}
	start := time.Now()
	var settle func(context.Context) pipeline.Input
	in := r.step(p, run, pipeline.DoPublish, func(ctx context.Context) pipeline.Input {
		var in pipeline.Input
		in, settle = r.publishMerge(ctx, run, r.recheckAttempt(p, run.Key()))
		return in
	})
	r.metrics.stepDuration(pipeline.DoPublish, in, time.Since(start))
	if settle == nil {
		return in, nil
	}
	return in, func() (out pipeline.Input) {
		ctx, cancel := context.WithTimeout(pipeline.WithCallCounter(p.ctx, r.calls(p, run.Key())), r.cfg.StepTimeout)
		defer cancel()
		defer func() {
			if v := recover(); v != nil {
				// The merge is made: it is reported, without what it landed on.
				r.log.Error("looking for what a publish landed on panicked", "batch_id", run.BatchID, "panic", v, "stack", string(debug.Stack()))
				out = in
			}
		}()
		return settle(ctx)
	}
}

const (
	// lookTimeout bounds the last look (at most the step timeout). It has
	// its own deadline: the publish's own may be what ran out.
	lookTimeout = 30 * time.Second
	// lockWait bounds the retries of a merge into a locked target before
	// the failure goes to the machine's own retry.
	lockWait = 30 * time.Second
)

// look is the look once more, before a failed publish ends its run,
// whether the sealed commit is on the target after all (DoLook): a merge
// whose answer was lost or late (the step's deadline ran out while lakeFS
// carried it out) made the batch public. The machine asks for it and
// decides on the answer: found, the run is published with that merge; not
// found, or lakeFS does not answer within lookTimeout, the failure stands
// (an operator's retry looks first, so it settles a merge that lands later
// still).
func (r *Runner) look(ctx context.Context, log *slog.Logger, run pipeline.Run) pipeline.Input {
	ctx, cancel := context.WithTimeout(ctx, lookTimeout)
	defer cancel()
	pub, err := r.cfg.Lake.Published(ctx, run.Repository, run.Target, run.SealedCommit, cmp.Or(run.PublishSince, run.StateSince))
	if err != nil {
		log.Warn("publish failed and the last look for the sealed commit on the target failed too; the run fails", "err", err)
		return pipeline.Looked{}
	}
	if !pub.OnTarget {
		return pipeline.Looked{}
	}
	id := cmp.Or(pub.Merge, pub.Head)
	log.Warn("publish failed, but the sealed commit is on the target: published", "commit_id", id, "err", cmp.Or(run.Looking, &pipeline.Failure{}).Err)
	// The report that judged the merge is not known here (a recheck's is
	// lost with the failed step): the target's commits under it are
	// looked at whatever the audit's mode.
	unjudged := run
	unjudged.Report = nil
	return pipeline.Looked{OnTarget: true, CommitID: id, SealedCommit: pub.Source, Changes: r.unattested(ctx, log, unjudged, pub.Merge)}
}

// unattested is what the publish merge landed on that lakewap did not
// attest (Config.Unattested); nothing without a merge commit.
func (r *Runner) unattested(ctx context.Context, log *slog.Logger, run pipeline.Run, merge string) []schemas.UnattestedChange {
	if r.cfg.Unattested == nil || merge == "" {
		return nil
	}
	changes, err := r.cfg.Unattested(ctx, run, merge)
	if err != nil {
		log.Warn("could not look for unattested commits under the publish; none is announced", "commit_id", merge, "err", err)
		return nil
	}
	for _, c := range changes {
		log.Warn("the publish landed on a change lakewap did not attest", "kind", c.Kind, "commit", c.CommitID, "detail", c.Detail)
	}
	return changes
}

// publish brings the run's sealed commit into its target (Publish). When
// the target moved since the sealed commit's snapshot, the sealed commit is
// audited again as merging it leaves the target now (recheck) and merged
// with that audit's attestation; a violation aborts the batch (Collided).
// The batch branch is never written to after its seal.
//
// begin, if set, records the recheck's attempt as begun when the recheck
// first reads bytes and returns what records it ended (see
// recheckAttempt, recordedRecheck); nil records nothing.
func (r *Runner) publish(ctx context.Context, run pipeline.Run, begin func(context.Context) (func() error, error)) pipeline.Input {
	in, settle := r.publishMerge(ctx, run, begin)
	if settle != nil {
		return settle(ctx)
	}
	return in
}

// publishMerge is publish up to its merge: what needs the target's turn.
// What its merge landed on that lakewap did not attest is found by settle
// (nil when there is nothing to find), which returns the input with it
// and needs no turn: it reads commits by their ids, which never change,
// and ran in the turn before, which it held for a read of the merge
// commit new to lakeFS (a batched read there, 3 ms at least).
func (r *Runner) publishMerge(ctx context.Context, run pipeline.Run, begin func(context.Context) (func() error, error)) (pipeline.Input, func(context.Context) pipeline.Input) {
	log := r.log.With("batch_id", run.BatchID, "dataset", run.Dataset, "branch", run.Branch, "state", string(run.State))
	if run.Report == nil || !run.Report.Passed || run.SealedCommit == "" {
		// Unreachable through Machine.Apply; guard the promise anyway.
		return pipeline.StepFailed{Step: pipeline.StepPublish, Err: "refusing to publish a batch without a passing audit", Class: pipeline.Permanent}, nil
	}
	// A run stored before PublishSince existed has only StateSince.
	since := cmp.Or(run.PublishSince, run.StateSince)
	// A verdict reached under other suites than those in force (a restart,
	// or another instance, with another config: a check added to the
	// dataset or to another one of its target) does not stand: the batch is
	// rechecked under the suites now, even onto a target that did not
	// move. A digest comparison, no call to lakeFS. A run stored before
	// the digest was recorded has none, and is rechecked.
	suites := r.suites(run.Dataset)
	stale := run.Suites != suites
	if stale {
		log.Warn("the suites changed since the batch's audit: it is audited again under the suites in force before its merge",
			"audited_under", run.Suites, "in_force", suites)
	}
	// A run stored by a version before Run.AuditedOnto (no OntoRecorded)
	// of a batch not audited against its branch point may hold the verdict
	// of an Onto audit that version did not record: the seal itself was
	// never audited, and a target moved back onto the seal's merge-base
	// (a hard reset) would take it unaudited. Such a run is rechecked onto
	// any head, once, at the upgrade
	// (TestCrash64RunWithoutAuditedOntoIsRecheckedOntoAMovedBackTarget).
	older := !run.OntoRecorded && run.AuditedOnto == "" && (run.BranchFrom == "" || run.Source != run.Target)
	if older {
		log.Info("the run was stored by an older version that did not record the head its audit judged the batch onto: it is audited again before its merge")
	}
	var rmu sync.Mutex
	reports := map[Guess]*schemas.AuditReport{} // at most two: the look's guess, and what the look found
	recheck := func(ctx context.Context, base, head string) (map[string]string, error) {
		if err := r.sameActions(ctx, run, head); err != nil {
			return nil, err
		}
		rep, err := r.recordedRecheck(ctx, log, run, base, head, begin)
		if col := (*Collision)(nil); errors.As(err, &col) {
			col.SuitesChanged = stale
		}
		if err != nil {
			return nil, err
		}
		rmu.Lock()
		reports[Guess{Base: base, Head: head}] = rep
		rmu.Unlock()
		// The merge is attested with the recheck's verdict, checked against
		// head: the merge commit's first parent when nothing comes between.
		again := run
		again.Report = rep
		return r.meta(ctx, log, again, head), nil
	}
	res, err := Publish(ctx, lockRetrying{Lake: r.cfg.Lake, first: r.cfg.LockBackoff, log: log}, PublishRequest{
		Repository: run.Repository, Target: run.Target, Sealed: run.SealedCommit, Since: since, Message: fmt.Sprintf("lakewap: publish %s batch %s", run.Dataset, run.BatchID),
		Meta: r.meta(ctx, log, run, ""), Recheck: recheck, RecheckAlways: stale || older, AuditedOnto: run.AuditedOnto, Guess: r.guess(run),
		Guessed: func(taken bool) { r.metrics.guessedRecheck(run.Repository, run.Target, taken) }}, r.cfg.Failpoint)
	var col *Collision
	var stray *strayError
	switch {
	case errors.As(err, &col):
		log.Warn("batch collides with the target as it is now", "commit", col.Commit, "head", col.Head, "checks", col.Checks)
		return pipeline.Collided{SealedCommit: run.SealedCommit, Report: col.Report, Commit: col.Commit, Head: col.Head, Checks: col.Checks,
			SuitesChanged: col.SuitesChanged}, nil
	case errors.As(err, &stray):
		log.Warn("sealed commit changes paths outside its tables against the target's head", "paths", stray.in.Total)
		return stray.in, nil
	case err != nil:
		return failed(log, pipeline.StepPublish, err), nil
	}
	switch {
	case res.AlreadyPublished:
		log.Info("sealed commit already on the target, not merging again", "commit_id", res.CommitID, "sealed_commit", run.SealedCommit)
	case res.Empty:
		log.Info("batch changed nothing; the target already holds it", "commit_id", res.CommitID, "sealed_commit", run.SealedCommit)
	}
	if rec, ok := r.cfg.Auditor.(MergeRecorder); ok && !res.AlreadyPublished && !res.Empty {
		rec.Merged(run.Repository, res.CommitID, run.SealedCommit)
	}
	rechecked := reports[res.RecheckedAt] // nil for no recheck
	in := pipeline.Merged{CommitID: res.CommitID, SealedCommit: res.Sealed, Report: rechecked}
	if rechecked != nil {
		in.Suites = suites
	}
	if res.Empty {
		return in, nil
	}
	judged := run
	if rechecked != nil {
		judged.Report = rechecked
	}
	return in, func(ctx context.Context) pipeline.Input {
		in.Changes = r.unattested(ctx, log, judged, res.CommitID)
		return in
	}
}

// ActionsPrefix is where lakeFS reads a repository's actions from a ref.
const ActionsPrefix = "_lakefs_actions/"

// maxActionsNamed bounds the action paths a refused publish names.
const maxActionsNamed = 5

// PathComparer is a Lake that names the paths under prefix whose entries
// differ between two commits' trees (lakeFS's two-dot diff), at most limit:
// Removed, at from only; Added, at to only; neither, at both, unlike.
type PathComparer interface {
	DifferingPaths(ctx context.Context, repo, from, to, prefix string, limit int) ([]pipeline.Change, bool, error)
}

// sameActions refuses the publish of run onto head (an error of
// pipeline.ErrMergeConflict, which aborts the batch merge_conflict with its
// branch kept) when the sealed commit does not hold head's actions alike:
// lakeFS v1.84.0 runs the pre-merge actions of a merge's source
// (catalog.ActionsSource lists the hook record's SourceRef), so lakewap's
// merge of a seal made from a commit before the target's action was
// installed or changed (a batch of a source that forked from the target
// before it, or a branch made before it) runs another hook than the
// target's, or none. That hook is what serializes the merges of several
// instances into one target, and what judges every merge into it: two
// instances publishing such batches with the same ids both merged and
// main held them twice (TestMerge64TwoInstancesFromASourceWithoutTheTargetsAction).
// Only a publish onto a head that is not the seal's merge-base can differ
// there (the seal changes nothing outside its tables), so only a recheck
// asks: one diff of a few entries. Without a PathComparer nothing is asked.
//
// Every difference refuses, a user's own action as much as lakewap's, and
// an edit of a comment as much as a removed hook: the files are compared,
// not parsed, and an action of the target the merge would not run is a
// protection the target's owner declared and lakewap's merge would skip.
// The detail says what to do first (it is clipped at 4 KiB, the paths
// last): merge the target into the batch's kept branch and retry it, and
// merge the target into the source for the batches to come
// (TestMerge64bActionsAbortTellsTheOperatorWhatToDo).
func (r *Runner) sameActions(ctx context.Context, run pipeline.Run, head string) error {
	c, ok := r.cfg.Lake.(PathComparer)
	if !ok {
		return nil
	}
	diffs, more, err := c.DifferingPaths(ctx, run.Repository, head, run.SealedCommit, ActionsPrefix, maxActionsNamed)
	if err != nil {
		return err
	}
	if len(diffs) == 0 {
		return nil
	}
	named := make([]string, 0, len(diffs)+1)
	for _, d := range diffs {
		switch {
		case d.Removed:
			named = append(named, d.Path+" (missing from the batch's commit: lakeFS would not run it)")
		case d.Added:
			named = append(named, d.Path+" (on the batch's commit only: lakeFS would run it, though "+run.Target+" does not hold it)")
		default:
			named = append(named, d.Path+" (unlike "+run.Target+"'s: lakeFS would run the batch's copy)")
		}
	}
	if more {
		named = append(named, "...")
	}
	fix := fmt.Sprintf("merge %s into the batch's branch %s (lakectl merge lakefs://%s/%s lakefs://%s/%s), then lakewap retry -batch %s",
		run.Target, run.Branch, run.Repository, run.Target, run.Repository, run.Branch, run.BatchID)
	if run.Source != "" && run.Source != run.Target {
		fix += fmt.Sprintf("; merge %s into %s too, or its later batches are refused alike", run.Target, run.Source)
	}
	return fmt.Errorf("%w: the batch's pre-merge actions (%s) are not %s's at %s, and lakeFS runs the actions of a merge's source: %s. Sealed commit %s; differing: %s",
		pipeline.ErrMergeConflict, ActionsPrefix, run.Target, head, fix, run.SealedCommit, strings.Join(named, "; "))
}

// MergeTipper is a Lake that knows the commit its last merge into a
// branch made, if it made one lately: the branch's head until someone else
// moves it.
type MergeTipper interface {
	MergeTip(repo, branch string) (string, bool)
}

// guess is what the publish turn's look most likely finds for run (see
// speculation): the target at the lake's last merge into it, and the
// sealed commit's foundation, the merge-base its diff was taken against
// while it waited. Nil when either is not known.
func (r *Runner) guess(run pipeline.Run) *Guess {
	t, ok := r.cfg.Lake.(MergeTipper)
	if !ok {
		return nil
	}
	head, ok := t.MergeTip(run.Repository, run.Target)
	if !ok {
		return nil
	}
	base, ok := r.preparedBase(run)
	if !ok {
		return nil
	}
	return &Guess{Base: base, Head: head}
}

// RecheckPreparer is an Auditor that reads ahead, for a publish waiting
// for its turn, what its recheck will ask about the sealed commit's
// foundation whatever the target's head then.
type RecheckPreparer interface {
	PrepareRecheck(ctx context.Context, req pipeline.AuditRequest, foundation string)
}

// MergeRecorder is an Auditor told of each merge and seal this runner made itself
// (lakeFS answered the merge with commit): the audits may then derive
// that commit's listings instead of listing its tables whole (see
// audit/derive.go). A merge found on the target after a lost answer is
// not told: another instance, or a person, may have made it.
type MergeRecorder interface {
	Merged(repo, commit, sealed string)
	// Sealed: the runner committed a batch's branch (its seal) and lakeFS
	// answered with commit.
	Sealed(repo, commit string)
}

// meta is the merge commit's metadata for run: the batch's labels and, with
// Attest, the attestation of its report checked against against (empty:
// the audit's own foundation).
func (r *Runner) meta(ctx context.Context, log *slog.Logger, run pipeline.Run, against string) map[string]string {
	m := publishMeta(run)
	if r.cfg.Attest == nil {
		return m
	}
	att, err := r.cfg.Attest(ctx, run, against)
	if err != nil {
		log.Warn("publishing without an attestation: the next audit of the dataset is full", "err", err)
	}
	maps.Copy(m, att)
	return m
}

// recordedRecheck is recheck, its attempt (the recheck and its bisection
// probes) recorded by begin when set: lazily, when the recheck or a probe
// first reads the batch's or a table's bytes (AuditRequest.BeforeRead),
// at most once. A recheck that lakewap's own records answer reads nothing
// that could take the process down, and records nothing (issue 21).
func (r *Runner) recordedRecheck(ctx context.Context, log *slog.Logger, run pipeline.Run, base, head string,
	begin func(context.Context) (func() error, error)) (*schemas.AuditReport, error) {
	if begin == nil {
		return r.recheck(ctx, log, run, base, head, waitForTheLook)
	}
	a := &lazyAttempt{begin: begin}
	rep, err := r.recheck(ctx, log, run, base, head, a.beforeRead)
	// Merged only once the recheck is stored as ended: a process that
	// ends after the merge must not take it for a lost attempt.
	if eerr := a.end(); err == nil && eerr != nil {
		return nil, eerr
	}
	if berr := a.failed(); berr != nil {
		// A probe that could not record its attempt named no commit: the
		// publish fails, to be retried, as when the recheck could not.
		return nil, berr
	}
	return rep, err
}

// lazyAttempt is a recheck's attempt, begun (begin) when the recheck or
// one of its probes first reads bytes (beforeRead) and ended (end) only if
// it was begun; a failed begin is remembered: nothing reads after it.
type lazyAttempt struct {
	begin func(context.Context) (func() error, error)
	mu    sync.Mutex
	ended func() error // set once begun
	err   error        // why it could not begin
}

func (a *lazyAttempt) beforeRead(ctx context.Context) error {
	// A recheck started beside the publish's look begins nothing before
	// the look found its guess (speculation).
	if err := waitForTheLook(ctx); err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ended != nil || a.err != nil {
		return a.err
	}
	a.ended, a.err = a.begin(ctx)
	return a.err
}

// end stores the attempt as ended, if it was begun.
func (a *lazyAttempt) end() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ended == nil {
		return nil
	}
	return a.ended()
}

func (a *lazyAttempt) failed() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.err
}

// recheckAttempt records the attempts of the recheck of the run under key
// (publish's begin, called when the recheck first reads bytes): once the
// gate admits it (alone for a suspect run) it is stored as begun
// (AuditBegun), and the function returned stores it ended (AuditEnded),
// which releases the gate. An attempt whose end cannot
// be stored is counted as lost by the next owner, as a stopped audit's.
func (r *Runner) recheckAttempt(p *partition, key string) func(context.Context) (func() error, error) {
	return r.auditAttempt(p, key, pipeline.AuditBegun{Recheck: true})
}

// revertAttempt records the attempts of a revert's audit as recheckAttempt
// records a recheck's (AuditBegun with Revert): one that takes the process
// down is counted at the next restore, and the revert is given up at
// audit.max_attempts instead of audited again at every restore.
func (r *Runner) revertAttempt(p *partition, key string) func(context.Context) (func() error, error) {
	return r.auditAttempt(p, key, pipeline.AuditBegun{Revert: true})
}

// auditAttempt is recheckAttempt and revertAttempt: begun, with Solo set
// from the run, is what is stored.
func (r *Runner) auditAttempt(p *partition, key string, begun pipeline.AuditBegun) func(context.Context) (func() error, error) {
	return func(ctx context.Context) (func() error, error) {
		p.mu.Lock()
		alone := p.runs[key].AuditSuspect
		p.mu.Unlock()
		if err := r.gate.acquire(ctx, key, alone); err != nil {
			return nil, err
		}
		begun.Solo = alone
		o, err := r.apply(ctx, p, key, begun)
		if err == nil && !o.Changed {
			err = fmt.Errorf("audit attempt of %s not begun: the run is %s: %w", key, o.Run.State, pipeline.ErrTransient)
		}
		if err != nil {
			r.gate.release(key)
			return nil, err
		}
		return func() error {
			ctx, cancel := context.WithTimeout(context.Background(), r.cfg.Grace)
			defer cancel()
			_, err := r.apply(ctx, p, key, pipeline.AuditEnded{})
			if err != nil {
				r.gate.release(key)
				return fmt.Errorf("recording the end of the recheck: %w", err)
			}
			return nil
		}, nil
	}
}

// maxRecheckProbes bounds the audits that look for the commit a batch
// collides with (a bisection of the target's commits since its base).
const maxRecheckProbes = 8

// maxCollisionWindow bounds the commits since the batch's base looked at
// for the one it collides with.
const maxCollisionWindow = 1000

// recheck audits the sealed commit as merging it leaves the target at head
// (an Onto audit: head's files with the batch's changes applied; nothing
// is written to lakeFS, the batch branch stays at its seal) and returns the
// report when it passes. What the merge brings is the sealed commit's diff
// against its merge-base with head, held to the tables-only rule again. A
// failing report is a *Collision naming the first commit since base the
// batch fails with. before is called before the recheck or a probe first
// reads bytes (AuditRequest.BeforeRead).
func (r *Runner) recheck(ctx context.Context, log *slog.Logger, run pipeline.Run, base, head string, before func(context.Context) error) (*schemas.AuditReport, error) {
	if base != head {
		log.Info("target moved since the batch's snapshot: auditing the sealed commit as its merge will leave the target", "base", base, "head", head)
	}
	changes, ok := r.preparedDiff(run, base)
	if !ok {
		var err error
		if changes, err = r.cfg.Lake.Changes(ctx, run.Repository, head, run.SealedCommit); err != nil {
			return nil, err
		}
	}
	if spec, ok := r.cfg.Datasets(run.Dataset); ok && len(spec.TablePaths) > 0 {
		paths := make([]string, len(changes))
		for i, c := range changes {
			paths[i] = c.Path
		}
		if stray := spec.OutsideTables(paths); len(stray) > 0 {
			return nil, &strayError{pipeline.Strayed{SealedCommit: run.SealedCommit, Paths: stray[:min(len(stray), maxStrayPaths)], Total: len(stray)}}
		}
	}
	rep, err := r.auditOnto(ctx, run, head, changes, before)
	if err != nil {
		return nil, err
	}
	if rep.Passed {
		return &rep, nil
	}
	var checks []string
	for _, c := range rep.Failed() {
		checks = append(checks, c.Name)
	}
	if base == head {
		// Rechecked for a change of the suites, onto the target the audit
		// saw: no commit came in to collide with.
		return nil, &Collision{Report: rep, Head: head, Checks: checks}
	}
	commit, err := r.collidesWith(ctx, log, run, base, head, checks, changes, before)
	if err != nil {
		return nil, err
	}
	return nil, &Collision{Report: rep, Commit: commit, Head: head, Checks: checks}
}

// What merging a sealed commit brings is its diff against its merge-base
// with the target (the three-dot diff of head and seal). That merge-base is
// the batch's foundation whatever the target gained since, as long as the
// target did not take in the batch's own history, so the diff is the same
// for every head: a publish waiting for its turn takes it meanwhile
// (prepareDiff: the foundation, the merge-base of seal and target, then the
// three-dot diff of foundation and seal, the same diff), and the
// recheck in the turn uses it when the look in the turn finds the same
// foundation (preparedDiff), so the turn does not wait for a diff.

// MergeBaser is a Lake that finds the merge-base of a commit and a ref
// (lakeFS's), and the commit the ref resolved to. Without it a publish does
// not take its diff while it waits.
type MergeBaser interface {
	MergeBase(ctx context.Context, repo, source, dest string) (base, destCommit string, err error)
}

// diffFlight is a sealed commit's diff against base, being taken or taken.
type diffFlight struct {
	done    chan struct{}
	base    string
	changes []pipeline.Change
	err     error
	kept    int // the changes counted in Runner.diffChanges
	bytes   int // their bytes, counted in Runner.diffBytes
}

const (
	// maxPreparedDiffs bounds the diffs kept for publishes waiting their
	// turn, maxPreparedChanges their changes in all (about 100 bytes
	// each): a diff past it is not kept, and its turn takes its own.
	// Bounding the count alone let 4096 waiting publishes of 200,000
	// changes each keep 819,200,000 changes.
	maxPreparedDiffs   = 4096
	maxPreparedChanges = 200_000
	// maxPreparedBytes bounds their bytes (changeBytes): a path is the
	// writer's, up to lakefs.MaxPathBytes, and 200,000 changes of 1,024
	// bytes were 205 MB (TestPreparedDiffsAreBoundedByTheirBytes).
	maxPreparedBytes = 32 << 20
	// maxDiffTakings bounds the diffs taken from lakeFS at once for
	// waiting publishes (each up to a listing's limit until it is
	// counted); the others wait for a slot, or for their turn.
	maxDiffTakings = 4
)

// errDiffOverBudget: the diff was taken, but keeping it would pass
// maxPreparedChanges.
var errDiffOverBudget = errors.New("prepared diffs over their budget of changes")

func diffKey(run pipeline.Run) string { return run.Repository + "\x00" + run.SealedCommit }

// prepareDiff starts taking run's diff in the background.
func (r *Runner) prepareDiff(ctx context.Context, run pipeline.Run) {
	mb, ok := r.cfg.Lake.(MergeBaser)
	if !ok {
		return
	}
	r.dmu.Lock()
	defer r.dmu.Unlock()
	if r.diffs == nil {
		r.diffs = map[string]*diffFlight{}
	}
	if _, ok := r.diffs[diffKey(run)]; ok || len(r.diffs) >= maxPreparedDiffs {
		return
	}
	if r.diffSlots == nil {
		r.diffSlots = make(chan struct{}, maxDiffTakings)
	}
	k := diffKey(run)
	f := &diffFlight{done: make(chan struct{})}
	r.diffs[k] = f
	go func() {
		r.takeDiff(ctx, mb, run, k, f)
		if p, ok := r.cfg.Auditor.(RecheckPreparer); ok && f.err == nil && f.base != "" {
			ctx, cancel := context.WithTimeout(ctx, lookTimeout)
			defer cancel()
			p.PrepareRecheck(ctx, pipeline.AuditRequest{Dataset: run.Dataset, Repository: run.Repository, Ref: run.SealedCommit, Changes: f.changes}, f.base)
		}
	}()
}

// takeDiff takes run's diff against its foundation into f (the flight of
// key k), and closes f.done.
func (r *Runner) takeDiff(ctx context.Context, mb MergeBaser, run pipeline.Run, k string, f *diffFlight) {
	defer close(f.done)
	if against, changes, ok := r.audited.take(run.Repository, run.SealedCommit); ok {
		// The audit step's diff is lakeFS's three-dot diff of the
		// target's commit it audited against and the seal: the seal's
		// changes since their merge-base only when that commit is the
		// merge-base (the branch point; the lake keeps merge-bases of
		// commit ids). Against a later commit lakeFS leaves out what the
		// seal holds as that commit does (a path both added alike,
		// which merge_hazard must see), so it is taken anew.
		ctx, cancel := context.WithTimeout(ctx, lookTimeout)
		base, _, err := mb.MergeBase(ctx, run.Repository, run.SealedCommit, against)
		cancel()
		if err == nil && base == against && base != run.SealedCommit {
			f.base = base
			r.keepDiff(k, f, changes)
			return
		}
	}
	select {
	case r.diffSlots <- struct{}{}:
		defer func() { <-r.diffSlots }()
	case <-ctx.Done():
		f.err = ctx.Err()
		return
	}
	r.dmu.Lock()
	dropped := r.diffs[k] != f
	r.dmu.Unlock()
	if dropped {
		f.err = errors.New("dropped while waiting to be taken")
		return
	}
	ctx, cancel := context.WithTimeout(ctx, lookTimeout)
	defer cancel()
	base, _, err := mb.MergeBase(ctx, run.Repository, run.SealedCommit, run.Target)
	if err != nil || base == "" || base == run.SealedCommit {
		f.err = cmp.Or(err, errors.New("no foundation"))
		return
	}
	f.base = base
	changes, err := r.cfg.Lake.Changes(ctx, run.Repository, base, run.SealedCommit)
	if err != nil {
		f.err = err
		return
	}
	r.keepDiff(k, f, changes)
}

// keepDiff keeps changes as f's diff if f is still k's flight and they fit
// within maxPreparedChanges with the diffs kept; else f ends without one.
func (r *Runner) keepDiff(k string, f *diffFlight, changes []pipeline.Change) {
	r.dmu.Lock()
	defer r.dmu.Unlock()
	switch {
	case r.diffs[k] != f:
		f.err = errors.New("dropped while being taken")
	case r.diffChanges+len(changes) > maxPreparedChanges:
		f.err = errDiffOverBudget
	case r.diffBytes+changeBytes(changes) > maxPreparedBytes:
		f.err = errDiffOverBudget
	default:
		f.changes, f.kept, f.bytes = changes, len(changes), changeBytes(changes)
		r.diffChanges += f.kept
		r.diffBytes += f.bytes
	}
}

// changeOverhead is what a change holds besides its path's bytes
// (pipeline.Change: a string header, a size, a flag, rounded up).
const changeOverhead = 64

// changeBytes is what changes hold: their paths and changeOverhead each.
func changeBytes(changes []pipeline.Change) (n int) {
	for _, c := range changes {
		n += len(c.Path) + changeOverhead
	}
	return n
}

// auditedDiffs keeps the audit step's diffs of sealed commits (lakeFS's
// three-dot diff of the target's commit audited against and the seal) for
// their publishes: the same diff the publish would otherwise ask for while
// it waits (prepareDiff), one diff and one merge-base call less per batch.
// A run that never publishes leaves its diff until newer ones push it out:
// at most maxAuditedDiffs diffs, of maxAuditedChanges changes and
// maxAuditedBytes bytes in all.
type auditedDiffs struct {
	mu      sync.Mutex
	m       map[string]auditedDiff
	order   []string // oldest first
	changes int
	bytes   int // changeBytes of the diffs kept
}

type auditedDiff struct {
	against string
	changes []pipeline.Change
	bytes   int
}

const (
	maxAuditedDiffs   = 1024
	maxAuditedChanges = 200_000 // about 100 bytes each
	// maxAuditedBytes bounds their bytes (changeBytes): 1,024 diffs of
	// 195 changes of a writer's 1,024-byte paths were 204 MB
	// (TestAuditedDiffsAreBoundedByTheirBytes).
	maxAuditedBytes = 32 << 20
)

func (a *auditedDiffs) put(repo, sealed, against string, changes []pipeline.Change) {
	size := changeBytes(changes)
	if len(changes) > maxAuditedChanges || size > maxAuditedBytes {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.m == nil {
		a.m = map[string]auditedDiff{}
	}
	k := repo + "\x00" + sealed
	a.forget(k)
	for len(a.order) > 0 && (len(a.order) >= maxAuditedDiffs || a.changes+len(changes) > maxAuditedChanges || a.bytes+size > maxAuditedBytes) {
		a.forget(a.order[0])
	}
	a.m[k] = auditedDiff{against: against, changes: changes, bytes: size}
	a.order = append(a.order, k)
	a.changes += len(changes)
	a.bytes += size
}

// take returns and forgets sealed's diff and the commit it was taken against.
func (a *auditedDiffs) take(repo, sealed string) (against string, changes []pipeline.Change, ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	k := repo + "\x00" + sealed
	d, ok := a.m[k]
	a.forget(k)
	return d.against, d.changes, ok
}

func (a *auditedDiffs) forget(k string) {
	d, ok := a.m[k]
	if !ok {
		return
	}
	delete(a.m, k)
	a.changes -= len(d.changes)
	a.bytes -= d.bytes
	a.order = slices.DeleteFunc(a.order, func(o string) bool { return o == k })
}

// preparedDiff is run's diff taken while it waited, if it is done and was
// taken against base.
func (r *Runner) preparedDiff(run pipeline.Run, base string) ([]pipeline.Change, bool) {
	r.dmu.Lock()
	f := r.diffs[diffKey(run)]
	r.dmu.Unlock()
	if f == nil {
		return nil, false
	}
	select {
	case <-f.done:
		return f.changes, f.err == nil && f.base == base
	default:
		return nil, false // still being taken: the turn takes its own
	}
}

// preparedBase is the foundation run's prepared diff was taken against,
// if it is taken.
func (r *Runner) preparedBase(run pipeline.Run) (string, bool) {
	r.dmu.Lock()
	f := r.diffs[diffKey(run)]
	r.dmu.Unlock()
	if f == nil {
		return "", false
	}
	select {
	case <-f.done:
		return f.base, f.err == nil && f.base != ""
	default:
		return "", false
	}
}

// dropDiff forgets run's prepared diff.
func (r *Runner) dropDiff(run pipeline.Run) {
	r.dmu.Lock()
	defer r.dmu.Unlock()
	if f := r.diffs[diffKey(run)]; f != nil {
		r.diffChanges -= f.kept
		r.diffBytes -= f.bytes
		f.kept, f.bytes = 0, 0
		delete(r.diffs, diffKey(run))
	}
}

// auditOnto audits the run's sealed commit applied to the target at
// commit; changes is the sealed commit's diff against its merge-base
// with the target (the same for every commit since the batch's base);
// before is the audit's BeforeRead.
func (r *Runner) auditOnto(ctx context.Context, run pipeline.Run, commit string, changes []pipeline.Change, before func(context.Context) error) (schemas.AuditReport, error) {
	return r.cfg.Auditor.Audit(ctx, pipeline.AuditRequest{Dataset: run.Dataset, Repository: run.Repository,
		Ref: run.SealedCommit, BaseRef: commit, BaseName: run.Target, BatchTime: run.BatchTime, Changes: changes, Onto: true, BeforeRead: before})
}

// collidesWith finds the first of the target's first-parent commits after
// base (up to head) with which the batch fails one of checks, bisecting with
// probes: audits of the sealed commit onto the candidate. Without a lakeFS
// that lists commits, or beyond the probe budget, it names the newest
// candidate left.
func (r *Runner) collidesWith(ctx context.Context, log *slog.Logger, run pipeline.Run, base, head string, checks []string, changes []pipeline.Change,
	before func(context.Context) error) (string, error) {
	lister, ok := r.cfg.Lake.(pipeline.Lister)
	if !ok {
		return head, nil
	}
	commits, err := lister.FirstParentsAfter(ctx, run.Repository, head, base, maxCollisionWindow)
	if err != nil || len(commits) < 2 {
		return head, err
	}
	// commits[hi] fails (head); find the first index that fails.
	lo, hi := -1, len(commits)-1
	for probe := 0; hi-lo > 1 && probe < maxRecheckProbes; probe++ {
		mid := (lo + hi) / 2
		fails, err := r.probe(ctx, run, commits[mid], checks, changes, before)
		if err != nil {
			log.Warn("probe for the colliding commit failed; naming the newest candidate", "commit", commits[hi], "err", err)
			return commits[hi], nil
		}
		if fails {
			hi = mid
		} else {
			lo = mid
		}
	}
	return commits[hi], nil
}

// probe reports whether the batch, applied to the target at commit, fails
// any of checks.
func (r *Runner) probe(ctx context.Context, run pipeline.Run, commit string, checks []string, changes []pipeline.Change,
	before func(context.Context) error) (bool, error) {
	rep, err := r.auditOnto(ctx, run, commit, changes, before)
	if err != nil {
		return false, err
	}
	for _, c := range rep.Failed() {
		if slices.Contains(checks, c.Name) {
			return true, nil
		}
	}
	return false, nil
}

// Collision is a batch that passed its audit but fails, applied to the
// target as it is now: Commit is the first target commit since the batch's
// snapshot it fails with, Head the target's head it was audited against.
// Commit is empty when the target had not moved (a recheck for a change
// of the suites: SuitesChanged).
type Collision struct {
	Commit, Head  string
	Checks        []string
	Report        schemas.AuditReport
	SuitesChanged bool
}

func (c *Collision) Error() string {
	if c.Commit == "" {
		return fmt.Sprintf("the batch fails %s applied to the target at %s under the suites in force", strings.Join(c.Checks, ", "), c.Head)
	}
	return fmt.Sprintf("the batch fails %s applied to the target at %s: it collides with commit %s", strings.Join(c.Checks, ", "), c.Head, c.Commit)
}

// strayError carries a recheck's Strayed outcome out of Publish.
type strayError struct{ in pipeline.Strayed }

func (e *strayError) Error() string {
	return fmt.Sprintf("%d path(s) outside the dataset's tables", e.in.Total)
}

// lockRetrying is the runner's lake, whose merges retry while the target
// is locked by someone outside this instance, with full-jitter exponential
// backoff from first up to a second, for at most lockWait. A locked target
// means the merge did not start, so it is retried without looking first.
type lockRetrying struct {
	pipeline.Lake
	first time.Duration
	log   *slog.Logger
}

func (l lockRetrying) Merge(ctx context.Context, repo, source, dest, msg string, meta map[string]string) (string, error) {
	deadline := time.Now().Add(lockWait)
	b := backoff.Policy{Min: l.first, Max: time.Second, Jitter: backoff.Full}.New()
	for {
		id, err := l.Lake.Merge(ctx, repo, source, dest, msg, meta)
		if !errors.Is(err, pipeline.ErrBranchLocked) || time.Now().After(deadline) {
			return id, err
		}
		wait := b.Next()
		l.log.Debug("target locked by another writer, retrying merge", "attempt", b.Attempt(), "wait", wait)
		if !backoff.Sleep(ctx, wait) {
			return "", err
		}
	}
}

// PublishRequest names a sealed commit to bring into a target.
type PublishRequest struct {
	Repository, Target string
	Sealed             string    // the audited commit
	Since              time.Time // when publishing this commit started
	Message            string
	Meta               map[string]string
	// Recheck, if set, is called when the target moved since the sealed
	// commit's snapshot (the target's head is not their merge-base): merging
	// the sealed commit would combine it with commits its audit did not
	// see. It audits the sealed commit as the merge will leave the target at
	// head, or returns an error that stops the publish. The sealed commit is
	// what is merged either way; the metadata Recheck returns replaces Meta
	// (it attests the recheck's verdict). Nil merges without a recheck.
	Recheck func(ctx context.Context, base, head string) (map[string]string, error)
	// RecheckAlways calls Recheck also when the target did not move (base
	// and head the same commit): the sealed commit's verdict was reached
	// under other suites than those in force.
	RecheckAlways bool
	// AuditedOnto, if set, is the head the sealed commit was audited
	// merged into (Run.AuditedOnto): the seal itself was never audited,
	// and Recheck is called onto any other head, also one that is the
	// seal's merge-base with the target (a hard reset back onto it, where
	// the merge leaves the seal).
	AuditedOnto string
	// Guess, if set, is the (base, head) the look most likely finds: the
	// recheck against it starts beside the look, and is used when the look
	// finds exactly that; otherwise it is stopped and the recheck runs
	// against what the look found.
	Guess *Guess
	// Guessed, if set, is told whether the guessed recheck was taken.
	Guessed func(taken bool)
}

// Guess is a publish's guess of its look (PublishRequest.Guess): the
// sealed commit's merge-base with the target, and the target's head.
type Guess struct{ Base, Head string }

// Publication outcomes of Publish.
type PublishResult struct {
	// CommitID is the target commit that holds the batch: the merge commit,
	// or for a batch that changed nothing the target head it matched.
	CommitID string
	// Sealed, when set, is the commit an earlier attempt merged in place of
	// the request's (found on the target): a descendant of it that an older
	// lakewap's recheck made on the batch branch.
	Sealed string
	// AlreadyPublished: an earlier attempt (whose answer was lost, or that
	// was still running) had merged the sealed commit.
	AlreadyPublished bool
	// Empty: the sealed commit brings no change, so nothing was merged.
	Empty bool
	// RecheckedAt is the (base, head) of the recheck whose metadata the
	// merge was asked with; zero when there was none.
	RecheckedAt Guess
}

// Publish brings a sealed commit into its target exactly once. Whether it
// is already there is decided by the commit graph (merge-base), not by
// metadata, so a commit that only claims to be the publish is not taken for
// it. The merge never uses allow_empty: a second merge of a commit already
// on the target is refused by lakeFS with "no changes" instead of leaving a
// second, empty merge commit, whatever the order the attempts land in.
//
// The first look also says whether the target moved since the sealed
// commit's snapshot; then Recheck decides what is merged. Within one
// instance the runner's queue keeps the target still between that look and
// the merge; across instances lakewap's pre-merge hook does (lakeFS runs
// it on the merge commit, conditional on the target not having moved).
//
// failpoint is called as "before_merge" and "after_merge".
func Publish(ctx context.Context, lake pipeline.Lake, req PublishRequest, failpoint func(string)) (PublishResult, error) {
	var early *speculation
	if g := req.Guess; req.Recheck != nil && g != nil && g.Base != "" && g.Head != "" && g.Base != g.Head {
		early = speculate(ctx, req.Recheck, *g)
		defer early.stop()
	}
	p, err := lake.Published(ctx, req.Repository, req.Target, req.Sealed, req.Since)
	if early != nil && (err != nil || p.OnTarget || p.Absorbed != "" || p.Base == p.Head || early.at != Guess{Base: p.Base, Head: p.Head}) {
		// Void: given up now, before anything else the turn does (the
		// merge above all), so that no attempt of it is open meanwhile.
		early.stop()
	}
	if err != nil {
		return PublishResult{}, err
	}
	if p.OnTarget {
		return PublishResult{CommitID: cmp.Or(p.Merge, p.Head), Sealed: p.Source, AlreadyPublished: true}, nil
	}
	if p.Absorbed != "" {
		return PublishResult{}, absorbed(req, p)
	}
	var at Guess
	if req.Recheck != nil && (p.Base != p.Head || req.RecheckAlways || req.AuditedOnto != "" && req.AuditedOnto != p.Head) {
		at = Guess{Base: p.Base, Head: p.Head}
		var meta map[string]string
		if early != nil && req.Guessed != nil {
			req.Guessed(early.at == at)
		}
		if early != nil && early.at == at {
			meta, err = early.result()
		} else {
			meta, err = req.Recheck(ctx, p.Base, p.Head)
		}
		if err != nil {
			return PublishResult{}, err
		}
		if meta != nil {
			req.Meta = meta
		}
	}
	res, err := merge(ctx, lake, req, failpoint)
	res.RecheckedAt = at
	return res, err
}

// speculation is a recheck started beside the publish's look, against the
// look's guessed answer (PublishRequest.Guess). The look still decides: its
// verdict is used only when the look finds exactly what was guessed, the
// same recheck the turn would run after the look, so the turn waits for
// the longer of the two instead of both. The recheck's inputs are commit
// ids, which never change: a verdict against them is the same whenever it
// was reached.
//
// Until the look has found the guess the recheck reads only lakeFS's
// metadata: its first read of bytes (AuditRequest.BeforeRead, where its
// attempt is recorded as begun) waits for that (waitForTheLook). A look
// that finds another head, none to recheck against, or the batch
// published already thus leaves no recheck attempt begun: none is open
// while the turn merges, for a process ending then to count as lost.
type speculation struct {
	at     Guess
	cancel context.CancelFunc
	done   chan struct{}
	found  chan struct{} // closed when the look found the guess
	meta   map[string]string
	err    error
}

// lookFound is the context key of a speculation's found channel.
type lookFound struct{}

func speculate(ctx context.Context, recheck func(ctx context.Context, base, head string) (map[string]string, error), g Guess) *speculation {
	ctx, cancel := context.WithCancel(ctx)
	s := &speculation{at: g, cancel: cancel, done: make(chan struct{}), found: make(chan struct{})}
	ctx = context.WithValue(ctx, lookFound{}, s.found)
	go func() {
		defer close(s.done)
		s.meta, s.err = recheck(ctx, g.Base, g.Head)
	}()
	return s
}

// waitForTheLook, in a recheck Publish started beside its look, waits
// until the look found the recheck's guess, or the recheck is given up
// (its error); in any other recheck it returns at once.
func waitForTheLook(ctx context.Context) error {
	found, ok := ctx.Value(lookFound{}).(chan struct{})
	if !ok {
		return nil
	}
	select {
	case <-found:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// result lets the speculative recheck read on (the look found its guess)
// and waits for its verdict.
func (s *speculation) result() (map[string]string, error) {
	close(s.found)
	<-s.done
	return s.meta, s.err
}

// stop gives the speculative recheck up and waits until it has ended; a
// nil speculation is stopped.
func (s *speculation) stop() {
	if s == nil {
		return
	}
	s.cancel()
	<-s.done
}

func merge(ctx context.Context, lake pipeline.Lake, req PublishRequest, failpoint func(string)) (PublishResult, error) {
	failpoint("before_merge")
	id, err := lake.Merge(ctx, req.Repository, req.Sealed, req.Target, req.Message, req.Meta)
	if err == nil {
		failpoint("after_merge")
		return PublishResult{CommitID: id}, nil
	}
	if !errors.Is(err, pipeline.ErrNoChanges) && !errors.Is(err, pipeline.ErrTransient) {
		return PublishResult{}, err
	}
	// The merge may have happened anyway: a timed-out answer, or another
	// attempt of the same commit that landed first ("no changes").
	p, perr := lake.Published(ctx, req.Repository, req.Target, req.Sealed, req.Since)
	if perr != nil {
		return PublishResult{}, errors.Join(err, perr)
	}
	switch {
	case p.OnTarget:
		return PublishResult{CommitID: cmp.Or(p.Merge, p.Head), Sealed: p.Source, AlreadyPublished: true}, nil
	case p.Absorbed != "":
		return PublishResult{}, absorbed(req, p)
	case errors.Is(err, pipeline.ErrNoChanges):
		// The sealed commit's data equals its merge-base with the target:
		// the batch changed nothing, and the target already holds it.
		return PublishResult{CommitID: p.Head, Empty: true}, nil
	}
	return PublishResult{}, err
}

// absorbed is the conflict of a sealed commit that reached the target
// inside another commit (Publication.Absorbed), not by a merge of it: a
// writer merged it into another batch's branch, whose publish brought it
// in, with whatever that branch made of its files. Merging it again changes
// nothing, and announcing the batch published would tell downstream its
// rows are on the target when they need not be; the batch is aborted
// (merge_conflict, its branch kept) naming that commit.
func absorbed(req PublishRequest, p pipeline.Publication) error {
	return fmt.Errorf("%w: sealed commit %s reached %s inside commit %s, not by a merge of it (another branch took it in and may have changed its files); it is not published", pipeline.ErrMergeConflict, req.Sealed, req.Target, p.Absorbed)
}

// publishMeta is the publish commit's metadata: the batch's attributes
// except the reserved "wap." keys (any case), which only lakewap writes,
// and a link lakeFS's UI would open that is no http(s) URL (validation
// refuses those; a run stored before it did may hold one).
func publishMeta(run pipeline.Run) map[string]string {
	m := make(map[string]string, len(run.Attributes)+6)
	maps.Copy(m, run.Attributes)
	maps.DeleteFunc(m, func(k, v string) bool {
		return strings.HasPrefix(strings.ToLower(k), reservedMetaPrefix) || schemas.UILinkProblem(k, v) != ""
	})
	m[pipeline.MetaBatchID], m[pipeline.MetaDataset], m["wap.sealed_commit"] = run.BatchID, run.Dataset, run.SealedCommit
	if run.Report != nil {
		pass, fail, warn := run.Report.Counts()
		m[pipeline.MetaAudit] = fmt.Sprintf("passed=%d failed=%d warned=%d", pass, fail, warn)
	}
	if !run.BatchTime.IsZero() {
		m[pipeline.MetaBatchTime] = run.BatchTime.UTC().Format(time.RFC3339Nano)
	}
	if run.Retries > 0 {
		m[pipeline.MetaRetriedBy] = run.RetriedBy
	}
	if !run.Trace.IsZero() {
		m[pipeline.MetaTraceParent] = run.Trace.Parent
		if run.Trace.State != "" {
			m[pipeline.MetaTraceState] = run.Trace.State
		}
	}
	return m
}

// reservedMetaPrefix marks commit metadata keys that only lakewap writes.
const reservedMetaPrefix = "wap."
