package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/internal/runs"
	"github.com/lakewap/lakewap/notify"
	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/pipeline/lakefs"
	"github.com/lakewap/lakewap/schemas"
)

// Commit metadata of the revert commit lakewap revert makes on the target.
const (
	metaRevertedBatchID = "wap.reverted_batch_id"
	metaRevertReason    = "wap.revert_reason"
	metaRevertedBy      = "wap.reverted_by"
	metaRetriedBy       = "wap.retried_by"
	// revertSearchDepth bounds the look for an earlier revert on the target.
	revertSearchDepth = 1000
)

func operator(by string) string {
	if by != "" {
		return by
	}
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	return "unknown"
}

func cmdRevert(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("revert", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("config", "lakewap.yaml", "config file")
	var o revertOptions
	fs.StringVar(&o.Batch, "batch", "", "batch id to revert (required)")
	fs.StringVar(&o.Dataset, "dataset", "", "dataset of the batch (default: the only one in the config, else from the state store)")
	fs.StringVar(&o.Reason, "reason", "", "why, recorded in the revert commit and the event (required)")
	fs.StringVar(&o.By, "by", "", "who reverts (default $USER)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if o.Batch == "" || strings.TrimSpace(o.Reason) == "" {
		fmt.Fprintln(stderr, "lakewap revert: -batch and -reason are required")
		return 2
	}
	cfg, ok := loadConfig(*path, stderr)
	if !ok {
		return 2
	}
	log := newLogger(stderr, cfg.Log.Format, cfg.Log.Level)
	if _, err := revertBatch(ctx, cfg, o, log, stdout); err != nil {
		fmt.Fprintf(stderr, "lakewap revert: %v\n", err)
		return 1
	}
	return 0
}

type revertOptions struct {
	Batch, Dataset, Reason, By string
}

// revertBatch undoes a published batch on its dataset's target with
// lakeFS's revert of the batch's merge commit (relative to its first
// parent, the target's side), records who and why in the revert commit's
// metadata, and emits BatchReverted on the results topic. Reverting again is
// a no-op that emits the same event (same event id) again, so a revert whose
// event was lost can be finished by running the command once more.
func revertBatch(ctx context.Context, cfg *config.Config, o revertOptions, log *slog.Logger, w io.Writer) (schemas.BatchReverted, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	name, ds, err := datasetOfBatch(ctx, cfg, o.Batch, o.Dataset)
	if err != nil {
		return schemas.BatchReverted{}, err
	}
	lake, err := lakeClient(cfg, log)
	if err != nil {
		return schemas.BatchReverted{}, err
	}
	repo, target := ds.Repository, ds.Target
	published, err := publishMerge(ctx, cfg, lake, repo, target, name, o.Batch)
	if err != nil {
		return schemas.BatchReverted{}, err
	}
	revertID, err := findRevert(ctx, lake, repo, target, o.Batch, published)
	if err != nil {
		return schemas.BatchReverted{}, err
	}
	by := operator(o.By)
	if revertID == "" {
		merge, err := lake.GetCommit(ctx, repo, published)
		if err != nil {
			return schemas.BatchReverted{}, err
		}
		parent := 0 // a commit with one parent is reverted as it is
		if len(merge.Parents) > 1 {
			parent = 1
		}
		msg := fmt.Sprintf("lakewap: revert %s batch %s: %s", name, o.Batch, o.Reason)
		meta := map[string]string{metaRevertedBatchID: o.Batch, metaRevertReason: o.Reason, metaRevertedBy: by,
			pipeline.MetaDataset: name, metaRevertedCommit: published}
		if err := lake.Revert(ctx, repo, target, published, parent, msg, meta); err != nil {
			if errors.Is(err, pipeline.ErrMergeConflict) {
				return schemas.BatchReverted{}, fmt.Errorf("later commits on %s change the same objects; revert them first or fix by hand: %w", target, err)
			}
			return schemas.BatchReverted{}, err
		}
		if revertID, err = findRevert(ctx, lake, repo, target, o.Batch, published); err != nil {
			return schemas.BatchReverted{}, err
		}
		if revertID == "" {
			return schemas.BatchReverted{}, fmt.Errorf("lakeFS accepted the revert but no commit with %s=%s is on %s", metaRevertedBatchID, o.Batch, target)
		}
		fmt.Fprintf(w, "reverted batch %s (%s) on %s/%s: publish commit %s undone by %s\n", o.Batch, name, repo, target, short(published), short(revertID))
	} else {
		fmt.Fprintf(w, "batch %s is already reverted on %s/%s by %s; sending the event again\n", o.Batch, repo, target, short(revertID))
	}
	rc, err := lake.GetCommit(ctx, repo, revertID)
	if err != nil {
		return schemas.BatchReverted{}, err
	}
	ev := schemas.BatchReverted{EventID: pipeline.EventID(name, o.Batch, "reverted "+published), BatchID: o.Batch, Dataset: name,
		Repository: repo, TargetRef: target, PublishedCommitID: published, CommitID: revertID,
		Reason: rc.Metadata[metaRevertReason], RevertedBy: rc.Metadata[metaRevertedBy], OccurredAt: rc.CreationDate}
	if err := emitResult(ctx, cfg, ev.EventID, ev); err != nil {
		return ev, fmt.Errorf("the revert is done but its event was not sent (run the command again to resend): %w", err)
	}
	fmt.Fprintf(w, "%s sent to %s (event id %s)\n", ev.EventType(), cfg.Kafka.ResultsTopic, ev.EventID)
	return ev, nil
}

// publishMerge names the merge commit that brought batch's sealed commit
// into target. The sealed commit comes from the run in the state store; a
// run no longer there is recognised by the wap.batch_id label of merge
// commits on target, but only when exactly one merge commit carries it.
// Either way the answer must be one merge with the sealed commit as a
// parent: none or several is refused, since reverting the wrong one (an
// empty second merge, a forged label) would undo nothing.
func publishMerge(ctx context.Context, cfg *config.Config, lake *lakefs.Client, repo, target, dataset, batch string) (string, error) {
	var sealed string
	var since time.Time
	if store, err := runs.Open(cfg.Kafka); err == nil {
		if sr, err := store.Find(ctx, batch, dataset); err == nil && sr.SealedCommit != "" {
			sealed, since = sr.SealedCommit, sr.PublishSince
		}
	}
	if sealed == "" {
		log, err := lake.Log(ctx, repo, target, revertSearchDepth)
		if err != nil {
			return "", err
		}
		var labelled []string
		for _, c := range log {
			if c.Metadata[pipeline.MetaBatchID] == batch && len(c.Parents) > 1 && sameDataset(c.Metadata, dataset) {
				labelled = append(labelled, c.ID)
				sealed = c.Parents[1]
			}
		}
		switch len(labelled) {
		case 0:
			return "", fmt.Errorf("batch %s is not published on %s/%s (no run in the state store, and no merge commit with %s=%s in its last %d commits)",
				batch, repo, target, pipeline.MetaBatchID, batch, revertSearchDepth)
		case 1:
		default:
			return "", fmt.Errorf("batch %s: %d merge commits on %s/%s are labelled %s=%s (%s) and the state store has no run to say which one published it; revert by hand",
				batch, len(labelled), repo, target, pipeline.MetaBatchID, batch, strings.Join(labelled, ", "))
		}
	}
	p, err := lake.Published(ctx, repo, target, sealed, time.Time{})
	if err != nil {
		return "", err
	}
	if !p.OnTarget {
		return "", fmt.Errorf("batch %s is not published on %s/%s: its sealed commit %s is not in the target's history", batch, repo, target, short(sealed))
	}
	merges, err := lake.MergesOf(ctx, repo, target, sealed, since)
	if err != nil {
		return "", err
	}
	if len(merges) != 1 {
		ids := make([]string, len(merges))
		for i, m := range merges {
			ids[i] = m.ID
		}
		return "", fmt.Errorf("batch %s: sealed commit %s is on %s/%s but %d merge commits have it as a parent (%s); refusing to guess which to revert",
			batch, short(sealed), repo, target, len(merges), strings.Join(ids, ", "))
	}
	return merges[0].ID, nil
}

// findRevert returns the revert commit of batch on target made after its
// publish commit, or "" if there is none: the log is newest first, so
// reaching the publish commit ends the search.
func findRevert(ctx context.Context, lake *lakefs.Client, repo, target, batch, published string) (string, error) {
	log, err := lake.Log(ctx, repo, target, revertSearchDepth)
	if err != nil {
		return "", err
	}
	for _, c := range log {
		if c.ID == published {
			return "", nil
		}
		// The same batch id may be another dataset's: the revert names the
		// commit it undid.
		if c.Metadata[metaRevertedBatchID] == batch && (c.Metadata[metaRevertedCommit] == "" || c.Metadata[metaRevertedCommit] == published) {
			return c.ID, nil
		}
	}
	return "", nil
}

// metaRevertedCommit names, in a revert commit, the publish commit it undid.
const metaRevertedCommit = "wap.reverted_commit"

// sameDataset: commits from before wap.dataset was written match any dataset.
func sameDataset(meta map[string]string, dataset string) bool {
	d, ok := meta[pipeline.MetaDataset]
	return !ok || d == dataset
}

// datasetOfBatch names the dataset a batch belongs to: the one given, the
// only one configured, or the one its run in the state store has.
func datasetOfBatch(ctx context.Context, cfg *config.Config, batch, dataset string) (string, config.Dataset, error) {
	if dataset == "" && len(cfg.Datasets) == 1 {
		for n := range cfg.Datasets {
			dataset = n
		}
	}
	if dataset == "" {
		store, err := runs.Open(cfg.Kafka)
		if err != nil {
			return "", config.Dataset{}, err
		}
		r, err := store.Find(ctx, batch, "")
		if err != nil {
			return "", config.Dataset{}, fmt.Errorf("%w (or name the dataset with -dataset)", err)
		}
		dataset = r.Dataset
	}
	ds, ok := cfg.Datasets[dataset]
	if !ok {
		return "", config.Dataset{}, fmt.Errorf("dataset %q is not in the config", dataset)
	}
	return dataset, ds, nil
}

// emitResult writes one result event to the results topic the way the
// daemon's Kafka sink does: key = batch id, event type and id in headers.
func emitResult(ctx context.Context, cfg *config.Config, eventID string, ev schemas.Event) error {
	sec, err := cfg.Kafka.Security()
	if err != nil {
		return err
	}
	transport, err := sec.Transport()
	if err != nil {
		return err
	}
	codec, err := schemas.NewCodec(schemas.Options{})
	if err != nil {
		return err
	}
	value, err := codec.Encode(ctx, cfg.Kafka.ResultsTopic, ev)
	if err != nil {
		return err
	}
	hs := schemas.Headers(ev)
	hs[notify.HeaderEventID] = eventID
	var headers []kafka.Header
	for k, v := range hs {
		headers = append(headers, kafka.Header{Key: k, Value: []byte(v)})
	}
	wr := notify.NewResultsWriter(cfg.Kafka.Brokers, cfg.Kafka.ResultsTopic, transport)
	defer wr.Close()
	return wr.WriteMessages(ctx, kafka.Message{Key: []byte(ev.Batch()), Value: value, Headers: headers})
}

func cmdRetry(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("retry", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("config", "lakewap.yaml", "config file")
	var o retryOptions
	fs.StringVar(&o.Batch, "batch", "", "batch id of a failed run, or an aborted one whose branch was kept (required)")
	fs.StringVar(&o.Dataset, "dataset", "", "dataset of the batch, when the id is in several")
	fs.StringVar(&o.By, "by", "", "who retries (default $USER)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if o.Batch == "" {
		fmt.Fprintln(stderr, "lakewap retry: -batch is required")
		return 2
	}
	cfg, ok := loadConfig(*path, stderr)
	if !ok {
		return 2
	}
	log := newLogger(stderr, cfg.Log.Format, cfg.Log.Level)
	published, err := retryBatch(ctx, cfg, o, log, stdout)
	if err != nil {
		fmt.Fprintf(stderr, "lakewap retry: %v\n", err)
		return 1
	}
	if !published {
		return 1
	}
	return 0
}

type retryOptions struct {
	Batch, Dataset, By string
}

// retryBatch re-audits the kept branch of an aborted batch (audit failed or
// merge conflict) and publishes it if it passes now, as the runner would:
// seal the branch, audit that commit, merge that commit with wap.batch_id.
// The run in the state store is updated (published, or the new report), and
// BatchPublished is emitted. A daemon that holds the run's partition keeps
// its old copy in memory until the partition is next restored; nothing it
// does with an aborted run rewrites it unless an input for the batch comes.
func retryBatch(ctx context.Context, cfg *config.Config, o retryOptions, log *slog.Logger, w io.Writer) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.Runner.StepTimeout.Std()+time.Minute)
	defer cancel()
	store, err := runs.Open(cfg.Kafka)
	if err != nil {
		return false, err
	}
	sr, err := store.Find(ctx, o.Batch, o.Dataset)
	if err != nil {
		return false, err
	}
	run := sr.Run
	retryable := run.State == pipeline.StateFailed ||
		run.State == pipeline.StateAborted && (run.Reason == schemas.ReasonAuditFailed || run.Reason == schemas.ReasonMergeConflict)
	if !retryable {
		return false, fmt.Errorf("batch %s is %s (%s): only failed runs, and aborted runs whose audit failed or whose merge conflicted, can be retried",
			o.Batch, run.State, runs.Dash(run.Reason))
	}
	if len(run.Outbox) > 0 || run.CleanupPending {
		return false, fmt.Errorf("batch %s: the daemon still has work for this run (events to send or a branch to delete); try again shortly", o.Batch)
	}
	ds, ok := cfg.Datasets[run.Dataset]
	if !ok {
		return false, fmt.Errorf("dataset %q of batch %s is not in the config", run.Dataset, o.Batch)
	}
	lake, err := lakeClient(cfg, log)
	if err != nil {
		return false, err
	}
	now := time.Now().UTC()
	if run.SealedCommit != "" {
		p, err := lake.Published(ctx, run.Repository, run.Target, run.SealedCommit, run.PublishSince)
		if err != nil {
			return false, err
		}
		if p.OnTarget {
			id := p.Merge
			if id == "" {
				id = p.Head
			}
			fmt.Fprintf(w, "batch %s is already on %s as %s; recording it as published\n", o.Batch, run.Target, short(id))
			return true, markPublished(ctx, cfg, store, sr, id, run.SealedCommit, run.Report, operator(o.By), now, w)
		}
	}
	if _, err := lake.GetCommit(ctx, run.Repository, run.Branch); err != nil {
		if errors.Is(err, pipeline.ErrNotFound) {
			return false, fmt.Errorf("branch %s of batch %s is gone (deleted by the janitor after the retention?): %w", run.Branch, o.Batch, err)
		}
		return false, err
	}
	sealed, err := lake.Seal(ctx, run.Repository, run.Branch, fmt.Sprintf("lakewap: seal batch %s for a retried audit", run.BatchID),
		map[string]string{pipeline.MetaSealedBatchID: run.BatchID, pipeline.MetaDataset: run.Dataset})
	if err != nil {
		return false, err
	}
	rep, err := auditOnce(ctx, cfg, lake, ds, pipeline.AuditRequest{Dataset: run.Dataset, Repository: run.Repository,
		Ref: sealed, BaseRef: run.Target, BatchTime: run.BatchTime}, log)
	if err != nil {
		return false, err
	}
	printChecks(w, rep)
	if !rep.Passed {
		run.Report, run.SealedCommit, run.UpdatedAt = &rep, sealed, now
		run.Detail = fmt.Sprintf("retried by %s at %s: audit still fails", operator(o.By), now.Format(time.RFC3339))
		sr.Run = run
		if err := store.Put(ctx, sr); err != nil {
			return false, fmt.Errorf("the audit still fails; recording its report: %w", err)
		}
		fmt.Fprintf(w, "batch %s still fails its audit; it stays aborted on branch %s\n", o.Batch, run.Branch)
		return false, nil
	}
	pass, fail, warn := rep.Counts()
	meta := pipeline.PublishMeta(run.Attributes)
	meta[pipeline.MetaBatchID], meta[pipeline.MetaDataset], meta["wap.sealed_commit"] = run.BatchID, run.Dataset, sealed
	meta[pipeline.MetaAudit] = fmt.Sprintf("passed=%d failed=%d warned=%d", pass, fail, warn)
	meta[metaRetriedBy] = operator(o.By)
	res, err := pipeline.Publish(ctx, lake, pipeline.PublishRequest{Repository: run.Repository, Target: run.Target, Sealed: sealed,
		Since: now, Message: fmt.Sprintf("lakewap: publish %s batch %s (retried)", run.Dataset, run.BatchID), Meta: meta}, nil)
	if err != nil {
		return false, err
	}
	id := res.CommitID
	sr.Run.PublishSince = now
	fmt.Fprintf(w, "published batch %s on %s/%s as %s\n", o.Batch, run.Repository, run.Target, short(id))
	return true, markPublished(ctx, cfg, store, sr, id, sealed, &rep, operator(o.By), now, w)
}

