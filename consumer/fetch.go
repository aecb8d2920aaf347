package consumer

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"slices"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol"
	"github.com/segmentio/kafka-go/protocol/fetch"
)

// The consumer reads each partition with fetch requests of its own rather
// than kafka-go's Reader: the Reader's read-committed mode only stops at the
// last stable offset; it drops the fetch response's list of aborted
// transactions and hands out the records of aborted transactions and the
// transactions' commit and abort markers as messages (kafka-go issue 1332).

// fetchMaxWait is how long the broker may hold a fetch that has no records
// for it yet.
const fetchMaxWait = 500 * time.Millisecond

// isolationReadCommitted is the fetch request's isolation level that
// returns records only up to the last stable offset, with the list of the
// aborted transactions among them.
const isolationReadCommitted = 1

// controlAbort is the type of a control record that ends a transaction by
// aborting it (0: abort, 1: commit).
const controlAbort = 0

// entry is what the partition's worker gets from one fetch, in offset
// order: a message for the handler, or (skip) offsets up to msg.Offset that
// hold nothing for it (records of aborted transactions, transaction
// markers), past which the committed offset may move.
type entry struct {
	msg  kafkago.Message
	skip bool
}

// committedRecords is what the records of one read-committed fetch
// response hold for the handler from offset from on, and the offset to
// fetch next. It drops what a read-committed reader must not see: control
// batches (the transactions' commit and abort markers), and the batches of
// a transaction the response lists as aborted, from the transaction's first
// offset until its producer's abort marker. Records before from (the rest
// of a batch read before) are neither handed out nor skipped.
func committedRecords(topic string, partition int, p *fetch.ResponsePartition, from int64) ([]entry, int64, error) {
	var batches []protocol.RecordReader
	switch rs := p.RecordSet.Records.(type) {
	case nil:
		return nil, from, nil
	case *protocol.RecordStream:
		batches = rs.Records
	default:
		batches = []protocol.RecordReader{rs}
	}
	// The aborted transactions, by first offset: a producer's batches are
	// aborted from its transaction's first offset until its abort marker.
	pending := slices.Clone(p.AbortedTransactions)
	slices.SortFunc(pending, func(a, b fetch.ResponseTransaction) int { return cmp.Compare(a.FirstOffset, b.FirstOffset) })
	aborting := map[int64]bool{} // producer ids inside an aborted transaction
	startAborted := func(base int64) {
		for len(pending) > 0 && pending[0].FirstOffset <= base {
			aborting[pending[0].ProducerID] = true
			pending = pending[1:]
		}
	}

	var out []entry
	next := from
	skipped := int64(-1) // the last offset skipped and not yet told of
	flushSkipped := func() {
		if skipped >= 0 {
			out = append(out, entry{msg: kafkago.Message{Topic: topic, Partition: partition, Offset: skipped}, skip: true})
			skipped = -1
		}
	}
	// skip passes over the records of a batch that holds nothing for the
	// handler.
	skip := func(batch protocol.RecordReader) error {
		return eachRecord(batch, func(r *protocol.Record) error {
			if r.Offset >= next {
				skipped = r.Offset
				next = r.Offset + 1
			}
			return nil
		})
	}
	for _, b := range batches {
		var err error
		switch b := b.(type) {
		case *protocol.ControlBatch:
			startAborted(b.BaseOffset)
			err = eachRecord(b, func(r *protocol.Record) error {
				if isAbortMarker(r) {
					delete(aborting, b.ProducerID)
				}
				if r.Offset >= next {
					skipped = r.Offset
					next = r.Offset + 1
				}
				return nil
			})
		case *protocol.RecordBatch:
			startAborted(b.BaseOffset)
			if b.Attributes.Transactional() && aborting[b.ProducerID] {
				err = skip(b)
				break
			}
			err = deliver(b, topic, partition, p.HighWatermark, &next, func(m kafkago.Message) {
				flushSkipped()
				out = append(out, entry{msg: m})
			})
		default: // an older message set: no transactions
			err = deliver(b, topic, partition, p.HighWatermark, &next, func(m kafkago.Message) {
				flushSkipped()
				out = append(out, entry{msg: m})
			})
		}
		if err != nil {
			return nil, from, err
		}
	}
	flushSkipped()
	if next == from && len(batches) > 0 {
		// The first batch holds offset from but no record at or after it
		// (compaction removed them, and kafka-go does not say where a batch
		// ends): no record is before the batch's end, so one offset on is
		// safe, and the broker returns the next batch once past it.
		next = from + 1
	}
	return out, next, nil
}

