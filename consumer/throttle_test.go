package consumer

import (
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// A broker over a client's quota answers at once with a throttle time and
// mutes the connection for it (KIP-219): the client is to send it nothing
// more until the time has passed. The fetch loop ignored it and fetched
// again at once, which the broker holds unread until the throttle ends,
// past the fetch's own deadline when the throttle is longer.
func TestFetchWaitsOutTheBrokersThrottleTime(t *testing.T) {
	k := startKafka(t, topic(inTopic, 1), topic(dlqTopic, 1))
	if k.Fake == nil {
		t.Skip("needs kfake to answer a fetch in a broker's place")
	}
	const throttle = 1500 * time.Millisecond
	var (
		mu        sync.Mutex
		throttled time.Time // when the throttling answer went out
		next      time.Time // when the next fetch came
	)
	k.Fake.ControlKey(int16(kmsg.Fetch), func(req kmsg.Request) (kmsg.Response, error, bool) {
		k.Fake.KeepControl()
		mu.Lock()
		defer mu.Unlock()
		r := req.(*kmsg.FetchRequest)
		switch {
		case throttled.IsZero():
			resp := r.ResponseKind().(*kmsg.FetchResponse)
			resp.ThrottleMillis = int32(throttle / time.Millisecond)
			st := kmsg.NewFetchResponseTopic()
			st.Topic = r.Topics[0].Topic
			sp := kmsg.NewFetchResponseTopicPartition()
			sp.Partition = r.Topics[0].Partitions[0].Partition
			sp.HighWatermark, sp.LastStableOffset = 0, 0
			st.Partitions = append(st.Partitions, sp)
			resp.Topics = append(resp.Topics, st)
			throttled = time.Now()
			return resp, nil, true
		case next.IsZero():
			next = time.Now()
		}
		return nil, nil, false
	})
	produce(t, k, inTopic, 0, values("a")...)
	rec := newRecorder()
	startConsumer(t, testConfig(k, "throttle"), rec)
	eventually(t, "the record handled", func() bool { return len(handledValues(rec, 0)) >= 1 })
	mu.Lock()
	defer mu.Unlock()
	if throttled.IsZero() || next.IsZero() {
		t.Fatal("no fetch was throttled by the test")
	}
	if gap := next.Sub(throttled); gap < throttle {
		t.Errorf("the next fetch came %v after a throttle of %v", gap, throttle)
	}
}
