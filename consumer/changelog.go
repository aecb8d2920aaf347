package consumer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/lakewap/lakewap/internal/kafkaready"
)

// DefaultChangelogTopic is where run state lives unless configured otherwise.
const DefaultChangelogTopic = "wap.runs"

// ChangelogConfig configures a Changelog.
type ChangelogConfig struct {
	Brokers   []string
	Topic     string             // default DefaultChangelogTopic
	Security  Security           // builds Transport when it is nil
	Transport kafka.RoundTripper // optional
	Timeout   time.Duration      // deadline of one request when ctx has none; default 10s
}

// Changelog is a key-value store per partition kept in a compacted topic:
// the latest record of a key is its value, a tombstone deletes it. Partition
// n of the changelog holds the state of partition n of the input topic, so
// state moves with the partition when the group rebalances.
type Changelog struct {
	client *kafka.Client
	topic  string
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
	if transport == nil {
		t, err := cfg.Security.Transport()
		if err != nil {
			return nil, fmt.Errorf("%w: changelog %v", errConfig, err)
		}
		transport = t
	}
	return &Changelog{
		client: &kafka.Client{Addr: kafka.TCP(cfg.Brokers...), Timeout: cmp.Or(cfg.Timeout, 10*time.Second), Transport: transport},
		topic:  cmp.Or(cfg.Topic, DefaultChangelogTopic),
	}, nil
}

// Topic returns the changelog topic name.
func (c *Changelog) Topic() string { return c.topic }

// Put stores value under key in partition, synchronously and acknowledged by
// all in-sync replicas. A nil value is stored as empty, not as a delete.
func (c *Changelog) Put(ctx context.Context, partition int, key string, value []byte) error {
	if value == nil {
		value = []byte{}
	}
	return c.produce(ctx, partition, key, value)
}

// Delete writes a tombstone for key in partition.
func (c *Changelog) Delete(ctx context.Context, partition int, key string) error {
	return c.produce(ctx, partition, key, nil)
}

func (c *Changelog) produce(ctx context.Context, partition int, key string, value []byte) error {
	if key == "" {
		return errors.New("changelog: empty key (compacted topics need keys)")
	}
	if partition < 0 {
		return fmt.Errorf("changelog: negative partition %d", partition)
	}
	res, err := c.client.Produce(ctx, &kafka.ProduceRequest{
		Topic:        c.topic,
		Partition:    partition,
		RequiredAcks: kafka.RequireAll,
		Records:      kafka.NewRecordReader(kafka.Record{Key: kafka.NewBytes([]byte(key)), Value: kafka.NewBytes(value)}),
	})
	if err == nil && res != nil {
		err = res.Error
	}
	if err != nil {
		return fmt.Errorf("changelog: writing %s/%d key %q: %w", c.topic, partition, key, err)
	}
	return nil
}

// Load reads partition from its earliest offset up to the high-water mark
// taken when Load starts and returns the latest value of each key; keys whose
// latest record is a tombstone are absent. Records written during Load may or
// may not be included.
func (c *Changelog) Load(ctx context.Context, partition int) (map[string][]byte, error) {
	res, err := c.client.ListOffsets(ctx, &kafka.ListOffsetsRequest{
		Topics: map[string][]kafka.OffsetRequest{c.topic: {kafka.LastOffsetOf(partition)}},
	})
	if err != nil {
		return nil, fmt.Errorf("changelog: high-water mark of %s/%d: %w", c.topic, partition, err)
	}
	end := int64(-1)
	for _, p := range res.Topics[c.topic] {
		if p.Partition == partition {
			if p.Error != nil {
				return nil, fmt.Errorf("changelog: high-water mark of %s/%d: %w", c.topic, partition, p.Error)
			}
			end = p.LastOffset
		}
	}
	if end < 0 {
		return nil, fmt.Errorf("changelog: no offsets for %s/%d in the answer", c.topic, partition)
	}

	state := map[string][]byte{}
	if end == 0 {
		return state, nil // never written: skip a fetch that would wait for data
	}
	offset := kafka.FirstOffset
	for offset < end {
		fr, err := c.client.Fetch(ctx, &kafka.FetchRequest{
			Topic: c.topic, Partition: partition, Offset: offset,
			MinBytes: 1, MaxBytes: 16 << 20, MaxWait: 250 * time.Millisecond,
		})
		if err == nil {
			err = fr.Error
		}
		next := offset
		if err == nil {
			next, err = apply(state, fr.Records, offset, end)
		}
		if err != nil {
			return nil, fmt.Errorf("changelog: reading %s/%d at offset %d: %w", c.topic, partition, offset, err)
		}
		if next <= offset {
			// Nothing at or after offset below end: the tail was compacted away.
			break
		}
		offset = next
	}
	return state, nil
}

