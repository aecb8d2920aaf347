package opclient

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"

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
		_, isDeadLetter := HeaderValue(m.Headers, consumer.HeaderDLQReason)
		return fn(t.Record(dctx, m, isDeadLetter))
	})
}

// ReadPartitions reads every partition of topic in from, each from its
// offset there, and hands the messages to fn one at a time, each
// partition's in order, until fn says stop, ctx ends, or (with until) every
// partition reached its offset in until. It returns the first read error;
// the end of ctx is none.
func (t *Target) ReadPartitions(ctx context.Context, topic string, from, until map[int]int64, fn func(kafka.Message) (stop bool)) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	msgs := make(chan kafka.Message)
	errc := make(chan error, len(from))
	var wg sync.WaitGroup
	for partition, start := range from {
		end, bounded := until[partition]
		if until != nil && start >= end {
			continue
		}
		r := kafka.NewReader(kafka.ReaderConfig{Brokers: t.brokers, Topic: topic, Partition: partition, Dialer: t.dialer,
			MinBytes: 1, MaxBytes: 10 << 20, MaxWait: 250 * time.Millisecond})
		if err := r.SetOffset(start); err != nil { // only fails on a reader in a group
			_ = r.Close()
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer r.Close()
			for {
				m, err := r.ReadMessage(ctx)
				if err != nil {
					if ctx.Err() == nil {
						errc <- fmt.Errorf("reading %s/%d: %w", topic, partition, err)
						cancel()
					}
					return
				}
				select {
				case msgs <- m:
				case <-ctx.Done():
					return
				}
				if bounded && m.Offset+1 >= end {
					return
				}
			}
		}()
	}
	go func() { wg.Wait(); close(msgs) }()
	for m := range msgs {
		if fn(m) {
			break
		}
	}
	cancel()
	for range msgs { // let the readers stop
	}
	select {
	case err := <-errc:
		return err
	default:
		return nil
	}
}

// Offsets returns the first offset of every partition of topic and the
// offset its next message will have.
func (t *Target) Offsets(ctx context.Context, topic string) (first, next map[int]int64, err error) {
	client := &kafka.Client{Addr: kafka.TCP(t.brokers...), Transport: t.transport, Timeout: 10 * time.Second}
	md, err := client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
	if err != nil {
		return nil, nil, fmt.Errorf("metadata of %s: %w", topic, err)
	}
	if len(md.Topics) != 1 || md.Topics[0].Error != nil || len(md.Topics[0].Partitions) == 0 {
		var terr error
		if len(md.Topics) == 1 {
			terr = md.Topics[0].Error
		}
		return nil, nil, fmt.Errorf("topic %s: not found (%v)", topic, terr)
	}
	var reqs []kafka.OffsetRequest
	for _, p := range md.Topics[0].Partitions {
		reqs = append(reqs, kafka.FirstOffsetOf(p.ID), kafka.LastOffsetOf(p.ID))
	}
	offs, err := client.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: reqs}})
	if err != nil {
		return nil, nil, fmt.Errorf("offsets of %s: %w", topic, err)
	}
	first, next = map[int]int64{}, map[int]int64{}
	for _, po := range offs.Topics[topic] {
		if po.Error != nil {
			return nil, nil, fmt.Errorf("offsets of %s/%d: %w", topic, po.Partition, po.Error)
		}
		first[po.Partition], next[po.Partition] = po.FirstOffset, po.LastOffset
	}
	return first, next, nil
}

// HeaderValue is the value of the header key and whether there is one.
func HeaderValue(hs []kafka.Header, key string) (string, bool) {
	for _, h := range hs {
		if h.Key == key {
			return string(h.Value), true
		}
	}
	return "", false
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
		request, _ := HeaderValue(m.Headers, schemas.HeaderRequestID)
		typ, _ := HeaderValue(m.Headers, schemas.HeaderEventType)
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
