package consumer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/lakewap/lakewap/kafka"
)

// DefaultChangelogTopic is where run state lives unless configured otherwise.
const DefaultChangelogTopic = "wap.runs"

// ChangelogConfig configures a Changelog.
type ChangelogConfig struct {
	Brokers   []string
	Topic     string               // default DefaultChangelogTopic
	Security  kafka.Security       // builds Transport when it is nil
	Transport kafkago.RoundTripper // optional
	Timeout   time.Duration        // deadline of one request when ctx has none; default 10s
	// Refusals, when set, records the writes the topic refused for good
	// (readiness reports them).
	Refusals *kafka.Refusals
}

// Changelog is a key-value store per partition kept in a compacted topic:
// the latest record of a key is its value, a tombstone deletes it. Partition
// n of the changelog holds the state of partition n of the input topic, so
// state moves with the partition when the group rebalances.
type Changelog struct {
	client   *kafkago.Client
	topic    string
	owned    *kafkago.Transport // the transport it made (no ChangelogConfig.Transport), closed by Close
	refusals *kafka.Refusals
}

// NewChangelog validates cfg; it does no I/O.
func NewChangelog(cfg ChangelogConfig) (*Changelog, error) {
	if err := checkBrokers("changelog ", cfg.Brokers); err != nil {
		return nil, err
	}
	if cfg.Timeout < 0 {
		return nil, fmt.Errorf("%w: changelog Timeout must not be negative", errConfig)
	}
	transport := cfg.Transport
	var owned *kafkago.Transport
	if transport == nil {
		t, err := cfg.Security.Transport()
		if err != nil {
			return nil, fmt.Errorf("%w: changelog %v", errConfig, err)
		}
		transport, owned = t, t
	}
	return &Changelog{
		client:   &kafkago.Client{Addr: kafkago.TCP(cfg.Brokers...), Timeout: cmp.Or(cfg.Timeout, 10*time.Second), Transport: transport},
		topic:    cmp.Or(cfg.Topic, DefaultChangelogTopic),
		owned:    owned,
		refusals: cfg.Refusals,
	}, nil
}

// Close closes the connections of the transport the changelog made (a
// kafka-go transport refreshes every topic's metadata on them until then);
// one given in ChangelogConfig.Transport is its owner's to close.
func (c *Changelog) Close() {
	if c.owned != nil {
		c.owned.CloseIdleConnections()
	}
}

// Topic returns the changelog topic name.
func (c *Changelog) Topic() string { return c.topic }

// Put stores value under key in partition, synchronously and acknowledged by
// all in-sync replicas. A nil value is stored as empty, not as a delete.
func (c *Changelog) Put(ctx context.Context, partition int, key string, value []byte) error {
	if value == nil {
		value = []byte{}
	}
	return c.produce(ctx, partition, ChangelogRecord{Key: key, Value: value})
}

// Delete writes a tombstone for key in partition.
func (c *Changelog) Delete(ctx context.Context, partition int, key string) error {
	return c.produce(ctx, partition, ChangelogRecord{Key: key})
}

// ChangelogRecord is one record of a Write: a nil Value is a tombstone.
type ChangelogRecord struct {
	Key   string
	Value []byte
}

// Write appends records to partition in one record batch, in their order:
// the broker appends a batch whole or not at all, so a reader sees all of
// them or none.
func (c *Changelog) Write(ctx context.Context, partition int, records ...ChangelogRecord) error {
	return c.produce(ctx, partition, records...)
}

func (c *Changelog) produce(ctx context.Context, partition int, records ...ChangelogRecord) error {
	if len(records) == 0 {
		return nil
	}
	if partition < 0 {
		return fmt.Errorf("changelog: negative partition %d", partition)
	}
	batch := make([]kafkago.Record, len(records))
	size := 0
	for i, r := range records {
		if r.Key == "" {
			return errors.New("changelog: empty key (compacted topics need keys)")
		}
		batch[i] = kafkago.Record{Key: kafkago.NewBytes([]byte(r.Key)), Value: kafkago.NewBytes(r.Value)}
		size += len(r.Key) + len(r.Value) + 64
	}
	res, err := c.client.Produce(ctx, &kafkago.ProduceRequest{
		Topic:        c.topic,
		Partition:    partition,
		RequiredAcks: kafkago.RequireAll,
		Records:      kafkago.NewRecordReader(batch...),
	})
	if err == nil && res != nil {
		err = res.Error
	}
	c.refusals.Observe(c.topic, size, err)
	if kafka.TooLarge(err) {
		c.refusals.TooLarge(c.topic, size) // a run record is not cut: it is retried as it is
	}
	if err != nil {
		return fmt.Errorf("changelog: writing %s/%d key %q: %w", c.topic, partition, records[0].Key, err)
	}
	return nil
}

