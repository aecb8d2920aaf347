package schemas

import (
	"slices"
	"time"
)

// Event type names. They travel in the HeaderEventType header and are the
// Avro record names (namespace Namespace).
const (
	TypeBatchLanded    = "BatchLanded"
	TypeWriteComplete  = "WriteComplete"
	TypeBatchCancelled = "BatchCancelled"
	TypeBranchReady    = "BranchReady"
	TypeBatchPublished = "BatchPublished"
	TypeBatchAborted   = "BatchAborted"
	TypeBatchFailed    = "BatchFailed"
	TypeBatchReverted  = "BatchReverted"
)

// Namespace is the Avro namespace of every lakewap record.
const Namespace = "io.lakewap.events"

// HeaderEventType is the Kafka header naming the event type of a message.
const HeaderEventType = "wap.event_type"

// Event is any lakewap event, input or result.
type Event interface {
	// EventType is one of the Type* constants.
	EventType() string
	// Batch is the batch id the event is about (the Kafka key).
	Batch() string
	// DatasetName is the dataset of the batch. (The events' field is
	// Dataset; Go allows no method of the same name.)
	DatasetName() string
	// ID is a result event's stable event id, "" for an input event.
	ID() string
}

// Run states: where a batch is in the WAP cycle. They name the pipeline's
// states, the states a notify route selects (notify.routes[].on) and
// BatchFailed.state.
const (
	StatePending        = "pending" // writes arrived before their BatchLanded
	StateLanded         = "landed"
	StateAwaitingWrites = "awaiting_writes"
	StateAuditing       = "auditing"
	StatePublishing     = "publishing"
	StatePublished      = "published"
	StateAborted        = "aborted"
	StateFailed         = "failed"
)

// States lists the run states in the order a run goes through them.
func States() []string {
	return []string{StatePending, StateLanded, StateAwaitingWrites, StateAuditing, StatePublishing, StatePublished, StateAborted, StateFailed}
}

// PendingReceiptPrefix starts the receipt key "pending:<sink>" under which
// a notifier records that a sink has not delivered a run's latest
// notification: the pipeline notifies again later, notify drops the key
// once the sink delivers.
const PendingReceiptPrefix = "pending:"

// PermanentError is an error that says whether trying again can help:
// Permanent() true means it cannot (the input itself is wrong), false that
// it may (a schema registry out of reach). Codec errors are PermanentErrors;
// callers ask with errors.As.
type PermanentError interface {
	error
	Permanent() bool
}

// Abort reasons carried by BatchAborted.
const (
	ReasonAuditFailed   = "audit_failed"
	ReasonWriteTimeout  = "write_timeout"
	ReasonCancelled     = "cancelled"
	ReasonMergeConflict = "merge_conflict"
	ReasonInvalid       = "invalid"
	// ReasonTooManyRuns: the batch landed while the instance already held
	// runner.max_open_runs runs in progress; it was not started.
	ReasonTooManyRuns = "too_many_runs"
	// ReasonOutsideTables: the batch changed paths outside its dataset's
	// tables (and allowed_paths); the detail names them.
	ReasonOutsideTables = "outside_tables"
	// ReasonAuditCrashed: audit.max_attempts attempts of the batch's audit
	// ended with their process (out of memory, a crash inside DuckDB); it
	// is not audited again. The branch is kept.
	ReasonAuditCrashed = "audit_crashed"
	// ReasonUnauditedObjects: the batch changed objects under a table's
	// path that the audit did not read (the report's failed
	// unaudited_objects check names them): readers listing the path would
	// read them on the target. Told apart from audit_failed, a check
	// failing on the data.
	ReasonUnauditedObjects = "unaudited_objects"
)

// KindUnauditedObjects is the kind of the audit's result naming the
// changed objects it did not read (audit.KindUnaudited).
const KindUnauditedObjects = "unaudited_objects"

// abortReasons are the reasons a valid BatchAborted may carry.
var abortReasons = []string{ReasonAuditFailed, ReasonWriteTimeout, ReasonCancelled, ReasonMergeConflict,
	ReasonInvalid, ReasonTooManyRuns, ReasonOutsideTables, ReasonAuditCrashed, ReasonUnauditedObjects}

// ---- inputs (topic wap.events) ----

