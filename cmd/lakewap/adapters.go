package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/segmentio/kafka-go"

	"github.com/lakewap/lakewap/audit"
	"github.com/lakewap/lakewap/consumer"
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
		out[i] = audit.Object{Path: o.Path, Checksum: o.Checksum, Address: o.PhysicalAddress, Size: o.Size}
	}
	return out, nil
}

func (s auditSource) Changed(ctx context.Context, repo, base, ref, prefix string) ([]audit.Object, error) {
	changes, err := s.lake.Diff(ctx, repo, base, ref, prefix)
	if err != nil {
		return nil, err
	}
	var paths []string
	for _, c := range changes {
		if c.Type != "removed" {
			paths = append(paths, c.Path)
		}
	}
	if len(paths) == 0 {
		return nil, nil
	}
	// The diff has no checksums; list them once, under the deepest folder
	// that holds every changed file (a batch's own folder, usually), so the
	// listing does not grow with the table.
	objs, err := s.List(ctx, repo, ref, commonFolder(prefix, paths))
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

// commonFolder is the longest folder prefix ("a/b/") shared by paths, no
// shorter than prefix.
func commonFolder(prefix string, paths []string) string {
	common := paths[0][:strings.LastIndex(paths[0], "/")+1]
	for _, p := range paths[1:] {
		for !strings.HasPrefix(p, common) {
			common = common[:strings.LastIndex(strings.TrimSuffix(common, "/"), "/")+1]
		}
	}
	if len(common) < len(prefix) {
		return prefix
	}
	return common
}

func (s auditSource) Download(ctx context.Context, repo, ref, path string, w io.Writer) error {
	return s.lake.Download(ctx, repo, ref, path, w)
}

// auditor is the runner's view of the audit service.
type auditor struct{ s *audit.Service }

func (a auditor) Audit(ctx context.Context, req pipeline.AuditRequest) (schemas.AuditReport, error) {
	rep, err := a.s.Audit(ctx, audit.Request{Dataset: req.Dataset, Repository: req.Repository,
		Ref: req.Ref, BaseRef: req.BaseRef, BatchTime: req.BatchTime})
	if errors.Is(err, audit.ErrInfrastructure) {
		// Out of memory, a base that cannot be resolved and the like:
		// retried within runner.retry_budget, then the batch fails (not
		// aborted: its data was never judged).
		err = fmt.Errorf("%w: %w", pipeline.ErrTransient, err)
	}
	return rep, err
}

// notifier maps a pipeline notification onto the dispatcher's.
type notifier struct{ d *notify.Dispatcher }

func (n notifier) Notify(ctx context.Context, pn pipeline.Notification) (map[string]string, error) {
	return n.d.Notify(ctx, notify.Notification{
		Event: pn.Event, State: string(pn.State), Dataset: pn.Run.Dataset, BatchID: pn.Run.BatchID,
		Repository: pn.Run.Repository, Branch: pn.Run.Branch, LandedAt: pn.Run.LandedAt, Receipts: pn.Receipts,
		RequestID: pn.RequestID, ResultOnly: pn.ResultOnly,
	})
}

// handler adapts the runner to the consumer.
type handler struct{ r *pipeline.Runner }

func (h handler) Assigned(ctx context.Context, partition int) error {
	return h.r.Assigned(ctx, partition)
}
func (h handler) Revoked(partition int) { h.r.Revoked(partition) }

func (h handler) Handle(ctx context.Context, msg kafka.Message) error {
	for _, hd := range msg.Headers {
		if hd.Key == schemas.HeaderEventType && len(hd.Value) > 0 {
			ctx = context.WithValue(ctx, headerTypeKey{}, string(hd.Value))
			break
		}
	}
	ctx = context.WithValue(ctx, messageKeyKey{}, string(msg.Key))
	err := h.r.HandleAt(ctx, msg.Partition, msg.Value, msg.Time)
	if errors.Is(err, pipeline.ErrPoison) {
		return consumer.Poison(poisonCause(err), poisonReason(err))
	}
	return err
}

// Dead-letter reasons of input events that decoded but are not inputs as
// announced; decode failures use the schemas.Decode* reasons, validation
// failures schemas.ReasonInvalid.
const (
	// reasonTypeMismatch: the wap.event_type header names another type than
	// the value's writer schema. Which one the producer meant is unknown, so
	// the message aborts nothing.
	reasonTypeMismatch = "type_mismatch"
	// reasonUnexpectedType: a lakewap event that is not an input (a result
	// event sent to the input topic).
	reasonUnexpectedType = "unexpected_type"
	// reasonKeyMismatch: the Kafka key is not the batch id. Keys put all
	// events of a batch on one partition, where its run lives; an event on
	// another partition would start a run of its own there.
	reasonKeyMismatch = "key_mismatch"
)

// messageKeyKey carries a message's Kafka key to inputDecoder.
type messageKeyKey struct{}

// headerTypeKey carries a message's wap.event_type header from Handle to
// inputDecoder through the runner, which sees only the value.
type headerTypeKey struct{}

// inputDecoder decodes input events and rejects, as permanent decode
// errors, values that are not the input event their header announces.
type inputDecoder struct{ codec *schemas.Codec }

func (d inputDecoder) Decode(ctx context.Context, value []byte) (schemas.Event, error) {
	ev, err := d.codec.Decode(ctx, value)
	if err != nil {
		return nil, err
	}
	if want, ok := ctx.Value(headerTypeKey{}).(string); ok && want != ev.EventType() {
		return nil, &inputError{reason: reasonTypeMismatch,
			err: fmt.Errorf("header %s says %q, value is %s (batch %q)", schemas.HeaderEventType, want, ev.EventType(), ev.Batch())}
	}
	switch ev.(type) {
	case schemas.BatchLanded, schemas.WriteComplete, schemas.BatchCancelled, schemas.RetryRequested, schemas.RevertRequested:
		if key, ok := ctx.Value(messageKeyKey{}).(string); ok && key != ev.Batch() {
			return nil, &inputError{reason: reasonKeyMismatch,
				err: fmt.Errorf("message key %q is not the batch id %q: key every event by its batch id so a batch stays on one partition", key, ev.Batch())}
		}
		return ev, nil
	}
	return nil, &inputError{reason: reasonUnexpectedType,
		err: fmt.Errorf("%s is not an input event (want %s, %s, %s, %s or %s)", ev.EventType(),
			schemas.TypeBatchLanded, schemas.TypeWriteComplete, schemas.TypeBatchCancelled, schemas.TypeRetryRequested, schemas.TypeRevertRequested)}
}

// inputError is a value that decoded but can never be handled.
type inputError struct {
	reason string
	err    error
}

func (e *inputError) Error() string        { return "unusable event: " + e.err.Error() }
func (e *inputError) Unwrap() error        { return e.err }
func (e *inputError) Permanent() bool      { return true }
func (e *inputError) DecodeReason() string { return e.reason }

// poisonReason is the dead letter's wap.dlq.reason: a short fixed code.
func poisonReason(err error) string {
	var ref *pipeline.Refusal
	if errors.As(err, &ref) {
		return ref.Reason
	}
	var ie *inputError
	if errors.As(err, &ie) {
		return ie.reason
	}
	var de *schemas.DecodeError
	if errors.As(err, &de) {
		return de.Reason
	}
	return schemas.ReasonInvalid
}

// poisonCause drops the runner's "poison message" wrapping, so that the
// wap.dlq.error header says what is wrong and nothing else.
func poisonCause(err error) error {
	var ref *pipeline.Refusal
	if errors.As(err, &ref) {
		return ref
	}
	var ie *inputError
	if errors.As(err, &ie) {
		return ie
	}
	var de *schemas.DecodeError
	if errors.As(err, &de) {
		return de
	}
	if m, ok := err.(interface{ Unwrap() []error }); ok {
		var rest []error
		for _, e := range m.Unwrap() {
			if !errors.Is(e, pipeline.ErrPoison) {
				rest = append(rest, e)
			}
		}
		if len(rest) > 0 {
			return errors.Join(rest...)
		}
	}
	return err
}
