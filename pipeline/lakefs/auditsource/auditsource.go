// Package auditsource is the audit's view of lakeFS: the engine's Source
// (listings, diffs, downloads) and the pre-merge hook's MergeDiff and
// Merges, over the lakeFS client. It maps lakeFS's answers onto audit's
// types and decides nothing.
//
// It may import audit, pipeline (the error classes) and pipeline/lakefs.
package auditsource

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/lakewap/lakewap/audit"
	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/pipeline/lakefs"
)

// Source lets the audit engine read lakeFS (audit.Source), and the
// pre-merge hook ask what a merge touches (audit.MergeDiff).
type Source struct{ Lake *lakefs.Client }

var (
	_ audit.Source       = Source{}
	_ audit.MergeDiff    = Source{}
	_ audit.Merges       = Merges{}
	_ audit.Ancestry     = Source{}
	_ audit.Namespaced   = Source{}
	_ audit.Differ       = Source{}
	_ audit.Successor    = Source{}
	_ audit.EntryRefuser = Source{}
	_ audit.FirstUnder   = Source{}
)

// Holds reports whether branch's head is in ref's history: merging ref
// into branch then leaves exactly ref's content (audit.Ancestry).
func (s Source) Holds(ctx context.Context, repo, ref, branch string) (bool, error) {
	base, head, err := s.Lake.MergeBase(ctx, repo, ref, branch)
	return err == nil && base == head, err
}

// List lists the objects under prefix at ref, with their physical
// addresses (what the audit's cache keys files by).
func (s Source) List(ctx context.Context, repo, ref, prefix string) ([]audit.Object, error) {
	objs, err := s.Lake.List(ctx, repo, ref, prefix)
	if err != nil {
		return nil, overBudget(err)
	}
	out := make([]audit.Object, len(objs))
	for i, o := range objs {
		out[i] = audit.Object{Path: o.Path, Checksum: o.Checksum, Address: o.PhysicalAddress, Size: o.Size}
	}
	return out, nil
}

// DataPrefix is where lakeFS puts the objects written into repo
// (audit.Namespaced): its storage namespace as the blockstore names it.
func (s Source) DataPrefix(ctx context.Context, repo, branch string) (string, error) {
	return s.Lake.DataPrefix(ctx, repo, branch)
}

// Changed lists the objects under prefix that ref adds or changes against
// base (lakeFS's three-dot diff, one listing): paths and sizes.
func (s Source) Changed(ctx context.Context, repo, base, ref, prefix string) ([]audit.Object, error) {
	changes, err := s.Lake.Diff(ctx, repo, base, ref, prefix)
	if err != nil {
		return nil, overBudget(err)
	}
	var changed []audit.Object
	for _, c := range changes {
		if c.Type != "removed" {
			changed = append(changed, audit.Object{Path: c.Path, Size: c.Size})
		}
	}
	return changed, nil
}

// Differences lists what differs under prefix between the commits from
// and to (audit.Differ): lakeFS's two-dot diff, removals included.
func (s Source) Differences(ctx context.Context, repo, from, to, prefix string, limit int) ([]audit.Difference, bool, error) {
	changes, truncated, err := s.Lake.Differences(ctx, repo, from, to, prefix, limit)
	if err != nil {
		return nil, false, err
	}
	out := make([]audit.Difference, len(changes))
	for i, c := range changes {
		out[i] = audit.Difference{Path: c.Path, Removed: c.Type == "removed", Size: c.Size}
	}
	return out, truncated, nil
}

// Touches reports whether merging ref into base brings any change under
// prefix (lakeFS's three-dot diff, removals included): one entry asked.
func (s Source) Touches(ctx context.Context, repo, base, ref, prefix string) (bool, error) {
	return s.Lake.Touches(ctx, repo, base, ref, prefix)
}

// overBudget is err, as the audit's budget error when the listing was over
// the client's limit (audit.max_list_objects): the table's checks error,
// as for a listing the audit counts over it itself.
func overBudget(err error) error {
	if errors.Is(err, lakefs.ErrListOverLimit) {
		return fmt.Errorf("%w: %w", audit.ErrOverBudget, err)
	}
	return err
}