// apply folds the records in [from, end) into state and returns the offset to
// fetch next (from itself if there were none).
func apply(state map[string][]byte, records kafka.RecordReader, from, end int64) (int64, error) {
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
		key, err := kafka.ReadAll(r.Key)
		if err != nil {
			return next, err
		}
		if r.Value == nil {
			delete(state, string(key))
			continue
		}
		value, err := kafka.ReadAll(r.Value)
		if err != nil {
			return next, err
		}
		state[string(key)] = value
	}
}

// TopicSpec describes a topic EnsureTopics creates if it is missing.
type TopicSpec struct {
	Name              string
	Partitions        int               // used when creating; 0 takes the count of SamePartitionsAs
	ReplicationFactor int               // 0: broker default
	Configs           map[string]string // used when creating; cleanup.policy is also checked on an existing topic
	// SamePartitionsAs names a topic (listed earlier or existing) whose
	// partition count this one must equal, as the changelog must the input.
	SamePartitionsAs string
}

// ChangelogTopic is the spec of a compacted changelog partitioned like input.
func ChangelogTopic(name, input string) TopicSpec {
	return TopicSpec{Name: cmp.Or(name, DefaultChangelogTopic), Configs: map[string]string{"cleanup.policy": "compact"}, SamePartitionsAs: input}
}

// EnsureTopics creates the topics that do not exist yet, then checks that
// partition counts that must match do, and that existing topics have the
// cleanup.policy their spec asks for. transport may be nil for plaintext.
func EnsureTopics(ctx context.Context, brokers []string, transport kafka.RoundTripper, topics ...TopicSpec) error {
	client := &kafka.Client{Addr: kafka.TCP(brokers...), Timeout: 30 * time.Second, Transport: transport}
	names := make([]string, 0, len(topics))
	for _, t := range topics {
		names = append(names, t.Name)
		if t.SamePartitionsAs != "" {
			names = append(names, t.SamePartitionsAs)
		}
	}
	counts, err := partitionCounts(ctx, client, names)
	if err != nil {
		return err
	}
	var created []string
	for _, t := range topics {
		if t.Name == "" {
			return errors.New("ensure topics: a topic has no name")
		}
		if _, ok := counts[t.Name]; !ok {
			parts := t.Partitions
			if parts == 0 && t.SamePartitionsAs != "" {
				parts = counts[t.SamePartitionsAs]
			}
			if parts <= 0 {
				return fmt.Errorf("ensure topics: cannot create %s: Partitions not set and %q does not exist to copy from", t.Name, t.SamePartitionsAs)
			}
			rf := t.ReplicationFactor
			if rf == 0 {
				rf = -1
			}
			tc := kafka.TopicConfig{Topic: t.Name, NumPartitions: parts, ReplicationFactor: rf}
			for _, k := range slices.Sorted(maps.Keys(t.Configs)) {
				tc.ConfigEntries = append(tc.ConfigEntries, kafka.ConfigEntry{ConfigName: k, ConfigValue: t.Configs[k]})
			}
			res, err := client.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{tc}})
			if err == nil {
				err = res.Errors[t.Name]
			}
			if err == nil {
				counts[t.Name] = parts
				created = append(created, t.Name)
				continue
			}
			if !errors.Is(err, kafka.TopicAlreadyExists) {
				return fmt.Errorf("ensure topics: creating %s: %w", t.Name, err)
			}
			// Someone else created it meanwhile; check it like an existing one.
			fresh, err := partitionCounts(ctx, client, []string{t.Name})
			if err != nil {
				return err
			}
			counts[t.Name] = fresh[t.Name]
		}
		if err := checkCleanupPolicy(ctx, client, t); err != nil {
			return err
		}
	}
	for _, t := range topics {
		if t.SamePartitionsAs == "" {
			continue
		}
		want, ok := counts[t.SamePartitionsAs]
		if !ok {
			return fmt.Errorf("ensure topics: %s must have as many partitions as %s, which does not exist", t.Name, t.SamePartitionsAs)
		}
		if got := counts[t.Name]; got != want {
			return fmt.Errorf("ensure topics: %s has %d partitions but %s has %d: they must be equal, because the state of %s partition N lives in %s partition N (recreate %s with %d partitions)",
				t.Name, got, t.SamePartitionsAs, want, t.SamePartitionsAs, t.Name, t.Name, want)
		}
	}
	if len(created) > 0 {
		// A restore right after creation would otherwise fail on Apache Kafka.
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if err := kafkaready.Await(ctx, client, created...); err != nil {
			return fmt.Errorf("ensure topics: %w", err)
		}
	}
	return nil
}

