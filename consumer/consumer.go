package consumer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/lakewap/lakewap/internal/backoff"
	"github.com/lakewap/lakewap/internal/loglimit"
	"github.com/lakewap/lakewap/kafka"
)

// Handler does the work for the messages of the partitions assigned to this
// member. For one partition, calls are sequential: Assigned, then Handle for
// each message in offset order, then Revoked. Different partitions run
// concurrently. With a RequestsTopic, the messages of its partition n are
// handled (msg.Topic says which topic) after Assigned(n) succeeded and
// before Revoked(n), concurrently with those of input partition n; a
// member given request partition n without input partition n leaves those
// requests to the next generation.
type Handler interface {
	// Assigned runs when a partition is assigned, before any of its messages
	// is handled: restore state here. An error is retried with backoff; the
	// partition is not consumed until it succeeds. behind is the partition's
	// lag probe, good while the handler holds the partition: whether it may
	// still hold unread input from before t (see Consumer.Behind).
	Assigned(ctx context.Context, partition int, behind func(t time.Time) bool) error
	// Handle processes one message. nil means its effects are durable and its
	// offset may be committed. A *PoisonError (see Poison) sends the message
	// to the dead-letter topic, then the partition moves on. Any other error
	// is retried with backoff; the message is never skipped. A panic counts
	// as Poison(..., "panic"). ctx stays live for up to ShutdownGrace after
	// the partition is taken away; Handle must return once ctx is done, since
	// the group cannot rebalance or leave while it runs.
	Handle(ctx context.Context, msg kafka.Message) error
	// Revoked runs after the partition's last Handle returned, when it is
	// taken away (rebalance or shutdown): stop its background work. It is
	// not called if Assigned never succeeded.
	Revoked(partition int)
}

// Consumer runs a Handler over the partitions that its consumer group assigns
// to it.
type Consumer struct {
	cfg       Config
	h         Handler
	log       *slog.Logger
	dialer    *kafkago.Dialer
	dlq       *kafka.Writer
	dlqClient *kafka.Client   // the dead-letter writer's, closed when Run ends
	admin     *kafkago.Client // high watermarks for the lag gauge
	// fetcher sends the partitions' fetch requests (fetch.go), with the
	// TLS and SASL of every other connection, to fetchAddr's cluster.
	fetcher   *kafkago.Transport
	fetchAddr net.Addr
	inflated  *byteBudget // decompressed batches' bytes over every partition (maxInflatedBytes)
	// fetchedBytes is the fetch responses' bytes held over every partition
	// (maxFetchedBytes, or one response's bound when larger).
	fetchedBytes *byteBudget
	m            *metrics
	runs         atomic.Bool
	// dlLogs bounds the dead letters logged (maxDeadLetterLogs a minute).
	dlLogs loglimit.Limit

	// commitMu keeps the periodic and the final commit of a partition from
	// overtaking each other, which could move the committed offset backwards.
	commitMu sync.Mutex

	runCtx context.Context // Run's context, for its values

	counts sync.Map // topic -> int partitions, read at each generation's start
	lags   sync.Map // partition -> int64 messages behind, as of the last high-watermark read
	marks  sync.Map // partition -> time.Time: the newest Kafka time of a message done since assigned
	held   sync.Map // input partition -> *heldPartition, while its worker runs

	mu         sync.Mutex
	generation int32        // current generation, -1 between generations
	restored   map[int]bool // partitions of the current generation -> Assigned succeeded
}

// topics are the topics the group consumes.
func (c *Consumer) topics() []string {
	if c.cfg.RequestsTopic != "" {
		return []string{c.cfg.Topic, c.cfg.RequestsTopic}
	}
	return []string{c.cfg.Topic}
}

