package kafka

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/lakewap/lakewap/internal/backoff"
)

// A broker short of CPU answers a topic made moments ago with errors that
// pass: Apache Kafka 4.4.0 under load answered UNKNOWN_SERVER_ERROR for a
// fresh topic's partition offsets, and a leader moving answers
// NOT_LEADER_OR_FOLLOWER. Reads of offsets (the operator's commands, the
// changelog's load, the consumer's start offsets) ask again for a while
// before they fail, as a downstream consumer would.

// OffsetsPatience bounds how long a read of offsets asks again after
// errors that pass; the error it then returns names the last one.
const OffsetsPatience = 30 * time.Second

// Passing reports whether err may pass when asked again: a broker's error
// code the Kafka protocol calls retriable (kafka-go's Temporary and
// Timeout: LEADER_NOT_AVAILABLE, NOT_LEADER_OR_FOLLOWER, REQUEST_TIMED_OUT,
// UNKNOWN_TOPIC_OR_PARTITION while a new topic spreads, ...), its
// UNKNOWN_SERVER_ERROR (not retriable in the protocol's table, but what a
// loaded broker answered, and it passed), or a network timeout.
// Authorization, a request the broker does not support and the like are
// not: asking again changes nothing.
func Passing(err error) bool {
	var ke kafkago.Error
	if errors.As(err, &ke) {
		return ke == kafkago.Unknown || ke.Temporary() || ke.Timeout()
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// askAgain calls do until it succeeds, fails with an error that does not
// pass (Passing, or a request's own deadline while ctx is not done), ctx
// ends, or patience is spent; what it returns then names do's last error
// and, when it asked more than once, how often and for how long.
func askAgain(ctx context.Context, patience time.Duration, do func(context.Context) error) error {
	start := time.Now()
	b := backoff.Policy{Min: 100 * time.Millisecond, Max: 2 * time.Second, Jitter: backoff.Equal}.New()
	for {
		err := do(ctx)
		if err == nil {
			return nil
		}
		if !Passing(err) && (!errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil) {
			if b.Attempt() == 0 {
				return err
			}
			return fmt.Errorf("%w (asked %d times over %s)", err, b.Attempt()+1, time.Since(start).Round(time.Millisecond))
		}
		wait := b.Next()
		if time.Since(start)+wait > patience || !backoff.Sleep(ctx, wait) {
			return fmt.Errorf("%w (asked %d times over %s, each answer an error that may pass)", err, b.Attempt(), time.Since(start).Round(time.Millisecond))
		}
	}
}

// ListOffsets asks client for the offsets req names, again while the
// round trip or a partition's answer fails with an error that passes, for
// at most OffsetsPatience. An error is returned for a partition that
// answered one (naming it), so a response returned has none.
func ListOffsets(ctx context.Context, client *kafkago.Client, req *kafkago.ListOffsetsRequest) (*kafkago.ListOffsetsResponse, error) {
	return listOffsets(ctx, OffsetsPatience, client, req)
}

func listOffsets(ctx context.Context, patience time.Duration, client *kafkago.Client, req *kafkago.ListOffsetsRequest) (*kafkago.ListOffsetsResponse, error) {
	var res *kafkago.ListOffsetsResponse
	err := askAgain(ctx, patience, func(ctx context.Context) error {
		var err error
		if res, err = client.ListOffsets(ctx, req); err != nil {
			return err
		}
		for topic, ps := range res.Topics {
			for _, po := range ps {
				if po.Error != nil {
					return fmt.Errorf("%s/%d: %w", topic, po.Partition, po.Error)
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}
