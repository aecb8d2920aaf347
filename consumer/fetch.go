package consumer

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sync/atomic"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol/fetch"
	"golang.org/x/sync/semaphore"
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

// maxEntriesPerSend bounds one send of entries to the worker, each
// message's headers counted: a record batch of 64 MiB decompressed may hold
// millions of records of a few bytes, and each is a kafka-go Message of
// about 160 bytes, so a batch sent whole came to gigabytes (one of 1
// million records, 4.8 MB of zstd, held 234 MiB of entries).
const maxEntriesPerSend = 1024

// controlAbort is the type of a control record that ends a transaction by
// aborting it (0: abort, 1: commit).
const controlAbort = 0

// entry is what the partition's worker gets from a fetch, in offset
// order: a message for the handler, or (skip) offsets up to msg.Offset that
// hold nothing for it (records of aborted transactions, transaction
// markers, offsets compacted away), past which the committed offset may
// move.
type entry struct {
	msg  kafkago.Message
	skip bool
	// poison, if set, is why msg (its record read only in part) is
	// dead-lettered instead of handled.
	poison *PoisonError
	// done, if set, is called once the worker is done with the entry, or
	// drops it: it frees the budget of the decompressed batch it ends.
	done func()
}

// txnFilter tells, batch after batch of one read-committed fetch response,
// which record batches a read-committed reader must not see, as a Java
// consumer does: control batches (the transactions' commit and abort
// markers), and the transactional batches of a producer from the first
// offset of a transaction the response lists as aborted until the
// producer's abort marker.
type txnFilter struct {
	pending  []fetch.ResponseTransaction // aborted transactions not yet started, by first offset
	aborting map[int64]bool              // producer ids inside an aborted transaction
}

func newTxnFilter(aborted []fetch.ResponseTransaction) *txnFilter {
	pending := slices.Clone(aborted)
	slices.SortFunc(pending, func(a, b fetch.ResponseTransaction) int { return cmp.Compare(a.FirstOffset, b.FirstOffset) })
	return &txnFilter{pending: pending, aborting: map[int64]bool{}}
}

// skip says whether batch b, the next of the response, holds nothing for
// the handler; budget bounds the decompressing of a control batch.
func (f *txnFilter) skip(ctx context.Context, b *recordBatch, budget *byteBudget) (bool, error) {
	for len(f.pending) > 0 && f.pending[0].FirstOffset <= b.lastOffset() {
		f.aborting[f.pending[0].ProducerID] = true
		f.pending = f.pending[1:]
	}
	if !b.control() {
		return b.transactional() && f.aborting[b.producerID], nil
	}
	if !b.transactional() {
		// The coordinator writes markers as transactional control batches;
		// one that is not ends no transaction (a producer's forgery).
		return true, nil
	}
	data, held, err := b.decompress(ctx, budget)
	if err != nil {
		return true, err
	}
	defer budget.free(held)
	first := true
	err = b.eachRecord(data, held > 0, func(r record) error {
		if !first {
			return nil // the Java consumer reads a control batch's first record only
		}
		first = false
		// A control record's key is its version and type (int16 each), read
		// as Kafka's ControlRecordType.parseTypeId does: a later version (a
		// longer key) as version 0.
		if len(r.key) < 4 {
			return fmt.Errorf("control record at offset %d: a key of %d bytes", r.offset, len(r.key))
		}
		if v := int16(binary.BigEndian.Uint16(r.key)); v < 0 {
			return fmt.Errorf("control record at offset %d: key version %d", r.offset, v)
		}
		if int16(binary.BigEndian.Uint16(r.key[2:])) == controlAbort {
			delete(f.aborting, b.producerID)
		}
		return nil
	})
	return true, err
}

