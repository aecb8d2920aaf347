package audit

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/lakewap/lakewap/schemas"
)

// What is merged is what was audited, byte for byte. A writer may stage or
// link an object claiming a size smaller than what is stored at its
// address (stageObject, linkPhysicalAddress after a presigned upload).
// lakeFS's API serves the claimed size, so the audit reads a prefix, while
// presigned and direct readers of the blockstore read the whole object.
// lakeFS's API has no call that reports the stored size, so with a
// Blockstore (Options.Blockstore: lakewap reading lakeFS's blockstore
// itself) every object a batch changes under a table's path that the audit
// read must be stored with the size it claims; anything else fails the
// check stored_sizes, which names the paths and both sizes, and the batch
// is aborted. Without a Blockstore the check does not run.

// KindStoredSize is the kind of the result that names objects whose
// claimed size is not their stored size.
const KindStoredSize = "stored_sizes"

// Blockstore reads lakeFS's blockstore directly, not through lakeFS.
type Blockstore interface {
	// StoredSize is the size of the object stored at address, a physical
	// address as lakeFS lists it (local:///..., s3://bucket/key). The
	// error wraps ErrNotStored when nothing is stored there, and
	// ErrInfrastructure when asking again later may succeed.
	StoredSize(ctx context.Context, address string) (int64, error)
}

// ErrNotStored: the blockstore holds no object at the address.
var ErrNotStored = errors.New("no object stored at the address")

// DefaultStatTimeout bounds each StoredSize call.
const DefaultStatTimeout = 10 * time.Second

// storedSizes checks, for each table the audit read, that the objects the
// ref changes under its path (against the base) that the audit read are
// stored with the size they claim. Objects foreign_addresses refused are
// left to it; objects the audit did not read are unaudited's.
func (r *run) storedSizes(ctx context.Context) []schemas.CheckResult {
	bs := r.e.opts.Blockstore
	if bs == nil || r.req.BaseRef == "" || r.req.BaseRef == r.req.Ref {
		return nil
	}
	var out []schemas.CheckResult
	for _, t := range r.req.Suite.Tables {
		res := schemas.CheckResult{Name: KindStoredSize + "(" + t.Name + ")", Kind: KindStoredSize, Table: t.Name, Severity: SeverityError,
			Threshold: "every changed object under " + t.Path + " stored with the size lakeFS lists for it"}
		read, err := r.readAtRef(ctx, t)
		if err != nil {
			r.failedToRead(&res, "the addresses of the objects read under "+t.Path, err)
			out = append(out, res)
			continue
		}
		if len(read) == 0 {
			continue
		}
		changed, err := r.changedRead(ctx, t.Path, read)
		if err != nil {
			r.failedToRead(&res, "list the changes under "+t.Path, err)
			out = append(out, res)
			continue
		}
		objs := slices.DeleteFunc(changed, func(o Object) bool { return r.foreign[o.Path] })
		stored, errs := r.statAll(ctx, bs, objs)
		var differ, unreadable []string
		var firstErr error
		for i, o := range objs {
			switch err := errs[i]; {
			case errors.Is(err, ErrNotStored):
				differ = append(differ, fmt.Sprintf("%s (claimed %d bytes, nothing stored)", o.Path, o.Size))
			case err != nil:
				unreadable = append(unreadable, o.Path)
				if firstErr == nil {
					firstErr = fmt.Errorf("%s at %s: %w", o.Path, o.Address, err)
				}
			case stored[i] != o.Size:
				differ = append(differ, fmt.Sprintf("%s (claimed %d bytes, stored %d)", o.Path, o.Size, stored[i]))
			}
		}
		switch {
		case len(differ) > 0:
			slices.Sort(differ)
			res.Status = schemas.StatusFail
			res.Observed = fmt.Sprintf("%d changed objects not stored with their claimed size: %s", len(differ), listed(differ, maxUnauditedPaths))
			res.Message = "the audit read the claimed bytes through lakeFS; presigned and direct readers of the blockstore read what is stored"
		case len(unreadable) > 0:
			slices.Sort(unreadable)
			res.Status = schemas.StatusError
			res.Observed = fmt.Sprintf("%d changed objects whose stored size could not be read: %s", len(unreadable), listed(unreadable, maxUnauditedPaths))
			res.Message = "read the stored size of " + firstErr.Error()
			if r.infra == nil && errors.Is(firstErr, ErrInfrastructure) {
				r.infra = fmt.Errorf("%w: %s: %w", ErrInfrastructure, res.Name, firstErr)
			}
		default:
			continue
		}
		out = append(out, res)
	}
	return out
}

// statAll asks the blockstore for the stored size of each object, at most
// Options.DownloadParallelism at a time, each call within StatTimeout.
func (r *run) statAll(ctx context.Context, bs Blockstore, objs []Object) ([]int64, []error) {
	sizes := make([]int64, len(objs))
	errs := make([]error, len(objs))
	sem := make(chan struct{}, max(r.e.opts.DownloadParallelism, 1))
	var wg sync.WaitGroup
	for i, o := range objs {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			sctx, cancel := context.WithTimeout(ctx, r.e.opts.StatTimeout)
			defer cancel()
			sizes[i], errs[i] = bs.StoredSize(sctx, o.Address)
		})
	}
	wg.Wait()
	return sizes, errs
}
