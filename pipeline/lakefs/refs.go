package lakefs

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/treeverse/lakefs/pkg/api/apigen"

	"github.com/lakewap/lakewap/pipeline"
)

// Branch is a branch and the commit it points at.
type Branch struct {
	Name, CommitID string
}

// Commit is one commit of a repository's history.
type Commit struct {
	ID, Message, Committer string
	CreationDate           time.Time
	Metadata               map[string]string
	Parents                []string
}

// EnsureBranch creates branch from source; a branch that is already there
// is reported with existed=true and left as it is.
func (c *Client) EnsureBranch(ctx context.Context, repo, branch, source string) (bool, error) {
	body := apigen.CreateBranchJSONRequestBody{Name: branch, Source: source}
	err := c.send(ctx, call{op: "create branch", repo: repo, ref: branch}, http.StatusCreated, nil, func(ctx context.Context) (*http.Response, error) {
		return c.api.CreateBranch(ctx, repo, body)
	})
	if status(err) == http.StatusConflict {
		return true, nil
	}
	return false, err
}

// DeleteBranch deletes branch; a branch that is not there is not an error
// (a missing repository still is).
func (c *Client) DeleteBranch(ctx context.Context, repo, branch string) error {
	err := c.send(ctx, call{op: "delete branch", repo: repo, ref: branch}, http.StatusNoContent, nil, func(ctx context.Context) (*http.Response, error) {
		return c.api.DeleteBranch(ctx, repo, branch, &apigen.DeleteBranchParams{})
	})
	var e *Error
	if errors.As(err, &e) && e.Status == http.StatusNotFound && !strings.Contains(strings.ToLower(e.Message), "repository") {
		return nil
	}
	return err
}

// ListBranches lists the branches whose names start with prefix.
func (c *Client) ListBranches(ctx context.Context, repo, prefix string) ([]Branch, error) {
	var out []Branch
	after := ""
	for {
		params := &apigen.ListBranchesParams{Amount: ptr(apigen.PaginationAmount(pageSize))}
		if prefix != "" {
			params.Prefix = ptr(apigen.PaginationPrefix(prefix))
		}
		if after != "" {
			params.After = ptr(apigen.PaginationAfter(after))
		}
		var page apigen.RefList
		err := c.send(ctx, call{op: "list branches", repo: repo, ref: prefix}, http.StatusOK, &page, func(ctx context.Context) (*http.Response, error) {
			return c.api.ListBranches(ctx, repo, params)
		})
		if err != nil {
			return nil, err
		}
		for _, r := range page.Results {
			out = append(out, Branch{Name: r.Id, CommitID: r.CommitId})
		}
		if !page.Pagination.HasMore || page.Pagination.NextOffset == "" {
			return out, nil
		}
		after = page.Pagination.NextOffset
	}
}

// Commit commits branch's uncommitted changes with message and meta. A
// branch without changes gives an error wrapping pipeline.ErrNoChanges.
func (c *Client) Commit(ctx context.Context, repo, branch, message string, meta map[string]string) (string, error) {
	body := apigen.CommitJSONRequestBody{Message: message}
	if len(meta) > 0 {
		body.Metadata = &apigen.CommitCreation_Metadata{AdditionalProperties: meta}
	}
	var out apigen.Commit
	err := c.send(ctx, call{op: "commit", repo: repo, ref: branch}, http.StatusCreated, &out, func(ctx context.Context) (*http.Response, error) {
		return c.api.Commit(ctx, repo, branch, &apigen.CommitParams{}, body)
	})
	if err != nil {
		return "", err
	}
	return out.Id, nil
}

// Merge merges source (any ref) into branch dest and returns the merge
// commit id. A conflict wraps pipeline.ErrMergeConflict; nothing to merge
// wraps pipeline.ErrNoChanges.
func (c *Client) Merge(ctx context.Context, repo, source, dest, message string, meta map[string]string) (string, error) {
	body := apigen.MergeIntoBranchJSONRequestBody{Message: &message}
	if len(meta) > 0 {
		body.Metadata = &apigen.Merge_Metadata{AdditionalProperties: meta}
	}
	if meta[pipeline.MetaBatchID] != "" {
		// A publish leaves its marker commit even for a batch that changed
		// nothing, so FindPublished can tell it was published.
		allow := true
		body.AllowEmpty = &allow
	}
	var out apigen.MergeResult
	err := c.send(ctx, call{op: opMerge, repo: repo, ref: source + "->" + dest}, http.StatusOK, &out, func(ctx context.Context) (*http.Response, error) {
		return c.api.MergeIntoBranch(ctx, repo, source, dest, body)
	})
	if err != nil {
		return "", err
	}
	return out.Reference, nil
}

// Seal commits branch's uncommitted changes, if any, and returns the
// branch's head commit id: the exact data that is then audited and merged.
func (c *Client) Seal(ctx context.Context, repo, branch, message string, meta map[string]string) (string, error) {
	id, err := c.Commit(ctx, repo, branch, message, meta)
	if err == nil {
		return id, nil
	}
	if !errors.Is(err, pipeline.ErrNoChanges) {
		return "", err
	}
	head, err := c.GetCommit(ctx, repo, branch)
	if err != nil {
		return "", err
	}
	return head.ID, nil
}