// New validates cfg and prepares a Consumer; it does no I/O.
func New(cfg Config, h Handler, logger *slog.Logger) (*Consumer, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if h == nil {
		return nil, fmt.Errorf("%w: handler is nil", errConfig)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	dialer, err := cfg.Security.Dialer()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errConfig, err)
	}
	transport, err := cfg.Security.Transport()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errConfig, err)
	}
	fetcher, err := cfg.Security.Transport()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errConfig, err)
	}
	// The transport routes a fetch to the partition's leader by its
	// metadata: read often, so that a fetch answered NOT_LEADER_OR_FOLLOWER
	// (the leader moved) finds the new leader within a second or so.
	fetcher.MetadataTTL = time.Second
	fetcher.MetadataTopics = slices.DeleteFunc([]string{cfg.Topic, cfg.RequestsTopic}, func(t string) bool { return t == "" })
	client, err := kafka.NewClient(cfg.Brokers, cfg.Security)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errConfig, err)
	}
	client.RecordRefusals(cfg.Refusals)
	// One attempt: the consumer's own loop retries with backoff and
	// metrics, and a dead letter must be written before moving on.
	w := client.Writer(kafka.WriterConfig{Topic: cfg.DeadLetterTopic, Attempts: 1})
	return &Consumer{
		cfg:          cfg,
		h:            h,
		log:          logger.With("group", cfg.GroupID, "topic", cfg.Topic),
		dialer:       dialer,
		dlq:          w,
		dlqClient:    client,
		admin:        &kafkago.Client{Addr: kafkago.TCP(cfg.Brokers...), Timeout: 10 * time.Second, Transport: transport},
		fetcher:      fetcher,
		fetchAddr:    kafkago.TCP(cfg.Brokers...),
		inflated:     newByteBudget(maxInflatedBytes),
		fetchedBytes: newByteBudget(max(maxFetchedBytes, int64(requestMaxBytes(cfg.MaxFetchBytes))+fetchResponseSlack)),
		m:            newMetrics(cfg.Registerer, cfg.GroupID, cfg.Topic),
		generation:   -1,
	}, nil
}

// Partitions is the partition count of topic (the input or requests topic)
// when the current generation started; 0 when unknown.
func (c *Consumer) Partitions(topic string) int {
	n, _ := c.counts.Load(topic)
	v, _ := n.(int)
	return v
}

// readCounts refreshes Partitions; a failure keeps the counts known before.
// It says whether every topic the consumer reads has a count.
func (c *Consumer) readCounts(ctx context.Context, log *slog.Logger) bool {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	md, err := c.admin.Metadata(ctx, &kafkago.MetadataRequest{Topics: c.topics()})
	if err != nil {
		log.Warn("reading partition counts", "err", err)
		return c.countsKnown()
	}
	for _, t := range md.Topics {
		if t.Error == nil && len(t.Partitions) > 0 {
			c.counts.Store(t.Name, len(t.Partitions))
		} else if c.Partitions(t.Name) == 0 {
			log.Warn("reading partition counts: a topic has none", "topic", t.Name, "err", t.Error)
		}
	}
	return c.countsKnown()
}

// countsKnown says whether Partitions knows every topic the consumer reads.
func (c *Consumer) countsKnown() bool {
	for _, t := range c.topics() {
		if c.Partitions(t) == 0 {
			return false
		}
	}
	return true
}

// awaitCounts reads the partition counts again until every topic the
// consumer reads has one, before a partition's first message is handled:
// with a count unknown (0) nothing checks that an event, a request or a
// changelog record is on its key's partition (ingest's and the restore's
// wrong_partition), and a BatchLanded copied to another partition would
// start a second run of its batch. False when ctx ended first.
func (c *Consumer) awaitCounts(ctx context.Context, log *slog.Logger) bool {
	b := c.newBackoff()
	for !c.countsKnown() {
		if !b.Wait(ctx) || c.readCounts(ctx, log) {
			return ctx.Err() == nil
		}
	}
	return true
}

// MaxClockSkew is how far past the clock a message's Kafka timestamp may be
// and still count for Behind; a later one is ignored there (and counted).
const MaxClockSkew = time.Minute

// Behind reports whether partition may still hold unread input from before
// t: it had messages not yet handled at the last high-watermark read (every
// commit interval), and no message Kafka stamped at or after t has been
// handled since the partition was assigned. Unknown is not behind.
func (c *Consumer) Behind(partition int, t time.Time) bool {
	v, ok := c.lags.Load(partition)
	if !ok || v.(int64) <= 0 {
		return false
	}
	mark, _ := c.marks.Load(partition)
	m, _ := mark.(time.Time)
	return m.Before(t)
}

// Ready reports whether the consumer is in a group generation and every
// partition assigned to it has been restored (Assigned succeeded).
func (c *Consumer) Ready() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.generation < 0 {
		return false
	}
	for _, ok := range c.restored {
		if !ok {
			return false
		}
	}
	return true
}