// BatchLanded announces a batch: lakewap opens a branch for it and waits for
// the expected writes.
type BatchLanded struct {
	BatchID        string            `avro:"batch_id" json:"batch_id"`
	Dataset        string            `avro:"dataset" json:"dataset"`
	SourceRef      string            `avro:"source_ref" json:"source_ref"`
	ExpectedWrites []string          `avro:"expected_writes" json:"expected_writes"`
	WriteDeadline  *time.Time        `avro:"write_deadline" json:"write_deadline,omitempty"`
	Attributes     map[string]string `avro:"attributes" json:"attributes,omitempty"`
	Producer       string            `avro:"producer" json:"producer"`
	OccurredAt     time.Time         `avro:"occurred_at" json:"occurred_at"`
}

// WriteComplete says one expected write of a batch is on the batch's branch.
type WriteComplete struct {
	BatchID    string    `avro:"batch_id" json:"batch_id"`
	Dataset    string    `avro:"dataset" json:"dataset"`
	Write      string    `avro:"write" json:"write"`
	Paths      []string  `avro:"paths" json:"paths,omitempty"`
	RowCount   *int64    `avro:"row_count" json:"row_count,omitempty"`
	OccurredAt time.Time `avro:"occurred_at" json:"occurred_at"`
}

// BatchCancelled asks lakewap to abort a batch that has not been published.
type BatchCancelled struct {
	BatchID    string    `avro:"batch_id" json:"batch_id"`
	Dataset    string    `avro:"dataset" json:"dataset"`
	Reason     string    `avro:"reason" json:"reason"`
	OccurredAt time.Time `avro:"occurred_at" json:"occurred_at"`
	// RequestID and RequestedBy are set by an operator's cancellation
	// (lakewap cancel), which is answered even when it cannot be done.
	RequestID   string `avro:"request_id" json:"request_id,omitempty"`
	RequestedBy string `avro:"requested_by" json:"requested_by,omitempty"`
}

// ---- results (topic wap.results) ----

// BranchReady tells writers where to write a batch.
type BranchReady struct {
	EventID        string     `avro:"event_id" json:"event_id"`
	BatchID        string     `avro:"batch_id" json:"batch_id"`
	Dataset        string     `avro:"dataset" json:"dataset"`
	Repository     string     `avro:"repository" json:"repository"`
	Branch         string     `avro:"branch" json:"branch"`
	LakeFSURI      string     `avro:"lakefs_uri" json:"lakefs_uri"`
	S3URI          string     `avro:"s3_uri" json:"s3_uri"`
	ExpectedWrites []string   `avro:"expected_writes" json:"expected_writes"`
	WriteDeadline  *time.Time `avro:"write_deadline" json:"write_deadline,omitempty"`
	OccurredAt     time.Time  `avro:"occurred_at" json:"occurred_at"`
}

// CheckResult is the outcome of one audit check. A failed check is data.
type CheckResult struct {
	Name       string   `avro:"name" json:"name"`
	Kind       string   `avro:"kind" json:"kind"`
	Table      string   `avro:"table" json:"table"`
	Severity   string   `avro:"severity" json:"severity"` // error | warn
	Status     string   `avro:"status" json:"status"`     // pass | fail | warn | error
	Observed   string   `avro:"observed" json:"observed"`
	Threshold  string   `avro:"threshold" json:"threshold"`
	SampleRows []string `avro:"sample_rows" json:"sample_rows,omitempty"` // JSON objects
	Message    string   `avro:"message" json:"message,omitempty"`
	DurationMs int64    `avro:"duration_ms" json:"duration_ms"`
	// RowsChecked and Failures are the check's counts as numbers, for
	// consumers that should not parse Observed; nil when the check does not
	// count (schema, freshness, ...) or could not run.
	RowsChecked *int64 `avro:"rows_checked" json:"rows_checked,omitempty"`
	Failures    *int64 `avro:"failures" json:"failures,omitempty"`
}

// Check statuses.
const (
	StatusPass  = "pass"
	StatusFail  = "fail"  // an error-severity check failed: blocks publish
	StatusWarn  = "warn"  // a warn-severity check failed: reported only
	StatusError = "error" // the check could not run: blocks publish
	// StatusSkipped is a check imported from another tool (a Great
	// Expectations suite, a dbt schema.yml) that lakewap cannot run and the
	// dataset chose to skip; it neither passes nor blocks.
	StatusSkipped = "skipped"
)