// After is the first object of ref whose path sorts after the given one,
// whatever its prefix (audit.Successor).
func (s Source) After(ctx context.Context, repo, ref, after string) (audit.Object, bool, error) {
	o, ok, err := s.Lake.After(ctx, repo, ref, after)
	if err != nil || !ok {
		return audit.Object{}, false, err
	}
	return audit.Object{Path: o.Path, Checksum: o.Checksum, Address: o.PhysicalAddress, Size: o.Size}, true, nil
}

// Download writes the content of path at ref to w.
func (s Source) Download(ctx context.Context, repo, ref, path string, w io.Writer) error {
	return s.Lake.Download(ctx, repo, ref, path, w)
}

// Changes are the runner's diff of a sealed commit as the audit takes it
// (Request.Changes): the objects added or changed, and the paths removed.
func Changes(changes []pipeline.Change) *audit.Changes {
	c := &audit.Changes{Objects: make([]audit.Object, 0, len(changes)), Removals: true}
	for _, ch := range changes {
		if ch.Removed {
			c.Removed = append(c.Removed, ch.Path)
		} else {
			c.Objects = append(c.Objects, audit.Object{Path: ch.Path, Size: ch.Size})
		}
	}
	return c
}

// Merges lets the pre-merge handler check a call against lakeFS: the
// merge commit it names (parents, committer, metadata), and the
// destination's head.
type Merges struct{ Lake *lakefs.Client }

// Commit returns commit id of repo; audit.ErrUnknownCommit when lakeFS has
// none. The commit lakeFS gives must have id for its id: lakeFS resolves a
// ref that is no commit's full id as a branch, then a tag, then a prefix
// of a commit id, and a writer may name a branch with hex digits (40, or
// 64 that are no commit's). The hook checked such a branch's head as the
// merge in progress and audited the branch as a commit, whose reads the
// engine keeps as immutable: a download by path after the writer moved
// the branch was kept under the address listed before, and a later audit
// of a commit holding that address read the other bytes
// (TestReview49HookCallNamingAHexBranchDoesNotKeyBytesByAnotherAddress).
func (m Merges) Commit(ctx context.Context, repo, id string) (audit.MergeCommit, error) {
	c, err := m.Lake.GetCommit(ctx, repo, id)
	if errors.Is(err, pipeline.ErrNotFound) {
		return audit.MergeCommit{}, fmt.Errorf("%w: %w", audit.ErrUnknownCommit, err)
	}
	if err != nil {
		return audit.MergeCommit{}, err
	}
	if c.ID != id {
		return audit.MergeCommit{}, fmt.Errorf("%w: ref %.64q of %s is commit %s, not a commit of that id (a branch or tag so named, or a prefix)",
			audit.ErrUnknownCommit, id, repo, c.ID)
	}
	return audit.MergeCommit{Parents: c.Parents, Committer: c.Committer, Metadata: c.Metadata}, nil
}

// Head returns the commit branch of repo points at.
func (m Merges) Head(ctx context.Context, repo, branch string) (string, error) {
	head, err := m.Lake.Head(ctx, repo, branch)
	if errors.Is(err, pipeline.ErrNotFound) {
		return "", fmt.Errorf("%w: %w", audit.ErrUnknownCommit, err)
	}
	return head, err
}

// RefusedAt reports whether err is a listing refused for an entry past its
// limit that ref holds too (audit.EntryRefuser): one entry asked.
func (s Source) RefusedAt(ctx context.Context, repo, ref string, err error) (string, bool, error) {
	return s.Lake.RefusedAt(ctx, repo, ref, err)
}

// FirstUnder is the first object of ref whose path starts with prefix
// (audit.FirstUnder): one entry asked.
func (s Source) FirstUnder(ctx context.Context, repo, ref, prefix string) (audit.Object, bool, error) {
	o, ok, err := s.Lake.FirstUnder(ctx, repo, ref, prefix)
	if err != nil || !ok {
		return audit.Object{}, false, overBudget(err)
	}
	return audit.Object{Path: o.Path, Checksum: o.Checksum, Address: o.PhysicalAddress, Size: o.Size}, true, nil
}