// Run consumes until ctx is done. On shutdown it stops fetching, lets each
// running Handle finish (bounded by ShutdownGrace), commits what was handled,
// calls Revoked and leaves the group. It returns nil after a clean shutdown.
// A Consumer runs once.
func (c *Consumer) Run(ctx context.Context) error {
	if !c.runs.CompareAndSwap(false, true) {
		return errors.New("consumer: Run called twice")
	}
	c.runCtx = ctx
	defer c.fetcher.CloseIdleConnections()
	// Each transport's connections refresh metadata until closed.
	defer c.dlqClient.Close()
	defer c.admin.Transport.(*kafkago.Transport).CloseIdleConnections()
	defer func() {
		if err := c.dlq.Close(); err != nil {
			c.log.Warn("closing dead-letter writer", "err", err)
		}
	}()
	group, err := kafkago.NewConsumerGroup(kafkago.ConsumerGroupConfig{
		ID:      c.cfg.GroupID,
		Brokers: c.cfg.Brokers,
		Dialer:  c.dialer,
		Topics:  c.topics(),
		// Range alone: with the same members and partition counts it gives
		// partition n of the input and the requests topic to one member.
		GroupBalancers:    []kafkago.GroupBalancer{groupBalancer},
		HeartbeatInterval: c.cfg.HeartbeatInterval,
		SessionTimeout:    c.cfg.SessionTimeout,
		RebalanceTimeout:  c.cfg.RebalanceTimeout,
		JoinGroupBackoff:  c.cfg.JoinGroupBackoff,
		// Partitions added to the input topic get consumed after a rebalance
		// instead of being ignored until a restart.
		WatchPartitionChanges: true,
		StartOffset:           kafkago.FirstOffset, // a partition with no committed offset is read from its beginning
		Logger:                kafkaLogger(c.log, slog.LevelDebug),
		ErrorLogger:           kafkaLogger(c.log, slog.LevelWarn),
	})
	if err != nil {
		return fmt.Errorf("consumer: creating group: %w", err)
	}
	for {
		gen, err := group.Next(ctx)
		if ctx.Err() != nil {
			break
		}
		if err != nil {
			// kafka-go backs off between failed joins itself.
			c.log.Warn("joining consumer group", "err", err)
			continue
		}
		c.startGeneration(ctx, gen)
	}
	c.log.Info("shutting down consumer")
	// Closing the group ends the generation and waits for its workers: they
	// finish the running Handle, commit and call Revoked; then the member
	// leaves the group.
	if err := group.Close(); err != nil {
		c.log.Warn("leaving consumer group", "err", err)
	}
	return nil
}

// groupBalancer assigns the group's partitions (the group's leader runs it).
var groupBalancer kafkago.GroupBalancer = rangeByID{}

// rangeByID is kafka-go's range balancer over each topic's partitions in
// id order. kafka-go gives each member the partitions at its range of
// indices in the order the broker's metadata lists them, which Kafka does
// not promise to be by id (kfake lists them in map order): partition n of
// the input and of the requests topic then went to different members, and
// a request on such a partition waited for a rebalance the same members
// would not make. The protocol name stays "range": members of an older
// lakewap join the same group (while one of them leads, it assigns as
// before).
type rangeByID struct{ kafkago.RangeGroupBalancer }

func (b rangeByID) AssignGroups(members []kafkago.GroupMember, partitions []kafkago.Partition) kafkago.GroupMemberAssignments {
	sorted := slices.Clone(partitions)
	slices.SortFunc(sorted, func(x, y kafkago.Partition) int {
		return cmp.Or(strings.Compare(x.Topic, y.Topic), cmp.Compare(x.ID, y.ID))
	})
	return b.RangeGroupBalancer.AssignGroups(members, sorted)
}

// partitionWork is what one generation knows about one assigned partition.
type partitionWork struct {
	topic      string
	assignment kafkago.PartitionAssignment
	offsets    *offsetTracker
	highWater  atomic.Int64 // latest high watermark seen
	stable     stableOffset // the last stable offset and since when it has not moved (lag reads only)
	revoked    atomic.Bool  // the worker is gone: stop reporting lag
}

// heldPartition is an input partition as its worker holds it: the
// generation it was assigned in, for Fence.
type heldPartition struct {
	gen *kafkago.Generation
	w   *partitionWork
}

