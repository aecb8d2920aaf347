package tests

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/lakewap/lakewap/kafka"

	"github.com/lakewap/lakewap/consumer"
	"github.com/lakewap/lakewap/ingest"
	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/internal/harness"
	"github.com/lakewap/lakewap/schemas"
	"github.com/lakewap/lakewap/schemas/registrytest"
)

// headerTestCase names a bad message's case; dead letters keep the original
// headers, so it finds the case of each dead letter.
const headerTestCase = "test.case"

// badInput is a message upstream should not have sent, and the dead letter
// lakewap must make of it.
type badInput struct {
	name    string
	key     string
	value   []byte
	headers map[string]string
	reason  string // wap.dlq.reason
	errText string // in wap.dlq.error
	// abortedDetail, when set, is in the Detail of the BatchAborted
	// (reason invalid) that must be emitted for key.
	abortedDetail string
}

func (b badInput) message() kafka.Message {
	m := kafka.Message{Key: []byte(b.key), Value: b.value,
		Headers: []kafka.Header{{Key: headerTestCase, Value: []byte(b.name)}}}
	for k, v := range b.headers {
		m.Headers = append(m.Headers, kafka.Header{Key: k, Value: []byte(v)})
	}
	return m
}

func encodeEvent(t *testing.T, c *schemas.Codec, ev schemas.Event) []byte {
	t.Helper()
	v, err := c.Encode(context.Background(), "any", ev)
	must(t, err)
	return v
}

// eventHeaders are the headers upstream sends with ev.
func eventHeaders(ev schemas.Event) map[string]string { return schemas.Headers(ev) }

