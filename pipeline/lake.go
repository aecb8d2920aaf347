package pipeline

import "context"

// Commit metadata keys lakewap writes. MetaBatchID marks the merge commit on
// the target that published a batch: it is how a repeated publish is
// detected. The seal commit on the batch branch uses MetaSealedBatchID so a
// scan of the target's full history never mistakes it for the publish.
const (
	MetaBatchID       = "wap.batch_id"
	MetaSealedBatchID = "wap.sealed_batch_id"
	MetaDataset       = "wap.dataset"
	MetaAudit         = "wap.audit"
)

// Lake is what the runner needs from lakeFS.
type Lake interface {
	// EnsureBranch creates branch from source unless it exists; existed
	// reports whether it was already there (a resumed run).
	EnsureBranch(ctx context.Context, repo, branch, source string) (existed bool, err error)
	// Seal commits branch's uncommitted changes, if any, and returns the
	// branch head commit id: the exact data that is audited and merged.
	Seal(ctx context.Context, repo, branch, message string, meta map[string]string) (commitID string, err error)
	// FindPublished looks at target's recent history for a commit whose
	// metadata has MetaBatchID = batchID and returns its id.
	FindPublished(ctx context.Context, repo, target, batchID string) (commitID string, found bool, err error)
	// Merge merges source (a commit id) into dest and returns the merge
	// commit id.
	Merge(ctx context.Context, repo, source, dest, message string, meta map[string]string) (commitID string, err error)
	// DeleteBranch deletes branch; a missing branch is not an error.
	DeleteBranch(ctx context.Context, repo, branch string) error
}
