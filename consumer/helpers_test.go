package consumer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"sync"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/lakewap/lakewap/kafka"
	"github.com/lakewap/lakewap/kafka/kafkatest"
)

const (
	inTopic  = "in"
	dlqTopic = "dlq"
)

// startKafka returns the test's broker with topics created: kfake, or the
// real Kafka named by $LAKEWAP_TEST_KAFKA_BROKERS. Tests use base names
// (inTopic, group ids); k maps them to names unique on a shared broker.
func startKafka(t testing.TB, topics ...kafkatest.Topic) *kafkatest.Cluster {
	t.Helper()
	return kafkatest.Start(t, topics...)
}

// topic is a topic to create with partitions partitions.
func topic(name string, partitions int) kafkatest.Topic {
	return kafkatest.Topic{Name: name, Partitions: partitions}
}

func testLogger(t testing.TB) *slog.Logger {
	if os.Getenv("CONSUMER_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug - 4}))
	}
	return slog.New(slog.DiscardHandler)
}

func testConfig(k *kafkatest.Cluster, group string) Config {
	return Config{
		Brokers:           k.Brokers,
		GroupID:           k.Group(group),
		Topic:             k.Topic(inTopic),
		DeadLetterTopic:   k.Topic(dlqTopic),
		CommitInterval:    20 * time.Millisecond,
		HeartbeatInterval: 100 * time.Millisecond,
		SessionTimeout:    10 * time.Second,
		RebalanceTimeout:  10 * time.Second,
		JoinGroupBackoff:  100 * time.Millisecond,
		ShutdownGrace:     10 * time.Second,
		MinBackoff:        5 * time.Millisecond,
		MaxBackoff:        50 * time.Millisecond,
	}
}

// newClient returns a client with its own transport, so no metadata is
// cached across tests.
func newClient(brokers []string) *kafkago.Client {
	return &kafkago.Client{Addr: kafkago.TCP(brokers...), Timeout: 10 * time.Second, Transport: &kafkago.Transport{}}
}

// produce appends messages to one partition of k's topic (base name) and
// returns their offsets.
func produce(t testing.TB, k *kafkatest.Cluster, topic string, partition int, msgs ...kafkago.Message) []int64 {
	t.Helper()
	records := make([]kafkago.Record, len(msgs))
	for i, m := range msgs {
		records[i] = kafkago.Record{Key: kafkago.NewBytes(m.Key), Value: kafkago.NewBytes(m.Value), Headers: m.Headers, Time: m.Time}
	}
	topic = k.Topic(topic)
	res, err := newClient(k.Brokers).Produce(context.Background(), &kafkago.ProduceRequest{
		Topic: topic, Partition: partition, RequiredAcks: kafkago.RequireAll,
		Records: kafkago.NewRecordReader(records...),
	})
	if err == nil {
		err = res.Error
	}
	if err != nil {
		t.Fatalf("producing to %s/%d: %v", topic, partition, err)
	}
	offsets := make([]int64, len(msgs))
	for i := range msgs {
		offsets[i] = res.BaseOffset + int64(i)
	}
	return offsets
}

func values(vs ...string) []kafkago.Message {
	msgs := make([]kafkago.Message, len(vs))
	for i, v := range vs {
		msgs[i] = kafkago.Message{Key: []byte("k-" + v), Value: []byte(v)}
	}
	return msgs
}

