package kafkatest

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
)

func TestStartCreatesTopicsWithConfigsOnEitherBackend(t *testing.T) {
	c := Start(t, Topic{Name: "events", Partitions: 3}, Topic{Name: "runs", Partitions: 2, Configs: map[string]string{"cleanup.policy": "compact"}})
	t.Logf("backend: %s", c.Backend())
	if (c.Fake == nil) != (len(ExternalBrokers()) > 0) {
		t.Fatalf("backend %s with %s=%q", c.Backend(), EnvBrokers, ExternalBrokers())
	}
	ctx := context.Background()
	md, err := c.Client().Metadata(ctx, &kafka.MetadataRequest{Topics: []string{c.Topic("events"), c.Topic("runs")}})
	if err != nil {
		t.Fatal(err)
	}
	parts := map[string]int{}
	for _, tp := range md.Topics {
		parts[tp.Name] = len(tp.Partitions)
	}
	if parts[c.Topic("events")] != 3 || parts[c.Topic("runs")] != 2 {
		t.Errorf("partitions %v, want events 3 and runs 2", parts)
	}
	cfg, err := c.Client().DescribeConfigs(ctx, &kafka.DescribeConfigsRequest{Resources: []kafka.DescribeConfigRequestResource{
		{ResourceType: kafka.ResourceTypeTopic, ResourceName: c.Topic("runs"), ConfigNames: []string{"cleanup.policy"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Resources) != 1 || len(cfg.Resources[0].ConfigEntries) != 1 || cfg.Resources[0].ConfigEntries[0].ConfigValue != "compact" {
		t.Errorf("runs configs = %+v, want cleanup.policy=compact", cfg.Resources)
	}
	if err := c.CreateTopics(ctx, Topic{Name: "events", Partitions: 3}); err != nil {
		t.Errorf("creating an existing topic again: %v", err)
	}
}

func TestNamesAreUniquePerClusterOnlyWhenShared(t *testing.T) {
	fake := &Cluster{}
	if fake.Topic("in") != "in" || fake.Group("g") != "g" {
		t.Errorf("kfake names changed: %q %q", fake.Topic("in"), fake.Group("g"))
	}
	t.Setenv(EnvBrokers, " 127.0.0.1:9092 ,127.0.0.1:9093,")
	if got := ExternalBrokers(); len(got) != 2 || got[0] != "127.0.0.1:9092" || got[1] != "127.0.0.1:9093" {
		t.Errorf("ExternalBrokers() = %q", got)
	}
	a, b := Shared(ExternalBrokers()), Shared(ExternalBrokers())
	if a.Topic("in") == b.Topic("in") || a.Group("g") == b.Group("g") {
		t.Errorf("two tests on one cluster share names: %q %q", a.Topic("in"), b.Topic("in"))
	}
	if !regexp.MustCompile(`^in-[0-9a-f]{8}$`).MatchString(a.Topic("in")) {
		t.Errorf("Topic(in) = %q, want in-<8 hex>", a.Topic("in"))
	}
}

// openSockets counts this process's open sockets.
func openSockets(t *testing.T) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd to count sockets: %v", err)
	}
	n := 0
	for _, fd := range fds {
		if l, err := os.Readlink("/proc/self/fd/" + fd.Name()); err == nil && strings.HasPrefix(l, "socket:") {
			n++
		}
	}
	return n
}

// CreateTopics leaves no connection open behind it. Each call's client
// kept its transport's connection, which asked the broker for the
// metadata of every topic every six seconds until the process ended: on
// the Apache Kafka the system tests share, 600 of them kept the broker at
// most of a core.
func TestCreateTopicsLeavesNoConnectionOpen(t *testing.T) {
	c := Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := c.CreateTopics(ctx, Topic{Name: "warm"}); err != nil {
		t.Fatal(err)
	}
	before := openSockets(t)
	const calls = 10
	for i := range calls {
		if err := c.CreateTopics(ctx, Topic{Name: fmt.Sprintf("leak-%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	// Closing is asynchronous in kafka-go's pool: wait for it, a bounded time.
	after := openSockets(t)
	for deadline := time.Now().Add(10 * time.Second); after-before >= calls/2 && time.Now().Before(deadline); after = openSockets(t) {
		runtime.Gosched()
		time.Sleep(10 * time.Millisecond)
	}
	if after-before >= calls/2 {
		t.Fatalf("%d CreateTopics calls left %d more sockets open (%d before, %d after)", calls, after-before, before, after)
	}
}