// AuditReport is the result of running a dataset's suite against a ref.
type AuditReport struct {
	Dataset    string        `avro:"dataset" json:"dataset"`
	Ref        string        `avro:"ref" json:"ref"`
	Passed     bool          `avro:"passed" json:"passed"`
	Checks     []CheckResult `avro:"checks" json:"checks"`
	DurationMs int64         `avro:"duration_ms" json:"duration_ms"`
	// Mode is how the audit read the table: full, or incremental (only the
	// batch's rows, with lakewap's statistics of the unchanged files).
	// ModeReason says why an audit that could have been incremental was
	// full (a commit on the target lakewap did not attest, a changed suite).
	Mode       string `avro:"mode" json:"mode,omitempty"`
	ModeReason string `avro:"mode_reason" json:"mode_reason,omitempty"`
}

// Counts returns how many checks passed, failed (or errored) and warned;
// skipped checks are in none of them.
func (r AuditReport) Counts() (passed, failed, warned int) {
	for _, c := range r.Checks {
		switch c.Status {
		case StatusPass:
			passed++
		case StatusWarn:
			warned++
		case StatusSkipped:
		default:
			failed++
		}
	}
	return
}

// Failed returns the checks that block publishing.
func (r AuditReport) Failed() []CheckResult {
	return slices.DeleteFunc(slices.Clone(r.Checks), func(c CheckResult) bool {
		return c.Status != StatusFail && c.Status != StatusError
	})
}

// BatchPublished says a batch passed its audits and is on main.
type BatchPublished struct {
	EventID     string      `avro:"event_id" json:"event_id"`
	BatchID     string      `avro:"batch_id" json:"batch_id"`
	Dataset     string      `avro:"dataset" json:"dataset"`
	Repository  string      `avro:"repository" json:"repository"`
	Branch      string      `avro:"branch" json:"branch"`
	TargetRef   string      `avro:"target_ref" json:"target_ref"`
	CommitID    string      `avro:"commit_id" json:"commit_id"` // merge commit on the target (main)
	Report      AuditReport `avro:"report" json:"report"`
	LandedAt    time.Time   `avro:"landed_at" json:"landed_at"`
	PublishedAt time.Time   `avro:"published_at" json:"published_at"`
	DurationMs  int64       `avro:"duration_ms" json:"duration_ms"`
}

// BatchAborted says a batch was stopped; main is untouched.
type BatchAborted struct {
	EventID    string       `avro:"event_id" json:"event_id"`
	BatchID    string       `avro:"batch_id" json:"batch_id"`
	Dataset    string       `avro:"dataset" json:"dataset"`
	Repository string       `avro:"repository" json:"repository"`
	Branch     string       `avro:"branch" json:"branch"`
	Reason     string       `avro:"reason" json:"reason"`
	Detail     string       `avro:"detail" json:"detail"`
	Report     *AuditReport `avro:"report" json:"report,omitempty"`
	BranchKept bool         `avro:"branch_kept" json:"branch_kept"`
	OccurredAt time.Time    `avro:"occurred_at" json:"occurred_at"`
	DurationMs int64        `avro:"duration_ms" json:"duration_ms"`
	TargetRef  string       `avro:"target_ref" json:"target_ref"` // the dataset's target
}

// BatchFailed says lakewap could not finish a batch because of an
// infrastructure error that outlived its retry budget.
type BatchFailed struct {
	EventID    string    `avro:"event_id" json:"event_id"`
	BatchID    string    `avro:"batch_id" json:"batch_id"`
	Dataset    string    `avro:"dataset" json:"dataset"`
	Repository string    `avro:"repository" json:"repository"`
	Branch     string    `avro:"branch" json:"branch"`
	State      string    `avro:"state" json:"state"` // state the run was in
	Error      string    `avro:"error" json:"error"`
	Attempts   int       `avro:"attempts" json:"attempts"`
	BranchKept bool      `avro:"branch_kept" json:"branch_kept"`
	OccurredAt time.Time `avro:"occurred_at" json:"occurred_at"`
	TargetRef  string    `avro:"target_ref" json:"target_ref"` // the dataset's target
}