// Fence says whether this member still owns input partition p in the
// generation it was assigned in: it commits the partition's committed
// offset again (or, with none, its first offset, where the group starts it)
// with that generation's id and member id, which the group coordinator
// refuses once the group has rebalanced (ILLEGAL_GENERATION,
// UNKNOWN_MEMBER_ID, REBALANCE_IN_PROGRESS). An empty commit would check
// nothing. The offset does not move, so it is harmless for the owner. For
// the runner's store: an old owner paused inside its assignment must not
// take the partition from the member Kafka gave it to.
func (c *Consumer) Fence(ctx context.Context, p int) error {
	v, ok := c.held.Load(p)
	if !ok {
		return fmt.Errorf("consumer: partition %d is not assigned to this member", p)
	}
	h := v.(*heldPartition)
	off := h.w.offsets.committedOffset()
	if off < 0 {
		off = h.w.assignment.Offset
	}
	if off < 0 {
		// No offset committed yet: the group starts the partition at its
		// first offset, so committing it changes nothing.
		first, err := c.firstOffset(ctx, p)
		if err != nil {
			return fmt.Errorf("consumer: fencing partition %d: %w", p, err)
		}
		off = first
	}
	c.commitMu.Lock()
	defer c.commitMu.Unlock()
	if now := h.w.offsets.committedOffset(); now >= 0 {
		off = now // committed meanwhile: never move it back
	}
	if err := h.gen.CommitOffsets(map[string]map[int]int64{h.w.topic: {p: off}}); err != nil {
		return fmt.Errorf("consumer: partition %d is no longer this member's in generation %d (committing offset %d with it: %w)", p, h.gen.ID, off, err)
	}
	return nil
}

// firstOffset is the first offset of input partition p.
func (c *Consumer) firstOffset(ctx context.Context, p int) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	res, err := kafka.ListOffsets(ctx, c.admin, &kafkago.ListOffsetsRequest{Topics: map[string][]kafkago.OffsetRequest{c.cfg.Topic: {kafkago.FirstOffsetOf(p)}}})
	if err != nil {
		return 0, fmt.Errorf("reading its first offset: %w", err)
	}
	for _, po := range res.Topics[c.cfg.Topic] {
		if po.Partition == p {
			if po.Error != nil {
				return 0, fmt.Errorf("reading its first offset: %w", po.Error)
			}
			return po.FirstOffset, nil
		}
	}
	return 0, errors.New("reading its first offset: no answer for the partition")
}

func (c *Consumer) startGeneration(ctx context.Context, gen *kafkago.Generation) {
	assignments := gen.Assignments[c.cfg.Topic]
	log := c.log.With("generation", gen.ID)
	work := make(map[int]*partitionWork, len(assignments))
	restored := make(map[int]bool, len(assignments))
	ready := make(map[int]chan struct{}, len(assignments)) // closed once Assigned succeeded
	for _, a := range assignments {
		work[a.ID] = &partitionWork{topic: c.cfg.Topic, assignment: a, offsets: newOffsetTracker()}
		restored[a.ID] = false
		ready[a.ID] = make(chan struct{})
	}
	requests := map[int]*partitionWork{}
	if c.cfg.RequestsTopic != "" {
		for _, a := range gen.Assignments[c.cfg.RequestsTopic] {
			requests[a.ID] = &partitionWork{topic: c.cfg.RequestsTopic, assignment: a, offsets: newOffsetTracker()}
		}
	}
	log.Info("partitions assigned", "partitions", slices.Sorted(maps.Keys(work)), "request_partitions", slices.Sorted(maps.Keys(requests)))
	c.readCounts(ctx, log)

	c.mu.Lock()
	c.generation = gen.ID
	c.restored = restored
	c.m.restored.Set(0)
	c.mu.Unlock()
	c.m.assigned.Set(float64(len(work)))

	// Handles outlive the generation by at most ShutdownGrace, so they get a
	// context of their own rather than the generation's.
	handleCtx, cancelHandles := context.WithCancel(context.WithoutCancel(ctx))

	gen.Start(func(gctx context.Context) {
		ticker := time.NewTicker(c.cfg.CommitInterval)
		defer ticker.Stop()
		var lagRead time.Time
		for {
			if time.Since(lagRead) >= c.cfg.LagInterval {
				// A partition stuck on one message fetches nothing new, so the
				// watermarks seen in fetches alone would hide a growing backlog.
				c.readHighWatermarks(gctx, work, log)
				lagRead = time.Now()
			}
			select {
			case <-gctx.Done():
				time.AfterFunc(c.cfg.ShutdownGrace, cancelHandles)
				c.mu.Lock()
				if c.generation == gen.ID {
					c.generation = -1
					c.m.restored.Set(0)
				}
				c.mu.Unlock()
				c.m.assigned.Set(0)
				return
			case <-ticker.C:
				c.commit(gen, work)
				c.commit(gen, requests)
			}
		}
	})
	for _, w := range work {
		gen.Start(func(gctx context.Context) {
			c.consumePartition(gctx, handleCtx, gen, w, ready[w.assignment.ID], log.With("partition", w.assignment.ID))
		})
	}
	for _, w := range requests {
		gen.Start(func(gctx context.Context) {
			plog := log.With("requests_partition", w.assignment.ID)
			restored, ok := ready[w.assignment.ID]
			if !ok {
				// Partition counts differ, or a member that does not read
				// requests is in the group: the owner of the batch's run is
				// elsewhere, so these requests wait for the next generation.
				plog.Error("request partition assigned without its input partition: its requests wait for a rebalance; give " +
					c.cfg.RequestsTopic + " the partition count of " + c.cfg.Topic)
				c.m.orphanRequests.Inc()
				defer c.m.orphanRequests.Dec()
				<-gctx.Done()
				return
			}
			select {
			case <-restored:
			case <-gctx.Done():
				return
			}
			c.consumeRequests(gctx, handleCtx, gen, w, plog)
		})
	}
}