// deliver hands the records of batch at or after *next to emit as
// messages, moving *next past each.
func deliver(batch protocol.RecordReader, topic string, partition int, highWater int64, next *int64, emit func(kafkago.Message)) error {
	return eachRecord(batch, func(r *protocol.Record) error {
		if r.Offset < *next {
			return nil
		}
		key, err := protocol.ReadAll(r.Key)
		if err != nil {
			return fmt.Errorf("reading the key at offset %d: %w", r.Offset, err)
		}
		value, err := protocol.ReadAll(r.Value)
		if err != nil {
			return fmt.Errorf("reading the value at offset %d: %w", r.Offset, err)
		}
		emit(kafkago.Message{Topic: topic, Partition: partition, Offset: r.Offset, HighWaterMark: highWater,
			Key: key, Value: value, Headers: slices.Clone(r.Headers), Time: r.Time})
		*next = r.Offset + 1
		return nil
	})
}

// eachRecord calls fn with each record of batch, then releases the
// record's key and value.
func eachRecord(batch protocol.RecordReader, fn func(*protocol.Record) error) error {
	for {
		r, err := batch.ReadRecord()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		err = fn(r)
		if r.Key != nil {
			_ = r.Key.Close()
		}
		if r.Value != nil {
			_ = r.Value.Close()
		}
		if err != nil {
			return err
		}
	}
}

// isAbortMarker says whether a record of a control batch is an abort
// marker: its key is a version and a type (two int16). A control record
// that does not read as one is not.
func isAbortMarker(r *protocol.Record) bool {
	key, err := protocol.ReadAll(r.Key)
	if err != nil || len(key) != 4 {
		return false
	}
	return int16(binary.BigEndian.Uint16(key[2:])) == controlAbort
}

// partitionFetch is one fetch of a partition's records from offset on.
type partitionFetch struct {
	topic     string
	partition int
	offset    int64
}

// fetch sends one read-committed fetch request for f to the partition's
// leader (the transport routes it by its cached metadata) and returns the
// partition's part of the response; its error code is the caller's.
func (c *Consumer) fetch(ctx context.Context, f partitionFetch) (*fetch.ResponsePartition, error) {
	ctx, cancel := context.WithTimeout(ctx, fetchMaxWait+10*time.Second)
	defer cancel()
	res, err := c.fetcher.RoundTrip(ctx, c.fetchAddr, &fetch.Request{
		ReplicaID:      -1,
		MaxWaitTime:    int32(fetchMaxWait / time.Millisecond),
		MinBytes:       1,
		MaxBytes:       requestMaxBytes(c.cfg.MaxFetchBytes),
		IsolationLevel: isolationReadCommitted,
		SessionID:      -1,
		SessionEpoch:   -1,
		Topics: []fetch.RequestTopic{{
			Topic: f.topic,
			Partitions: []fetch.RequestPartition{{
				Partition:          int32(f.partition),
				CurrentLeaderEpoch: -1,
				FetchOffset:        f.offset,
				LogStartOffset:     -1,
				PartitionMaxBytes:  int32(c.cfg.MaxFetchBytes),
			}},
		}},
	})
	if err != nil {
		return nil, err
	}
	r, ok := res.(*fetch.Response)
	if !ok {
		return nil, fmt.Errorf("fetch answered with a %T", res)
	}
	if r.ErrorCode != 0 {
		return nil, kafkago.Error(r.ErrorCode)
	}
	for i := range r.Topics {
		if r.Topics[i].Topic != f.topic {
			continue
		}
		for j := range r.Topics[i].Partitions {
			if p := &r.Topics[i].Partitions[j]; int(p.Partition) == f.partition {
				return p, nil
			}
		}
	}
	return nil, fmt.Errorf("fetch answered without partition %d of %s", f.partition, f.topic)
}

