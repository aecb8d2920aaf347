package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/internal/janitor"
	"github.com/lakewap/lakewap/internal/metrics"
	"github.com/lakewap/lakewap/internal/opclient"
	"github.com/lakewap/lakewap/internal/runs"
	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/pipeline/lakefs"
	"github.com/lakewap/lakewap/schemas"
)

// newJanitor builds the janitor of cfg's datasets over lake and the run
// store; reg (may be nil) gets its deletion counter.
func newJanitor(cfg *config.Config, lake *lakefs.Client, log *slog.Logger, reg prometheus.Registerer) (*janitor.Janitor, error) {
	store, err := runs.Open(cfg.Kafka)
	if err != nil {
		return nil, err
	}
	ds := cfg.JanitorDatasets()
	jc := janitor.Config{Lake: lake, Runs: store.Runs, Datasets: ds,
		AbandonedAfter: cfg.Janitor.AbandonedAfter.Std(), Logger: log,
		MaxRunAge: cfg.MaxRunAge(), Cancel: func(ctx context.Context, run pipeline.Run, reason string) error {
			return cancelRun(ctx, cfg, store, run, reason)
		}}
	if reg != nil {
		repos := make([]string, len(ds))
		for i, d := range ds {
			repos[i] = d.Repository
		}
		if jc.Deleted, err = metrics.JanitorDeleted(reg, repos, janitor.WhyAbortedExpired, janitor.WhyPublished, janitor.WhyAbandoned); err != nil {
			return nil, err
		}
	}
	return janitor.New(jc)
}

func cmdJanitor(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("janitor")
	path := fs.String("config", "lakewap.yaml", "config file")
	dry := fs.Bool("dry-run", false, "print what would be deleted, delete nothing")
	all := fs.Bool("all", false, "also print the branches that are kept, and why")
	asJSON := fs.Bool("json", false, "print decisions as JSON, one per line")
	if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
		return code
	}
	cfg, ok := loadConfig(*path, stderr)
	if !ok {
		return 2
	}
	log := newLogger(stderr, cfg.Log.Format, "warn")
	if err := sweepOnce(ctx, cfg, janitorFlags{DryRun: *dry, All: *all, JSON: *asJSON}, log, stdout); err != nil {
		fmt.Fprintf(stderr, "lakewap janitor: %v\n", err)
		return 1
	}
	return 0
}

type janitorFlags struct{ DryRun, All, JSON bool }

// sweepOnce is `lakewap janitor`: one sweep, a line per branch deleted (or
// that would be, with -dry-run).
func sweepOnce(ctx context.Context, cfg *config.Config, f janitorFlags, log *slog.Logger, w io.Writer) error {
	lake, err := lakeClient(cfg, log, nil)
	if err != nil {
		return err
	}
	j, err := newJanitor(cfg, lake, log, nil)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	ds, err := j.Sweep(ctx, f.DryRun)
	if f.JSON {
		return cmp.Or(runs.WriteJSON(w, slices.DeleteFunc(ds, func(d janitor.Decision) bool { return !d.Delete && !f.All })), err)
	}
	return cmp.Or(runs.WriteDecisions(w, ds, f.DryRun, f.All, time.Now()), err)
}

// lakeClient is the lakeFS adapter of cfg, making its calls through hc
// (nil: the default client).
func lakeClient(cfg *config.Config, log *slog.Logger, hc *http.Client) (*lakefs.Client, error) {
	secret, err := config.ReadSecret(cfg.LakeFS.SecretAccessKey, cfg.LakeFS.SecretAccessKeyFile)
	if err != nil {
		return nil, fmt.Errorf("lakefs.secret_access_key_file: %w", err)
	}
	lake, err := lakefs.New(lakefs.Config{Endpoint: cfg.LakeFS.Endpoint, AccessKeyID: cfg.LakeFS.AccessKeyID,
		SecretAccessKey: secret, Timeout: cfg.LakeFS.Timeout.Std(), Logger: log, HTTPClient: hc})
	if err != nil {
		return nil, fmt.Errorf("lakefs: %w", err)
	}
	return lake, nil
}

// cancelRun asks the daemon to cancel run: a BatchCancelled on the input
// partition that holds the run (the changelog partition is the input
// partition), so the runner aborts it the way it aborts any cancelled batch.
func cancelRun(ctx context.Context, cfg *config.Config, store *runs.Store, run pipeline.Run, reason string) error {
	sr, err := store.Find(ctx, run.BatchID, run.Dataset)
	if err != nil {
		return err
	}
	t, err := opclient.Of(cfg, "")
	if err != nil {
		return err
	}
	defer t.Close()
	ev := schemas.BatchCancelled{BatchID: run.BatchID, Dataset: run.Dataset, Reason: reason, OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}
	_, err = t.Send(ctx, cfg.Kafka.InputTopic, ev, sr.Partition)
	return err
}
