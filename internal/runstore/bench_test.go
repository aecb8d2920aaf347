package runstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/lakewap/lakewap/consumer"
	"github.com/lakewap/lakewap/internal/runstore"
	"github.com/lakewap/lakewap/kafka/kafkatest"
	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/schemas"
)

// sealedStore is a store with a state key over a changelog topic on a
// kfake broker (or $LAKEWAP_TEST_KAFKA_BROKERS).
func sealedStore(b *testing.B) (*runstore.Store, *consumer.Changelog) {
	k := kafkatest.Start(b, kafkatest.Topic{Name: consumer.DefaultChangelogTopic, Partitions: 1, Configs: map[string]string{"cleanup.policy": "compact"}})
	cl, err := consumer.NewChangelog(consumer.ChangelogConfig{Brokers: k.Brokers, Topic: k.Topic(consumer.DefaultChangelogTopic), Transport: &kafkago.Transport{}})
	if err != nil {
		b.Fatal(err)
	}
	return newStore(b, cl), cl
}

func newStore(b *testing.B, cl *consumer.Changelog) *runstore.Store {
	s, err := runstore.New(runstore.Config{Inner: cl, Key: []byte(strings.Repeat("k", 32)),
		Datasets: func(n string) (pipeline.DatasetSpec, bool) {
			return pipeline.DatasetSpec{Repository: "lake"}, n == "billing"
		}})
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// reportCPU reports the process's CPU time per operation (the broker's
// included: kfake runs in the process) when the returned func runs: less
// swayed than wall time by other work on the machine.
func reportCPU(b *testing.B) func() {
	start := cpuTime()
	return func() {
		b.ReportMetric(float64((cpuTime()-start).Microseconds())/1000/float64(b.N), "cpu-ms/op")
	}
}

func cpuTime() time.Duration {
	var u syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &u)
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}

// benchRun is a run record of about 1 KiB.
func benchRun(b *testing.B, i int) (string, []byte) {
	id := fmt.Sprintf("batch-%05d", i)
	r := pipeline.Run{BatchID: id, Dataset: "billing", Repository: "lake", Branch: schemas.BranchName("billing", id), Target: "main",
		State: pipeline.StateAwaitingWrites, ExpectedWrites: []string{"fact", "dim"}, LastError: strings.Repeat("e", 800)}
	v, err := json.Marshal(r)
	if err != nil {
		b.Fatal(err)
	}
	return r.Key(), v
}

// BenchmarkSealedPut is one transition's write: a run record sealed and
// acknowledged by the changelog.
func BenchmarkSealedPut(b *testing.B) {
	s, _ := sealedStore(b)
	ctx := context.Background()
	if _, err := s.Load(ctx, 0); err != nil {
		b.Fatal(err)
	}
	i := 0
	defer reportCPU(b)()
	for b.Loop() {
		k, v := benchRun(b, i%1000)
		if err := s.Put(ctx, 0, k, v); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkSealedRestore10k restores a partition of 10,000 sealed runs
// of about 1 KiB each.
func BenchmarkSealedRestore10k(b *testing.B) {
	s, cl := sealedStore(b)
	ctx := context.Background()
	if _, err := s.Load(ctx, 0); err != nil {
		b.Fatal(err)
	}
	const runs = 10_000
	for i := range runs {
		k, v := benchRun(b, i)
		if err := s.Put(ctx, 0, k, v); err != nil {
			b.Fatal(err)
		}
	}
	defer reportCPU(b)()
	for b.Loop() {
		got, err := newStore(b, cl).Load(ctx, 0)
		if err != nil {
			b.Fatal(err)
		}
		if len(got) != runs {
			b.Fatalf("restored %d runs, want %d", len(got), runs)
		}
	}
}
