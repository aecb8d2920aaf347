package notify

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/lakewap/lakewap/kafka"
	"github.com/lakewap/lakewap/kafka/kafkatest"
	"github.com/lakewap/lakewap/schemas"
)

// startKafka returns a broker with a one-partition results topic: kfake on
// a free 127.0.0.1 port, or the real Kafka named by
// $LAKEWAP_TEST_KAFKA_BROKERS (k.Topic(DefaultResultsTopic) is then unique
// to the test).
func startKafka(t *testing.T) *kafkatest.Cluster {
	t.Helper()
	return kafkatest.Start(t, kafkatest.Topic{Name: DefaultResultsTopic, Partitions: 1})
}

func newTestKafkaSink(t *testing.T, kc *kafkatest.Cluster) (*KafkaResults, *schemas.Codec) {
	t.Helper()
	codec, err := schemas.NewCodec(schemas.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// A private transport: the default one caches a broker's topics for
	// seconds, longer than a test lasts on a shared broker.
	client, err := kafka.NewClient(kc.Brokers, kafka.Security{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	w := client.Writer(kafka.WriterConfig{Topic: kc.Topic(DefaultResultsTopic), Attempts: 3})
	t.Cleanup(func() { _ = w.Close() })
	k, err := NewKafkaResults(w, codec)
	if err != nil {
		t.Fatal(err)
	}
	return k, codec
}

// readResults reads every message on the results topic, as a downstream
// consumer would, and checks nothing follows them.
func readResults(t *testing.T, k *kafkatest.Cluster, want int) []kafkago.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	topic := k.Topic(DefaultResultsTopic)
	conn, err := kafkago.DialLeader(ctx, "tcp", k.Brokers[0], topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	last, err := conn.ReadLastOffset()
	if err != nil {
		t.Fatal(err)
	}
	if last != int64(want) {
		t.Fatalf("results topic holds %d messages, want %d", last, want)
	}
	r := kafkago.NewReader(kafkago.ReaderConfig{Brokers: k.Brokers, Topic: topic, Partition: 0, MaxWait: 100 * time.Millisecond})
	defer r.Close()
	var out []kafkago.Message
	for range want {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			t.Fatalf("read result %d: %v", len(out), err)
		}
		out = append(out, m)
	}
	return out
}

func header(m kafkago.Message, key string) string {
	for _, h := range m.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

func TestKafkaResultsForEachOutcome(t *testing.T) {
	k := startKafka(t)
	sink, codec := newTestKafkaSink(t, k)
	d, _, _ := newTestDispatcher(t, nil, []Sink{sink}, Options{})
	ctx := context.Background()

	timedOut := timedOutEvent()
	timedOut.BatchID = "b-43" // another batch: results are keyed by batch
	sent := []schemas.Event{readyEvent(), publishedEvent(), abortedAuditEvent(), &timedOut, failedEvent()}
	states := []string{schemas.StateAwaitingWrites, schemas.StatePublished, schemas.StateAborted, schemas.StateAborted, schemas.StateFailed}
	// Every other batch came with a trace context from its producer.
	trace := func(i int) schemas.TraceContext {
		if i%2 == 1 {
			return schemas.TraceContext{}
		}
		return schemas.TraceContext{Parent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", State: "rojo=00f067aa0ba902b7"}
	}
	for i, ev := range sent {
		n := note(ev, states[i])
		n.Trace = trace(i)
		receipts, err := d.Notify(ctx, n)
		if err != nil {
			t.Fatalf("Notify %s: %v", ev.EventType(), err)
		}
		if receipts["kafka"] != EventID(ev) {
			t.Errorf("%s: receipt %q, want the event id %q", ev.EventType(), receipts["kafka"], EventID(ev))
		}
		// Replaying with the receipts (a restart) and a state change with no
		// event write nothing more.
		n.Receipts = receipts
		if _, err := d.Notify(ctx, n); err != nil {
			t.Fatal(err)
		}
		if _, err := d.Notify(ctx, note(nil, schemas.StateAuditing)); err != nil {
			t.Fatal(err)
		}
	}

	got := readResults(t, k, len(sent))
	for i, m := range got {
		want := deref(sent[i])
		if string(m.Key) != want.Batch() {
			t.Errorf("message %d key %q, want batch id %q", i, m.Key, want.Batch())
		}
		if h := header(m, schemas.HeaderEventType); h != want.EventType() {
			t.Errorf("message %d %s header %q, want %q", i, schemas.HeaderEventType, h, want.EventType())
		}
		if h := header(m, HeaderEventID); h != EventID(want) {
			t.Errorf("message %d %s header %q, want %q", i, HeaderEventID, h, EventID(want))
		}
		if tp, ts := header(m, "traceparent"), header(m, "tracestate"); tp != trace(i).Parent || ts != trace(i).State {
			t.Errorf("message %d traceparent %q tracestate %q, want %+v", i, tp, ts, trace(i))
		}
		ce := map[string]string{
			HeaderCESpecVersion: "1.0",
			HeaderCEID:          EventID(want),
			HeaderCEType:        "io.lakewap.events." + want.EventType(),
			HeaderCESource:      "/lakewap/" + want.DatasetName(),
			HeaderCESubject:     want.DatasetName() + "/" + want.Batch(),
			HeaderContentType:   "application/avro",
		}
		for k, v := range ce {
			if h := header(m, k); h != v {
				t.Errorf("message %d %s header %q, want %q", i, k, h, v)
			}
		}
		if ts, err := time.Parse(time.RFC3339Nano, header(m, HeaderCETime)); err != nil || !ts.Equal(eventTime(want).Truncate(time.Millisecond)) || ts.IsZero() {
			t.Errorf("message %d %s header %q (%v), want the event's time %v", i, HeaderCETime, header(m, HeaderCETime), err, eventTime(want))
		}
		dec, err := codec.Decode(ctx, m.Value)
		if err != nil {
			t.Fatalf("message %d does not decode with the published schemas: %v", i, err)
		}
		// Compared as JSON: Avro gives empty lists where Go had nil.
		gotJSON, _ := json.Marshal(deref(dec))
		wantJSON, _ := json.Marshal(want)
		if reflect.TypeOf(deref(dec)) != reflect.TypeOf(want) || string(gotJSON) != string(wantJSON) {
			t.Errorf("message %d decodes to\n%T %s\nwant\n%T %s", i, deref(dec), gotJSON, want, wantJSON)
		}
	}
}

// failingWriter stands in for a Kafka cluster that refuses writes.
type failingWriter struct {
	err   error
	calls int
}

func (f *failingWriter) Write(context.Context, ...kafka.Message) error {
	f.calls++
	return f.err
}

type jsonlessEncoder struct{ err error }

func (e jsonlessEncoder) Encode(context.Context, string, schemas.Event) ([]byte, error) {
	return []byte("v"), e.err
}

// Kafka is required: when it cannot be written Notify fails, while Slack
// still gets its message.
func TestKafkaFailureFailsNotifyButNotSlack(t *testing.T) {
	ws := newWorkspace(t)
	fw := &failingWriter{err: kafkago.LeaderNotAvailable}
	k := &KafkaResults{name: "kafka", topic: DefaultResultsTopic, w: fw, enc: jsonlessEncoder{}}
	d, clock, _ := newTestDispatcher(t, []Route{{Sink: "slack"}}, []Sink{k, newTestSlack(t, ws, "slack", "#wap")},
		Options{RequiredBudget: 10 * time.Second, MinBackoff: time.Second, MaxBackoff: 4 * time.Second})
	receipts, err := d.Notify(context.Background(), note(publishedEvent(), schemas.StatePublished))
	if !errors.Is(err, ErrUndelivered) || !errors.Is(err, kafkago.LeaderNotAvailable) {
		t.Fatalf("Notify error %v, want ErrUndelivered wrapping the broker error", err)
	}
	if fw.calls < 2 || clock.Waited() > 10*time.Second {
		t.Errorf("%d attempts over %v; want retries within the 10s budget", fw.calls, clock.Waited())
	}
	if _, ok := receipts["kafka"]; ok {
		t.Errorf("receipts %v record an undelivered event", receipts)
	}
	if len(ws.topLevel()) != 1 || receipts["slack"] == "" {
		t.Errorf("Slack was not notified while Kafka failed: receipts %v", receipts)
	}
}

func TestKafkaErrorClasses(t *testing.T) {
	cases := []struct {
		name      string
		write     error
		encode    error
		wantRetry bool
	}{
		{"temporary broker error", kafkago.NotLeaderForPartition, nil, true},
		{"message too large", kafkago.MessageSizeTooLarge, nil, false},
		{"write errors, one temporary", kafkago.WriteErrors{kafkago.MessageSizeTooLarge, kafkago.RequestTimedOut}, nil, true},
		{"deadline", context.DeadlineExceeded, nil, true},
		{"shutting down", context.Canceled, nil, false},
		{"encoder rejects the event", nil, &schemas.EncodeError{Reason: "invalid", Err: errors.New("bad")}, false},
		{"registry unreachable", nil, &schemas.EncodeError{Reason: schemas.EncodeRegistryUnavailable, Err: errors.New("down")}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			k := &KafkaResults{name: "kafka", topic: DefaultResultsTopic, w: &failingWriter{err: tc.write}, enc: jsonlessEncoder{err: tc.encode}}
			_, retry, err := k.Send(context.Background(), note(failedEvent(), schemas.StateFailed))
			if err == nil || retry != tc.wantRetry {
				t.Errorf("Send: err %v retry %v, want an error with retry %v", err, retry, tc.wantRetry)
			}
		})
	}
}

// A results topic whose max.message.bytes an operator lowered under what
// lakewap needs refuses even the shrunk event: the error names the topic,
// the limit to raise and the bytes refused, so the retry loop's log says
// what to do (the event stays in the outbox: nothing lost).
func TestResultsTopicTooSmallAfterStartSaysWhatToRaise(t *testing.T) {
	kc := kafkatest.Start(t, kafkatest.Topic{Name: DefaultResultsTopic, Partitions: 1, Configs: map[string]string{"max.message.bytes": "100"}})
	k, _ := newTestKafkaSink(t, kc)
	n := note(publishedEvent(), schemas.StatePublished)
	_, _, err := k.Send(context.Background(), n)
	if err == nil {
		t.Fatal("a topic of 100 bytes took the result event")
	}
	for _, want := range []string{kc.Topic(DefaultResultsTopic), "max.message.bytes", "refused", "raise"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}
