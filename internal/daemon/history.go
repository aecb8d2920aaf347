package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/lakewap/lakewap/audit"
	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/pipeline/lakefs"
	"github.com/lakewap/lakewap/schemas"
)

// auditHistory lets the audit engine read lakeFS's commit graph
// (audit.History): a batch's foundation and the attestation on it, and who
// lakewap is to lakeFS (audit.OwnUser: an attestation counts on lakewap's
// own commits only).
type auditHistory struct {
	lake *lakefs.Client
	own  *ownCommitter
}

func newAuditHistory(lake *lakefs.Client) auditHistory {
	return auditHistory{lake: lake, own: &ownCommitter{}}
}

func (h auditHistory) OwnCommitter(ctx context.Context) (string, error) {
	return h.own.get(ctx, h.lake)
}

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
		opts.History = newAuditHistory(lake)
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
func History(lake *lakefs.Client) audit.History { return newAuditHistory(lake) }

// unattestedDepth bounds the target commits under a publish looked at for
// commits lakewap did not attest (one lakeFS call).
const unattestedDepth = 64

// unattestedFinder is the runner's Unattested: what a publish's merge
// commit landed on that lakewap did not attest (see unattestedUnder). A
// publish whose audit was incremental, and whose merge landed where it was
// judged (its attestation holds: the merge's first parent is its
// foundation, or its recheck's head), landed on an attested publish of the
// same suite: nothing to look for, one get-commit (which the derivation of
// the merge's listings shares). lakeFS's merge takes no precondition on
// the target's head, so a commit someone made between the publish's look
// and its merge is the merge's first parent instead; without the
// pre-merge hook nothing refuses that, and this publish announces it
// (review 48: before, an incremental one looked for nothing, and the next
// full one announced the commit and lakewap's merge onto it).
func unattestedFinder(cfg *config.Config, lake *lakefs.Client) func(ctx context.Context, run pipeline.Run, merge string) ([]schemas.UnattestedChange, error) {
	key, _ := cfg.AttestationKey() // validated at load
	var who ownCommitter
	return func(ctx context.Context, run pipeline.Run, merge string) ([]schemas.UnattestedChange, error) {
		d, ok := cfg.Datasets[run.Dataset]
		if !ok {
			return nil, nil
		}
		suite := audit.SuiteDigest(d.Suite)
		if run.Report != nil && run.Report.Mode == audit.ModeIncremental {
			c, err := lake.GetCommit(ctx, run.Repository, merge)
			if err != nil {
				return nil, fmt.Errorf("commit %s: %w", merge, err)
			}
			info := audit.CommitInfo{ID: c.ID, Parents: c.Parents, Metadata: c.Metadata, Message: c.Message, Committer: c.Committer}
			if _, err := audit.Attested(info, run.Dataset, suite, key); err == nil {
				return nil, nil
			}
		}
		commits, err := lake.FirstParents(ctx, run.Repository, merge, time.Time{}, unattestedDepth+1)
		if err != nil {
			return nil, fmt.Errorf("log of %s: %w", merge, err)
		}
		if len(commits) == 0 || commits[0].ID != merge {
			return nil, fmt.Errorf("log of %s does not start at it", merge)
		}
		own, err := who.get(ctx, lake)
		if err != nil {
			return nil, fmt.Errorf("who lakewap is to lakeFS: %w", err)
		}
		return unattestedUnder(run, commits, suite, key, own, len(commits) > unattestedDepth), nil
	}
}

// ownCommitter is lakewap's lakeFS user as lakeFS names the committer of
// its merges, asked once (until lakeFS answers).
type ownCommitter struct {
	mu   sync.Mutex
	name string
}

func (o *ownCommitter) get(ctx context.Context, lake *lakefs.Client) (string, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.name != "" {
		return o.name, nil
	}
	name, err := lake.Committer(ctx)
	if err != nil {
		return "", err
	}
	o.name = name
	return name, nil
}