// consumePartition is the worker of one partition for one generation. It
// returns only once the generation ends, because kafka-go ends the generation
// when any started function returns.
func (c *Consumer) consumePartition(gctx, handleCtx context.Context, gen *kafkago.Generation, w *partitionWork, ready chan struct{}, log *slog.Logger) {
	p := w.assignment.ID
	c.marks.Delete(p)
	held := &heldPartition{gen: gen, w: w}
	c.held.Store(p, held)
	defer c.held.CompareAndDelete(p, held)
	if !c.awaitCounts(gctx, log) {
		return
	}
	if !c.assign(gctx, p, log) {
		return
	}
	close(ready)
	defer func() {
		c.commit(gen, map[int]*partitionWork{p: w})
		c.commitMu.Lock()
		w.revoked.Store(true)
		c.m.lag.DeleteLabelValues(partitionLabel(p)) // the next owner reports it
		c.m.stalled.DeleteLabelValues(partitionLabel(p))
		c.commitMu.Unlock()
		c.revoke(p, log)
	}()

	c.read(gctx, handleCtx, w, log, func(msg kafkago.Message) {
		// A stamp later than the clock (plus skew) says nothing about what
		// the backlog holds: one message stamped in year 2100 would make the
		// partition look caught up for every deadline until then.
		if msg.Time.After(c.cfg.Now().Add(MaxClockSkew)) {
			c.m.futureStamps.Inc()
			return
		}
		if m, _ := c.marks.Load(p); m == nil || msg.Time.After(m.(time.Time)) {
			c.marks.Store(p, msg.Time)
		}
	})
}

// consumeRequests is the worker of one request partition, started once the
// input partition of the same number is restored; its offsets are committed
// like the input's.
func (c *Consumer) consumeRequests(gctx, handleCtx context.Context, gen *kafkago.Generation, w *partitionWork, log *slog.Logger) {
	defer c.commit(gen, map[int]*partitionWork{w.assignment.ID: w})
	c.read(gctx, handleCtx, w, log, nil)
}

// read fetches w's partition from its assigned offset, read committed
// (fetch.go), and processes each message until the generation ends; done,
// if set, is told of each message handled or dead-lettered. Offsets that
// hold nothing for the handler (aborted transactions, transaction markers)
// count as done for the committed offset.
func (c *Consumer) read(gctx, handleCtx context.Context, w *partitionWork, log *slog.Logger, done func(kafkago.Message)) {
	fctx, stopFetching := context.WithCancel(gctx)
	fetched := make(chan []entry)
	fetcherDone := make(chan struct{})
	defer func() {
		stopFetching()
		<-fetcherDone
	}()
	log.Info("consuming partition", "from_offset", w.assignment.Offset)
	// The next fetch runs while the messages of the last one are handled.
	go func() {
		defer close(fetcherDone)
		c.fetchPartition(fctx, w, log, fetched)
	}()

	next := w.assignment.Offset // the offset after the last message handed out or skipped; below 0: not known
	// handle takes e to done: false when the generation ended first.
	handle := func(e entry) bool {
		msg := e.msg
		w.offsets.fetched(msg.Offset)
		if e.skip {
			next = msg.Offset + 1
			w.offsets.markDone(msg.Offset)
			return true
		}
		if e.poison != nil {
			if !c.deadLetter(gctx, handleCtx, msg, e.poison, log) {
				return false
			}
		} else if big, ok := kafka.TooLargeBatch(kafka.FromWire(msg).Headers); ok {
			if !c.deadLetterBatch(gctx, handleCtx, msg, next, big, log) {
				return false
			}
		} else if !c.process(gctx, handleCtx, msg, log) {
			return false // taken away before the message was done: its next owner gets it
		}
		next = msg.Offset + 1
		w.offsets.markDone(msg.Offset)
		if done != nil {
			done(msg)
		}
		return true
	}
	var entries []entry // received, not yet done
	defer func() {
		for _, e := range entries {
			if e.done != nil {
				e.done() // dropped: its batch's bytes are no longer held
			}
		}
	}()
	for {
		select {
		case entries = <-fetched:
		case <-gctx.Done():
			return
		}
		for len(entries) > 0 {
			if gctx.Err() != nil {
				return // stop handing out fetched messages
			}
			e := entries[0]
			if !handle(e) {
				return
			}
			entries = entries[1:]
			if e.done != nil {
				e.done() // the worker is done with the batch's bytes
			}
		}
	}
}