// requestMaxBytes is the fetch request's bound for a fetch of one
// partition bounded by max: above it (by 1 MiB), so that the partition's
// bound is the one that ends a response, as with the Java consumer's
// defaults (50 MiB a request, 1 MiB a partition). kfake, the test suite's
// broker, leaves the aborted transactions out of a partition whose records
// the request's bound cut short.
func requestMaxBytes(max int) int32 {
	return int32(min(int64(max)+1<<20, math.MaxInt32))
}

// offsetBounds are the first offset of a partition and the offset its
// next record will get.
func (c *Consumer) offsetBounds(ctx context.Context, topic string, p int) (first, last int64, err error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	res, err := c.admin.ListOffsets(ctx, &kafkago.ListOffsetsRequest{Topics: map[string][]kafkago.OffsetRequest{
		topic: {kafkago.FirstOffsetOf(p), kafkago.LastOffsetOf(p)}}})
	if err != nil {
		return 0, 0, fmt.Errorf("reading the offsets of %s partition %d: %w", topic, p, err)
	}
	for _, po := range res.Topics[topic] {
		if po.Partition != p {
			continue
		}
		if po.Error != nil {
			return 0, 0, fmt.Errorf("reading the offsets of %s partition %d: %w", topic, p, po.Error)
		}
		return po.FirstOffset, po.LastOffset, nil
	}
	return 0, 0, fmt.Errorf("reading the offsets of %s partition %d: no answer for the partition", topic, p)
}

// fetchPartition fetches w's partition from its assigned offset and sends
// what each fetch holds for the worker to out, in offset order, until ctx
// ends. A failed fetch is retried with backoff; an offset out of range is
// handled as kafka-go's Reader did: one before the partition's first offset
// (removed by retention) moves to the first offset, one past its end waits.
func (c *Consumer) fetchPartition(ctx context.Context, w *partitionWork, log *slog.Logger, out chan<- []entry) {
	f := partitionFetch{topic: w.topic, partition: w.assignment.ID, offset: w.assignment.Offset}
	b := c.newBackoff()
	retry := func(what string, err error) bool {
		c.m.retries.WithLabelValues(opFetch).Inc()
		log.Warn(what, "offset", f.offset, "err", err)
		return b.Wait(ctx)
	}
	for ctx.Err() == nil {
		if f.offset < 0 {
			// No committed offset: the group starts at the first offset
			// (kafka-go's FirstOffset) or, with LastOffset, at the end.
			first, last, err := c.offsetBounds(ctx, f.topic, f.partition)
			if err != nil {
				if ctx.Err() != nil || !retry("finding the start offset", err) {
					return
				}
				continue
			}
			f.offset = first
			if w.assignment.Offset == kafkago.LastOffset {
				f.offset = last
			}
		}
		p, err := c.fetch(ctx, f)
		if err == nil && p.ErrorCode != 0 {
			err = kafkago.Error(p.ErrorCode)
		}
		if errors.Is(err, kafkago.OffsetOutOfRange) {
			first, last, berr := c.offsetBounds(ctx, f.topic, f.partition)
			switch {
			case berr != nil:
				err = berr
			case f.offset < first:
				log.Warn("offset before the partition's first offset (removed by retention): skipping to it",
					"offset", f.offset, "first_offset", first, "skipped", first-f.offset)
				f.offset = first
				b.Reset()
				continue
			case f.offset < last:
				continue // written meanwhile
			default:
				err = fmt.Errorf("offset %d is past the partition's end (%d): %w", f.offset, last, err)
			}
		}
		if err != nil {
			// Leader moves (NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH) are
			// retried too: the transport's metadata follows the new leader.
			if ctx.Err() != nil || !retry("fetching messages", err) {
				return
			}
			continue
		}
		b.Reset()
		w.highWater.Store(max(w.highWater.Load(), p.HighWatermark))
		entries, next, err := committedRecords(f.topic, f.partition, p, f.offset)
		if err != nil {
			if !retry("reading fetched records", err) {
				return
			}
			continue
		}
		if len(entries) > 0 {
			select {
			case out <- entries:
			case <-ctx.Done():
				return
			}
		}
		f.offset = next
	}
}
