// Package kafka is lakewap's one home for Kafka, beside the group consumer
// (consumer/): lakewap's own message type, the security of connections
// (TLS, SASL), a Client for admin requests, writes and reads of whole
// topics, the one writer builder, topic creation and checks, and message
// size limits. kafka-go is imported here, in consumer/ and in the test
// cluster (kafka/kafkatest, internal/devstack), and nowhere else: the other
// packages speak Message.
//
// It imports no lakewap package.
package kafka

import (
	"time"

	kafkago "github.com/segmentio/kafka-go"
)

// Message is one Kafka record as lakewap's parts see it.
type Message struct {
	Topic     string
	Partition int
	Offset    int64
	Key       []byte
	Value     []byte
	Headers   []Header
	Time      time.Time // the broker's or producer's timestamp
}

// Header is one record header.
type Header struct {
	Key   string
	Value []byte
}

// HeaderValue is the value of the header key and whether there is one.
func HeaderValue(hs []Header, key string) (string, bool) {
	for _, h := range hs {
		if h.Key == key {
			return string(h.Value), true
		}
	}
	return "", false
}

// FromWire is m as lakewap's Message (for the consumer, which reads with
// kafka-go itself).
func FromWire(m kafkago.Message) Message {
	out := Message{Topic: m.Topic, Partition: m.Partition, Offset: m.Offset, Key: m.Key, Value: m.Value, Time: m.Time}
	if len(m.Headers) > 0 {
		out.Headers = make([]Header, len(m.Headers))
		for i, h := range m.Headers {
			out.Headers[i] = Header{Key: h.Key, Value: h.Value}
		}
	}
	return out
}

// Wire is m as kafka-go writes it.
func Wire(m Message) kafkago.Message {
	out := kafkago.Message{Topic: m.Topic, Partition: m.Partition, Offset: m.Offset, Key: m.Key, Value: m.Value, Time: m.Time}
	if len(m.Headers) > 0 {
		out.Headers = make([]kafkago.Header, len(m.Headers))
		for i, h := range m.Headers {
			out.Headers[i] = kafkago.Header{Key: h.Key, Value: h.Value}
		}
	}
	return out
}