// deadLetterBatch writes one dead letter for the records of a record batch
// over kafka.MaxDecompressedBatchBytes, which the fetch hands out as msg,
// one record at the batch's last offset (kafka.TooLargeBatch): the batch's
// offsets from next (the offset after the last message handed out, or the
// batch's first when next is before it, past msg (the fetch moved back) or
// not known) to msg's. It returns false when the generation ended first.
func (c *Consumer) deadLetterBatch(gctx, handleCtx context.Context, msg kafkago.Message, next int64, big kafka.BatchTooLarge, log *slog.Logger) bool {
	if big.RecordBytes > 0 { // one record of a batch within the limit
		poison := &PoisonError{Reason: ReasonRecordTooLarge, Err: fmt.Errorf("the record at offset %d of %s partition %d was not read: in its %s-compressed record batch it decompresses to %d bytes, more than %d (kafka.MaxDecompressedRecordBytes)",
			msg.Offset, msg.Topic, msg.Partition, big.Codec, big.RecordBytes, kafka.MaxDecompressedRecordBytes)}
		return c.deadLetter(gctx, handleCtx, kafkago.Message{Topic: msg.Topic, Partition: msg.Partition, Offset: msg.Offset}, poison, log)
	}
	first := msg.Offset - big.LastOffsetDelta
	if next > first && next <= msg.Offset {
		first = next // the batch's records before next were handed out
	}
	poison := &PoisonError{Reason: ReasonBatchTooLarge, Err: fmt.Errorf("records at offsets %d to %d of %s partition %d were not read: their %s-compressed record batch (%d records) decompresses to more than %d bytes (kafka.MaxDecompressedBatchBytes)",
		first, msg.Offset, msg.Topic, msg.Partition, big.Codec, big.Records, kafka.MaxDecompressedBatchBytes)}
	return c.deadLetter(gctx, handleCtx, kafkago.Message{Topic: msg.Topic, Partition: msg.Partition, Offset: first}, poison, log)
}

// assign calls Assigned until it succeeds or the generation ends.
func (c *Consumer) assign(gctx context.Context, p int, log *slog.Logger) bool {
	// Run's context values, cancelled as soon as the generation ends.
	ctx, cancel := context.WithCancel(context.WithoutCancel(c.runCtx))
	defer cancel()
	stop := context.AfterFunc(gctx, cancel)
	defer stop()
	b := c.newBackoff()
	for {
		err := c.safeAssigned(ctx, p)
		if err == nil {
			c.mu.Lock()
			if _, ok := c.restored[p]; ok {
				c.restored[p] = true
			}
			n := 0
			for _, ok := range c.restored {
				if ok {
					n++
				}
			}
			c.m.restored.Set(float64(n)) // under mu: a newer generation's reset is not overwritten
			c.mu.Unlock()
			log.Info("partition restored")
			return true
		}
		if gctx.Err() != nil {
			return false
		}
		c.m.retries.WithLabelValues(opAssign).Inc()
		log.Warn("restoring partition", "err", logText(err))
		if !b.Wait(gctx) {
			return false
		}
	}
}

func (c *Consumer) safeAssigned(ctx context.Context, p int) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("Assigned panicked: %v", r)
		}
	}()
	return c.h.Assigned(ctx, p, func(t time.Time) bool { return c.Behind(p, t) })
}

func (c *Consumer) revoke(p int, log *slog.Logger) {
	defer func() {
		if r := recover(); r != nil {
			log.Error("Revoked panicked", "panic", r, "stack", string(debug.Stack()))
		}
	}()
	c.h.Revoked(p)
	log.Info("partition revoked")
}

