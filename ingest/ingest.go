// Package ingest is the stage between the Kafka consumer and the pipeline.
// It decodes an input message, checks its key and event-type header against
// the value, validates the event, and hands the runner a typed event. A
// message that can never be handled leaves here as consumer.Poison with its
// reason, so the consumer writes it to the dead-letter topic and moves on.
//
// It may import consumer, schemas, kafka-go and the standard library; it
// does not import pipeline, which plugs in through Runner.
package ingest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/lakewap/lakewap/kafka"

	"github.com/lakewap/lakewap/consumer"
	"github.com/lakewap/lakewap/schemas"
)

// Dead-letter reasons of messages that decoded but are not inputs as
// announced. Decode failures use the schemas.Decode* reasons, validation
// failures schemas.ReasonInvalid, refusals the runner's reason.
const (
	// ReasonTypeMismatch: the wap.event_type header names another type than
	// the value's writer schema. Which one the producer meant is unknown, so
	// the message aborts nothing.
	ReasonTypeMismatch = "type_mismatch"
	// ReasonUnexpectedType: a lakewap event that is not an input (a result
	// event sent to the input topic).
	ReasonUnexpectedType = "unexpected_type"
	// ReasonKeyMismatch: the Kafka key is not the batch id. Keys put all
	// events of a batch on one partition, where its run lives; an event on
	// another partition would start a run of its own there.
	ReasonKeyMismatch = "key_mismatch"
	// ReasonRefused: the runner refused the event without a reason of its own.
	ReasonRefused = "refused"
	// ReasonWrongPartition: the event (or request) is not on the partition
	// the Kafka default partitioner (murmur2 of the key, as Java's producer
	// and librdkafka's murmur2_random) gives its key. The batch's run lives
	// on that partition; another one would start a second run on its branch.
	ReasonWrongPartition = "wrong_partition"
	// ReasonRequestOnInput: an operator's request (retry, revert, a
	// cancellation with a request id or requester) on the input topic,
	// which producers may write: only the requests topic carries requests.
	ReasonRequestOnInput = "request_on_input_topic"
	// ReasonNotARequest: an event on the requests topic that is not an
	// operator's request.
	ReasonNotARequest = "not_a_request"
	// ReasonUnsigned: a request without a valid signature of a configured
	// operator's key, when the config lists operators.
	ReasonUnsigned = "unsigned_request"
)

// Runner is the pipeline's runner as the consumer sees it through this
// stage: it restores and drops partitions and applies typed input events.
type Runner interface {
	Assigned(ctx context.Context, partition int, behind func(t time.Time) bool) error
	Revoked(partition int)
	// Handle applies a valid input event, which came with the W3C trace
	// context trace (zero without one). nil means its effect is durable;
	// a Refused error means it was not applied and is dead-lettered; any
	// other error is retried.
	Handle(ctx context.Context, partition int, ev schemas.Event, trace schemas.TraceContext) error
	// Invalid ends the run of the configured batch that ev names (reason
	// invalid), before ev is dead-lettered for problem.
	Invalid(ctx context.Context, partition int, ev schemas.Event, problem error) error
}

// Refused is the error a Runner returns for an event it will not apply (a
// write its batch does not expect, a run over its byte budget).
type Refused interface {
	error
	// RefusedReason is the dead letter's wap.dlq.reason, a short code.
	RefusedReason() string
}

// Config wires the stage.
type Config struct {
	Codec *schemas.Codec
	// Rules validate each event: Known datasets, SourceAllowed refs and
	// MaxDeadlineHorizon; Now is set for each message.
	Rules schemas.Rules
	// RequestsTopic is the topic of operators' requests; requests arriving
	// on any other topic are dead-lettered, and so is anything else arriving
	// on it. Empty: requests are taken from the input topic (tests).
	RequestsTopic string
	// Operators, when not empty, are the keys requests must be signed with
	// (by operator name): an unsigned or badly signed request is
	// dead-lettered, a signed one names its key's operator as who asked.
	Operators map[string][]byte
	// Cluster is the id of the Kafka cluster the requests topic is on: a
	// signature names it and the topic (schemas.RequestScope), so a request
	// signed for another deployment that lists the same operator's key is
	// dead-lettered, not carried out.
	Cluster string
	// Deployment is kafka.deployment_id, which a signature names too; it
	// scopes requests where the brokers report no cluster id, and without
	// either every signed request is dead-lettered (schemas.RequestScope.Check).
	Deployment string
	// Partitions, if set, gives a topic's partition count (0: unknown): an
	// event or request on another partition of its topic than
	// murmur2(key) % count is dead-lettered. The consumer hands out no
	// message before it knows the counts (consumer.awaitCounts).
	Partitions func(topic string) int
	// InputTopic is the topic of producers' events. Requests partition n
	// is handled by the owner of input partition n, so a request must be
	// on its key's partition of the input topic too.
	InputTopic string
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Counted, if set, counts each message that leaves here as a dead
	// letter, by event type ("undecodable" when it did not decode).
	Counted func(eventType, outcome string)
	// Process, if set, is called for each valid event before it reaches
	// the Runner, with its message and trace context; it returns the
	// context to hand the event in and a function called with the Runner's
	// answer (the Kafka process span: internal/tracing's Tracer.Process).
	Process func(ctx context.Context, msg kafka.Message, ev schemas.Event, trace schemas.TraceContext) (context.Context, func(error))
}

