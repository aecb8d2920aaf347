package consumer

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/lakewap/lakewap/kafka"
	"github.com/lakewap/lakewap/kafka/kafkatest"
)

// newTestChangelog opens k's changelog topic (base name DefaultChangelogTopic).
func newTestChangelog(t testing.TB, k *kafkatest.Cluster) *Changelog {
	t.Helper()
	cl, err := NewChangelog(ChangelogConfig{Brokers: k.Brokers, Topic: k.Topic(DefaultChangelogTopic), Transport: &kafkago.Transport{}})
	if err != nil {
		t.Fatalf("NewChangelog: %v", err)
	}
	return cl
}

// changelogSpec is ChangelogTopic("", input) under k's names (the default
// name itself on kfake).
func changelogSpec(k *kafkatest.Cluster, input string) kafka.TopicSpec {
	spec := ChangelogTopic("", k.Topic(input))
	spec.Name = k.Topic(spec.Name)
	return spec
}

func TestEnsureTopicsCreatesCompactedChangelogLikeInput(t *testing.T) {
	k := startKafka(t)
	ctx := context.Background()
	in, dlq, runs := k.Topic(inTopic), k.Topic(dlqTopic), k.Topic(DefaultChangelogTopic)
	specs := []kafka.TopicSpec{
		{Name: in, Partitions: 3},
		{Name: dlq, Partitions: 1},
		changelogSpec(k, inTopic),
	}
	if err := ensureTopics(t, ctx, k.Brokers, kafka.Security{}, specs...); err != nil {
		t.Fatalf("EnsureTopics: %v", err)
	}
	counts, err := partitionCounts(ctx, k.Brokers, in, dlq, runs)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]int{in: 3, dlq: 1, runs: 3}; !maps.Equal(counts, want) {
		t.Errorf("partition counts %v, want %v", counts, want)
	}
	// Idempotent: a second run finds everything in place, compaction included.
	if err := ensureTopics(t, ctx, k.Brokers, kafka.Security{}, specs...); err != nil {
		t.Errorf("second EnsureTopics: %v", err)
	}
}

func TestEnsureTopicsRejectsMismatchedChangelog(t *testing.T) {
	cases := []struct {
		name string
		runs kafkatest.Topic
		want string // %[1]s is the changelog topic, %[2]s the input topic
	}{
		{
			name: "partition count",
			runs: kafkatest.Topic{Name: "runs", Partitions: 2, Configs: map[string]string{"cleanup.policy": "compact"}},
			want: "%[1]s has 2 partitions but %[2]s has 4: they must be equal",
		},
		{
			name: "not compacted",
			runs: kafkatest.Topic{Name: "runs", Partitions: 4, Configs: map[string]string{"cleanup.policy": "delete"}},
			want: "%[1]s has cleanup.policy=delete, want compact",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			k := startKafka(t, topic(inTopic, 4), tc.runs)
			want := fmt.Sprintf(tc.want, k.Topic("runs"), k.Topic(inTopic))
			err := ensureTopics(t, context.Background(), k.Brokers, kafka.Security{}, kafka.TopicSpec{Name: k.Topic(inTopic), Partitions: 4}, ChangelogTopic(k.Topic("runs"), k.Topic(inTopic)))
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("EnsureTopics error = %v, want one containing %q", err, want)
			}
		})
	}
}

func TestChangelogLastValueWinsTombstonesDeleteAndPartitionsAreIsolated(t *testing.T) {
	k := startKafka(t)
	ctx := context.Background()
	if err := ensureTopics(t, ctx, k.Brokers, kafka.Security{}, kafka.TopicSpec{Name: k.Topic(inTopic), Partitions: 2}, changelogSpec(k, inTopic)); err != nil {
		t.Fatal(err)
	}
	cl := newTestChangelog(t, k)
	empty, err := cl.Load(ctx, 0)
	if err != nil || len(empty) != 0 {
		t.Fatalf("Load of an empty partition = %v, %v", empty, err)
	}
	steps := []struct {
		partition int
		key       string
		value     string // "-" deletes
	}{
		{0, "b1", "landed"},
		{0, "b2", "landed"},
		{0, "b1", "auditing"},
		{1, "b1", "other-partition"},
		{0, "b2", "-"},
		{0, "b3", ""},
		{0, "b1", "published"},
		{1, "b9", "landed"},
		{1, "b9", "-"},
	}
	for _, s := range steps {
		var err error
		if s.value == "-" {
			err = cl.Delete(ctx, s.partition, s.key)
		} else {
			err = cl.Put(ctx, s.partition, s.key, []byte(s.value))
		}
		if err != nil {
			t.Fatalf("writing %+v: %v", s, err)
		}
	}
	want := map[int]map[string]string{
		0: {"b1": "published", "b3": ""},
		1: {"b1": "other-partition"},
	}
	check := func(when string) {
		t.Helper()
		for p, w := range want {
			got, err := cl.Load(ctx, p)
			if err != nil {
				t.Fatalf("%s: Load(%d): %v", when, p, err)
			}
			gotS := map[string]string{}
			for k, v := range got {
				gotS[k] = string(v)
			}
			if !maps.Equal(gotS, w) {
				t.Errorf("%s: Load(%d) = %v, want %v", when, p, gotS, w)
			}
		}
	}
	check("before compaction")
	var history []string
	if err := cl.Scan(ctx, 0, func(key string, v []byte) {
		if v == nil {
			history = append(history, key+"=-")
			return
		}
		history = append(history, key+"="+string(v))
	}); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(history, " "), "b1=landed b2=landed b1=auditing b2=- b3= b1=published"; got != want {
		t.Errorf("Scan(0) = %s, want every record in order: %s", got, want)
	}
	if n := len(readPartition(t, k, DefaultChangelogTopic, 0)); n != 6 {
		t.Fatalf("partition 0 holds %d records before compaction, want 6", n)
	}
	compact(t, k, cl, DefaultChangelogTopic, 6)
	check("after compaction")

	if err := cl.Put(ctx, 7, "b1", []byte("x")); err == nil {
		t.Errorf("Put to a partition that does not exist succeeded")
	}
	if err := cl.Put(ctx, 0, "", []byte("x")); err == nil {
		t.Errorf("Put with an empty key succeeded")
	}
}