// Publish seals branch (commits its uncommitted changes, if any) and merges
// the sealed commit into target with meta; it returns the merge commit id.
// The seal commit carries meta too, but with the batch id under
// pipeline.MetaSealedBatchID, so only the merge commit on target answers to
// pipeline.MetaBatchID.
//
// A publish whose merge already happened (say the answer to an earlier
// attempt was lost) is found on target first and not merged again. A batch
// that changed nothing still gets its (empty) merge commit as a marker.
func (c *Client) Publish(ctx context.Context, repo, branch, target string, meta map[string]string) (string, error) {
	batch := meta[pipeline.MetaBatchID]
	label := "branch " + branch
	sealMeta := make(map[string]string, len(meta))
	for k, v := range meta {
		sealMeta[k] = v
	}
	if batch != "" {
		label = "batch " + batch
		delete(sealMeta, pipeline.MetaBatchID)
		sealMeta[pipeline.MetaSealedBatchID] = batch
		prev, found, err := c.FindPublished(ctx, repo, target, batch)
		if err != nil {
			return "", err
		}
		if found {
			return prev, nil
		}
	}
	sealed, err := c.Seal(ctx, repo, branch, "lakewap: writes of "+label, sealMeta)
	if err != nil {
		return "", err
	}
	return c.Merge(ctx, repo, sealed, target, fmt.Sprintf("lakewap: publish %s into %s", label, target), meta)
}

// FindPublished looks for the merge commit that published batchID on
// target, among target's last 1000 first-parent commits. Following first
// parents only is what makes the answer the merge commit on target rather
// than the batch branch's own commit, which carries the same metadata.
func (c *Client) FindPublished(ctx context.Context, repo, target, batchID string) (string, bool, error) {
	var id string
	err := c.walkLog(ctx, repo, target, publishedDepth, true, func(cm Commit) bool {
		if cm.Metadata[pipeline.MetaBatchID] == batchID {
			id = cm.ID
			return false
		}
		return true
	})
	if err != nil {
		return "", false, err
	}
	return id, id != "", nil
}

// Log returns up to limit commits reachable from ref, newest first.
func (c *Client) Log(ctx context.Context, repo, ref string, limit int) ([]Commit, error) {
	var out []Commit
	if limit <= 0 {
		return out, nil
	}
	err := c.walkLog(ctx, repo, ref, limit, false, func(cm Commit) bool {
		out = append(out, cm)
		return true
	})
	return out, err
}

// walkLog calls fn for up to limit commits of ref's log until fn returns false.
func (c *Client) walkLog(ctx context.Context, repo, ref string, limit int, firstParent bool, fn func(Commit) bool) error {
	seen := 0
	after := ""
	for seen < limit {
		amount := min(pageSize, limit-seen)
		params := &apigen.LogCommitsParams{Amount: ptr(apigen.PaginationAmount(amount))}
		if firstParent {
			params.FirstParent = ptr(true)
		}
		if after != "" {
			params.After = ptr(apigen.PaginationAfter(after))
		}
		var page apigen.CommitList
		err := c.send(ctx, call{op: "log", repo: repo, ref: ref}, http.StatusOK, &page, func(ctx context.Context) (*http.Response, error) {
			return c.api.LogCommits(ctx, repo, ref, params)
		})
		if err != nil {
			return err
		}
		for _, cm := range page.Results {
			if seen >= limit {
				return nil
			}
			seen++
			if !fn(commitFrom(cm)) {
				return nil
			}
		}
		if !page.Pagination.HasMore || page.Pagination.NextOffset == "" || len(page.Results) == 0 {
			return nil
		}
		after = page.Pagination.NextOffset
	}
	return nil
}

// GetCommit returns the commit ref points at; ref may be a branch, a tag
// or a commit id.
func (c *Client) GetCommit(ctx context.Context, repo, ref string) (Commit, error) {
	var out apigen.Commit
	err := c.send(ctx, call{op: "get commit", repo: repo, ref: ref}, http.StatusOK, &out, func(ctx context.Context) (*http.Response, error) {
		return c.api.GetCommit(ctx, repo, ref)
	})
	if err != nil {
		return Commit{}, err
	}
	return commitFrom(out), nil
}

// Revert adds a commit to branch that undoes commitID. For a merge commit,
// parentNumber (from 1) names the parent to revert relative to: 1 is the
// target's side, which undoes what the merge brought in. message and meta
// replace lakeFS's default ones when given.
func (c *Client) Revert(ctx context.Context, repo, branch, commitID string, parentNumber int, message string, meta map[string]string) error {
	body := apigen.RevertBranchJSONRequestBody{Ref: commitID, ParentNumber: parentNumber}
	if message != "" || len(meta) > 0 {
		o := &apigen.CommitOverrides{}
		if message != "" {
			o.Message = &message
		}
		if len(meta) > 0 {
			o.Metadata = &apigen.CommitOverrides_Metadata{AdditionalProperties: meta}
		}
		body.CommitOverrides = o
	}
	return c.send(ctx, call{op: "revert", repo: repo, ref: branch + "@" + commitID}, http.StatusNoContent, nil, func(ctx context.Context) (*http.Response, error) {
		return c.api.RevertBranch(ctx, repo, branch, body)
	})
}

func commitFrom(cm apigen.Commit) Commit {
	out := Commit{
		ID:           cm.Id,
		Message:      cm.Message,
		Committer:    cm.Committer,
		CreationDate: time.Unix(cm.CreationDate, 0).UTC(),
		Metadata:     map[string]string{},
		Parents:      cm.Parents,
	}
	if cm.Metadata != nil {
		for k, v := range cm.Metadata.AdditionalProperties {
			out.Metadata[k] = v
		}
	}
	return out
}
