package kafka

// The two questions a Kafka writer with a byte budget asks: how many bytes
// of a message count against a topic's limit, and whether a failed write
// was refused for its size (dead letters, result events).

import (
	"context"
	"errors"
	"io"
	"net"
	"slices"

	kafkago "github.com/segmentio/kafka-go"
)

// Size is the bytes of m that count against a topic's maximum message size,
// with a margin for the record's framing.
func Size(m Message) int {
	n := len(m.Key) + len(m.Value) + 64
	for _, h := range m.Headers {
		n += len(h.Key) + len(h.Value) + 8
	}
	return n
}

// TooLarge reports whether a write failed because the message is over the
// topic's (or the writer's) maximum size.
func TooLarge(err error) bool {
	var mtl kafkago.MessageTooLargeError
	if errors.Is(err, kafkago.MessageSizeTooLarge) || errors.As(err, &mtl) {
		return true
	}
	var we kafkago.WriteErrors
	// Only when every failure is about size: another one is retried.
	return errors.As(err, &we) && we.Count() > 0 && !slices.ContainsFunc(we, func(e error) bool { return e != nil && !TooLarge(e) })
}

// Retryable says whether a write error may pass: broker errors that
// Kafka marks temporary, timeouts and network trouble. Errors kafka-go does
// not classify are retried too; the Dispatcher's budget bounds them.
func Retryable(err error) bool {
	var we kafkago.WriteErrors
	if errors.As(err, &we) {
		for _, e := range we {
			if e != nil && Retryable(e) {
				return true
			}
		}
		return false
	}
	var ke kafkago.Error
	if errors.As(err, &ke) {
		return ke.Temporary() || ke.Timeout()
	}
	var ne net.Error
	switch {
	case errors.Is(err, context.Canceled):
		return false
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne):
		return true
	case errors.Is(err, io.ErrClosedPipe): // the writer was closed: we are shutting down
		return false
	}
	return true
}
