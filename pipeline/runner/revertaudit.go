package runner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/schemas"
)

// A revert is a commit on the target like a merge, and lakeFS runs no
// pre-merge action on it: reverting a customers batch whose customers later
// orders reference left main failing orders' check, a state no audit had
// judged, after which every orders batch failed its audit (review 50).
// Before it reverts, lakewap audits the target as the revert will leave it,
// with the machinery of the publish's recheck (an Onto audit): lakeFS
// reverts the publish on a scratch branch made from the target's head, and
// that commit is audited onto the head, the batch's dataset and every
// dataset whose checks read the tables it changes (the audit's
// neighbors). The scratch branch is deleted; the revert commit the
// operator sees is made on the target as before, in its publish turn, one
// commit whose tree is the scratch commit's (nothing else commits to the
// target in lakewap's turn). A check that passes on the head and fails
// after the revert refuses the revert; one failing already does not (the
// revert may be its remedy). The operator's -force, in the signed
// request, skips the audit.

// revertScratchSuffix names the scratch branch of a run's revert audit
// (its batch branch's name and the suffix: under the branch prefix, so
// the janitor deletes one a crash left behind, as a branch without a run).
// Every branch lakewap makes is within schemas.MaxLakewapBranchNameLen,
// which the janitor's listing keeps.
const revertScratchSuffix = schemas.RevertScratchSuffix

// metaRevertAudit marks lakewap's revert on the scratch branch with a
// value of its own (a nonce), by which it is told from a writer's commit.
const metaRevertAudit = "wap.revert_audit"

// maxRevertBlockers bounds the checks a refused revert names.
const maxRevertBlockers = 10

// revertBlocked is a revert refused by its audit.
type revertBlocked struct {
	target string
	checks []string // failing after the revert, passing before
}

func (e *revertBlocked) Error() string {
	names := e.checks
	more := ""
	if len(names) > maxRevertBlockers {
		more = fmt.Sprintf(" and %d more", len(names)-maxRevertBlockers)
		names = names[:maxRevertBlockers]
	}
	return fmt.Sprintf("the revert would leave %s failing %s%s, which pass%s on it now: revert or fix what depends on the batch first, or revert with -force if %s should hold that state",
		e.target, strings.Join(names, ", "), more, map[bool]string{true: "es", false: ""}[len(e.checks) == 1], e.target)
}

// revertAudit is what auditRevert judged: the target's head it audited
// against, the scratch revert commit on it that passed (what lands on the
// target, merged), and the batch time of its audit.
type revertAudit struct {
	head, commit string
	at           time.Time
}

// auditRevert audits the target as reverting merge (the run's publish
// commit) will leave it. Its error is nil when no check that passes on the
// target's head fails after the revert, a *revertBlocked when one does, or
// what kept it from judging (the revert is not made). drop, never nil,
// deletes the scratch branch, which holds the judged commit until it is
// merged.
func (r *Runner) auditRevert(ctx context.Context, log *slog.Logger, lake pipeline.Reverter, run pipeline.Run, merge pipeline.Commit,
	begin func(context.Context) (func() error, error)) (a revertAudit, drop func(), err error) {
	repo, target := run.Repository, run.Target
	drop = func() {}
	if a.head, err = r.cfg.Lake.Head(ctx, repo, target); err != nil {
		return a, drop, fmt.Errorf("the target's head, to audit the revert against: %w", err)
	}
	if run.Branch == "" {
		return a, drop, errors.New("the run has no branch name to name the revert's scratch branch after")
	}
	scratch := run.Branch + revertScratchSuffix
	// One left by a crash holds a revert already, or an older head.
	if err := r.cfg.Lake.DeleteBranch(ctx, repo, scratch); err != nil {
		return a, drop, fmt.Errorf("deleting the revert's scratch branch %s: %w", scratch, err)
	}
	if _, err := r.cfg.Lake.EnsureBranch(ctx, repo, scratch, a.head); err != nil {
		return a, drop, fmt.Errorf("creating the revert's scratch branch %s from %s: %w", scratch, a.head, err)
	}
	drop = func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lookTimeout)
		defer cancel()
		if err := r.cfg.Lake.DeleteBranch(ctx, repo, scratch); err != nil {
			log.Warn("the revert's scratch branch was not deleted; the janitor deletes it", "branch", scratch, "err", err)
		}
	}
	a.commit, a.at, err = r.judgeRevert(ctx, log, lake, run, merge, a.head, scratch, begin)
	return a, drop, err
}

