package kafka

import (
	"errors"
	"fmt"
	"testing"

	kafkago "github.com/segmentio/kafka-go"
)

func TestTooLarge(t *testing.T) {
	other := errors.New("connection reset")
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"broker code", kafkago.MessageSizeTooLarge, true},
		{"wrapped broker code", fmt.Errorf("write: %w", kafkago.MessageSizeTooLarge), true},
		{"writer's own limit", kafkago.MessageTooLargeError{}, true},
		{"every failure is size", kafkago.WriteErrors{kafkago.MessageSizeTooLarge, nil}, true},
		{"one failure is not size", kafkago.WriteErrors{kafkago.MessageSizeTooLarge, other}, false},
		{"no failure", kafkago.WriteErrors{nil, nil}, false},
		{"other error", other, false},
		{"nil", nil, false},
	} {
		if got := TooLarge(tc.err); got != tc.want {
			t.Errorf("%s: TooLarge(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}

func TestSizeCountsKeyValueAndHeaders(t *testing.T) {
	base := Size(Message{})
	m := Message{Key: make([]byte, 10), Value: make([]byte, 100), Headers: []Header{{Key: "k", Value: make([]byte, 5)}}}
	if got := Size(m) - base; got < 116 {
		t.Errorf("Size grew by %d for 116 bytes of key, value and header", got)
	}
}