// Wrap returns the consumer.Handler that runs the ingest stage in front of
// r: partitions are r's to restore and drop, and each message reaches r as a
// valid, typed event or goes to the dead-letter topic.
func Wrap(cfg Config, r Runner) consumer.Handler {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &stage{Runner: r, cfg: cfg}
}

// stage passes Assigned and Revoked on to its Runner; its Handle takes a
// Kafka message where the Runner's takes an event.
type stage struct {
	Runner
	cfg Config
}

func (s *stage) Handle(ctx context.Context, msg kafka.Message) error {
	ev, err := s.cfg.Codec.Decode(ctx, msg.Value)
	if err != nil {
		var de *schemas.DecodeError
		switch {
		case errors.As(err, &de) && !de.Permanent():
			return err // a schema registry out of reach: try again
		case de != nil:
			return s.poison("undecodable", err, de.Reason)
		}
		return s.poison("undecodable", err, schemas.DecodeMalformed)
	}
	if reason, err := check(ev, msg); err != nil {
		return s.poison(ev.EventType(), err, reason)
	}
	onRequests := s.cfg.RequestsTopic != "" && msg.Topic == s.cfg.RequestsTopic
	// On the requests topic too: its partition n is handled by the owner of
	// input partition n, so a request elsewhere (a signed one copied to
	// another partition) reaches a runner without the batch's run, where a
	// cancel would remember the batch as cancelled and announce it aborted.
	if s.cfg.Partitions != nil {
		if n := s.cfg.Partitions(msg.Topic); n > 0 {
			if want := kafka.PartitionOf(msg.Key, n); want != msg.Partition {
				return s.poison(ev.EventType(), fmt.Errorf("unusable event: batch %q is on partition %d of %s, its key's partition is %d: produce with the default partitioner (murmur2 of the key, as the Java client; librdkafka: partitioner=murmur2_random)",
					ev.Batch(), msg.Partition, msg.Topic, want), ReasonWrongPartition)
			}
		}
		// The requests topic's own count is not enough: partition n is
		// handled by the owner of input partition n, which holds the run
		// only when the two topics have one partition count.
		if in := s.cfg.InputTopic; onRequests && in != "" {
			if n := s.cfg.Partitions(in); n > 0 {
				if home := kafka.PartitionOf(msg.Key, n); home != msg.Partition {
					return s.poison(ev.EventType(), fmt.Errorf("unusable request: batch %q lives on partition %d of %s (%s), but requests partition %d of %s (%s) is handled by the owner of input partition %d: give %s the partition count of %s",
						ev.Batch(), home, in, plural(n, "partition"), msg.Partition, msg.Topic, plural(s.cfg.Partitions(msg.Topic), "partition"), msg.Partition, msg.Topic, in), ReasonWrongPartition)
				}
			}
		}
	}
	if s.cfg.RequestsTopic != "" {
		var reason string
		if ev, reason, err = s.channel(ev, msg, onRequests); err != nil {
			return s.poison(ev.EventType(), err, reason)
		}
	}
	rules := s.cfg.Rules
	rules.Now = s.cfg.Now()
	if problem := rules.Validate(ev); problem != nil {
		if !onRequests && namesRun(ev, problem, rules.Known) {
			if err := s.Runner.Invalid(ctx, msg.Partition, ev, problem); err != nil {
				return s.refused(ev, err)
			}
		}
		return s.poison(ev.EventType(), problem, schemas.ReasonInvalid)
	}
	tc := traceContext(msg.Headers)
	done := func(error) {}
	if s.cfg.Process != nil {
		ctx, done = s.cfg.Process(ctx, msg, ev, tc)
	}
	err = s.Runner.Handle(ctx, msg.Partition, ev, tc)
	done(err)
	if err != nil {
		return s.refused(ev, err)
	}
	return nil
}

// check holds ev against the message that carried it: an input event, of
// the type its header announces, keyed by its batch id.
func check(ev schemas.Event, msg kafka.Message) (reason string, err error) {
	for _, h := range msg.Headers {
		if h.Key == schemas.HeaderEventType && len(h.Value) > 0 && string(h.Value) != ev.EventType() {
			return ReasonTypeMismatch, fmt.Errorf("unusable event: header %s says %q, value is %s (batch %q)",
				schemas.HeaderEventType, h.Value, ev.EventType(), ev.Batch())
		}
	}
	if !schemas.IsInput(ev) {
		return ReasonUnexpectedType, fmt.Errorf("unusable event: %s is not an input event (want one of %s)", ev.EventType(),
			strings.Join(schemas.InputTypes(), ", "))
	}
	if string(msg.Key) != ev.Batch() {
		return ReasonKeyMismatch, fmt.Errorf("unusable event: message key %q is not the batch id %q: key every event by its batch id so a batch stays on one partition",
			msg.Key, ev.Batch())
	}
	return "", nil
}

