package cli

import (
	"context"
	"errors"
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
	AuditPassed = 0
	AuditFailed = 1
	AuditError  = 2
)

// AuditOptions are lakewap audit's flags.
type AuditOptions struct {
	Config, Dataset, Ref string
	// Base is the ref to compare with; nil: the dataset's target.
	Base      *string
	BatchTime string // RFC 3339; "": now
	JSON      bool
	Local     string // a directory of refs instead of lakeFS
	Full      bool
}

// Audit runs a dataset's suite against any ref without publishing:
// AuditPassed, AuditFailed when a check blocks, AuditError when it cannot run.
func Audit(ctx context.Context, o AuditOptions, stdout, stderr io.Writer) int {
	if o.Dataset == "" || o.Ref == "" {
		fmt.Fprintln(stderr, "lakewap audit: -dataset and -ref are required")
		return AuditError
	}
	batchTime := time.Now().UTC()
	if o.BatchTime != "" {
		t, err := time.Parse(time.RFC3339, o.BatchTime)
		if err != nil {
			failf(stderr, "lakewap audit: -batch-time %q is not RFC 3339 (like 2026-11-29T02:00:00Z)", o.BatchTime)
			return AuditError
		}
		batchTime = t
	}
	cfg, ok := LoadConfig(o.Config, stderr)
	if !ok {
		return AuditError
	}
	ds, ok := cfg.Datasets[o.Dataset]
	if !ok {
		failf(stderr, "lakewap audit: dataset %q is not in %s (it has %s)", o.Dataset, o.Config, strings.Join(slices.Sorted(maps.Keys(cfg.Datasets)), ", "))
		return AuditError
	}
	baseRef := ds.Target
	if o.Base != nil {
		baseRef = *o.Base
	}
	log := daemon.NewLogger(stderr, cfg.Log.Format, "warn")
	ctx, cancel := context.WithTimeout(ctx, cfg.Runner.StepTimeout.Std())
	defer cancel()
	req := audit.Request{Dataset: o.Dataset, Repository: ds.Repository, Ref: o.Ref, BaseRef: baseRef, BatchTime: batchTime, Full: o.Full}
	var src audit.Source
	var hist audit.History
	// remote is lakeFS's diff of the ref against the base, as the runner
	// takes it (nil with -local).
	var remote func(ctx context.Context, from, to string) (*audit.Changes, error)
	if o.Local != "" {
		src = audit.DirSource{Root: o.Local}
		// -local: the suite over files on disk, laid out as DIR/<ref>/<table path>.
		for _, r := range []string{req.Ref, req.BaseRef} {
			if st, err := os.Stat(filepath.Join(o.Local, r)); r != "" && (err != nil || !st.IsDir() || strings.ContainsAny(r, `/\`)) {
				failf(stderr, "lakewap audit: -local: ref %q is not a directory in %s", r, o.Local)
				return AuditError
			}
		}
	} else {
		lake, err := daemon.Lake(cfg, log, nil, nil)
		if err != nil {
			failf(stderr, "lakewap audit: %v", err)
			return AuditError
		}
		remote = func(ctx context.Context, from, to string) (*audit.Changes, error) {
			changes, err := lake.Changes(ctx, ds.Repository, from, to)
			if err != nil {
				return nil, err
			}
			return auditsource.Changes(changes), nil
		}
		src = auditsource.Source{Lake: lake}
		if cfg.Audit.IncrementalOn() {
			hist = daemon.History(lake)
		}
		// The audit reads one commit: a branch that moves meanwhile does not
		// mix two versions into one report.
		head, err := lake.GetCommit(ctx, ds.Repository, o.Ref)
		if errors.Is(err, pipeline.ErrNotFound) {
			failf(stderr, "lakewap audit: ref %q not found in repository %s: %v", o.Ref, ds.Repository, err)
			return AuditError
		} else if err != nil {
			failf(stderr, "lakewap audit: cannot read ref %q of %s: %v", o.Ref, ds.Repository, err)
			return AuditError
		}
		req.Ref = head.ID
		if baseRef != "" {
			base, err := lake.GetCommit(ctx, ds.Repository, baseRef)
			if err != nil {
				failf(stderr, "lakewap audit: base ref %q of %s: %v", baseRef, ds.Repository, err)
				return AuditError
			}
			// The base too: a branch that moves while the audit reads it
			// would give, for a file its listing names at one address,
			// the bytes of another (review 44).
			req.BaseRef, req.BaseName = base.ID, baseRef
		}
	}
	if baseRef != "" {
		// The diff the runner takes of a batch: the audit judges by it the
		// checks of the other datasets of the target that hold a table the
		// ref changes (audit/neighbors.go), as the runner does.
		changes, err := diffOf(ctx, src, remote, req)
		if err != nil {
			failf(stderr, "lakewap audit: diff of %s against %s: %v", o.Ref, baseRef, err)
			return AuditError
		}
		req.Changes = changes
	}
	rep, err := auditOnce(ctx, cfg, src, hist, req, log)
	if err != nil {
		failf(stderr, "lakewap audit: %v", err)
		return AuditError
	}
	if o.JSON {
		if err := writeIndented(stdout, rep); err != nil {
			failf(stderr, "lakewap audit: %v", err)
			return AuditError
		}
	} else {
		runs.WriteReport(stdout, rep, o.Ref, baseRef)
	}
	if !rep.Passed {
		return AuditFailed
	}
	return AuditPassed
}

// diffOf is what req.Ref changes against req.BaseRef: lakeFS's diff, as
// the runner takes it, or, with -local, the files the ref's directory adds
// or changes and those of the base's it lacks.
func diffOf(ctx context.Context, src audit.Source, remote func(ctx context.Context, from, to string) (*audit.Changes, error), req audit.Request) (*audit.Changes, error) {
	if remote != nil {
		return remote(ctx, req.BaseRef, req.Ref)
	}
	objs, err := src.Changed(ctx, req.Repository, req.BaseRef, req.Ref, "")
	if err != nil {
		return nil, err
	}
	now, err := src.List(ctx, req.Repository, req.Ref, "")
	if err != nil {
		return nil, err
	}
	before, err := src.List(ctx, req.Repository, req.BaseRef, "")
	if err != nil {
		return nil, err
	}
	kept := make(map[string]bool, len(now))
	for _, o := range now {
		kept[o.Path] = true
	}
	c := &audit.Changes{Objects: objs, Removals: true}
	for _, o := range before {
		if !kept[o.Path] {
			c.Removed = append(c.Removed, o.Path)
		}
	}
	return c, nil
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
