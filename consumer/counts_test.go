package consumer

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/lakewap/lakewap/kafka"
)

// The partition counts the consumer gives (Partitions) decide where a
// batch's run lives: ingest dead-letters an event or a request on another
// partition than its key's (wrong_partition), and the changelog's restore
// sets aside a record copied to another partition, but only when the count
// is known (0: unknown, nothing checked). The counts were read once at a
// generation's start, and a failed read was only logged: for the whole
// generation a BatchLanded copied to another partition started a second run
// of its batch. A partition is now handled only once the counts are known.
func TestPartitionCountsAreKnownBeforeAnyMessage(t *testing.T) {
	k := startKafka(t, topic(inTopic, 4), topic(dlqTopic, 1))
	if k.Fake == nil {
		t.Skip("needs kfake to fail a metadata request")
	}
	// The first metadata request after the group's sync (the consumer's
	// read of the counts) fails.
	var synced atomic.Bool
	var failures atomic.Int32
	k.Fake.ControlKey(int16(kmsg.SyncGroup), func(kmsg.Request) (kmsg.Response, error, bool) {
		k.Fake.KeepControl()
		synced.Store(true)
		return nil, nil, false
	})
	k.Fake.ControlKey(int16(kmsg.Metadata), func(kmsg.Request) (kmsg.Response, error, bool) {
		k.Fake.KeepControl()
		if synced.Load() && failures.Add(1) <= 5 {
			return nil, errors.New("metadata refused by the test"), true
		}
		return nil, nil, false
	})
	cfg := testConfig(k, "counts")
	cfg.Registerer = prometheus.NewRegistry()
	rec := newRecorder()
	var (
		mu    sync.Mutex
		seen  []int
		run   atomic.Pointer[running]
		ready = make(chan struct{})
	)
	rec.onHandle = func(_ context.Context, m kafka.Message) error {
		<-ready // run is stored
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, run.Load().Partitions(k.Topic(inTopic)))
		return nil
	}
	// Produced before the consumer starts: the refused metadata requests
	// are the consumer's, not the test producer's.
	produce(t, k, inTopic, 0, values("one")...)
	run.Store(startConsumer(t, cfg, rec))
	close(ready)
	eventually(t, "the message handled", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(seen) == 1
	})
	if failures.Load() == 0 {
		t.Fatal("no metadata request failed: the test did not test anything")
	}
	mu.Lock()
	defer mu.Unlock()
	if seen[0] != 4 {
		t.Errorf("the handler ran with the input topic's partition count %d known; want 4", seen[0])
	}
}
