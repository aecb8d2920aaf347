// Package kafkalimit answers the two questions a Kafka writer with a byte
// budget asks: how many bytes of a message count against a topic's limit,
// and whether a failed write was refused for its size. The consumer (dead
// letters) and notify (result events) share it; it imports only kafka-go.
package kafkalimit

import (
	"errors"
	"slices"

	"github.com/segmentio/kafka-go"
)

// Size is the bytes of m that count against a topic's maximum message size,
// with a margin for the record's framing.
func Size(m kafka.Message) int {
	n := len(m.Key) + len(m.Value) + 64
	for _, h := range m.Headers {
		n += len(h.Key) + len(h.Value) + 8
	}
	return n
}

// TooLarge reports whether a write failed because the message is over the
// topic's (or the writer's) maximum size.
func TooLarge(err error) bool {
	var mtl kafka.MessageTooLargeError
	if errors.Is(err, kafka.MessageSizeTooLarge) || errors.As(err, &mtl) {
		return true
	}
	var we kafka.WriteErrors
	// Only when every failure is about size: another one is retried.
	return errors.As(err, &we) && we.Count() > 0 && !slices.ContainsFunc(we, func(e error) bool { return e != nil && !TooLarge(e) })
}
