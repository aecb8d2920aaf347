package consumer

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"
)

func newTestChangelog(t testing.TB, brokers []string) *Changelog {
	t.Helper()
	cl, err := NewChangelog(ChangelogConfig{Brokers: brokers, Transport: &kafka.Transport{}})
	if err != nil {
		t.Fatalf("NewChangelog: %v", err)
	}
	return cl
}

func TestEnsureTopicsCreatesCompactedChangelogLikeInput(t *testing.T) {
	_, brokers := startKafka(t)
	ctx := context.Background()
	specs := []TopicSpec{
		{Name: inTopic, Partitions: 3},
		{Name: dlqTopic, Partitions: 1},
		ChangelogTopic("", inTopic),
	}
	if err := EnsureTopics(ctx, brokers, nil, specs...); err != nil {
		t.Fatalf("EnsureTopics: %v", err)
	}
	counts, err := partitionCounts(ctx, newClient(brokers), []string{inTopic, dlqTopic, DefaultChangelogTopic})
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]int{inTopic: 3, dlqTopic: 1, DefaultChangelogTopic: 3}; !maps.Equal(counts, want) {
		t.Errorf("partition counts %v, want %v", counts, want)
	}
	// Idempotent: a second run finds everything in place, compaction included.
	if err := EnsureTopics(ctx, brokers, nil, specs...); err != nil {
		t.Errorf("second EnsureTopics: %v", err)
	}
}

func TestEnsureTopicsRejectsMismatchedChangelog(t *testing.T) {
	cases := []struct {
		name string
		seed func(*kfake.Cluster) error
		want string
	}{
		{
			name: "partition count",
			seed: func(c *kfake.Cluster) error { return c.CreateTopic("runs", 2, map[string]string{"cleanup.policy": "compact"}) },
			want: "runs has 2 partitions but in has 4: they must be equal",
		},
		{
			name: "not compacted",
			seed: func(c *kfake.Cluster) error { return c.CreateTopic("runs", 4, map[string]string{"cleanup.policy": "delete"}) },
			want: "runs has cleanup.policy=delete, want compact",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cluster, brokers := startKafka(t, kfake.SeedTopics(4, inTopic))
			if err := tc.seed(cluster); err != nil {
				t.Fatal(err)
			}
			err := EnsureTopics(context.Background(), brokers, nil, TopicSpec{Name: inTopic, Partitions: 4}, ChangelogTopic("runs", inTopic))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("EnsureTopics error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestChangelogLastValueWinsTombstonesDeleteAndPartitionsAreIsolated(t *testing.T) {
	cluster, brokers := startKafka(t)
	ctx := context.Background()
	if err := EnsureTopics(ctx, brokers, nil, TopicSpec{Name: inTopic, Partitions: 2}, ChangelogTopic("", inTopic)); err != nil {
		t.Fatal(err)
	}
	cl := newTestChangelog(t, brokers)
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
	if n := len(readPartition(t, brokers, DefaultChangelogTopic, 0)); n != 6 {
		t.Fatalf("partition 0 holds %d records before compaction, want 6", n)
	}
	cluster.Compact()
	// How much a compaction removes is the broker's business (the active
	// segment stays); that it removed something makes the check below count.
	if n := len(readPartition(t, brokers, DefaultChangelogTopic, 0)); n >= 6 {
		t.Errorf("partition 0 holds %d records after compaction, want fewer than 6", n)
	}
	check("after compaction")

	if err := cl.Put(ctx, 7, "b1", []byte("x")); err == nil {
		t.Errorf("Put to a partition that does not exist succeeded")
	}
	if err := cl.Put(ctx, 0, "", []byte("x")); err == nil {
		t.Errorf("Put with an empty key succeeded")
	}
}

// BenchmarkChangelogLoad10k loads a partition holding 10,000 runs of ~1 KiB.
func BenchmarkChangelogLoad10k(b *testing.B) {
	_, brokers := startKafka(b)
	ctx := context.Background()
	if err := EnsureTopics(ctx, brokers, nil, TopicSpec{Name: inTopic, Partitions: 1}, ChangelogTopic("", inTopic)); err != nil {
		b.Fatal(err)
	}
	value := []byte(strings.Repeat("x", 1024))
	const runs = 10_000
	for start := 0; start < runs; start += 500 {
		var batch []kafka.Message
		for i := start; i < start+500; i++ {
			batch = append(batch, kafka.Message{Key: []byte(fmt.Sprintf("batch-%05d", i)), Value: value})
		}
		produce(b, brokers, DefaultChangelogTopic, 0, batch...)
	}
	cl := newTestChangelog(b, brokers)
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
