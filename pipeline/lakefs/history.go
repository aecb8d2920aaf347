package lakefs

import (
	"context"
	"time"

	"github.com/treeverse/lakefs/pkg/api/apigen"
)

// FirstParents lists up to limit first-parent commits of ref, newest first:
// the commits made on the branch itself (a merge is one, the merged
// branch's commits are not). A non-zero since keeps those made since then
// (lakeFS's clock, whole seconds).
func (c *Client) FirstParents(ctx context.Context, repo, ref string, since time.Time, limit int) ([]Commit, error) {
	params := apigen.LogCommitsParams{FirstParent: ptr(true)}
	if !since.IsZero() {
		params.Since = ptr(since)
	}
	return c.commits(ctx, repo, ref, limit, params)
}