// process handles msg until it is done (handled or dead-lettered), returning
// true, or until the generation ends first, returning false.
func (c *Consumer) process(gctx, handleCtx context.Context, msg kafkago.Message, log *slog.Logger) bool {
	b := c.newBackoff()
	for attempt := 1; ; attempt++ {
		err := c.safeHandle(handleCtx, msg, log)
		if err == nil {
			c.m.handled.WithLabelValues(partitionLabel(msg.Partition)).Inc()
			return true
		}
		var poison *PoisonError
		if errors.As(err, &poison) {
			return c.deadLetter(gctx, handleCtx, msg, poison, log)
		}
		if gctx.Err() != nil {
			log.Info("partition taken away while handling failed; leaving message to its next owner", "offset", msg.Offset, "err", logText(err))
			return false
		}
		c.m.retries.WithLabelValues(opHandle).Inc()
		log.Warn("handling message failed; retrying", "offset", msg.Offset, "attempt", attempt, "err", logText(err))
		if !b.Wait(gctx) {
			return false
		}
	}
}

// safeHandle turns a panic in Handle into a poison message: bad input must not
// crash the daemon or block the partition.
func (c *Consumer) safeHandle(ctx context.Context, msg kafkago.Message, log *slog.Logger) (err error) {
	defer func() {
		if r := recover(); r != nil {
			log.Error("Handle panicked", "offset", msg.Offset, "panic", clipText(fmt.Sprint(r), MaxDLQErrorBytes), "stack", string(debug.Stack()))
			err = Poison(fmt.Errorf("panic: %v", r), ReasonPanic)
		}
	}()
	return c.h.Handle(ctx, kafka.FromWire(msg))
}

// deadLetter writes msg to the dead-letter topic, retrying until it is
// written (true) or the generation ends (false). The offset may move past
// msg only after this returned true.
func (c *Consumer) deadLetter(gctx, handleCtx context.Context, msg kafkago.Message, p *PoisonError, log *slog.Logger) bool {
	original := kafka.FromWire(msg)
	dl := deadLetter(original, p, c.cfg.Now())
	b := c.newBackoff()
	dropped := false
	for {
		err := c.dlq.Write(handleCtx, dl)
		if err == nil {
			c.m.deadLetters.WithLabelValues(p.Reason).Inc()
			if ok, missed := c.dlLogs.Allow(p.Reason, maxDeadLetterLogs, c.cfg.Now()); ok {
				if missed > 0 {
					log.Warn("dead letters not logged", "reason", p.Reason, "not_logged", missed,
						"why", fmt.Sprintf("at most %d a minute per reason are logged; the dead-letter topic holds each, lakewap_dead_letters_total counts them", maxDeadLetterLogs))
				}
				log.Warn("message sent to dead-letter topic", "offset", msg.Offset, "key", clipText(string(msg.Key), maxLoggedKeyBytes),
					"reason", p.Reason, "err", logText(p.Err), "dead_letter_topic", c.cfg.DeadLetterTopic)
			}
			return true
		}
		if gctx.Err() != nil {
			return false
		}
		if kafka.TooLarge(err) && !dropped {
			// Retrying the same bytes would stall the partition forever.
			// The original's key or headers alone may be what is too
			// large (a record of no value, its key the input's limit).
			log.Error("dead letter too large for its topic; writing it without the original value", "offset", msg.Offset, "err", err)
			dl = withoutOriginal(dl, original)
			dropped = true
			continue
		}
		c.m.retries.WithLabelValues(opDeadLetter).Inc()
		if kafka.TooLarge(err) {
			// Even without the original: the topic's max.message.bytes was
			// lowered after start-up. Only an operator can help; the
			// message stays unhandled until the dead letter is written.
			c.cfg.Refusals.TooLarge(c.cfg.DeadLetterTopic, kafka.Size(dl))
			log.Error("dead-letter topic refuses the dead letter as too large even without the original; raise its max.message.bytes; partition waits",
				"offset", msg.Offset, "reason", p.Reason, "dead_letter_topic", c.cfg.DeadLetterTopic, "bytes", kafka.Size(dl), "err", err)
		} else {
			log.Error("writing dead letter failed; partition waits", "offset", msg.Offset, "reason", p.Reason,
				"dead_letter_topic", c.cfg.DeadLetterTopic, "err", err)
		}
		if !b.Wait(gctx) {
			return false
		}
	}
}

