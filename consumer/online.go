package consumer

import (
	"context"
	"fmt"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/lakewap/lakewap/internal/kafkaready"
)

// onlineTimeout bounds the wait for created topics to be served.
const onlineTimeout = 30 * time.Second

// awaitOnline waits until the topics EnsureTopics created are served: a
// restore right after creation would otherwise fail on Apache Kafka.
func awaitOnline(ctx context.Context, client *kafka.Client, topics []string) error {
	ctx, cancel := context.WithTimeout(ctx, onlineTimeout)
	defer cancel()
	if err := kafkaready.Await(ctx, client, topics...); err != nil {
		return fmt.Errorf("ensure topics: %w", err)
	}
	return nil
}
