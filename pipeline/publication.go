package pipeline

import (
	"cmp"
	"context"
	"errors"
	"time"
)

// PublishRequest names a sealed commit to bring into a target.
type PublishRequest struct {
	Repository, Target string
	Sealed             string    // the audited commit
	Since              time.Time // when publishing this commit started
	Message            string
	Meta               map[string]string
	// Fresh skips the first look: the sealed commit was audited by this
	// instance and no merge of it was tried since, so it is not on the
	// target yet.
	Fresh bool
}

// Publication outcomes of Publish.
type PublishResult struct {
	// CommitID is the target commit that holds the batch: the merge commit,
	// or for a batch that changed nothing the target head it matched.
	CommitID string
	// AlreadyPublished: an earlier attempt (whose answer was lost, or that
	// was still running) had merged the sealed commit.
	AlreadyPublished bool
	// Empty: the sealed commit brings no change, so nothing was merged.
	Empty bool
}

// Publish brings a sealed commit into its target exactly once. Whether it
// is already there is decided by the commit graph (merge-base), not by
// metadata, so a commit that only claims to be the publish is not taken for
// it. The merge never uses allow_empty: a second merge of a commit already
// on the target is refused by lakeFS with "no changes" instead of leaving a
// second, empty merge commit, whatever the order the attempts land in.
//
// failpoint is called as "before_merge" and "after_merge".
func Publish(ctx context.Context, lake Lake, req PublishRequest, failpoint func(string)) (PublishResult, error) {
	if !req.Fresh {
		p, err := lake.Published(ctx, req.Repository, req.Target, req.Sealed, req.Since)
		if err != nil {
			return PublishResult{}, err
		}
		if p.OnTarget {
			return PublishResult{CommitID: cmp.Or(p.Merge, p.Head), AlreadyPublished: true}, nil
		}
	}
	failpoint("before_merge")
	id, err := lake.Merge(ctx, req.Repository, req.Sealed, req.Target, req.Message, req.Meta)
	if err == nil {
		failpoint("after_merge")
		return PublishResult{CommitID: id}, nil
	}
	if !errors.Is(err, ErrNoChanges) && !errors.Is(err, ErrTransient) {
		return PublishResult{}, err
	}
	// The merge may have happened anyway: a timed-out answer, or another
	// attempt of the same commit that landed first ("no changes").
	p, perr := lake.Published(ctx, req.Repository, req.Target, req.Sealed, req.Since)
	if perr != nil {
		return PublishResult{}, errors.Join(err, perr)
	}
	switch {
	case p.OnTarget:
		return PublishResult{CommitID: cmp.Or(p.Merge, p.Head), AlreadyPublished: true}, nil
	case errors.Is(err, ErrNoChanges):
		// The sealed commit's data equals its merge-base with the target:
		// the batch changed nothing, and the target already holds it.
		return PublishResult{CommitID: p.Head, Empty: true}, nil
	}
	return PublishResult{}, err
}