// compact makes the broker compact partition 0 of topic (base name), which
// holds written records, and returns once it has removed some. How much a
// compaction removes is the broker's business (the active segment stays);
// that it removed something makes the checks after it count.
func compact(t *testing.T, k *kafkatest.Cluster, cl *Changelog, topic string, written int) {
	t.Helper()
	if k.Fake != nil {
		k.Fake.Compact()
		if n := len(readPartition(t, k, topic, 0)); n >= written {
			t.Errorf("partition 0 holds %d records after compaction, want fewer than %d", n, written)
		}
		return
	}
	// Apache Kafka compacts only closed segments, in its log cleaner: let
	// segments roll after 100ms and be cleanable at once, then keep appending
	// a put that changes nothing (b3 is already "") until the cleaner has run.
	ctx := context.Background()
	res, err := k.Client().IncrementalAlterConfigs(ctx, &kafkago.IncrementalAlterConfigsRequest{
		Resources: []kafkago.IncrementalAlterConfigsRequestResource{{
			ResourceType: kafkago.ResourceTypeTopic, ResourceName: k.Topic(topic),
			Configs: []kafkago.IncrementalAlterConfigsRequestConfig{
				{Name: "segment.ms", Value: "100", ConfigOperation: kafkago.ConfigOperationSet},
				{Name: "min.cleanable.dirty.ratio", Value: "0.01", ConfigOperation: kafkago.ConfigOperationSet},
			},
		}},
	})
	if err == nil && len(res.Resources) == 1 {
		err = res.Resources[0].Error
	}
	if err != nil {
		t.Fatalf("making %s compact soon: %v", k.Topic(topic), err)
	}
	eventually(t, "the log cleaner compacted "+k.Topic(topic), func() bool {
		if err := cl.Put(ctx, 0, "b3", []byte("")); err != nil {
			t.Fatalf("filler put: %v", err)
		}
		written++
		return len(readPartition(t, k, topic, 0)) < written
	})
}

// BenchmarkChangelogLoad10k loads a partition holding 10,000 runs of ~1 KiB.
func BenchmarkChangelogLoad10k(b *testing.B) {
	k := startKafka(b)
	ctx := context.Background()
	if err := ensureTopics(b, ctx, k.Brokers, kafka.Security{}, kafka.TopicSpec{Name: k.Topic(inTopic), Partitions: 1}, changelogSpec(k, inTopic)); err != nil {
		b.Fatal(err)
	}
	value := []byte(strings.Repeat("x", 1024))
	const runs = 10_000
	for start := 0; start < runs; start += 500 {
		var batch []kafkago.Message
		for i := start; i < start+500; i++ {
			batch = append(batch, kafkago.Message{Key: []byte(fmt.Sprintf("batch-%05d", i)), Value: value})
		}
		produce(b, k, DefaultChangelogTopic, 0, batch...)
	}
	cl := newTestChangelog(b, k)
	b.SetBytes(runs * 1024)
	b.ResetTimer()
	for b.Loop() {
		state, err := cl.Load(ctx, 0)
		if err != nil {
			b.Fatal(err)
		}
		if len(state) != runs {
			b.Fatalf("loaded %d runs, want %d", len(state), runs)
		}
	}
}

// ensureTopics is kafka's EnsureTopics over brokers with sec.
func ensureTopics(t testing.TB, ctx context.Context, brokers []string, sec kafka.Security, topics ...kafka.TopicSpec) error {
	t.Helper()
	client, err := kafka.NewClient(brokers, sec)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	return client.EnsureTopics(ctx, topics...)
}

// partitionCounts is the partition count of each named topic.
func partitionCounts(ctx context.Context, brokers []string, names ...string) (map[string]int, error) {
	client, err := kafka.NewClient(brokers, kafka.Security{})
	if err != nil {
		return nil, err
	}
	defer client.Close()
	counts := map[string]int{}
	for _, n := range names {
		if counts[n], err = client.Partitions(ctx, n); err != nil {
			return nil, err
		}
	}
	return counts, nil
}