// unattestedUnder reads the target's first-parent commits from a publish's
// merge commit down (commits[0], newest first) and returns the
// announcements: each commit lakewap did not attest above the newest
// commit it did (any dataset's publish: a commit under one was announced by
// the publish that landed on it first, so each is announced once), and a
// suite change when the dataset's newest publish below was audited by
// another suite. History before lakewap's first publish there (no
// attested commit down to the root, or within the commits read: cut) is
// the target as lakewap found it, not announced. own is lakewap's lakeFS
// user as lakeFS names the committer of its merges ("": unknown, not
// compared): a commit another user made is not lakewap's publish, whatever
// attestation it carries.
func unattestedUnder(run pipeline.Run, commits []lakefs.Commit, suite string, key []byte, own string, cut bool) []schemas.UnattestedChange {
	merge := commits[0].ID
	// raced: the publish's merge landed on other commits than the one it
	// was judged against (they came between its look and its merge); those
	// above that commit are said to be under it unjudged.
	judged, raced := landedElsewhere(commits[0], key)
	var found []schemas.UnattestedChange
	above := true // above the newest commit lakewap attested
	for _, c := range commits[1:] {
		if c.ID == judged {
			raced = false
		}
		info := audit.CommitInfo{ID: c.ID, Parents: c.Parents, Metadata: c.Metadata, Message: c.Message, Committer: c.Committer}
		verdict, detail := audit.Verify(info, run.Dataset, suite, key)
		if _, elsewhere := landedElsewhere(c, key); verdict == audit.VerifyUnattested && elsewhere {
			// lakewap's publish that landed on a commit made after its
			// look: its own publish announced what is beneath it.
			verdict = audit.VerifyAttested
		}
		if err := audit.MadeBy(info, own); verdict == audit.VerifyAttested && err != nil {
			// A merge carries whatever metadata its maker gives it (an
			// attestation copied from a publish, or one matching the
			// merge), and lakeFS names its maker: lakewap's user made
			// lakewap's publishes (review 56).
			verdict, detail = audit.VerifyUnattested, err.Error()
		}
		switch verdict {
		case audit.VerifyRoot:
			if above {
				return nil // never published here before
			}
			return found
		case audit.VerifyUnattested:
			if above {
				if raced {
					detail += fmt.Sprintf("; it came after the look of the publish %s, whose merge landed on it: main holds the batch with this change, which no audit judged together (the dataset's next audit is full)", short(merge))
				}
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
			ch := change(run, schemas.ChangeSuiteChanged, merge, suite, c, fmt.Sprintf("the dataset's suite, or lakewap's audit rules, changed since its publish %s: digest %s, now %s", short(c.ID), a.Suite, suite))
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

// landedElsewhere says whether c is lakewap's publish (its attestation
// reads, with its signature when there is a key, and names c's second
// parent as the sealed commit) whose first parent is not the commit it was
// judged against: the commit judged is returned. Such a merge's own publish
// looked for the commits beneath it (unattestedFinder).
func landedElsewhere(c lakefs.Commit, key []byte) (judged string, elsewhere bool) {
	text, ok := c.Metadata[audit.MetaAttestation]
	if !ok || len(c.Parents) != 2 {
		return "", false
	}
	a, err := audit.ParseAttestation(text, key)
	if err != nil || a.Sealed != c.Parents[1] || a.Against == c.Parents[0] {
		return "", false
	}
	return a.Against, true
}

func change(run pipeline.Run, kind, merge, suite string, c lakefs.Commit, detail string) schemas.UnattestedChange {
	return schemas.UnattestedChange{EventID: schemas.UnattestedChangeID(run.Repository, run.Target, kind, c.ID), Kind: kind,
		BatchID: run.BatchID, Dataset: run.Dataset, Repository: run.Repository, TargetRef: run.Target, CommitID: c.ID,
		Committer: c.Committer, Message: c.Message, Detail: detail, Suite: suite, PublishedCommitID: merge, OccurredAt: c.CreationDate}.Clip()
}

func short(id string) string { return id[:min(len(id), 12)] }
