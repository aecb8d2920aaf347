package schemas

import "time"

// Operator requests: inputs an operator's command (lakewap retry, revert,
// cancel) sends to the input topic, handled by the daemon that owns the
// batch like any other input. Their outcome is an ordinary result event, or
// RequestRefused, with the request id in the HeaderRequestID header.
const (
	TypeRetryRequested  = "RetryRequested"
	TypeRevertRequested = "RevertRequested"
	TypeRequestRefused  = "RequestRefused"
)

// HeaderRequestID is the Kafka header of a result event that answers an
// operator's request: the request's id.
const HeaderRequestID = "wap.request_id"

// Reasons carried by RequestRefused.
const (
	RefusedUnknownBatch = "unknown_batch" // no run of the batch in the dataset
	RefusedWrongState   = "wrong_state"   // the run is not in a state the request applies to
	RefusedInProgress   = "in_progress"   // the same kind of request is still being carried out
	RefusedRevertFailed = "revert_failed" // lakeFS would not revert (conflict, ambiguous merge)
)

// RetryRequested asks the daemon to run a failed batch, or an aborted one
// whose audit failed or whose merge conflicted, again.
type RetryRequested struct {
	RequestID   string    `avro:"request_id" json:"request_id"`
	BatchID     string    `avro:"batch_id" json:"batch_id"`
	Dataset     string    `avro:"dataset" json:"dataset"`
	RequestedBy string    `avro:"requested_by" json:"requested_by"`
	OccurredAt  time.Time `avro:"occurred_at" json:"occurred_at"`
}

// RevertRequested asks the daemon to revert a published batch.
type RevertRequested struct {
	RequestID   string    `avro:"request_id" json:"request_id"`
	BatchID     string    `avro:"batch_id" json:"batch_id"`
	Dataset     string    `avro:"dataset" json:"dataset"`
	Reason      string    `avro:"reason" json:"reason"`
	RequestedBy string    `avro:"requested_by" json:"requested_by"`
	OccurredAt  time.Time `avro:"occurred_at" json:"occurred_at"`
}

// RequestRefused says an operator's request was not carried out, and why.
type RequestRefused struct {
	EventID     string    `avro:"event_id" json:"event_id"`
	RequestID   string    `avro:"request_id" json:"request_id"`
	RequestType string    `avro:"request_type" json:"request_type"`
	BatchID     string    `avro:"batch_id" json:"batch_id"`
	Dataset     string    `avro:"dataset" json:"dataset"`
	State       string    `avro:"state" json:"state"`
	Reason      string    `avro:"reason" json:"reason"`
	Detail      string    `avro:"detail" json:"detail"`
	OccurredAt  time.Time `avro:"occurred_at" json:"occurred_at"`
}

func (RetryRequested) EventType() string  { return TypeRetryRequested }
func (RevertRequested) EventType() string { return TypeRevertRequested }
func (RequestRefused) EventType() string  { return TypeRequestRefused }

func (e RetryRequested) Batch() string  { return e.BatchID }
func (e RevertRequested) Batch() string { return e.BatchID }
func (e RequestRefused) Batch() string  { return e.BatchID }

// MaxRequestIDLen bounds the request id of an operator's request.
const MaxRequestIDLen = 128

// request checks the fields every operator request has.
func (v *validator) request(id, by string) {
	if id == "" {
		v.add("request_id", "is empty")
	}
	v.add("request_id", text(id, MaxRequestIDLen)) // "" for an empty id: adds nothing
	v.add("requested_by", text(by, MaxTextLen))
}

func (e RetryRequested) DatasetName() string  { return e.Dataset }
func (e RevertRequested) DatasetName() string { return e.Dataset }
func (e RequestRefused) DatasetName() string  { return e.Dataset }

func (RetryRequested) ID() string   { return "" }
func (RevertRequested) ID() string  { return "" }
func (e RequestRefused) ID() string { return e.EventID }