// markPublished stores the run as published and emits BatchPublished with
// the id the runner would have given it.
func markPublished(ctx context.Context, cfg *config.Config, store *runs.Store, sr runs.Stored, commitID, sealed string,
	rep *schemas.AuditReport, by string, now time.Time, w io.Writer) error {
	run := sr.Run
	run.State, run.StateSince, run.UpdatedAt = pipeline.StatePublished, now, now
	run.CommitID, run.SealedCommit, run.Report = commitID, sealed, rep
	run.Reason, run.Detail = "", fmt.Sprintf("retried by %s", by)
	run.Attempts, run.FirstFailure, run.RetryAt, run.LastError = 0, time.Time{}, time.Time{}, ""
	sr.Run = run
	if err := store.Put(ctx, sr); err != nil {
		return fmt.Errorf("published, but the state store was not updated: %w", err)
	}
	ev := schemas.BatchPublished{EventID: pipeline.EventID(run.Dataset, run.BatchID, "published"), BatchID: run.BatchID, Dataset: run.Dataset,
		Repository: run.Repository, Branch: run.Branch, TargetRef: run.Target, CommitID: commitID,
		LandedAt: run.LandedAt, PublishedAt: now, DurationMs: now.Sub(run.LandedAt).Milliseconds()}
	if rep != nil {
		ev.Report = *rep
	}
	if ev.Report.Checks == nil {
		ev.Report.Checks = []schemas.CheckResult{}
	}
	if err := emitResult(ctx, cfg, ev.EventID, ev); err != nil {
		return fmt.Errorf("published, but BatchPublished was not sent: %w", err)
	}
	fmt.Fprintf(w, "%s sent to %s; run stored as published in %s/%d\n", ev.EventType(), cfg.Kafka.ResultsTopic, store.Topic(), sr.Partition)
	return nil
}

func printChecks(w io.Writer, rep schemas.AuditReport) {
	for _, c := range rep.Checks {
		fmt.Fprintf(w, "  %-5s %s (%s on %s): observed %s, threshold %s\n", c.Status, c.Name, c.Kind, c.Table, runs.Dash(c.Observed), runs.Dash(c.Threshold))
	}
	pass, fail, warn := rep.Counts()
	fmt.Fprintf(w, "audit of %s: passed=%d failed=%d warned=%d\n", short(rep.Ref), pass, fail, warn)
}
