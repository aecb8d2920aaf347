package kafka

// Waiting until Kafka topics are really served (topic admin, the consumer,
// the test cluster).

import (
	"context"
	"fmt"
	"time"

	kafkago "github.com/segmentio/kafka-go"
)

// Await polls until every partition of topics has a leader that serves it,
// or ctx ends. Apache Kafka answers CreateTopics before the partitions are
// online, and for a moment after metadata names a leader that broker still
// answers NOT_LEADER_OR_FOLLOWER. There is no notification to wait on.
func Await(ctx context.Context, client *kafkago.Client, topics ...string) error {
	for {
		err := Served(ctx, client, topics...)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("topics %v not online: %w", topics, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Served returns nil when metadata names a leader for every partition of
// topics and each leader answers ListOffsets for it.
func Served(ctx context.Context, client *kafkago.Client, topics ...string) error {
	md, err := client.Metadata(ctx, &kafkago.MetadataRequest{Topics: topics})
	if err != nil {
		return err
	}
	if len(md.Topics) != len(topics) {
		return fmt.Errorf("metadata lists %d of %d topics", len(md.Topics), len(topics))
	}
	req := &kafkago.ListOffsetsRequest{Topics: map[string][]kafkago.OffsetRequest{}}
	for _, t := range md.Topics {
		if t.Error != nil {
			return t.Error
		}
		if len(t.Partitions) == 0 {
			return fmt.Errorf("topic %s has no partitions yet", t.Name)
		}
		for _, p := range t.Partitions {
			if p.Error != nil {
				return p.Error
			}
			if p.Leader.Host == "" {
				return fmt.Errorf("%s/%d has no leader", t.Name, p.ID)
			}
			req.Topics[t.Name] = append(req.Topics[t.Name], kafkago.LastOffsetOf(p.ID))
		}
	}
	res, err := client.ListOffsets(ctx, req)
	if err != nil {
		return err
	}
	for _, ps := range res.Topics {
		for _, p := range ps {
			if p.Error != nil {
				return p.Error
			}
		}
	}
	return nil
}
