package kafka

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	kafkago "github.com/segmentio/kafka-go"
)

// Client is a connection to a Kafka cluster for everything but group
// membership: admin requests, writes, and reads of whole topics. Its
// transport is its own: kafka-go's default one caches a broker's topic
// list for seconds, which hides topics created meanwhile.
type Client struct {
	brokers   []string
	transport *kafkago.Transport
	dialer    *kafkago.Dialer
	admin     *kafkago.Client
	refusals  *Refusals // nil: not recorded
}

// RecordRefusals has c's writes (Writer, Send) record in r what a topic
// refused (readiness reports it); set it before making writers.
func (c *Client) RecordRefusals(r *Refusals) { c.refusals = r }

// NewClient prepares a client of brokers with sec; it does no I/O.
func NewClient(brokers []string, sec Security) (*Client, error) {
	if len(brokers) == 0 {
		return nil, errors.New("kafka: no brokers")
	}
	transport, err := sec.Transport()
	if err != nil {
		return nil, fmt.Errorf("kafka: %w", err)
	}
	dialer, err := sec.Dialer()
	if err != nil {
		return nil, fmt.Errorf("kafka: %w", err)
	}
	return &Client{brokers: brokers, transport: transport, dialer: dialer,
		admin: &kafkago.Client{Addr: kafkago.TCP(brokers...), Timeout: 30 * time.Second, Transport: transport}}, nil
}

// Brokers are the client's bootstrap brokers.
func (c *Client) Brokers() []string { return c.brokers }

// Close closes the client's idle connections.
func (c *Client) Close() { c.transport.CloseIdleConnections() }

// WriterConfig is a writer to one topic.
type WriterConfig struct {
	Topic string
	// Attempts is how many times a write is tried (default 1: the callers
	// retry on top, with their own backoff and budget).
	Attempts int
}

// Writer writes messages to one topic: acknowledged by every in-sync
// replica, each to the partition of its key as the Java client picks it
// (murmur2), so lakewap and upstream producers agree on a batch's
// partition. The one way lakewap writes to a topic (the changelog writes
// its records to explicit partitions, with the consumer's own requests).
type Writer struct {
	w        *kafkago.Writer
	refusals *Refusals
}

// Writer builds the writer of cfg.
func (c *Client) Writer(cfg WriterConfig) *Writer {
	return &Writer{w: c.writer(cfg, &kafkago.Murmur2Balancer{}), refusals: c.refusals}
}

func (c *Client) writer(cfg WriterConfig, b kafkago.Balancer) *kafkago.Writer {
	return &kafkago.Writer{
		Addr:         kafkago.TCP(c.brokers...),
		Topic:        cfg.Topic,
		Balancer:     b,
		RequiredAcks: kafkago.RequireAll,
		MaxAttempts:  cmp.Or(cfg.Attempts, 1),
		// kafka-go holds a batch that is not full until BatchTimeout, and a
		// write is usually one message: a 1 ms linger, not 1 s.
		BatchTimeout: time.Millisecond,
		WriteTimeout: 10 * time.Second,
		Transport:    c.transport,
	}
}

// Write writes msgs, synchronously.
func (w *Writer) Write(ctx context.Context, msgs ...Message) error {
	wire := make([]kafkago.Message, len(msgs))
	largest := 0
	for i, m := range msgs {
		m.Topic, m.Partition, m.Offset = "", 0, 0 // the writer's to set
		wire[i] = Wire(m)
		largest = max(largest, Size(m))
	}
	err := w.w.WriteMessages(ctx, wire...)
	w.refusals.Observe(w.w.Topic, largest, err)
	return err
}

// Topic is the topic w writes to.
func (w *Writer) Topic() string { return w.w.Topic }

// Close flushes and closes w.
func (w *Writer) Close() error { return w.w.Close() }

// Send writes msg alone to topic, to the partition of its key or, when
// partition is not negative, to that one, and returns it as written (with
// its partition and offset).
func (c *Client) Send(ctx context.Context, topic string, msg Message, partition int) (Message, error) {
	var b kafkago.Balancer = &kafkago.Murmur2Balancer{}
	if partition >= 0 {
		b = kafkago.BalancerFunc(func(kafkago.Message, ...int) int { return partition })
	}
	done := make(chan kafkago.Message, 1)
	wr := c.writer(WriterConfig{Topic: topic, Attempts: 10}, b)
	wr.BatchSize = 1
	wr.Completion = func(msgs []kafkago.Message, err error) {
		if err == nil && len(msgs) > 0 {
			done <- msgs[len(msgs)-1]
		}
	}
	defer wr.Close()
	msg.Topic, msg.Partition, msg.Offset = "", 0, 0
	err := wr.WriteMessages(ctx, Wire(msg))
	c.refusals.Observe(topic, Size(msg), err)
	if err != nil {
		return Message{}, err
	}
	select {
	case m := <-done:
		return FromWire(m), nil
	default:
		return msg, nil
	}
}

