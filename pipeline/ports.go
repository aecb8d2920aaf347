package pipeline

import (
	"context"
	"time"

	"github.com/lakewap/lakewap/schemas"
)

// The runner's ports besides Lake: the adapters implement them.

// Auditor runs a dataset's suite against a ref.
type Auditor interface {
	Audit(ctx context.Context, req AuditRequest) (schemas.AuditReport, error)
}

// AuditRequest names what to audit.
type AuditRequest struct {
	Dataset    string
	Repository string
	Ref        string // the sealed commit of the batch branch
	BaseRef    string // the target's commit, for comparisons and batch scope
	BaseName   string // how reports name the base: the target branch
	BatchTime  time.Time
	// Changes is what Ref changes against BaseRef, as the audit step
	// diffed it: the audit's batch scope is read from it, not diffed again.
	Changes []Change
	// Onto asks for the recheck of a sealed commit before its merge into a
	// target that moved since its audit: the table as merging Ref into
	// BaseRef (the target's head now) leaves it, the target's files with
	// the batch's changes applied. Nothing is written to lakeFS for it.
	Onto bool
	// BeforeRead, with Onto, is called once before the recheck first reads
	// a byte of the batch or of a table, or opens DuckDB; a recheck that
	// lakewap's own records answer never calls it. Its error ends the
	// recheck with that error, nothing read. The runner records the
	// recheck's attempt there (AuditBegun), taking the audit gate.
	BeforeRead func(context.Context) error
}

// Notifier delivers a result event (Kafka, Slack, console). It returns
// receipts to remember (e.g. the Slack message to update in place) and an
// error only when a required sink failed.
type Notifier interface {
	Notify(ctx context.Context, n Notification) (receipts map[string]string, err error)
}

// Notification is one result event of a run.
type Notification struct {
	Event    schemas.Event
	State    State
	Run      Run
	Receipts map[string]string
	// RequestID is the operator request the event answers, if any.
	RequestID string
	// ResultOnly: the event goes to the results topic only (answers to
	// operator requests are not part of a run's Slack message).
	ResultOnly bool
}

// Store keeps runs durably, keyed by batch id within an input partition.
type Store interface {
	Put(ctx context.Context, partition int, key string, value []byte) error
	Delete(ctx context.Context, partition int, key string) error
	Load(ctx context.Context, partition int) (map[string][]byte, error)
}