// judgeRevert is auditRevert's audit against head, on the scratch branch
// made from it; it returns the scratch revert commit and the audit's
// batch time.
func (r *Runner) judgeRevert(ctx context.Context, log *slog.Logger, lake pipeline.Reverter, run pipeline.Run, merge pipeline.Commit, head, scratch string,
	begin func(context.Context) (func() error, error)) (string, time.Time, error) {
	repo, target := run.Repository, run.Target
	msg := fmt.Sprintf("lakewap: audit of the revert of %s batch %s (scratch, merged onto %s only if it passes)", run.Dataset, run.BatchID, target)
	nonce := make([]byte, 16)
	_, _ = rand.Read(nonce)
	mark := hex.EncodeToString(nonce)
	if err := lake.Revert(ctx, repo, scratch, merge.ID, 1, msg, map[string]string{metaRevertAudit: mark}); err != nil {
		return "", time.Time{}, err // a conflict here is the target's revert's conflict
	}
	// The commit audited is the revert lakewap made on the head: lakeFS's
	// revert answers no commit id, and the scratch branch is under the
	// batch branches' prefix, where a writer may commit too (before the
	// revert, it would not sit on the head; after, it would be the head).
	last, err := lake.FirstParents(ctx, repo, scratch, time.Time{}, 1)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("the revert's scratch commit: %w", err)
	}
	if len(last) != 1 || last[0].Metadata[metaRevertAudit] != mark || !slices.Equal(last[0].Parents, []string{head}) {
		return "", time.Time{}, fmt.Errorf("the revert's scratch branch %s moved while it was used (its head is not lakewap's revert on %s): %w", scratch, head, pipeline.ErrTransient)
	}
	after := last[0].ID
	changes, err := r.cfg.Lake.Changes(ctx, repo, head, after)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("what the revert changes: %w", err)
	}
	// Beside other audits, as a recheck (alone once an attempt was lost
	// beside others), and stored as begun: an attempt that takes the
	// process down is counted at the restore (audit.max_attempts).
	end, err := begin(ctx)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("the revert's audit was not begun: %w", err)
	}
	defer func() {
		if err := end(); err != nil {
			log.Warn("the end of the revert's audit was not recorded: the next restore counts it as lost", "err", err)
		}
	}()
	at := time.Now().UTC()
	rep, err := r.cfg.Auditor.Audit(ctx, pipeline.AuditRequest{Dataset: run.Dataset, Repository: repo, Ref: after, BaseRef: head, BaseName: target,
		BatchTime: at, Changes: changes, Onto: true})
	if err != nil {
		return "", at, fmt.Errorf("auditing %s as the revert leaves it: %w", target, err)
	}
	failing := failedNames(rep, run.Dataset)
	if len(failing) == 0 {
		log.Info("revert audited: no check fails after it", "head", head, "changes", len(changes))
		return after, at, nil
	}
	// The batch's own checks are judged against the head as it is: one
	// failing there already does not hold the revert back. (The
	// neighbors' are, within the audit.)
	now, err := r.cfg.Auditor.Audit(ctx, pipeline.AuditRequest{Dataset: run.Dataset, Repository: repo, Ref: head, BaseRef: head, BaseName: target,
		BatchTime: at, Changes: []pipeline.Change{}})
	if err != nil {
		return "", at, fmt.Errorf("auditing %s as it is, before the revert: %w", target, err)
	}
	before := failedNames(now, run.Dataset)
	failing = slices.DeleteFunc(failing, func(n string) bool { return slices.Contains(before, n) })
	if len(failing) == 0 {
		log.Info("revert audited: the checks failing after it fail on the target already", "head", head)
		return after, at, nil
	}
	return "", at, &revertBlocked{target: target, checks: failing}
}

// failedNames are the names of rep's failing checks, each naming its
// dataset (a neighbor's does already).
func failedNames(rep schemas.AuditReport, dataset string) []string {
	var out []string
	for _, c := range rep.Failed() {
		n := c.Name
		if !strings.Contains(n, "(dataset ") {
			n = fmt.Sprintf("%s (dataset %s)", n, dataset)
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}