// passBatch sends what batch b holds for the worker from f's offset on,
// in parts of at most maxEntriesPerSend entries and about maxBytesPerSend
// bytes, moving f's offset past each part sent: its records as messages,
// or, skipped, the batch's last offset. The messages of a compressed batch
// point into its decompressed bytes: the budget they hold goes with the
// batch's last entry sent, which the worker frees once done with it
// (read). Offsets past its last record (compacted away) are skipped too, so the
// position moves to the batch's end. Only records after the one before
// them and within the batch's offsets are handed out: the offset deltas
// are the producer's bytes, the batch's last offset the broker's (the
// next batch starts after it).
func passBatch(ctx context.Context, f *partitionFetch, b *recordBatch, skip bool, highWater int64, out chan<- []entry) error {
	last := b.lastOffset()
	if last < f.offset {
		return nil
	}
	send := func(entries []entry) error {
		select {
		case out <- entries:
			f.offset = max(f.offset, entries[len(entries)-1].msg.Offset+1)
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	end := entry{msg: kafkago.Message{Topic: f.topic, Partition: f.partition, Offset: last}, skip: true}
	if skip {
		return send([]entry{end})
	}
	data, held, err := b.decompress(ctx, f.inflated)
	if err != nil {
		return err
	}
	handedOver := false // the worker frees held
	defer func() {
		if !handedOver {
			f.inflated.free(held)
		}
	}()
	var part []entry
	var full []entry // a part sent once the next record comes, so that the last carries done
	cost := 0
	size := 0        // the part's bytes
	next := f.offset // the offset after the last record taken
	err = b.eachRecord(data, held > 0, func(r record) error {
		if r.offset < next || r.offset > last {
			return nil
		}
		if full != nil {
			if err := send(full); err != nil {
				return err
			}
			full = nil
		}
		m := kafkago.Message{Topic: f.topic, Partition: f.partition, Offset: r.offset, HighWaterMark: highWater,
			Key: r.key, Value: r.value, Headers: r.headers, Time: r.time}
		if !r.own {
			// A message must not hold the whole fetch response in memory.
			m.Key = bytes.Clone(r.key)
			m.Value = bytes.Clone(r.value)
			for i, h := range m.Headers {
				m.Headers[i].Value = bytes.Clone(h.Value)
			}
		}
		e := entry{msg: m}
		if r.headerCount > maxRecordHeaders {
			e.poison = &PoisonError{Reason: ReasonTooManyHeaders, Err: fmt.Errorf("the record at offset %d of %s partition %d has %d headers, more than %d: its headers were not read",
				r.offset, f.topic, f.partition, r.headerCount, maxRecordHeaders)}
		}
		part = append(part, e)
		next = r.offset + 1
		size += len(m.Key) + len(m.Value)
		for _, h := range m.Headers {
			size += len(h.Value)
		}
		if cost += 1 + len(m.Headers); cost >= maxEntriesPerSend || size >= maxBytesPerSend {
			full = part
			part = nil
			cost = 0
			size = 0
		}
		return nil
	})
	if err != nil {
		return err
	}
	if next <= last {
		part = append(part, end)
	}
	if len(part) == 0 {
		part = full
	} else if full != nil {
		if err := send(full); err != nil {
			return err
		}
	}
	if len(part) == 0 {
		return nil
	}
	if held > 0 {
		part[len(part)-1].done = func() { f.inflated.free(held) }
	}
	if err := send(part); err != nil {
		return err
	}
	handedOver = true
	return nil
}

// partitionFetch is one fetch of a partition's records from offset on.
type partitionFetch struct {
	topic     string
	partition int
	offset    int64
	inflated  *byteBudget // nil: not bounded
}

// maxInflatedBytes bounds the bytes of compressed record batches the
// consumer holds decompressed at once, over every partition it reads (the
// input's and the requests'): each partition's fetch decompresses its next
// batch while its worker handles the messages of the one before, which
// point into that batch's bytes, so without it a consumer held up to two
// batches of kafka.MaxDecompressedBatchBytes per partition assigned. A
// batch being decompressed counts as kafka.MaxDecompressingBytes, then
// as the bytes it holds; a partition whose next batch does not fit waits.
const maxInflatedBytes = 256 << 20

// maxFetchedBytes bounds the bytes of fetch responses the consumer holds
// at once, over every partition it reads: a partition's response is held
// until its worker has every message of it (copies, at most
// maxBytesPerSend of them at once). Without it a backlog on every
// partition held about twice MaxFetchBytes per partition assigned. A
// response waits for room once its size is read, before its body is; one
// larger than the bound (MaxFetchBytes near its 1 GiB maximum) waits for
// all of it.
const maxFetchedBytes = 256 << 20

// maxBytesPerSend bounds the bytes of the messages (keys, values, header
// values) one send to the worker holds, as maxEntriesPerSend bounds their
// count: the copies of a response's messages the worker holds are not
// counted in maxFetchedBytes, which is given back once they are sent.
const maxBytesPerSend = 1 << 20

// byteBudget is a count of bytes the consumer holds over its partitions,
// bounded by its size: the decompressed batches' (maxInflatedBytes) or
// the fetch responses' (maxFetchedBytes).
type byteBudget struct {
	size    int64
	sem     *semaphore.Weighted
	waiters atomic.Int64
}

func newByteBudget(size int64) *byteBudget {
	return &byteBudget{size: size, sem: semaphore.NewWeighted(size)}
}

// reserve waits until n bytes of b are free and takes them, or returns
// ctx's error; waiting, if set, is told when it has to wait. A nil budget
// bounds nothing.
func (b *byteBudget) reserve(ctx context.Context, n int64, waiting func()) error {
	if b == nil || b.sem.TryAcquire(n) {
		return nil
	}
	if waiting != nil {
		waiting()
	}
	b.waiters.Add(1)
	defer b.waiters.Add(-1)
	return b.sem.Acquire(ctx, n)
}

// free gives n bytes back.
func (b *byteBudget) free(n int64) {
	if b != nil && n > 0 {
		b.sem.Release(n)
	}
}

// waiting is how many partitions wait for bytes of b.
func (b *byteBudget) waiting() int {
	return int(b.waiters.Load())
}

// fetch sends one read-committed fetch request for f to the partition's
// leader (the transport routes it by its cached metadata) and returns the
// partition's part of the response, its error code the caller's, and the
// broker's throttle time (0 without a response).
func (c *Consumer) fetch(ctx context.Context, f partitionFetch) (*fetchedPartition, time.Duration, error) {
	// The fetch's deadline stops while its response waits for room, and
	// starts again, fetchIOTimeout, once it has room (a context's deadline
	// cannot stop): a fetch that waited past a deadline of the whole
	// failed, and the partition asked the broker for the same bytes again
	// for as long as the room stayed taken.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	timeout := time.AfterFunc(fetchMaxWait+fetchIOTimeout, func() { cancel(errFetchTimeout) })
	defer timeout.Stop()
	reqMax := requestMaxBytes(c.cfg.MaxFetchBytes)
	x := &fetchExchange{ctx: ctx, budget: c.fetchedBytes, maxBytes: int(reqMax) + fetchResponseSlack,
		waiting: func() { timeout.Stop() }, roomTaken: func() { timeout.Reset(fetchIOTimeout) }, Request: &fetch.Request{
			ReplicaID:      -1,
			MaxWaitTime:    int32(fetchMaxWait / time.Millisecond),
			MinBytes:       1,
			MaxBytes:       reqMax,
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
		}}
	res, err := c.fetcher.RoundTrip(ctx, c.fetchAddr, x)
	held := x.claim()
	if err != nil {
		c.fetchedBytes.free(held)
		if cause := context.Cause(ctx); cause != nil && ctx.Err() != nil {
			err = cause // errFetchTimeout, or the partition's end
		}
		return nil, 0, err
	}
	r, ok := res.(*fetchResponse)
	if !ok {
		c.fetchedBytes.free(held)
		return nil, 0, fmt.Errorf("fetch answered with a %T", res)
	}
	throttle := min(r.throttle, maxThrottle)
	if r.errorCode != 0 {
		c.fetchedBytes.free(held)
		return nil, throttle, kafkago.Error(r.errorCode)
	}
	for i := range r.partitions {
		if p := &r.partitions[i]; p.topic == f.topic && int(p.partition) == f.partition {
			p.held = held
			return p, throttle, nil
		}
	}
	c.fetchedBytes.free(held)
	return nil, throttle, fmt.Errorf("fetch answered without partition %d of %s", f.partition, f.topic)
}

// errFetchTimeout is a fetch that took longer than its deadline.
var errFetchTimeout = errors.New("fetch timed out")

// maxThrottle bounds the throttle time a broker's answer makes a
// partition's fetch wait (a broker's quota window is seconds; this one is
// a broker's lie).
const maxThrottle = 5 * time.Minute

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
// ends. A failed fetch is retried with backoff. An offset out of range
// moves to the partition's first offset, the group's reset policy
// (FirstOffset, a Java consumer's auto.offset.reset=earliest): one before
// it (removed by retention), and one past the partition's end (its log
// truncated by an unclean leader election, or the topic created again):
// the records now below such an offset are not the ones read there, and
// waiting for the log to reach it, as kafka-go's Reader did, skipped them.
func (c *Consumer) fetchPartition(ctx context.Context, w *partitionWork, log *slog.Logger, out chan<- []entry) {
	f := partitionFetch{topic: w.topic, partition: w.assignment.ID, offset: w.assignment.Offset, inflated: c.inflated}
	b := c.newBackoff()
	var quiet time.Time // the broker's throttle of the last answer ends
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
		if wait := time.Until(quiet); wait > 0 {
			// The broker mutes the connection until then (KIP-219): a
			// request sent now waits unread, past its own deadline when
			// the throttle is longer.
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
		}
		p, throttle, err := c.fetch(ctx, f)
		if throttle > 0 {
			c.m.throttled.Add(throttle.Seconds())
			quiet = time.Now().Add(throttle)
		}
		if err == nil && p.errorCode != 0 {
			c.fetchedBytes.free(p.held)
			err = kafkago.Error(p.errorCode)
		}
		if errors.Is(err, kafkago.OffsetOutOfRange) {
			first, last, berr := c.offsetBounds(ctx, f.topic, f.partition)
			switch {
			case berr != nil:
				err = berr
			case f.offset < first:
				log.Warn("offset before the partition's first offset (removed by retention): skipping to it",
					"offset", f.offset, "first_offset", first, "skipped", first-f.offset)
				c.m.offsetResets.WithLabelValues(resetBeforeFirst).Inc()
				f.offset = first
				b.Reset()
				continue
			case f.offset <= last:
				// Written meanwhile, or a broker behind another: again, soon.
				if !b.Wait(ctx) {
					return
				}
				continue
			default:
				// Records at offsets the group read before may be handed
				// out again; none below the offset is skipped.
				log.Error("offset past the partition's end (its log truncated, or the topic created again): reading it again from its first offset",
					"offset", f.offset, "end_offset", last, "first_offset", first)
				c.m.offsetResets.WithLabelValues(resetPastEnd).Inc()
				f.offset = first
				b.Reset()
				continue
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
		w.highWater.Store(max(w.highWater.Load(), p.highWater))
		err = passOn(ctx, &f, p, out)
		c.fetchedBytes.free(p.held) // every message of it is with the worker (copies)
		if err != nil {
			// The batches before the one that failed were passed on; the
			// next fetch starts at it.
			if ctx.Err() != nil || !retry("reading fetched records", err) {
				return
			}
			continue
		}
		b.Reset()
	}
}

// passOn sends the records of one fetched partition to out, one record
// batch at a time (each decompressed only then), moving f's offset past
// each batch passed on. It stops at the first batch that cannot be read,
// or when ctx ends.
func passOn(ctx context.Context, f *partitionFetch, p *fetchedPartition, out chan<- []entry) error {
	batches, err := recordBatches(p.records)
	if err == nil && len(batches) == 0 && len(p.records) > 0 {
		err = fmt.Errorf("the record batch at offset %d came cut off: larger than the %d bytes of the response", f.offset, len(p.records))
	}
	filter := newTxnFilter(p.aborted)
	from := f.offset
	for i := range batches {
		b := &batches[i]
		if p.lastStable >= 0 && b.lastOffset() >= p.lastStable {
			// Past the last stable offset the response's aborted
			// transactions say nothing: a broker sends no such batch to a
			// read-committed fetch, and none is handed out.
			if f.offset == from {
				return fmt.Errorf("the record batch at offset %d fetched from offset %d ends at or past the last stable offset %d", b.baseOffset, from, p.lastStable)
			}
			return nil
		}
		skip, ferr := filter.skip(ctx, b, f.inflated)
		if ferr == nil {
			ferr = passBatch(ctx, f, b, skip, p.highWater, out)
		}
		if ferr != nil {
			return ferr
		}
		f.offset = max(f.offset, b.lastOffset()+1)
	}
	if err == nil && len(batches) > 0 && f.offset == from {
		// The broker answers from the batch holding the fetch's offset:
		// fetching the same again would get the same, at once.
		err = fmt.Errorf("the record batches fetched from offset %d end before it (the last at offset %d)", from, batches[len(batches)-1].lastOffset())
	}
	return err
}
