package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/lakewap/lakewap/audit"
	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/internal/daemon"
	"github.com/lakewap/lakewap/internal/runs"
	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/pipeline/lakefs/auditsource"
	"github.com/lakewap/lakewap/schemas"
)

// Exit codes of lakewap audit.
const (
	auditPassed = 0
	auditFailed = 1
	auditError  = 2
)

// cmdAudit runs a dataset's suite against any ref without publishing:
// exit 0 when it passes, 1 when a check blocks, 2 when it cannot run.
func cmdAudit(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("audit")
	path := fs.String("config", "lakewap.yaml", "config file")
	dataset := fs.String("dataset", "", "dataset whose suite runs (required)")
	ref := fs.String("ref", "", "branch, tag or commit to audit (required)")
	base := fs.String("base", "", "ref that volume_change, schema_drift and scope: batch compare with (default: the dataset's target)")
	at := fs.String("batch-time", "", "time freshness is measured at, RFC 3339 (default: now)")
	asJSON := fs.Bool("json", false, "print the report as JSON (schemas.AuditReport)")
	local := fs.String("local", "", "audit files on disk instead of lakeFS: a ref is the directory DIR/<ref> holding the tables' paths")
	full := fs.Bool("full", false, "read the whole tables even where the audit could be incremental")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: lakewap audit -config FILE -dataset D -ref R [-base B] [-batch-time T] [-json] [-local DIR] [-full]")
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
		return code // 2 = auditError: a bad flag, could not run
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "lakewap audit: unexpected argument %q\n", fs.Arg(0))
		return auditError
	}
	if *dataset == "" || *ref == "" {
		fmt.Fprintln(stderr, "lakewap audit: -dataset and -ref are required")
		return auditError
	}
	batchTime := time.Now().UTC()
	if *at != "" {
		t, err := time.Parse(time.RFC3339, *at)
		if err != nil {
			fmt.Fprintf(stderr, "lakewap audit: -batch-time %q is not RFC 3339 (like 2026-11-29T02:00:00Z)\n", *at)
			return auditError
		}
		batchTime = t
	}
	cfg, ok := loadConfig(*path, stderr)
	if !ok {
		return auditError
	}
	ds, ok := cfg.Datasets[*dataset]
	if !ok {
		fmt.Fprintf(stderr, "lakewap audit: dataset %q is not in %s (it has %s)\n", *dataset, *path, strings.Join(slices.Sorted(maps.Keys(cfg.Datasets)), ", "))
		return auditError
	}
	baseRef := ds.Target
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "base" {
			baseRef = *base
		}
	})
	log := daemon.NewLogger(stderr, cfg.Log.Format, "warn")
	ctx, cancel := context.WithTimeout(ctx, cfg.Runner.StepTimeout.Std())
	defer cancel()
	req := pipeline.AuditRequest{Dataset: *dataset, Repository: ds.Repository, Ref: *ref, BaseRef: baseRef, BatchTime: batchTime}
	var src audit.Source
	var hist audit.History
	if *local != "" {
		src = audit.DirSource{Root: *local}
		// -local: the suite over files on disk, laid out as DIR/<ref>/<table path>.
		for _, r := range []string{req.Ref, req.BaseRef} {
			if st, err := os.Stat(filepath.Join(*local, r)); r != "" && (err != nil || !st.IsDir() || strings.ContainsAny(r, `/\`)) {
				fmt.Fprintf(stderr, "lakewap audit: -local: ref %q is not a directory in %s\n", r, *local)
				return auditError
			}
		}
	} else {
		lake, err := daemon.Lake(cfg, log, nil)
		if err != nil {
			fmt.Fprintf(stderr, "lakewap audit: %v\n", err)
			return auditError
		}
		src = auditsource.Source{Lake: lake}
		if cfg.Audit.IncrementalOn() {
			hist = daemon.History(lake)
		}
		// The audit reads one commit: a branch that moves meanwhile does not
		// mix two versions into one report.
		head, err := lake.GetCommit(ctx, ds.Repository, *ref)
		if errors.Is(err, pipeline.ErrNotFound) {
			fmt.Fprintf(stderr, "lakewap audit: ref %q not found in repository %s: %v\n", *ref, ds.Repository, err)
			return auditError
		} else if err != nil {
			fmt.Fprintf(stderr, "lakewap audit: cannot read ref %q of %s: %v\n", *ref, ds.Repository, err)
			return auditError
		}
		req.Ref = head.ID
		if baseRef != "" {
			if _, err := lake.GetCommit(ctx, ds.Repository, baseRef); err != nil {
				fmt.Fprintf(stderr, "lakewap audit: base ref %q of %s: %v\n", baseRef, ds.Repository, err)
				return auditError
			}
		}
	}
	rep, err := auditOnce(ctx, cfg, src, hist, audit.Request{Dataset: req.Dataset, Repository: req.Repository, Ref: req.Ref,
		BaseRef: req.BaseRef, BaseName: req.BaseName, BatchTime: req.BatchTime, Full: *full}, log)
	if err != nil {
		fmt.Fprintf(stderr, "lakewap audit: %v\n", err)
		return auditError
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			fmt.Fprintf(stderr, "lakewap audit: %v\n", err)
			return auditError
		}
	} else {
		runs.WriteReport(stdout, rep, *ref, baseRef)
	}
	if !rep.Passed {
		return auditFailed
	}
	return auditPassed
}

// auditOnce runs a dataset's suite over the tables of src with an engine of its own.
func auditOnce(ctx context.Context, cfg *config.Config, src audit.Source, hist audit.History, req audit.Request, log *slog.Logger) (schemas.AuditReport, error) {
	opts := cfg.AuditOptions(src, log)
	opts.History = hist
	engine, err := audit.New(opts)
	if err != nil {
		return schemas.AuditReport{}, fmt.Errorf("audit: %w", err)
	}
	defer engine.Close()
	svc, err := audit.NewService(audit.ServiceOptions{Engine: engine, Concurrency: 1, Budget: cfg.Runner.StepTimeout.Std(),
		Datasets: cfg.AuditDatasets()})
	if err != nil {
		return schemas.AuditReport{}, err
	}
	return svc.Audit(ctx, req)
}
