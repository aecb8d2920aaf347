package pipeline

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/lakewap/lakewap/schemas"
)

// Commit metadata keys lakewap writes. They are labels for people and
// tools: what decides whether a batch is published is the commit graph
// (see Lake.Published), never metadata, which anyone who can commit can
// write. MetaBatchID labels the merge commit on the target that published a
// batch; the seal commit on the batch branch uses MetaSealedBatchID.
const (
	MetaBatchID       = "wap.batch_id"
	MetaSealedBatchID = "wap.sealed_batch_id"
	MetaDataset       = schemas.MetaDataset
	MetaAudit         = "wap.audit"
	// MetaTraceParent and MetaTraceState are the W3C trace context of the
	// batch (its BatchLanded's), so a commit on the target leads to its trace.
	MetaTraceParent = "wap.traceparent"
	MetaTraceState  = "wap.tracestate"
	// MetaBatchTime, on the merge commit, is the batch time the run's audit
	// judged freshness against (RFC 3339): the pre-merge hook of a merge
	// lakeFS names lakewap's own judges it the same way.
	MetaBatchTime = schemas.MetaBatchTime
)

// Commit metadata of the revert commit on the target, and of a publish an
// operator's retry made.
const (
	MetaRevertedBatchID = schemas.MetaRevertedBatchID
	MetaRevertReason    = "wap.revert_reason"
	MetaRevertedBy      = "wap.reverted_by"
	// MetaRevertedCommit names, in a revert commit, the publish commit it undid.
	MetaRevertedCommit = "wap.reverted_commit"
	MetaRetriedBy      = "wap.retried_by"
)

// Lake is what the runner needs from lakeFS.
type Lake interface {
	// EnsureBranch creates branch from from (the commit the run recorded
	// before creating it) unless it exists; existed reports whether it was
	// already there (a resumed run). An existing branch is resumed only when
	// it is what this run made: its head is from's commit and nothing is
	// uncommitted; any other (one made beforehand, from an older commit or
	// with content of its own) gives ErrBranchTaken.
	EnsureBranch(ctx context.Context, repo, branch, from string) (existed bool, err error)
	// Seal commits branch's uncommitted changes, even when there are none,
	// and returns the new commit's id: the exact data that is audited and
	// merged. A new commit every time means a sealed commit is never on the
	// target before lakewap merges it, which is what Published relies on.
	Seal(ctx context.Context, repo, branch, message string, meta map[string]string) (commitID string, err error)
	// Published reports whether the sealed commit is on target: lakeFS's
	// merge-base of sealed and target is sealed itself. When it is, it
	// names the target commit that brought sealed in, looked for among
	// target's first-parent commits made since since (so the cost follows
	// the commits made while publishing, not the length of the history).
	Published(ctx context.Context, repo, target, sealed string, since time.Time) (Publication, error)
	// Merge merges source (a commit id) into dest and returns the merge
	// commit id. A source with nothing to bring gives an error wrapping
	// ErrNoChanges (never an empty merge commit).
	Merge(ctx context.Context, repo, source, dest, message string, meta map[string]string) (commitID string, err error)
	// Head returns the id of the commit ref points at now.
	Head(ctx context.Context, repo, ref string) (commitID string, err error)
	// Changes lists what ref changes (adds, changes or removes) against
	// its merge-base with base: what merging ref into base brings.
	Changes(ctx context.Context, repo, base, ref string) ([]Change, error)
	// DeleteBranch deletes branch; a missing branch is not an error.
	DeleteBranch(ctx context.Context, repo, branch string) error
}

// Publication is what Lake.Published found on a target.
type Publication struct {
	// OnTarget: the sealed commit is an ancestor of (or is) the target head,
	// brought in by a merge of it (not Absorbed).
	OnTarget bool
	// Merge is the target commit that brought the sealed commit in; empty
	// when OnTarget is false, or when no commit since the given time did
	// (a merge older than the look, or one of a descendant made by hand):
	// then Head, the target's head at the time of the look, is reported.
	Merge string
	Head  string
	// Base is the merge-base of the sealed commit and Head: the snapshot of
	// the target the sealed commit holds. Base == Head means merging it
	// leaves exactly what it holds.
	Base string
	// Source, when set, is the parent Merge merged in place of the sealed
	// commit: a descendant of it (the batch audited on a newer head).
	Source string
	// Absorbed, when set, is the target commit that brought the sealed
	// commit into the target's history without merging it (another batch
	// whose branch took it in, and may have changed or deleted its files
	// since): the sealed commit is not on the target as published (OnTarget
	// is false), and merging it again changes nothing.
	Absorbed string
}

// Change is one path a commit changes against a base (lakeFS's three-dot
// diff): Size is the object's size at the commit, 0 when Removed. Added is
// set by a comparison of two trees only (PathComparer): the path is at the
// second commit alone.
type Change struct {
	Path    string
	Size    int64
	Removed bool
	Added   bool
}

// Commit is one commit of a repository's history.
type Commit struct {
	ID, Message, Committer string
	CreationDate           time.Time
	Metadata               map[string]string
	Parents                []string
}

// Reverter is what an operator's revert needs from lakeFS besides Lake. A
// Lake that is not also a Reverter cannot revert (the step fails).
type Reverter interface {
	// MergesOf lists target's first-parent commits made since since (less
	// clock slack; zero: the last 1000) that merged sealed in (merge commits,
	// sealed a parent after the first), newest first.
	MergesOf(ctx context.Context, repo, target, sealed string, since time.Time) ([]Commit, error)
	// FirstParents lists up to limit first-parent commits of ref made
	// since since (zero: any), newest first: the commits made on the
	// branch itself, not those its merges brought in.
	FirstParents(ctx context.Context, repo, ref string, since time.Time, limit int) ([]Commit, error)
	// Revert adds a commit to branch that undoes commitID (relative to
	// parent parentNumber, from 1, for a merge commit).
	Revert(ctx context.Context, repo, branch, commitID string, parentNumber int, message string, meta map[string]string) error
	// Committer is how lakeFS names lakewap's own user in the commits it
	// makes (a merge's and a revert's committer is the caller's user):
	// a revert already made is looked for among lakewap's commits only.
	Committer(ctx context.Context) (string, error)
}

// callCounterKey carries the counter of lakeFS API calls made on behalf of
// one run through the calls of a step, down to the lakeFS adapter (the
// audit's listings and downloads included).
type callCounterKey struct{}

// WithCallCounter returns ctx with n as the counter CountCall adds to.
func WithCallCounter(ctx context.Context, n *atomic.Int64) context.Context {
	return context.WithValue(ctx, callCounterKey{}, n)
}

// CountCall counts one lakeFS API call against the run of ctx, if any.
// Adapters call it once per HTTP request they send.
func CountCall(ctx context.Context) {
	if n, ok := ctx.Value(callCounterKey{}).(*atomic.Int64); ok {
		n.Add(1)
	}
}

// Lister is what naming the commit a batch collides with needs from lakeFS
// besides Lake. A Lake that is not also a Lister names the target's head.
type Lister interface {
	// FirstParentsAfter lists ref's first-parent commits after base (not
	// included), oldest first, at most limit (the newest ones).
	FirstParentsAfter(ctx context.Context, repo, ref, base string, limit int) ([]string, error)
}