// BatchReverted says an operator reverted a published batch on its target:
// a revert commit undoes the batch's merge commit.
type BatchReverted struct {
	EventID           string    `avro:"event_id" json:"event_id"`
	BatchID           string    `avro:"batch_id" json:"batch_id"`
	Dataset           string    `avro:"dataset" json:"dataset"`
	Repository        string    `avro:"repository" json:"repository"`
	TargetRef         string    `avro:"target_ref" json:"target_ref"`
	PublishedCommitID string    `avro:"published_commit_id" json:"published_commit_id"`
	CommitID          string    `avro:"commit_id" json:"commit_id"` // the revert commit
	Reason            string    `avro:"reason" json:"reason"`
	RevertedBy        string    `avro:"reverted_by" json:"reverted_by"`
	OccurredAt        time.Time `avro:"occurred_at" json:"occurred_at"`
	// Audited: the target was audited as the revert leaves it before the
	// revert was made (false: forced).
	Audited bool `avro:"audited" json:"audited"`
}

func (BatchLanded) EventType() string    { return TypeBatchLanded }
func (WriteComplete) EventType() string  { return TypeWriteComplete }
func (BatchCancelled) EventType() string { return TypeBatchCancelled }
func (BranchReady) EventType() string    { return TypeBranchReady }
func (BatchPublished) EventType() string { return TypeBatchPublished }
func (BatchAborted) EventType() string   { return TypeBatchAborted }
func (BatchFailed) EventType() string    { return TypeBatchFailed }
func (BatchReverted) EventType() string  { return TypeBatchReverted }

func (e BatchLanded) Batch() string    { return e.BatchID }
func (e WriteComplete) Batch() string  { return e.BatchID }
func (e BatchCancelled) Batch() string { return e.BatchID }
func (e BranchReady) Batch() string    { return e.BatchID }
func (e BatchPublished) Batch() string { return e.BatchID }
func (e BatchAborted) Batch() string   { return e.BatchID }
func (e BatchFailed) Batch() string    { return e.BatchID }
func (e BatchReverted) Batch() string  { return e.BatchID }

func (e BatchLanded) DatasetName() string    { return e.Dataset }
func (e WriteComplete) DatasetName() string  { return e.Dataset }
func (e BatchCancelled) DatasetName() string { return e.Dataset }
func (e BranchReady) DatasetName() string    { return e.Dataset }
func (e BatchPublished) DatasetName() string { return e.Dataset }
func (e BatchAborted) DatasetName() string   { return e.Dataset }
func (e BatchFailed) DatasetName() string    { return e.Dataset }
func (e BatchReverted) DatasetName() string  { return e.Dataset }

func (BatchLanded) ID() string      { return "" }
func (WriteComplete) ID() string    { return "" }
func (BatchCancelled) ID() string   { return "" }
func (e BranchReady) ID() string    { return e.EventID }
func (e BatchPublished) ID() string { return e.EventID }
func (e BatchAborted) ID() string   { return e.EventID }
func (e BatchFailed) ID() string    { return e.EventID }
func (e BatchReverted) ID() string  { return e.EventID }

// InputTypes are the event types the input topic carries: upstream's, then
// the operator requests.
func InputTypes() []string {
	return []string{TypeBatchLanded, TypeWriteComplete, TypeBatchCancelled, TypeRetryRequested, TypeRevertRequested}
}

// IsInput reports whether ev is an input event, one the input topic carries.
func IsInput(ev Event) bool { return slices.Contains(InputTypes(), ev.EventType()) }

// IsRequest reports whether ev is an operator's request to retry or revert
// a batch: an invalid one is its own problem, not its batch's.
func IsRequest(ev Event) bool {
	return ev.EventType() == TypeRetryRequested || ev.EventType() == TypeRevertRequested
}

// MetaBatchTime is the commit metadata key of the batch time on the merge
// commit that publishes a batch (RFC 3339 with nanoseconds): the pipeline
// writes it, and the pre-merge hook reads it from merges lakeFS names
// lakewap's own, so that it judges freshness as the run's audit did.
const MetaBatchTime = "wap.batch_time"

// MetaDataset is the commit metadata key of the dataset whose batch a
// merge commit publishes: the pipeline writes it, and the pre-merge hook
// reads it from merges lakeFS names lakewap's own, so that it judges that
// dataset's checks as the run's recheck does (none excused).
const MetaDataset = "wap.dataset"

// MetaRevertedBatchID is the commit metadata key of the batch an operator's
// revert undid, on the revert commit: on a merge lakeFS names lakewap's
// own, the pre-merge hook reads it to judge the merge as a revert (the
// runner's revert audit), not as a publish of its dataset.
const MetaRevertedBatchID = "wap.reverted_batch_id"
