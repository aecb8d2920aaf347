package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/lakewap/lakewap/audit"
	"github.com/lakewap/lakewap/notify"
	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/pipeline/lakefs"
	"github.com/lakewap/lakewap/schemas"
)

// auditSource lets the audit engine read lakeFS through the adapter.
type auditSource struct {
	lake *lakefs.Client
	// addresses: the engine keys its cache by physical address, which the
	// diff does not give (Changed lists them).
	addresses bool
}

func (s auditSource) List(ctx context.Context, repo, ref, prefix string) ([]audit.Object, error) {
	objs, err := s.lake.List(ctx, repo, ref, prefix)
	if err != nil {
		return nil, err
	}
	out := make([]audit.Object, len(objs))
	for i, o := range objs {
		out[i] = audit.Object{Path: o.Path, Checksum: o.Checksum, Address: o.PhysicalAddress, Size: o.Size}
	}
	return out, nil
}

func (s auditSource) Changed(ctx context.Context, repo, base, ref, prefix string) ([]audit.Object, error) {
	changes, err := s.lake.Diff(ctx, repo, base, ref, prefix)
	if err != nil {
		return nil, err
	}
	var changed []audit.Object
	for _, c := range changes {
		if c.Type != "removed" {
			changed = append(changed, audit.Object{Path: c.Path, Size: c.Size})
		}
	}
	if len(changed) == 0 || !s.addresses {
		return changed, nil
	}
	// The diff has no physical addresses; list them once, under the deepest
	// folder that holds every changed file (a batch's own folder, usually),
	// so the listing does not grow with the table.
	paths := make([]string, len(changed))
	for i, o := range changed {
		paths[i] = o.Path
	}
	objs, err := s.List(ctx, repo, ref, commonFolder(prefix, paths))
	if err != nil {
		return nil, err
	}
	byPath := make(map[string]audit.Object, len(objs))
	for _, o := range objs {
		byPath[o.Path] = o
	}
	var out []audit.Object
	for _, p := range paths {
		if o, ok := byPath[p]; ok {
			out = append(out, o)
		}
	}
	return out, nil
}

// Touches reports whether merging ref into base brings any change under
// prefix (lakeFS's three-dot diff, removals included).
func (s auditSource) Touches(ctx context.Context, repo, base, ref, prefix string) (bool, error) {
	changes, err := s.lake.Diff(ctx, repo, base, ref, prefix)
	return len(changes) > 0, err
}

// commonFolder is the longest folder prefix ("a/b/") shared by paths, no
// shorter than prefix.
func commonFolder(prefix string, paths []string) string {
	common := paths[0][:strings.LastIndex(paths[0], "/")+1]
	for _, p := range paths[1:] {
		for !strings.HasPrefix(p, common) {
			common = common[:strings.LastIndex(strings.TrimSuffix(common, "/"), "/")+1]
		}
	}
	if len(common) < len(prefix) {
		return prefix
	}
	return common
}

func (s auditSource) Download(ctx context.Context, repo, ref, path string, w io.Writer) error {
	return s.lake.Download(ctx, repo, ref, path, w)
}

// auditor is the runner's view of the audit service.
type auditor struct{ s *audit.Service }

func (a auditor) Audit(ctx context.Context, req pipeline.AuditRequest) (schemas.AuditReport, error) {
	rep, err := a.s.Audit(ctx, audit.Request{Dataset: req.Dataset, Repository: req.Repository,
		Ref: req.Ref, BaseRef: req.BaseRef, BaseName: req.BaseName, BatchTime: req.BatchTime})
	if errors.Is(err, audit.ErrInfrastructure) {
		// Out of memory, a base that cannot be resolved and the like:
		// retried within runner.retry_budget, then the batch fails (not
		// aborted: its data was never judged).
		err = fmt.Errorf("%w: %w", pipeline.ErrTransient, err)
	}
	return rep, err
}

// notifier maps a pipeline notification onto the dispatcher's.
type notifier struct{ d *notify.Dispatcher }

func (n notifier) Notify(ctx context.Context, pn pipeline.Notification) (map[string]string, error) {
	return n.d.Notify(ctx, notify.Notification{
		Event: pn.Event, State: string(pn.State), Dataset: pn.Run.Dataset, BatchID: pn.Run.BatchID,
		Repository: pn.Run.Repository, Branch: pn.Run.Branch, LandedAt: pn.Run.LandedAt, Receipts: pn.Receipts,
		RequestID: pn.RequestID, ResultOnly: pn.ResultOnly, Trace: pn.Run.Trace,
	})
}

// hookMerges lets the pre-merge handler check a call against lakeFS: the
// merge commit it names, and the destination's head.
type hookMerges struct{ lake *lakefs.Client }

func (m hookMerges) Commit(ctx context.Context, repo, id string) (audit.MergeCommit, error) {
	c, err := m.lake.GetCommit(ctx, repo, id)
	if errors.Is(err, pipeline.ErrNotFound) {
		return audit.MergeCommit{}, fmt.Errorf("%w: %w", audit.ErrUnknownCommit, err)
	}
	if err != nil {
		return audit.MergeCommit{}, err
	}
	return audit.MergeCommit{Parents: c.Parents, Committer: c.Committer}, nil
}

func (m hookMerges) Head(ctx context.Context, repo, branch string) (string, error) {
	return m.lake.Head(ctx, repo, branch)
}
