package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/segmentio/kafka-go"

	"github.com/lakewap/lakewap/audit"
	"github.com/lakewap/lakewap/consumer"
	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/notify"
	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/pipeline/lakefs"
	"github.com/lakewap/lakewap/schemas"
)

// auditSource lets the audit engine read lakeFS through the adapter.
type auditSource struct{ lake *lakefs.Client }

func (s auditSource) List(ctx context.Context, repo, ref, prefix string) ([]audit.Object, error) {
	objs, err := s.lake.List(ctx, repo, ref, prefix)
	if err != nil {
		return nil, err
	}
	out := make([]audit.Object, len(objs))
	for i, o := range objs {
		out[i] = audit.Object{Path: o.Path, Checksum: o.Checksum, Size: o.Size}
	}
	return out, nil
}

func (s auditSource) Changed(ctx context.Context, repo, base, ref, prefix string) ([]audit.Object, error) {
	changes, err := s.lake.Diff(ctx, repo, base, ref, prefix)
	if err != nil {
		return nil, err
	}
	// The diff has no checksums; list the ref once for them.
	objs, err := s.List(ctx, repo, ref, prefix)
	if err != nil {
		return nil, err
	}
	byPath := make(map[string]audit.Object, len(objs))
	for _, o := range objs {
		byPath[o.Path] = o
	}
	var out []audit.Object
	for _, c := range changes {
		if c.Type == "removed" {
			continue
		}
		if o, ok := byPath[c.Path]; ok {
			out = append(out, o)
		}
	}
	return out, nil
}

func (s auditSource) Download(ctx context.Context, repo, ref, path string, w io.Writer) error {
	return s.lake.Download(ctx, repo, ref, path, w)
}

// auditor runs a dataset's suite from the config.
type auditor struct {
	engine   *audit.Engine
	datasets map[string]config.Dataset
}

func (a auditor) Audit(ctx context.Context, req pipeline.AuditRequest) (schemas.AuditReport, error) {
	d, ok := a.datasets[req.Dataset]
	if !ok {
		return schemas.AuditReport{}, fmt.Errorf("dataset %q is not in the config", req.Dataset)
	}
	return a.engine.Run(ctx, audit.Request{Dataset: req.Dataset, Suite: d.Suite, Repository: req.Repository,
		Ref: req.Ref, BaseRef: req.BaseRef, BatchTime: req.BatchTime})
}

// notifier maps a pipeline notification onto the dispatcher's.
type notifier struct{ d *notify.Dispatcher }

func (n notifier) Notify(ctx context.Context, pn pipeline.Notification) (map[string]string, error) {
	return n.d.Notify(ctx, notify.Notification{
		Event: pn.Event, State: string(pn.State), Dataset: pn.Run.Dataset, BatchID: pn.Run.BatchID,
		Repository: pn.Run.Repository, Branch: pn.Run.Branch, LandedAt: pn.Run.LandedAt, Receipts: pn.Receipts,
	})
}

// handler adapts the runner to the consumer.
type handler struct{ r *pipeline.Runner }

func (h handler) Assigned(ctx context.Context, partition int) error {
	return h.r.Assigned(ctx, partition)
}
func (h handler) Revoked(partition int) { h.r.Revoked(partition) }

func (h handler) Handle(ctx context.Context, msg kafka.Message) error {
	err := h.r.Handle(ctx, msg.Partition, msg.Value)
	if errors.Is(err, pipeline.ErrPoison) {
		return consumer.Poison(err, poisonReason(err))
	}
	return err
}

func poisonReason(err error) string {
	var de interface{ DecodeReason() string }
	if errors.As(err, &de) {
		return de.DecodeReason()
	}
	return "invalid"
}
