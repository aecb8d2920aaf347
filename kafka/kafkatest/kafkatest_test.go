package kafkatest

import (
	"context"
	"regexp"
	"testing"

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
