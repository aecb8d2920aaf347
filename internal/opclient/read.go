package opclient

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lakewap/lakewap/kafka"

	"github.com/lakewap/lakewap/consumer"
	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/schemas"
)

// Tail hands the messages of every partition of topic to fn, decoded (dead
// letters with their raw value), from the oldest retained one or (without
// fromBeginning) the next one, until fn says stop, ctx ends (a normal end),
// or (without follow) every partition reached the end it had at the start.
// Partitions interleave; each partition's records are in order.
func (t *Target) Tail(ctx context.Context, topic string, fromBeginning, follow bool, fn func(Record) (stop bool)) error {
	first, next, err := t.Offsets(ctx, topic)
	if err != nil {
		return err
	}
	from, until := next, next
	if fromBeginning {
		from = first
	}
	if follow {
		until = nil
	}
	return t.ReadPartitions(ctx, topic, from, until, func(m kafka.Message) bool {
		dctx, dcancel := context.WithTimeout(ctx, 10*time.Second)
		defer dcancel()
		_, isDeadLetter := kafka.HeaderValue(m.Headers, consumer.HeaderDLQReason)
		return fn(t.Record(dctx, m, isDeadLetter))
	})
}

// ReadPartitions reads every partition of topic in from, each from its
// offset there, and hands the messages to fn (kafka.Client.ReadPartitions).
func (t *Target) ReadPartitions(ctx context.Context, topic string, from, until map[int]int64, fn func(kafka.Message) (stop bool)) error {
	return t.kafka.ReadPartitions(ctx, topic, from, until, fn)
}

// Offsets returns the first offset of every partition of topic and the
// offset its next message will have.
func (t *Target) Offsets(ctx context.Context, topic string) (first, next map[int]int64, err error) {
	return t.kafka.Offsets(ctx, topic)
}

// ErrNoAnswer is Ask's error when no daemon answered in time.
var ErrNoAnswer = errors.New("no lakewap daemon answered")

// Ask sends the operator request req (whose wap.request_id is id) to the
// requests topic of k (signed when SignAs named an operator), calls sent with the message as written, and returns
// the first result event that answers it. The results topic is read from
// the ends it had before the request was sent, so no earlier event is taken
// for the answer.
func (t *Target) Ask(ctx context.Context, k config.Kafka, req schemas.Event, id string, timeout time.Duration, sent func(kafka.Message)) (schemas.Event, error) {
	_, ends, err := t.Offsets(ctx, k.ResultsTopic)
	if err != nil {
		return nil, err
	}
	msg, err := t.Send(ctx, k.RequestsTopic, req, -1)
	if err != nil {
		return nil, fmt.Errorf("request not sent: %w", err)
	}
	sent(msg)
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var ans schemas.Event
	err = t.ReadPartitions(wctx, k.ResultsTopic, ends, nil, func(m kafka.Message) bool {
		request, _ := kafka.HeaderValue(m.Headers, schemas.HeaderRequestID)
		typ, _ := kafka.HeaderValue(m.Headers, schemas.HeaderEventType)
		if request != id || string(m.Key) != req.Batch() || !answers[typ] {
			return false // another batch's, another request's, or on the way (BranchReady of a retried branch)
		}
		if ev, err := t.codec.Decode(wctx, m.Value); err == nil {
			ans = ev
		}
		return ans != nil
	})
	switch {
	case ans != nil:
		return ans, nil
	case wctx.Err() != nil && ctx.Err() == nil:
		return nil, fmt.Errorf("%w request %s within %s. The request stays on %s (partition %d, offset %d): the daemon that owns that partition (consumer group %s) carries it out when it runs; see lakewap runs -batch %s",
			ErrNoAnswer, id, timeout, k.RequestsTopic, msg.Partition, msg.Offset, k.GroupID, req.Batch())
	}
	return nil, cmp.Or(err, ctx.Err())
}

// answers are the event types that end an operator's request.
var answers = map[string]bool{schemas.TypeBatchPublished: true, schemas.TypeBatchAborted: true, schemas.TypeBatchFailed: true,
	schemas.TypeBatchReverted: true, schemas.TypeRequestRefused: true}
