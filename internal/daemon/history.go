package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/lakewap/lakewap/audit"
	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/pipeline/lakefs"
	"github.com/lakewap/lakewap/schemas"
)

// auditHistory lets the audit engine read lakeFS's commit graph
// (audit.History): a batch's foundation and the attestation on it.
type auditHistory struct{ lake *lakefs.Client }

func (h auditHistory) MergeBase(ctx context.Context, repo, a, b string) (string, error) {
	base, _, err := h.lake.MergeBase(ctx, repo, a, b)
	return base, err
}

func (h auditHistory) Commit(ctx context.Context, repo, ref string) (audit.CommitInfo, error) {
	c, err := h.lake.GetCommit(ctx, repo, ref)
	if err != nil {
		return audit.CommitInfo{}, err
	}
	return audit.CommitInfo{ID: c.ID, Parents: c.Parents, Metadata: c.Metadata, Message: c.Message, Committer: c.Committer}, nil
}

// engineOptions are the audit engine's options of cfg over lake: audits
// may be incremental (they read the commit graph) unless audit.incremental
// is false.
func engineOptions(cfg *config.Config, lake *lakefs.Client, src audit.Source, log *slog.Logger) audit.Options {
	opts := cfg.AuditOptions(src, log)
	if cfg.Audit.IncrementalOn() {
		opts.History = auditHistory{lake}
	}
	return opts
}

// attester is the runner's Attest: the attestation of a run's publish, for
// the merge commit's metadata. It names the commit the merged state was
// checked against: the recheck's head (against), else the batch's
// foundation (the commit its branch started from, which the audit checked
// the batch onto). If the target moved since, the merge's first parent is
// another commit and the next audit does not take the attestation (it runs
// full).
func attester(cfg *config.Config, engine *audit.Engine, lake *lakefs.Client) func(ctx context.Context, run pipeline.Run, against string) (map[string]string, error) {
	key, _ := cfg.AttestationKey() // validated at load
	return func(ctx context.Context, run pipeline.Run, against string) (map[string]string, error) {
		d, ok := cfg.Datasets[run.Dataset]
		if !ok || run.Report == nil || run.SealedCommit == "" {
			return nil, fmt.Errorf("no audit of dataset %q to attest", run.Dataset)
		}
		foundation := against
		if foundation == "" {
			foundation, _ = engine.Foundation(run.Repository, run.SealedCommit)
		}
		if foundation == "" {
			var err error
			if foundation, _, err = lake.MergeBase(ctx, run.Repository, run.SealedCommit, run.Target); err != nil {
				return nil, fmt.Errorf("foundation of %s: %w", run.SealedCommit, err)
			}
		}
		text, err := audit.NewAttestation(run.Dataset, d.Suite, *run.Report, run.SealedCommit, foundation).Encode(key)
		if err != nil {
			return nil, err
		}
		return map[string]string{audit.MetaAttestation: text}, nil
	}
}

// History is the audit engine's view of lake's commit graph (lakewap
// audit's incremental audits).
func History(lake *lakefs.Client) audit.History { return auditHistory{lake} }

// unattestedDepth bounds the target commits under a publish looked at for
// commits lakewap did not attest (one lakeFS call).
const unattestedDepth = 64

// unattestedFinder is the runner's Unattested: what a publish's merge
// commit landed on that lakewap did not attest (see unattestedUnder). A
// publish whose audit was incremental landed on an attested publish of the
// same suite (its foundation, or its recheck's head): nothing to look for,
// no lakeFS call.
func unattestedFinder(cfg *config.Config, lake *lakefs.Client) func(ctx context.Context, run pipeline.Run, merge string) ([]schemas.UnattestedChange, error) {
	key, _ := cfg.AttestationKey() // validated at load
	return func(ctx context.Context, run pipeline.Run, merge string) ([]schemas.UnattestedChange, error) {
		d, ok := cfg.Datasets[run.Dataset]
		if !ok || (run.Report != nil && run.Report.Mode == audit.ModeIncremental) {
			return nil, nil
		}
		commits, err := lake.FirstParents(ctx, run.Repository, merge, time.Time{}, unattestedDepth+1)
		if err != nil {
			return nil, fmt.Errorf("log of %s: %w", merge, err)
		}
		if len(commits) == 0 || commits[0].ID != merge {
			return nil, fmt.Errorf("log of %s does not start at it", merge)
		}
		return unattestedUnder(run, commits, audit.SuiteDigest(d.Suite), key, len(commits) > unattestedDepth), nil
	}
}

// unattestedUnder reads the target's first-parent commits from a publish's
// merge commit down (commits[0], newest first) and returns the
// announcements: each commit lakewap did not attest above the newest
// commit it did (any dataset's publish: a commit under one was announced by
// the publish that landed on it first, so each is announced once), and a
// suite change when the dataset's newest publish below was audited by
// another suite. History before lakewap's first publish there (no
// attested commit down to the root, or within the commits read: cut) is
// the target as lakewap found it, not announced.
func unattestedUnder(run pipeline.Run, commits []lakefs.Commit, suite string, key []byte, cut bool) []schemas.UnattestedChange {
	merge := commits[0].ID
	var found []schemas.UnattestedChange
	above := true // above the newest commit lakewap attested
	for _, c := range commits[1:] {
		info := audit.CommitInfo{ID: c.ID, Parents: c.Parents, Metadata: c.Metadata, Message: c.Message, Committer: c.Committer}
		verdict, detail := audit.Verify(info, run.Dataset, suite, key)
		switch verdict {
		case audit.VerifyRoot:
			if above {
				return nil // never published here before
			}
			return found
		case audit.VerifyUnattested:
			if above {
				found = append(found, change(run, schemas.ChangeUnattestedCommit, merge, suite, c, detail))
			}
			continue
		}
		above = false
		a, err := audit.ParseAttestation(c.Metadata[audit.MetaAttestation], key)
		if err != nil || a.Dataset != run.Dataset {
			continue // another dataset's publish: look on for this one's
		}
		if a.Suite != suite {
			ch := change(run, schemas.ChangeSuiteChanged, merge, suite, c, fmt.Sprintf("the dataset's suite changed since its publish %s: digest %s, now %s", short(c.ID), a.Suite, suite))
			ch.PreviousSuite, ch.OccurredAt = a.Suite, run.StateSince
			found = append(found, ch)
		}
		return found
	}
	if above || cut {
		return nil
	}
	return found
}

func change(run pipeline.Run, kind, merge, suite string, c lakefs.Commit, detail string) schemas.UnattestedChange {
	return schemas.UnattestedChange{EventID: schemas.UnattestedChangeID(run.Repository, run.Target, kind, c.ID), Kind: kind,
		BatchID: run.BatchID, Dataset: run.Dataset, Repository: run.Repository, TargetRef: run.Target, CommitID: c.ID,
		Committer: c.Committer, Message: c.Message, Detail: detail, Suite: suite, PublishedCommitID: merge, OccurredAt: c.CreationDate}.Clip()
}

func short(id string) string { return id[:min(len(id), 12)] }