// TestEndToEndDeadLetters sends a burst of undecodable, wrong-schema,
// mislabelled and invalid messages between the events of two good batches,
// some on the good batches' partitions (same key). Every bad message ends in
// the dead-letter topic with its original key, value and headers and the
// reason and error, invalid events of a nameable batch abort that batch
// (reason invalid), and both good batches are published.
func TestEndToEndDeadLetters(t *testing.T) {
	e := startE2E(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	now := time.Now().UTC().Truncate(time.Millisecond)
	landed := func(batch, dataset string) schemas.BatchLanded {
		return schemas.BatchLanded{BatchID: batch, Dataset: dataset, ExpectedWrites: []string{"billing_fact"}, Producer: "e2e", OccurredAt: now}
	}
	good := landed("good-a", "billing")
	goodValue := encodeEvent(t, e.Codec, good)
	body := goodValue[10:] // after C3 01 and the fingerprint
	ready := schemas.BranchReady{BatchID: "stray-1", Dataset: "billing", Repository: "lake", Branch: "wap-billing-stray-1",
		ExpectedWrites: []string{"billing_fact"}, OccurredAt: now}
	mislabelled := landed("mislabelled-1", "billing")
	unknownDataset := landed("inv-ds", "nope")
	emptyWrite := schemas.WriteComplete{BatchID: "inv-write", Dataset: "billing", Write: "", OccurredAt: now}
	spaced := landed("bad batch", "billing")
	future := landed("inv-future", "billing")
	future.OccurredAt = now.Add(72 * time.Hour)
	confluentNoRegistry := append([]byte{0, 0, 0, 0, 42}, body...)
	unknownFP := append([]byte{0xC3, 0x01, 1, 2, 3, 4, 5, 6, 7, 8}, body...)

	burstA := []badInput{
		{name: "garbage", key: "good-a", value: []byte("this is not Avro at all"), reason: schemas.DecodeUnknownMagic, errText: "first byte 74"},
		{name: "empty", key: "good-b", value: nil, reason: schemas.DecodeTruncated, errText: "empty value"},
		{name: "truncated", key: "good-a", value: goodValue[:len(goodValue)-4], headers: eventHeaders(good), reason: schemas.DecodeTruncated, errText: "BatchLanded body"},
		{name: "header-only", key: "good-b", value: []byte{0xC3, 0x01, 0xAA}, reason: schemas.DecodeTruncated, errText: "single-object header"},
		{name: "unknown-fingerprint", key: "x-1", value: unknownFP, headers: eventHeaders(good), reason: schemas.DecodeUnknownFingerprint, errText: "0807060504030201"},
		{name: "confluent-without-registry", key: "x-2", value: confluentNoRegistry, reason: schemas.DecodeUnknownSchemaID, errText: "schema id 42"},
		{name: "trailing-bytes", key: "good-a", value: append(append([]byte{}, goodValue...), 0), reason: schemas.DecodeMalformed, errText: "trailing bytes"},
	}
	burstB := []badInput{
		{name: "result-event", key: "stray-1", value: encodeEvent(t, e.Codec, ready), headers: eventHeaders(ready),
			reason: ingest.ReasonUnexpectedType, errText: "BranchReady is not an input event"},
		{name: "type-mismatch", key: "mislabelled-1", value: encodeEvent(t, e.Codec, mislabelled),
			headers: map[string]string{schemas.HeaderEventType: schemas.TypeWriteComplete, schemas.HeaderBatchID: "mislabelled-1"},
			reason:  ingest.ReasonTypeMismatch, errText: `header wap.event_type says "WriteComplete", value is BatchLanded`},
		{name: "unknown-dataset", key: "inv-ds", value: encodeEvent(t, e.Codec, unknownDataset), headers: eventHeaders(unknownDataset),
			// Not a configured dataset: the dead letter is its only outcome.
			reason: schemas.ReasonInvalid, errText: `dataset: "nope" is not a configured dataset`},
		{name: "empty-write", key: "inv-write", value: encodeEvent(t, e.Codec, emptyWrite), headers: eventHeaders(emptyWrite),
			reason: schemas.ReasonInvalid, errText: "write: is empty", abortedDetail: "write: is empty"},
		{name: "batch-id-with-space", key: "bad batch", value: encodeEvent(t, e.Codec, spaced), headers: eventHeaders(spaced),
			reason: schemas.ReasonInvalid, errText: "batch_id: contains ' '"},
		{name: "key-not-batch-id", key: "some-other-key", value: encodeEvent(t, e.Codec, landed("rekeyed-1", "billing")), headers: eventHeaders(landed("rekeyed-1", "billing")),
			reason: ingest.ReasonKeyMismatch, errText: `message key "some-other-key" is not the batch id "rekeyed-1"`},
		{name: "from-the-future", key: "inv-future", value: encodeEvent(t, e.Codec, future), headers: eventHeaders(future),
			reason: schemas.ReasonInvalid, errText: "occurred_at", abortedDetail: "in the future"},
	}
	send := func(bad []badInput) {
		t.Helper()
		for _, b := range bad {
			must(t, e.Writer.Write(ctx, b.message()))
		}
	}

	send(burstA)
	batches := []struct{ id, rows string }{
		{"good-a", harness.GoodBillingRows},
		{"good-b", strings.Replace(harness.GoodBillingRows, "lpad(i::VARCHAR", "lpad((700000 + i)::VARCHAR", 1)},
	}
	for _, b := range batches {
		must(t, e.Produce(ctx, landed(b.id, "billing")))
	}
	send(burstB)
	for _, b := range batches {
		ev, err := e.Watcher.Await(ctx, b.id, schemas.TypeBranchReady)
		must(t, err)
		path := "gold/billing_fact/batch=" + b.id + "/part-0.parquet"
		must(t, e.WriteParquet(ctx, ev.(schemas.BranchReady).Branch, path, b.rows))
		must(t, e.Produce(ctx, schemas.WriteComplete{BatchID: b.id, Dataset: "billing", Write: "billing_fact",
			Paths: []string{path}, OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
	}
	for _, b := range batches {
		ev, err := e.Watcher.Await(ctx, b.id, schemas.TypeBatchPublished, schemas.TypeBatchAborted, schemas.TypeBatchFailed)
		must(t, err)
		if ev.EventType() != schemas.TypeBatchPublished {
			t.Errorf("good batch %s ended with %+v", b.id, ev)
		}
	}

	all := append(append([]badInput{}, burstA...), burstB...)
	letters := readTopicUntil(ctx, t, e.Stack.KafkaBrokers, e.cfg.Kafka.DeadLetterTopic, len(all))
	byCase := map[string]kafka.Message{}
	for _, m := range letters {
		name, _ := kafka.HeaderValue(m.Headers, headerTestCase)
		if _, dup := byCase[name]; dup || name == "" {
			t.Errorf("unexpected dead letter (case %q, key %q, reason %q)", name, m.Key, headerOf(m, consumer.HeaderDLQReason))
		}
		byCase[name] = m
	}
	for _, b := range all {
		t.Run(b.name, func(t *testing.T) {
			m, ok := byCase[b.name]
			if !ok {
				t.Fatalf("not in the dead-letter topic")
			}
			if string(m.Key) != b.key || !bytes.Equal(m.Value, b.value) {
				t.Errorf("dead letter key %q value %x, want the original %q %x", m.Key, m.Value, b.key, b.value)
			}
			for k, v := range b.headers {
				if got := headerOf(m, k); got != v {
					t.Errorf("original header %s = %q, want %q", k, got, v)
				}
			}
			if got := headerOf(m, consumer.HeaderDLQReason); got != b.reason {
				t.Errorf("%s = %q, want %q", consumer.HeaderDLQReason, got, b.reason)
			}
			if got := headerOf(m, consumer.HeaderDLQError); !strings.Contains(got, b.errText) || strings.Contains(got, "poison message") {
				t.Errorf("%s = %q, want it to say %q (and not the wrapping)", consumer.HeaderDLQError, got, b.errText)
			}
			if got := headerOf(m, consumer.HeaderDLQTopic); got != e.cfg.Kafka.InputTopic {
				t.Errorf("%s = %q, want %q", consumer.HeaderDLQTopic, got, e.cfg.Kafka.InputTopic)
			}
			p, perr := strconv.Atoi(headerOf(m, consumer.HeaderDLQPartition))
			off, oerr := strconv.ParseInt(headerOf(m, consumer.HeaderDLQOffset), 10, 64)
			if perr != nil || oerr != nil {
				t.Fatalf("partition/offset headers %q %q", headerOf(m, consumer.HeaderDLQPartition), headerOf(m, consumer.HeaderDLQOffset))
			}
			// The partition and offset point at the original message.
			orig := readAt(ctx, t, e.Stack.KafkaBrokers, e.cfg.Kafka.InputTopic, p, off)
			if name, _ := kafka.HeaderValue(orig.Headers, headerTestCase); name != b.name {
				t.Errorf("input %d/%d is case %q, want %q", p, off, name, b.name)
			}
			if b.abortedDetail != "" {
				ev, err := e.Watcher.Await(ctx, b.key, schemas.TypeBatchAborted)
				must(t, err)
				if ab := ev.(schemas.BatchAborted); ab.Reason != schemas.ReasonInvalid || !strings.Contains(ab.Detail, b.abortedDetail) {
					t.Errorf("BatchAborted = %+v, want reason invalid saying %q", ab, b.abortedDetail)
				}
			} else if evs := e.Watcher.All(b.key); len(evs) > 0 && b.key != "good-a" && b.key != "good-b" {
				t.Errorf("result events for %q: %+v, want none", b.key, evs)
			}
		})
	}
}

// TestEndToEndSchemaRegistry runs producer and daemon in the Confluent wire
// format against a fake registry: schemas are registered on produce and
// looked up by id on consume; an id the registry does not know is a dead
// letter, and while the registry is down the message waits (no dead letter)
// and is handled once it is back.
func TestEndToEndSchemaRegistry(t *testing.T) {
	reg := registrytest.New(t)
	proxy := newRequestTap(t, reg.URL)
	e := startE2E(t, func(c *config.Config) { c.Kafka.SchemaRegistry = proxy.URL })
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	if ev := e.runBatch(t, "reg-1", harness.GoodBillingRows); ev.EventType() != schemas.TypeBatchPublished {
		t.Fatalf("reg-1 ended with %+v", ev)
	}
	subjects := reg.Subjects()
	for _, s := range []string{
		e.cfg.Kafka.InputTopic + "-io.lakewap.events.BatchLanded", e.cfg.Kafka.InputTopic + "-io.lakewap.events.WriteComplete",
		e.cfg.Kafka.ResultsTopic + "-io.lakewap.events.BranchReady", e.cfg.Kafka.ResultsTopic + "-io.lakewap.events.BatchPublished",
	} {
		if len(subjects[s]) != 1 {
			t.Errorf("subject %s has ids %v, want one; subjects: %v", s, subjects[s], subjects)
		}
	}
	// Producer and daemon each register what they send and look up what
	// they receive: at least one lookup each way.
	if n := reg.Requests("get"); n < 2 {
		t.Errorf("%d schema lookups by id, want at least 2", n)
	}
	for _, topic := range []string{e.cfg.Kafka.InputTopic, e.cfg.Kafka.ResultsTopic} {
		for _, m := range readTopicUntil(ctx, t, e.Stack.KafkaBrokers, topic, 2) {
			if len(m.Value) < 5 || m.Value[0] != 0 {
				t.Errorf("%s/%d@%d is not in the Confluent wire format: % x", topic, m.Partition, m.Offset, m.Value[:min(len(m.Value), 8)])
			}
		}
	}

	now := time.Now().UTC().Truncate(time.Millisecond)
	frame := func(id int, ev schemas.Event) []byte {
		v := encodeEvent(t, e.Codec, ev) // Confluent: 00, id, body
		out := []byte{0, 0, 0, 0, 0}
		binary.BigEndian.PutUint32(out[1:], uint32(id))
		return append(out, v[5:]...)
	}
	// An id the registry never issued: a dead letter.
	unknown := schemas.BatchLanded{BatchID: "reg-unknown", Dataset: "billing", ExpectedWrites: []string{"billing_fact"}, OccurredAt: now}
	must(t, e.Writer.Write(ctx, kafka.Message{Key: []byte("reg-unknown"), Value: frame(99999, unknown)}))
	dl := readTopicUntil(ctx, t, e.Stack.KafkaBrokers, e.cfg.Kafka.DeadLetterTopic, 1)
	if len(dl) != 1 || string(dl[0].Key) != "reg-unknown" || headerOf(dl[0], consumer.HeaderDLQReason) != schemas.DecodeUnknownSchemaID {
		t.Fatalf("dead letters %v, want reg-unknown with reason %s", dl, schemas.DecodeUnknownSchemaID)
	}

	// The same schema registered again under a new id (another producer's
	// subject): the daemon has to look it up, and the registry is down.
	text, err := schemas.SchemaText(schemas.TypeBatchLanded)
	must(t, err)
	id := reg.Register("other-producer-value", text+" ")
	lookups := proxy.watch(fmt.Sprintf("/schemas/ids/%d", id))
	reg.FailWith(http.StatusServiceUnavailable)
	waiting := schemas.BatchLanded{BatchID: "reg-2", Dataset: "billing", ExpectedWrites: []string{"billing_fact"}, OccurredAt: now}
	must(t, e.Writer.Write(ctx, kafka.Message{Key: []byte("reg-2"), Value: frame(id, waiting)}))
	for i := 0; i < 2; i++ { // asked, then asked again
		select {
		case <-lookups:
		case <-ctx.Done():
			t.Fatalf("the daemon did not look up schema %d twice while the registry was down", id)
		}
	}
	reg.FailWith(0)
	// Handled, so not dead-lettered: the partition waited for the registry.
	if _, err := e.Watcher.Await(ctx, "reg-2", schemas.TypeBranchReady); err != nil {
		t.Fatalf("after the registry came back: %v", err)
	}
}

// requestTap is a reverse proxy in front of a server that reports the
// paths of the requests it forwards.
type requestTap struct {
	*httptest.Server
	mu       sync.Mutex
	watchers map[string]chan struct{}
}

func newRequestTap(t *testing.T, target string) *requestTap {
	u, err := url.Parse(target)
	must(t, err)
	tap := &requestTap{watchers: map[string]chan struct{}{}}
	rp := httputil.NewSingleHostReverseProxy(u)
	tap.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tap.mu.Lock()
		ch := tap.watchers[r.URL.Path]
		tap.mu.Unlock()
		rp.ServeHTTP(w, r)
		if ch != nil {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}))
	t.Cleanup(tap.Close)
	return tap
}

// watch returns a channel that receives after each request for path.
func (p *requestTap) watch(path string) <-chan struct{} {
	ch := make(chan struct{}, 16)
	p.mu.Lock()
	p.watchers[path] = ch
	p.mu.Unlock()
	return ch
}

func headerOf(m kafka.Message, key string) string {
	v, _ := kafka.HeaderValue(m.Headers, key)
	return v
}

// readTopicUntil reads every partition of topic from the start until it
// has n messages, and returns all it read by then.
func readTopicUntil(ctx context.Context, t *testing.T, brokers []string, topic string, n int) []kafka.Message {
	t.Helper()
	conn, err := kafkago.DialContext(ctx, "tcp", brokers[0])
	must(t, err)
	parts, err := conn.ReadPartitions(topic)
	conn.Close()
	must(t, err)
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex
	var got []kafka.Message
	enough := make(chan struct{})
	var wg sync.WaitGroup
	for _, p := range parts {
		r := kafkago.NewReader(kafkago.ReaderConfig{Brokers: brokers, Topic: topic, Partition: p.ID, MinBytes: 1, MaxBytes: 10 << 20, MaxWait: 50 * time.Millisecond})
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer r.Close()
			for {
				m, err := r.ReadMessage(rctx)
				if err != nil {
					return
				}
				mu.Lock()
				if got = append(got, kafka.FromWire(m)); len(got) == n {
					close(enough)
				}
				mu.Unlock()
			}
		}()
	}
	select {
	case <-enough:
	case <-ctx.Done():
		cancel()
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		var seen []string
		for _, m := range got {
			seen = append(seen, fmt.Sprintf("%d/%d key=%q case=%q reason=%q", m.Partition, m.Offset, m.Key,
				headerOf(m, headerTestCase), headerOf(m, consumer.HeaderDLQReason)))
		}
		t.Fatalf("%s: %d messages, want %d:\n%s", topic, len(got), n, strings.Join(seen, "\n"))
	}
	cancel()
	wg.Wait()
	return got
}

// readAt reads the message at partition/offset of topic.
func readAt(ctx context.Context, t *testing.T, brokers []string, topic string, partition int, offset int64) kafka.Message {
	t.Helper()
	r := kafkago.NewReader(kafkago.ReaderConfig{Brokers: brokers, Topic: topic, Partition: partition, MinBytes: 1, MaxBytes: 10 << 20, MaxWait: 50 * time.Millisecond})
	defer r.Close()
	must(t, r.SetOffset(offset))
	m, err := r.ReadMessage(ctx)
	must(t, err)
	return kafka.FromWire(m)
}
