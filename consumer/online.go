package consumer

import (
	"context"
	"fmt"
	"time"

	"github.com/segmentio/kafka-go"
)

// onlineTimeout bounds the wait for created topics to be served.
const onlineTimeout = 30 * time.Second

// awaitOnline polls until every partition of topics has a leader that
// serves it. Apache Kafka answers CreateTopics before the partitions are
// online, and for a moment after metadata names a leader that broker still
// answers NOT_LEADER_OR_FOLLOWER: a restore right after EnsureTopics would
// fail. There is no notification to wait on.
func awaitOnline(ctx context.Context, client *kafka.Client, topics []string) error {
	ctx, cancel := context.WithTimeout(ctx, onlineTimeout)
	defer cancel()
	for {
		err := served(ctx, client, topics)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("ensure topics: %v not online after creation: %w", topics, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// served returns nil when metadata names a leader for every partition of
// topics and each leader answers ListOffsets for it.
func served(ctx context.Context, client *kafka.Client, topics []string) error {
	md, err := client.Metadata(ctx, &kafka.MetadataRequest{Topics: topics})
	if err != nil {
		return err
	}
	req := &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{}}
	for _, t := range md.Topics {
		if t.Error != nil {
			return t.Error
		}
		for _, p := range t.Partitions {
			if p.Error != nil {
				return p.Error
			}
			if p.Leader.Host == "" {
				return fmt.Errorf("%s/%d has no leader", t.Name, p.ID)
			}
			req.Topics[t.Name] = append(req.Topics[t.Name], kafka.LastOffsetOf(p.ID))
		}
	}
	if len(req.Topics) != len(topics) {
		return fmt.Errorf("metadata lists partitions for %d of %d topics", len(req.Topics), len(topics))
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
