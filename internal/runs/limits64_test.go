package runs

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/lakewap/lakewap/consumer"
	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/kafka/kafkatest"
	"github.com/lakewap/lakewap/pipeline"
)

func heapAfterGC() int {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int(m.HeapAlloc)
}

// `lakewap runs` reads wap.runs unchecked: whoever may write the topic
// leaves records there that count until the daemon's next restore deletes
// them. 96 MiB of records that decode as runs (a 128 KiB reason each) were
// all held while listing, and in the answer; the listing now holds at most
// its budget and stops naming it.
func TestLimits64RunsListingHoldsWithinItsBudget(t *testing.T) {
	k := kafkatest.StartFake(t)
	ctx := context.Background()
	topic := k.Topic(consumer.DefaultChangelogTopic)
	if err := k.CreateTopics(ctx, kafkatest.Topic{Name: topic, Partitions: 2, Configs: map[string]string{"cleanup.policy": "compact"}}); err != nil {
		t.Fatal(err)
	}
	cl, err := consumer.NewChangelog(consumer.ChangelogConfig{Brokers: k.Brokers, Topic: topic, Transport: &kafkago.Transport{}})
	if err != nil {
		t.Fatal(err)
	}
	honest := pipeline.Run{BatchID: "b-1", Dataset: "orders", State: pipeline.StatePublished}
	v, _ := json.Marshal(honest)
	if err := cl.Put(ctx, 0, "orders/b-1", v); err != nil {
		t.Fatal(err)
	}
	junk := pipeline.Run{Dataset: "orders", State: pipeline.StatePublished, Reason: strings.Repeat("x", 128<<10)}
	for p := range 2 {
		for i := range 384 {
			junk.BatchID = fmt.Sprintf("junk-%d-%d", p, i)
			v, _ := json.Marshal(junk)
			if err := cl.Put(ctx, p, junk.BatchID, v); err != nil {
				t.Fatal(err)
			}
		}
	}
	cl.Close()
	const budget = 8 << 20
	defer func(b int) { maxListBytes = b }(maxListBytes)
	maxListBytes = budget
	kc := config.Kafka{Brokers: k.Brokers, ChangelogTopic: topic}
	peakOf := func(state string) (int, []Stored, error) {
		base := heapAfterGC()
		peak, calls := 0, 0
		listed = func(int) {
			if calls++; calls%8 == 0 {
				peak = max(peak, heapAfterGC()-base)
			}
		}
		defer func() { listed = nil }()
		stored, err := List(ctx, kc, state, "")
		return peak, stored, err
	}
	// What reading the topic costs when nothing is kept: the fetch answer
	// in flight (16 MiB), read by kafka-go and, in this process, written
	// by kfake.
	reading, _, err := peakOf("no-such-state")
	if err != nil {
		t.Fatal(err)
	}
	peak, stored, err := peakOf("")
	t.Logf("held at most %.1f MB listing 96 MiB of junk, budget %.1f MB, %.1f MB reading it; %d runs, err %v",
		float64(peak)/1e6, budget/1e6, float64(reading)/1e6, len(stored), err)
	if peak > budget+reading+2<<20 {
		t.Errorf("listing held %d bytes for a budget of %d (and %d reading)", peak, budget, reading)
	}
	if err == nil || !strings.Contains(err.Error(), "more than 8 MiB") || !strings.Contains(err.Error(), "-max-mib") {
		t.Errorf("listing past its budget: err %v, want one naming the budget and -max-mib", err)
	}

	// Within a budget that holds it, the listing is whole, and what it
	// counts is what the heap holds.
	maxListBytes = 160 << 20
	counted := 0
	listed = func(held int) { counted = held }
	l, err := ListWithin(ctx, kc, "", "", DefaultMaxListMiB)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := WriteListing(&out, l, time.Now(), false); err != nil || !strings.HasSuffix(out.String(), "769 run(s)\n") {
		t.Errorf("table of the listing: %v, ends %q", err, out.String()[max(0, out.Len()-40):])
	}
	n := l.Len()
	holding := heapAfterGC()
	runtime.KeepAlive(l)
	l = nil
	heap := holding - heapAfterGC()
	t.Logf("a listing of %d runs counts %.1f MB, the heap holds %.1f MB (%.2f)", n, float64(counted)/1e6, float64(heap)/1e6, float64(heap)/float64(counted))
	if n != 769 || float64(heap) > 1.1*float64(counted) {
		t.Errorf("%d runs listed (want 769); heap %d for %d counted", n, heap, counted)
	}
}

// A record of wap.runs is decoded whole as it is printed, and JSON decodes
// to many times its bytes: 2 MiB of empty check results ({},{},...) are
// 129 MB as a run. Such a record is shown unreadable, saying why, without
// being decoded.
func TestLimits64RunsListingDoesNotDecodeABloatedRecord(t *testing.T) {
	n := (2 << 20) / 3
	raw := []byte(`{"batch_id":"junk","dataset":"orders","state":"published","report":{"checks":[` + strings.TrimSuffix(strings.Repeat("{},", n), ",") + `]}}`)
	honest, _ := json.Marshal(pipeline.Run{BatchID: "b-1", Dataset: "orders", State: pipeline.StatePublished})
	l := &Listing{entries: []*entry{
		{partition: 0, key: "orders/b-1", raw: honest, batch: "b-1", dataset: "orders", state: "published"},
		{partition: 0, key: "junk", raw: raw, batch: "junk", dataset: "orders", state: "published"},
	}}
	base := heapAfterGC()
	peak := 0
	var got []Stored
	err := l.Each(func(s Stored) error {
		peak = max(peak, heapAfterGC()-base)
		got = append(got, s)
		return nil
	})
	t.Logf("handing out a record of %d bytes held %.1f MB", len(raw), float64(peak)/1e6)
	if err != nil || len(got) != 2 || got[0].BatchID != "b-1" {
		t.Fatalf("listing handed out %+v, %v", got, err)
	}
	if peak > 16<<20 {
		t.Errorf("decoding a record of %d bytes held %d bytes", len(raw), peak)
	}
	if !strings.Contains(got[1].Unreadable, "objects and arrays") {
		t.Errorf("the bloated record is not shown unreadable saying why: %+v", got[1].Unreadable)
	}
}
