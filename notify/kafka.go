package notify

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/lakewap/lakewap/kafka"
	"github.com/lakewap/lakewap/schemas"
)

// DefaultResultsTopic is where result events go unless configured otherwise.
const DefaultResultsTopic = "wap.results"

// HeaderEventID is the Kafka header carrying a result event's stable id, so
// consumers can drop duplicates without decoding the value.
const HeaderEventID = "wap.event_id"

// Encoder turns an event into the bytes of a Kafka message value (the
// schemas codec does: Avro single-object or Confluent wire format).
type Encoder interface {
	Encode(ctx context.Context, topic string, ev schemas.Event) ([]byte, error)
}

// messageWriter is the part of *kafka.Writer the sink uses.
type messageWriter interface {
	Write(ctx context.Context, msgs ...kafka.Message) error
}

// KafkaResults writes result events to the results topic. It is the one
// required sink: downstream systems act on these events, so Notify fails
// when it cannot write. Its receipt is the id of the last event written,
// so a repeated notification is not written twice in the normal case
// (consumers still dedupe by HeaderEventID for the crash in between).
type KafkaResults struct {
	name, topic string
	w           messageWriter
	enc         Encoder
	// MaxMessageBytes is the results topic's maximum message size
	// (default DefaultMaxMessageBytes): a larger event is sent with less of
	// its audit report (see shrink), so it always fits.
	MaxMessageBytes int
	// Refusals, when set, hears of an event the topic refuses even cut
	// (readiness reports it); nil records nothing.
	Refusals *kafka.Refusals
}

// NewKafkaResults returns the results sink, named "kafka", writing with w
// (kafka.Client.Writer: every write acknowledged by all in-sync replicas,
// since a result acknowledged by one broker only can be lost, and to the
// partition of its batch id as Java clients pick it).
func NewKafkaResults(w *kafka.Writer, enc Encoder) (*KafkaResults, error) {
	switch {
	case w == nil:
		return nil, errors.New("kafka results: writer is nil")
	case enc == nil:
		return nil, errors.New("kafka results: encoder is nil")
	case w.Topic() == "":
		return nil, errors.New("kafka results: writer has no topic")
	}
	return &KafkaResults{name: "kafka", topic: w.Topic(), w: w, enc: enc, MaxMessageBytes: DefaultMaxMessageBytes}, nil
}

func (k *KafkaResults) Name() string   { return k.name }
func (k *KafkaResults) Required() bool { return true }

// Send writes n's result event; a notification without one (a change of
// state alone) or one already written is skipped.
func (k *KafkaResults) Send(ctx context.Context, n Notification) (string, bool, error) {
	prev := n.Receipts[k.name]
	id := EventID(n.Event)
	if id == "" || id == prev {
		return prev, false, nil
	}
	ev := deref(n.Event)
	max := k.MaxMessageBytes
	if max <= 0 {
		max = DefaultMaxMessageBytes
	}
	refused := false // the topic refused an event within our limit
	for step := 1; ; step++ {
		msg, retry, err := k.message(ctx, ev, id, n.RequestID, n.Trace)
		if err != nil {
			return prev, retry, err
		}
		size := kafka.Size(msg)
		big := size > max
		why := fmt.Sprintf("the result event is over the results topic's %d-byte limit", max)
		if !big {
			err = k.w.Write(ctx, msg)
			big = err != nil && kafka.TooLarge(err) // the topic's limit is lower than ours
			refused = refused || big
			why = fmt.Sprintf("the results topic refused the result event of %d bytes as too large", size)
		}
		if !big {
			if err != nil {
				return prev, kafka.Retryable(err), fmt.Errorf("kafka results: write %s %s to %s: %w", ev.EventType(), id, k.topic, err)
			}
			return id, false, nil
		}
		smaller, ok := shrink(ev, step, why)
		if !ok {
			if refused {
				// Its max.message.bytes was lowered after start-up (the
				// check at start-up holds it to ours): only an operator
				// can help, and the event waits in the run's outbox.
				k.Refusals.TooLarge(k.topic, kafka.Size(msg))
				return prev, false, fmt.Errorf("kafka results: topic %s refused %s %s as too large, even cut to %d bytes: its max.message.bytes is lower than the %d bytes lakewap needs (kafka.results_max_message_bytes); raise it, the event waits in the run's outbox",
					k.topic, ev.EventType(), id, kafka.Size(msg), max)
			}
			return prev, false, fmt.Errorf("kafka results: %s %s has %d bytes, more than the results topic takes", ev.EventType(), id, kafka.Size(msg))
		}
		ev = smaller
	}
}

// message encodes ev as the Kafka message of event id.
func (k *KafkaResults) message(ctx context.Context, ev schemas.Event, id, request string, trace schemas.TraceContext) (kafka.Message, bool, error) {
	value, err := k.enc.Encode(ctx, k.topic, ev)
	if err != nil {
		// An event the codec rejects will be rejected again; only a codec
		// that says otherwise (a schema registry out of reach) is retried.
		var p schemas.PermanentError
		retry := errors.As(err, &p) && !p.Permanent()
		return kafka.Message{}, retry, fmt.Errorf("kafka results: encode %s %s: %w", ev.EventType(), id, err)
	}
	hs := schemas.Headers(ev)
	maps.Copy(hs, cloudEventHeaders(ev, id))
	hs[HeaderEventID] = id
	if request != "" {
		hs[schemas.HeaderRequestID] = request
	}
	if !trace.IsZero() {
		hs[schemas.HeaderTraceParent] = trace.Parent
		if trace.State != "" {
			hs[schemas.HeaderTraceState] = trace.State
		}
	}
	keys := slices.Sorted(maps.Keys(hs))
	headers := make([]kafka.Header, 0, len(keys))
	for _, k := range keys {
		headers = append(headers, kafka.Header{Key: k, Value: []byte(hs[k])})
	}
	return kafka.Message{Key: []byte(ev.Batch()), Value: value, Headers: headers}, false, nil
}
