package pipeline

import "context"

// MetaBatchID is the commit metadata key that marks a publish commit with
// the batch it published. It is how a repeated publish is detected.
const MetaBatchID = "wap.batch_id"

// Lake is what the runner needs from lakeFS.
type Lake interface {
	// EnsureBranch creates branch from source unless it exists; existed
	// reports whether it was already there (a resumed run).
	EnsureBranch(ctx context.Context, repo, branch, source string) (existed bool, err error)
	// FindPublished looks at target's recent history for a commit whose
	// metadata has MetaBatchID = batchID and returns its id.
	FindPublished(ctx context.Context, repo, target, batchID string) (commitID string, found bool, err error)
	// Publish commits branch's uncommitted changes (if any) and merges the
	// branch into target, both with meta; it returns the merge commit id.
	Publish(ctx context.Context, repo, branch, target string, meta map[string]string) (commitID string, err error)
	// DeleteBranch deletes branch; a missing branch is not an error.
	DeleteBranch(ctx context.Context, repo, branch string) error
}