// committed returns the group's committed offsets on topic (absent: none);
// group and topic are base names.
func committed(t testing.TB, k *kafkatest.Cluster, group, topic string, partitions int) map[int]int64 {
	t.Helper()
	ps := make([]int, partitions)
	for i := range ps {
		ps[i] = i
	}
	group, topic = k.Group(group), k.Topic(topic)
	res, err := newClient(k.Brokers).OffsetFetch(context.Background(), &kafkago.OffsetFetchRequest{
		GroupID: group, Topics: map[string][]int{topic: ps},
	})
	if err == nil {
		err = res.Error
	}
	if errors.Is(err, kafkago.GroupIdNotFound) {
		return map[int]int64{} // the group has not joined yet: nothing committed
	}
	// A broker still loading the group's coordinator (Apache Kafka, right
	// after the group's first join) answers this; the caller asks again.
	if errors.Is(err, kafkago.NotCoordinatorForGroup) || errors.Is(err, kafkago.GroupCoordinatorNotAvailable) || errors.Is(err, kafkago.GroupLoadInProgress) {
		return map[int]int64{}
	}
	if err != nil {
		t.Fatalf("fetching committed offsets: %v", err)
	}
	out := map[int]int64{}
	for _, p := range res.Topics[topic] {
		if p.CommittedOffset >= 0 {
			out[p.Partition] = p.CommittedOffset
		}
	}
	return out
}

// readPartition returns every record of topic/partition (base name) below
// its current high-water mark.
func readPartition(t testing.TB, k *kafkatest.Cluster, topic string, partition int) []kafkago.Message {
	t.Helper()
	ctx := context.Background()
	topic = k.Topic(topic)
	client := newClient(k.Brokers)
	lo, err := client.ListOffsets(ctx, &kafkago.ListOffsetsRequest{Topics: map[string][]kafkago.OffsetRequest{topic: {kafkago.LastOffsetOf(partition)}}})
	if err != nil {
		t.Fatalf("listing offsets: %v", err)
	}
	end := lo.Topics[topic][0].LastOffset
	var out []kafkago.Message
	for offset := kafkago.FirstOffset; offset < end; {
		fr, err := client.Fetch(ctx, &kafkago.FetchRequest{Topic: topic, Partition: partition, Offset: offset, MinBytes: 1, MaxBytes: 1 << 20, MaxWait: time.Second})
		if err == nil {
			err = fr.Error
		}
		if err != nil {
			t.Fatalf("fetching %s/%d@%d: %v", topic, partition, offset, err)
		}
		progressed := false
		for {
			r, err := fr.Records.ReadRecord()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("reading records: %v", err)
			}
			if r.Offset < offset {
				continue
			}
			m := kafkago.Message{Topic: topic, Partition: partition, Offset: r.Offset, Headers: r.Headers}
			if r.Key != nil {
				m.Key, _ = kafkago.ReadAll(r.Key)
			}
			if r.Value != nil {
				m.Value, _ = kafkago.ReadAll(r.Value)
			}
			out = append(out, m)
			offset = r.Offset + 1
			progressed = true
		}
		if !progressed {
			break
		}
	}
	return out
}

// eventually polls cond until it holds, failing the test after a generous
// deadline: these wait on broker-side state that has no notification.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(45 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// recorder is a Handler that records what it was asked to do; behaviour is
// plugged in per test.
type recorder struct {
	mu       sync.Mutex
	calls    map[int][]int64 // every Handle call, per partition
	handled  map[int][]string
	offsets  map[int][]int64 // offsets whose Handle returned nil
	events   []string        // assigned:p, revoked:p, handled:p:off in order
	assigned map[int]int     // Assigned successes per partition
	live     map[int]bool    // assigned and not yet revoked

	onAssigned func(ctx context.Context, p int) error
	onHandle   func(ctx context.Context, msg kafka.Message) error
}

func newRecorder() *recorder {
	return &recorder{calls: map[int][]int64{}, handled: map[int][]string{}, offsets: map[int][]int64{}, assigned: map[int]int{}, live: map[int]bool{}}
}