// Load reads partition from its earliest offset up to the high-water mark
// taken when Load starts and returns the latest value of each key; keys whose
// latest record is a tombstone are absent. Records written during Load may or
// may not be included.
func (c *Changelog) Load(ctx context.Context, partition int) (map[string][]byte, error) {
	state := map[string][]byte{}
	err := c.Scan(ctx, partition, func(key string, value []byte) {
		if value == nil {
			delete(state, key)
			return
		}
		state[key] = value
	})
	if err != nil {
		return nil, err
	}
	return state, nil
}

// Scan hands fn every record of partition in offset order, from its
// earliest offset up to the high-water mark taken when Scan starts: what
// compaction has left of the partition's history. A tombstone comes as a
// nil value, a record's empty value as an empty one.
func (c *Changelog) Scan(ctx context.Context, partition int, fn func(key string, value []byte)) error {
	// A broker's error that passes is asked again (kafka.ListOffsets): a
	// loaded broker answered a fresh topic's offsets UNKNOWN_SERVER_ERROR.
	res, err := kafka.ListOffsets(ctx, c.client, &kafkago.ListOffsetsRequest{
		Topics: map[string][]kafkago.OffsetRequest{c.topic: {kafkago.LastOffsetOf(partition)}},
	})
	if err != nil {
		return fmt.Errorf("changelog: high-water mark of %s/%d: %w", c.topic, partition, err)
	}
	end := int64(-1)
	for _, p := range res.Topics[c.topic] {
		if p.Partition == partition {
			if p.Error != nil {
				return fmt.Errorf("changelog: high-water mark of %s/%d: %w", c.topic, partition, p.Error)
			}
			end = p.LastOffset
		}
	}
	if end < 0 {
		return fmt.Errorf("changelog: no offsets for %s/%d in the answer", c.topic, partition)
	}
	if end == 0 {
		return nil // never written: skip a fetch that would wait for data
	}
	offset := kafkago.FirstOffset
	for offset < end {
		fr, err := c.client.Fetch(ctx, &kafkago.FetchRequest{
			Topic: c.topic, Partition: partition, Offset: offset,
			MinBytes: 1, MaxBytes: 16 << 20, MaxWait: 250 * time.Millisecond,
		})
		if err == nil {
			err = fr.Error
		}
		next := offset
		if err == nil {
			next, err = apply(fn, fr.Records, offset, end)
		}
		if err != nil {
			return fmt.Errorf("changelog: reading %s/%d at offset %d: %w", c.topic, partition, offset, err)
		}
		if next <= offset {
			// Nothing at or after offset below end: the tail was compacted away.
			break
		}
		offset = next
	}
	return nil
}

// apply hands fn the records in [from, end) and returns the offset to
// fetch next (from itself if there were none).
func apply(fn func(key string, value []byte), records kafkago.RecordReader, from, end int64) (int64, error) {
	if records == nil {
		return from, nil
	}
	next := from
	for {
		r, err := records.ReadRecord()
		if errors.Is(err, io.EOF) {
			return next, nil
		}
		if err != nil {
			return next, err
		}
		if r.Offset < from || r.Offset >= end {
			continue // batches may start before the requested offset
		}
		next = r.Offset + 1
		if r.Key == nil {
			continue
		}
		key, err := kafkago.ReadAll(r.Key)
		if err != nil {
			return next, err
		}
		if r.Value == nil {
			fn(string(key), nil)
			continue
		}
		value, err := kafkago.ReadAll(r.Value)
		if err != nil {
			return next, err
		}
		if value == nil {
			value = []byte{}
		}
		fn(string(key), value)
	}
}

// ChangelogTopic is the spec of a compacted changelog partitioned like input.
func ChangelogTopic(name, input string) kafka.TopicSpec {
	return kafka.TopicSpec{Name: cmp.Or(name, DefaultChangelogTopic), Configs: map[string]string{"cleanup.policy": "compact"}, SamePartitionsAs: input}
}
