package daemon

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/lakewap/lakewap/audit"
	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/pipeline/lakefs"
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