func (r *recorder) Assigned(ctx context.Context, p int, _ func(time.Time) bool) error {
	if r.onAssigned != nil {
		if err := r.onAssigned(ctx, p); err != nil {
			return err
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.assigned[p]++
	r.live[p] = true
	r.events = append(r.events, fmt.Sprintf("assigned:%d", p))
	return nil
}

func (r *recorder) Handle(ctx context.Context, msg kafka.Message) error {
	r.mu.Lock()
	r.calls[msg.Partition] = append(r.calls[msg.Partition], msg.Offset)
	r.mu.Unlock()
	var err error
	if r.onHandle != nil {
		err = r.onHandle(ctx, msg)
	}
	if err == nil {
		r.mu.Lock()
		r.handled[msg.Partition] = append(r.handled[msg.Partition], string(msg.Value))
		r.offsets[msg.Partition] = append(r.offsets[msg.Partition], msg.Offset)
		r.events = append(r.events, fmt.Sprintf("handled:%d:%d", msg.Partition, msg.Offset))
		r.mu.Unlock()
	}
	return err
}

func (r *recorder) Revoked(p int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.live, p)
	r.events = append(r.events, fmt.Sprintf("revoked:%d", p))
}

func (r *recorder) liveSet() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ps []int
	for p := range r.live {
		ps = append(ps, p)
	}
	slices.Sort(ps)
	return ps
}

func (r *recorder) handledOffsets(p int) []int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.offsets[p])
}

func (r *recorder) handleCalls(p int) []int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls[p])
}

func (r *recorder) totalHandled() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, o := range r.offsets {
		n += len(o)
	}
	return n
}

func (r *recorder) eventLog() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

// running is a Consumer whose Run goroutine the test controls.
type running struct {
	*Consumer
	cancel context.CancelFunc
	done   chan struct{} // closed when Run returned
	err    error         // what Run returned
}

// stop cancels Run and waits for it to return.
func (r *running) stop(t testing.TB) {
	t.Helper()
	r.cancel()
	select {
	case <-r.done:
		if r.err != nil {
			t.Errorf("Run returned %v", r.err)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("Run did not return after cancel")
	}
}

func startConsumer(t testing.TB, cfg Config, h Handler) *running {
	t.Helper()
	return startConsumerLogging(t, cfg, h, testLogger(t))
}

// startConsumerLogging is startConsumer with the consumer's logger.
func startConsumerLogging(t testing.TB, cfg Config, h Handler, log *slog.Logger) *running {
	t.Helper()
	c, err := New(cfg, h, log)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{Consumer: c, cancel: cancel, done: make(chan struct{})}
	go func() {
		r.err = c.Run(ctx)
		close(r.done)
	}()
	t.Cleanup(func() {
		cancel()
		<-r.done
	})
	return r
}

// ownProcessEnv names the test a child process of the test binary runs
// alone (inOwnProcess).
const ownProcessEnv = "LAKEWAP_CONSUMER_TEST_OWN_PROCESS"

// inOwnProcess runs t again in a process of the test binary of its own,
// and reports that run's outcome as t's: it returns false then, and true
// in the child, which does the work. A test that measures the live heap
// measures its own consumer only there: in the package's process, the
// heap also held what earlier tests' consumers, connections and buffers
// had not let go of yet (or let go of during the measure), and the same
// bound failed one run in several on Apache Kafka and passed the next.
func inOwnProcess(t *testing.T) bool {
	t.Helper()
	if os.Getenv(ownProcessEnv) == t.Name() {
		return true
	}
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^"+regexp.QuoteMeta(t.Name())+"$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), ownProcessEnv+"="+t.Name())
	out, err := cmd.CombinedOutput()
	switch {
	case err != nil:
		t.Fatalf("%s in a process of its own: %v\n%s", t.Name(), err, out)
	case bytes.Contains(out, []byte("--- SKIP: "+t.Name())):
		t.Skipf("skipped in a process of its own:\n%s", out)
	case !bytes.Contains(out, []byte("--- PASS: "+t.Name())):
		t.Fatalf("%s in a process of its own did not pass:\n%s", t.Name(), out)
	}
	t.Logf("in a process of its own:\n%s", out)
	return false
}