// ReadPartitions reads every partition of topic in from, each from its
// offset there, and hands the messages to fn one at a time, each
// partition's in order, until fn says stop, ctx ends, or (with until) every
// partition reached its offset in until. It returns the first read error;
// the end of ctx is none.
func (c *Client) ReadPartitions(ctx context.Context, topic string, from, until map[int]int64, fn func(Message) (stop bool)) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	msgs := make(chan kafkago.Message)
	errc := make(chan error, len(from))
	var wg sync.WaitGroup
	for partition, start := range from {
		end, bounded := until[partition]
		if until != nil && start >= end {
			continue
		}
		r := kafkago.NewReader(kafkago.ReaderConfig{Brokers: c.brokers, Topic: topic, Partition: partition, Dialer: c.dialer,
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
		if fn(FromWire(m)) {
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
// offset its next message will have. A broker's error that passes is asked
// again, for at most OffsetsPatience (Passing).
func (c *Client) Offsets(ctx context.Context, topic string) (first, next map[int]int64, err error) {
	client := &kafkago.Client{Addr: kafkago.TCP(c.brokers...), Transport: c.transport, Timeout: 10 * time.Second}
	var md *kafkago.MetadataResponse
	err = askAgain(ctx, OffsetsPatience, func(ctx context.Context) error {
		var err error
		if md, err = client.Metadata(ctx, &kafkago.MetadataRequest{Topics: []string{topic}}); err != nil {
			return fmt.Errorf("metadata of %s: %w", topic, err)
		}
		if len(md.Topics) == 1 && md.Topics[0].Error != nil && !errors.Is(md.Topics[0].Error, kafkago.UnknownTopicOrPartition) {
			// A topic whose leader is being elected; one that does not
			// exist is said at once.
			return fmt.Errorf("metadata of %s: %w", topic, md.Topics[0].Error)
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	if len(md.Topics) != 1 || md.Topics[0].Error != nil || len(md.Topics[0].Partitions) == 0 {
		var terr error
		if len(md.Topics) == 1 {
			terr = md.Topics[0].Error
		}
		return nil, nil, fmt.Errorf("topic %s: not found (%v)", topic, terr)
	}
	var reqs []kafkago.OffsetRequest
	for _, p := range md.Topics[0].Partitions {
		reqs = append(reqs, kafkago.FirstOffsetOf(p.ID), kafkago.LastOffsetOf(p.ID))
	}
	offs, err := ListOffsets(ctx, client, &kafkago.ListOffsetsRequest{Topics: map[string][]kafkago.OffsetRequest{topic: reqs}})
	if err != nil {
		return nil, nil, fmt.Errorf("offsets of %s: %w", topic, err)
	}
	first, next = map[int]int64{}, map[int]int64{}
	for _, po := range offs.Topics[topic] {
		first[po.Partition], next[po.Partition] = po.FirstOffset, po.LastOffset
	}
	return first, next, nil
}

// ClusterID is the id of the cluster the brokers belong to, as their
// metadata gives it ("" from a broker too old to say).
func (c *Client) ClusterID(ctx context.Context) (string, error) {
	md, err := c.admin.Metadata(ctx, &kafkago.MetadataRequest{Topics: []string{}})
	if err != nil {
		return "", fmt.Errorf("cluster metadata: %w", err)
	}
	return md.ClusterID, nil
}

// Partitions is how many partitions topic has; an error when it does not
// exist.
func (c *Client) Partitions(ctx context.Context, topic string) (int, error) {
	md, err := c.admin.Metadata(ctx, &kafkago.MetadataRequest{Topics: []string{topic}})
	if err != nil {
		return 0, fmt.Errorf("metadata of %s: %w", topic, err)
	}
	i := slices.IndexFunc(md.Topics, func(t kafkago.Topic) bool { return t.Name == topic })
	if i >= 0 && md.Topics[i].Error != nil {
		return 0, fmt.Errorf("metadata of %s: %w", topic, md.Topics[i].Error)
	}
	if i >= 0 && len(md.Topics[i].Partitions) > 0 {
		return len(md.Topics[i].Partitions), nil
	}
	return 0, fmt.Errorf("topic %s does not exist", topic)
}

// PartitionOf is the partition of key among n, as every lakewap writer and
// the Java client's default partitioner pick it (murmur2).
func PartitionOf(key []byte, n int) int {
	parts := make([]int, n)
	for i := range parts {
		parts[i] = i
	}
	return (&kafkago.Murmur2Balancer{}).Balance(kafkago.Message{Key: key}, parts...)
}
