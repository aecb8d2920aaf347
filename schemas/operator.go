package schemas

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"
)

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
	RefusedStale        = "stale"         // stamped before what it would act on (a copy of an older request), or too far ahead of lakewap's clock
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
	// Force makes the revert without auditing the target as it leaves it
	// (lakewap revert -force). It is in the signed value: only an
	// operator's key sets it.
	Force bool `avro:"force" json:"force,omitempty"`
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

// HeaderOperator names the operator whose key signed a request (see
// HeaderSignature); the daemon records that name as who asked.
const HeaderOperator = "wap.operator"

// HeaderSignature is a request's signature (SignRequest): hex HMAC-SHA256,
// with the operator's key, of the Kafka cluster id, the requests topic, the
// message key and the value.
const HeaderSignature = "wap.signature"

// IsOperatorRequest reports whether ev is an operator's request: a retry, a
// revert, or a cancellation naming a request id or who asked. Those come
// from the requests topic only.
func IsOperatorRequest(ev Event) bool {
	if c, ok := ev.(BatchCancelled); ok {
		return c.RequestID != "" || c.RequestedBy != ""
	}
	return IsRequest(ev)
}

// RequestScope is the deployment a request is signed for: the Kafka
// cluster (its cluster id, as the brokers' metadata gives it) and the
// requests topic. An operator's key signs for every daemon that lists it
// (staging and production, two teams' daemons on one cluster): a request
// signed for one is not carried out by another. Brokers may report no
// cluster id; a deployment then names itself (Deployment, the config's
// kafka.deployment_id, the same on its daemons and in its operators'
// configs), or its requests would be scoped by the topic's name alone
// (Check). None holds a line break (Kafka's topic names cannot; cluster
// ids are base64; ValidDeployment), so the signed bytes read one way only.
type RequestScope struct {
	Cluster string
	// Deployment is kafka.deployment_id; empty when the config names none.
	Deployment string
	Topic      string
}

// ErrUnscopedRequest: neither a cluster id nor a deployment id scopes a
// request, so a signature would hold for every deployment listing the
// key whose requests topic has the same name.
var ErrUnscopedRequest = errors.New("the Kafka brokers report no cluster id and the config names no kafka.deployment_id: " +
	"a signature would name the requests topic alone, and another deployment whose brokers report none, with a topic of that name, " +
	"would carry the request out; set kafka.deployment_id to a name of this deployment, the same on its daemons and in its operators' configs")

// Check says whether scope tells one deployment from another.
func (s RequestScope) Check() error {
	if s.Cluster == "" && s.Deployment == "" {
		return ErrUnscopedRequest
	}
	return nil
}

// MaxDeploymentLen bounds kafka.deployment_id.
const MaxDeploymentLen = 128

// ValidDeployment checks a deployment id: at most MaxDeploymentLen bytes
// of printable ASCII without spaces (empty: none).
func ValidDeployment(id string) error {
	if len(id) > MaxDeploymentLen {
		return fmt.Errorf("%d bytes: at most %d", len(id), MaxDeploymentLen)
	}
	for _, r := range id {
		if r <= ' ' || r > '~' {
			return fmt.Errorf("%q holds %q: printable ASCII without spaces only", id, r)
		}
	}
	return nil
}

// SignRequest is the signature of a request message with key and value,
// written to scope (HeaderSignature): hex HMAC-SHA256 with secret of
// "lakewap request v2\n", the cluster id, "\n", the topic, "\n", the
// message key, "\n" and the value; with a deployment id, of "lakewap
// request v3\n", the cluster id, "\n", the deployment id, "\n", and the
// rest as in v2 (v2 is kept without one: the requests of deployments that
// name none are signed as before).
func SignRequest(secret []byte, scope RequestScope, key string, value []byte) string {
	m := hmac.New(sha256.New, secret)
	parts := []string{scope.Cluster, scope.Topic, key}
	if scope.Deployment == "" {
		m.Write([]byte("lakewap request v2\n"))
	} else {
		m.Write([]byte("lakewap request v3\n"))
		parts = []string{scope.Cluster, scope.Deployment, scope.Topic, key}
	}
	for _, part := range parts {
		m.Write([]byte(part))
		m.Write([]byte{'\n'})
	}
	m.Write(value)
	return hex.EncodeToString(m.Sum(nil))
}

// VerifyRequest reports whether signature is secret's signature of the
// message as written to scope (constant time).
func VerifyRequest(secret []byte, scope RequestScope, key string, value []byte, signature string) bool {
	return hmac.Equal([]byte(SignRequest(secret, scope, key, value)), []byte(signature))
}

// WithRequestedBy returns the request ev saying by asked.
func WithRequestedBy(ev Event, by string) Event {
	switch e := ev.(type) {
	case RetryRequested:
		e.RequestedBy = by
		return e
	case RevertRequested:
		e.RequestedBy = by
		return e
	case BatchCancelled:
		e.RequestedBy = by
		return e
	}
	return ev
}