// partitionCounts returns the partition count of each named topic that exists.
func partitionCounts(ctx context.Context, client *kafka.Client, names []string) (map[string]int, error) {
	md, err := client.Metadata(ctx, &kafka.MetadataRequest{Topics: names})
	if err != nil {
		return nil, fmt.Errorf("ensure topics: reading metadata: %w", err)
	}
	counts := map[string]int{}
	for _, t := range md.Topics {
		switch {
		case t.Error == nil:
			counts[t.Name] = len(t.Partitions)
		case errors.Is(t.Error, kafka.UnknownTopicOrPartition):
		default:
			return nil, fmt.Errorf("ensure topics: metadata of %s: %w", t.Name, t.Error)
		}
	}
	return counts, nil
}

// checkCleanupPolicy fails when an existing topic's cleanup.policy lacks what
// its spec asks for: a changelog that is not compacted grows without bound and
// its restores get slower forever.
func checkCleanupPolicy(ctx context.Context, client *kafka.Client, t TopicSpec) error {
	want, ok := t.Configs["cleanup.policy"]
	if !ok {
		return nil
	}
	res, err := client.DescribeConfigs(ctx, &kafka.DescribeConfigsRequest{
		Resources: []kafka.DescribeConfigRequestResource{{
			ResourceType: kafka.ResourceTypeTopic, ResourceName: t.Name, ConfigNames: []string{"cleanup.policy"},
		}},
	})
	if err != nil {
		return fmt.Errorf("ensure topics: reading cleanup.policy of %s: %w", t.Name, err)
	}
	for _, r := range res.Resources {
		if r.Error != nil {
			return fmt.Errorf("ensure topics: reading cleanup.policy of %s: %w", t.Name, r.Error)
		}
		for _, e := range r.ConfigEntries {
			if e.ConfigName != "cleanup.policy" {
				continue
			}
			if slices.ContainsFunc(strings.Split(e.ConfigValue, ","), func(p string) bool { return strings.TrimSpace(p) == want }) {
				return nil
			}
			return fmt.Errorf("ensure topics: %s has cleanup.policy=%s, want %s", t.Name, e.ConfigValue, want)
		}
	}
	return fmt.Errorf("ensure topics: %s: broker did not report cleanup.policy", t.Name)
}
