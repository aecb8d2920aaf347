package pipeline

import (
	"errors"
	"fmt"
)

// Error classes. Adapters decide once which class an outside failure belongs
// to and wrap one of these with %w; the runner only uses errors.Is.
var (
	// ErrTransient: worth retrying (timeouts, 5xx, 423 locked, 429).
	ErrTransient = errors.New("transient")
	// ErrBranchLocked: the branch is busy with another commit or merge
	// (lakeFS "branch is currently locked", HTTP 423). It is transient;
	// the publish queue retries it at once with a short jittered backoff,
	// because the lock is held by someone outside this instance.
	ErrBranchLocked = fmt.Errorf("%w: branch locked", ErrTransient)
	// ErrMergeConflict: the batch's branch conflicts with the target.
	ErrMergeConflict = errors.New("merge conflict")
	// ErrNotFound: the repository, branch or object does not exist.
	ErrNotFound = errors.New("not found")
	// ErrHookRefused: a pre-merge hook refused a merge (lakeFS answers
	// 412). It is retried: lakewap's own hook may have run out of time on
	// a cold audit, whose report then answers the next attempt.
	ErrHookRefused = fmt.Errorf("%w: refused by a pre-merge hook", ErrTransient)
	// ErrBranchTaken: a branch with the run's name exists and holds
	// something this run did not put there (commits of its own, or
	// uncommitted changes), so it is not resumed.
	ErrBranchTaken = errors.New("branch exists and was not created by this run")
	// ErrNoChanges: nothing to commit or merge.
	ErrNoChanges = errors.New("no changes")
)
