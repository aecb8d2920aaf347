package pipeline

import "errors"

// Error classes. Adapters decide once which class an outside failure belongs
// to and wrap one of these with %w; the runner only uses errors.Is.
var (
	// ErrTransient: worth retrying (timeouts, 5xx, 423 locked, 429).
	ErrTransient = errors.New("transient")
	// ErrMergeConflict: the batch's branch conflicts with the target.
	ErrMergeConflict = errors.New("merge conflict")
	// ErrNotFound: the repository, branch or object does not exist.
	ErrNotFound = errors.New("not found")
	// ErrNoChanges: nothing to commit or merge.
	ErrNoChanges = errors.New("no changes")
)