// commit commits the handled prefix of each partition in work that moved
// since its last commit.
func (c *Consumer) commit(gen *kafkago.Generation, work map[int]*partitionWork) {
	c.commitMu.Lock()
	defer c.commitMu.Unlock()
	offsets := map[int]int64{}
	topic := c.cfg.Topic
	for p, w := range work {
		topic = w.topic // one topic per work map
		if off, ok := w.offsets.toCommit(); ok {
			offsets[p] = off
		}
	}
	if len(offsets) > 0 {
		if err := gen.CommitOffsets(map[string]map[int]int64{topic: offsets}); err != nil {
			c.m.retries.WithLabelValues(opCommit).Inc()
			c.log.Warn("committing offsets", "generation", gen.ID, "offsets", offsets, "err", err)
			return
		}
		for p, off := range offsets {
			work[p].offsets.setCommitted(off)
		}
	}
	for p, w := range work {
		if w.topic == c.cfg.Topic {
			c.setLag(p, w)
		}
	}
}

// readHighWatermarks refreshes the high watermarks of the partitions in work
// and the lag gauge; failures only leave the gauge stale.
func (c *Consumer) readHighWatermarks(gctx context.Context, work map[int]*partitionWork, log *slog.Logger) {
	if len(work) == 0 {
		return
	}
	reqs := make([]kafkago.OffsetRequest, 0, len(work))
	for p := range work {
		reqs = append(reqs, kafkago.LastOffsetOf(p))
	}
	ctx, cancel := context.WithTimeout(gctx, 5*time.Second)
	defer cancel()
	res, err := c.admin.ListOffsets(ctx, &kafkago.ListOffsetsRequest{Topics: map[string][]kafkago.OffsetRequest{c.cfg.Topic: reqs}})
	if err != nil {
		if gctx.Err() == nil {
			log.Debug("reading high watermarks for lag", "err", err)
		}
		return
	}
	hws := map[int]int64{}
	for _, po := range res.Topics[c.cfg.Topic] {
		w, ok := work[po.Partition]
		if !ok || po.Error != nil {
			continue
		}
		hws[po.Partition] = po.LastOffset
		w.highWater.Store(max(w.highWater.Load(), po.LastOffset))
		c.commitMu.Lock()
		c.setLag(po.Partition, w)
		c.commitMu.Unlock()
	}
	// The last stable offset: a read-committed reader gets nothing past it,
	// and a transaction left open holds it while the high watermark grows.
	res, err = c.admin.ListOffsets(ctx, &kafkago.ListOffsetsRequest{Topics: map[string][]kafkago.OffsetRequest{c.cfg.Topic: reqs},
		IsolationLevel: kafkago.ReadCommitted})
	if err != nil {
		return
	}
	now := c.cfg.Now()
	for _, po := range res.Topics[c.cfg.Topic] {
		w, ok := work[po.Partition]
		hw, seen := hws[po.Partition]
		if !ok || !seen || po.Error != nil || w.revoked.Load() {
			continue
		}
		stalled := w.stable.observe(po.LastOffset, hw, now)
		c.m.stalled.WithLabelValues(partitionLabel(po.Partition)).Set(stalled.Seconds())
	}
}

// stableOffset follows a partition's last stable offset (LSO).
type stableOffset struct {
	offset int64
	since  time.Time // when offset was first seen
}

// observe records the LSO and high watermark read at now and returns how
// long the LSO has stayed below the high watermark without moving: the
// time a read-committed consumer has been held by an open transaction.
func (s *stableOffset) observe(lso, hw int64, now time.Time) time.Duration {
	if s.since.IsZero() || lso != s.offset {
		s.offset, s.since = lso, now
	}
	if lso >= hw {
		s.since = now
		return 0
	}
	return now.Sub(s.since)
}

func (c *Consumer) setLag(p int, w *partitionWork) {
	if w.revoked.Load() {
		return
	}
	hw, pos := w.highWater.Load(), w.offsets.position()
	if pos < 0 {
		// Nothing handled yet in this generation: lag counts from where it started.
		pos = w.assignment.Offset
	}
	if hw > 0 && pos >= 0 {
		c.m.lag.WithLabelValues(partitionLabel(p)).Set(float64(max(hw-pos, 0)))
		c.lags.Store(p, max(hw-pos, 0))
	}
}

// newBackoff is the wait between retries of a failed Handle, dead-letter write,
// Assigned or fetch, jittered so that partitions failing together do not retry in lockstep.
func (c *Consumer) newBackoff() *backoff.Backoff {
	return backoff.Policy{Min: c.cfg.MinBackoff, Max: c.cfg.MaxBackoff, Jitter: backoff.Equal}.New()
}

func kafkaLogger(log *slog.Logger, level slog.Level) kafkago.Logger {
	return kafkago.LoggerFunc(func(format string, args ...any) {
		if log.Enabled(context.Background(), level) {
			log.Log(context.Background(), level, fmt.Sprintf(format, args...), "source", "kafka-go")
		}
	})
}