// channel holds ev to the channel it came on: operators' requests on the
// requests topic only (signed when operators are configured), nothing else
// there. It returns the event to apply: a signed request names its key's
// operator as who asked.
func (s *stage) channel(ev schemas.Event, msg kafka.Message, onRequests bool) (schemas.Event, string, error) {
	request := schemas.IsOperatorRequest(ev)
	switch {
	case request && !onRequests:
		return ev, ReasonRequestOnInput, fmt.Errorf("operator request on %s: lakewap takes %s only from %s, which only operators may write (batch %q)",
			msg.Topic, ev.EventType(), s.cfg.RequestsTopic, ev.Batch())
	case !request && onRequests:
		return ev, ReasonNotARequest, fmt.Errorf("%s on %s is not an operator's request (want RetryRequested, RevertRequested or BatchCancelled with a request_id; batch %q)",
			ev.EventType(), msg.Topic, ev.Batch())
	case !onRequests || len(s.cfg.Operators) == 0:
		return ev, "", nil
	}
	var name, sig string
	for _, h := range msg.Headers {
		switch h.Key {
		case schemas.HeaderOperator:
			name = string(h.Value)
		case schemas.HeaderSignature:
			sig = string(h.Value)
		}
	}
	key, known := s.cfg.Operators[name]
	scope := schemas.RequestScope{Cluster: s.cfg.Cluster, Deployment: s.cfg.Deployment, Topic: msg.Topic}
	if err := scope.Check(); err != nil {
		return ev, ReasonUnsigned, fmt.Errorf("%s of batch %q is not carried out: %w", ev.EventType(), ev.Batch(), err)
	}
	if !known || !schemas.VerifyRequest(key, scope, string(msg.Key), msg.Value, sig) {
		return ev, ReasonUnsigned, fmt.Errorf("%s of batch %q is not signed by a configured operator for this deployment, Kafka cluster %q, deployment %q and topic %s (headers %s %q and %s): requests must be signed with an operator's key, for the cluster, deployment id and topic they are written to",
			ev.EventType(), ev.Batch(), clip(s.cfg.Cluster, 64), clip(s.cfg.Deployment, 64), msg.Topic, schemas.HeaderOperator, clip(name, 64), schemas.HeaderSignature)
	}
	return schemas.WithRequestedBy(ev, name), "", nil
}

// plural is "n thing" or "n things" ("unknown things" for 0).
func plural(n int, thing string) string {
	switch n {
	case 0:
		return "unknown " + thing + "s"
	case 1:
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

// clip is s cut to n bytes, saying it was.
func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// traceContext is the W3C trace context in a message's headers: the last
// traceparent and tracestate, as a Kafka header may repeat; an invalid one
// is no trace (the batch is handled all the same).
func traceContext(headers []kafka.Header) schemas.TraceContext {
	var parent, state string
	for _, h := range headers {
		switch strings.ToLower(h.Key) {
		case schemas.HeaderTraceParent:
			parent = string(h.Value)
		case schemas.HeaderTraceState:
			state = string(h.Value)
		}
	}
	return schemas.ParseTraceContext(parent, state)
}

// namesRun reports whether an invalid event still names a batch whose run
// it should end: a usable batch id of a configured dataset, in an event
// that is not an operator's request (a malformed request is its own
// problem). An event of a dataset that is not configured makes no run at
// all: the dead letter is its outcome, so nothing of the junk is stored or
// labelled.
func namesRun(ev schemas.Event, problem error, known func(string) bool) bool {
	var ve *schemas.ValidationError
	if schemas.IsRequest(ev) || ev.Batch() == "" || errors.As(problem, &ve) && strings.HasPrefix(ve.Field, "batch_id") {
		return false
	}
	return known == nil || known(ev.DatasetName())
}

// refused maps the runner's error: a refusal is a dead letter under its
// reason; anything else is retried.
func (s *stage) refused(ev schemas.Event, err error) error {
	var ref Refused
	if !errors.As(err, &ref) {
		return err
	}
	reason := ref.RefusedReason()
	if reason == "" {
		reason = ReasonRefused
	}
	return s.poison(ev.EventType(), ref, reason)
}

func (s *stage) poison(eventType string, err error, reason string) error {
	if s.cfg.Counted != nil {
		s.cfg.Counted(eventType, "dead_letter")
	}
	return consumer.Poison(err, reason)
}
