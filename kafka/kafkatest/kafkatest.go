// Package kafkatest gives tests a Kafka cluster: franz-go's in-process kfake
// broker by default, or the real cluster named by $LAKEWAP_TEST_KAFKA_BROKERS
// (the test command sets it to run the Kafka-facing tests a second time
// against Apache Kafka). One suite, two backends.
//
// A real cluster is shared by every test of a run, so each Cluster maps the
// base names a test uses to names of its own (Topic, Group); on kfake they are
// unchanged. Tests and internal/devstack import it; it imports kfake, kafka-go and
// lakewap's kafka (its wait until topics are served).
package kafkatest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/segmentio/kafka-go"

	lakewapkafka "github.com/lakewap/lakewap/kafka"
	"github.com/twmb/franz-go/pkg/kfake"
)

// EnvBrokers names the external cluster ("host:port,..."); unset or empty
// means kfake.
const EnvBrokers = "LAKEWAP_TEST_KAFKA_BROKERS"

const adminTimeout = 30 * time.Second

// Topic is a topic to create, by base name. Partitions 0 means 1.
type Topic struct {
	Name       string
	Partitions int
	Configs    map[string]string // e.g. cleanup.policy=compact
}

// Cluster is the broker a test talks to.
type Cluster struct {
	Brokers []string
	// Fake is the kfake cluster, nil on a real broker. Tests that need
	// kfake's controls (faults, forced compaction) use StartFake.
	Fake   *kfake.Cluster
	suffix string
}

// ExternalBrokers returns the brokers named by $LAKEWAP_TEST_KAFKA_BROKERS,
// none when it is unset.
func ExternalBrokers() []string {
	return strings.FieldsFunc(os.Getenv(EnvBrokers), func(r rune) bool { return r == ',' || unicode.IsSpace(r) })
}

// Start returns the test's cluster with topics created: the external one
// when $LAKEWAP_TEST_KAFKA_BROKERS is set, else a kfake broker on a free
// 127.0.0.1 port that is closed when the test ends.
func Start(t testing.TB, topics ...Topic) *Cluster {
	t.Helper()
	var c *Cluster
	if brokers := ExternalBrokers(); len(brokers) > 0 {
		c = Shared(brokers)
	} else {
		c = StartFake(t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
	defer cancel()
	if err := c.CreateTopics(ctx, topics...); err != nil {
		t.Fatalf("kafkatest: %s: %v", c.Backend(), err)
	}
	return c
}

// Shared returns a view of an external cluster with names of its own.
func Shared(brokers []string) *Cluster {
	b := make([]byte, 4)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return &Cluster{Brokers: brokers, suffix: "-" + hex.EncodeToString(b)}
}

// StartFake returns a kfake broker with opts, whatever the environment says:
// for tests of what only kfake can stage (injected faults, forced
// compaction, SASL users).
func StartFake(t testing.TB, opts ...kfake.Opt) *Cluster {
	t.Helper()
	f, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1)}, opts...)...)
	if err != nil {
		t.Fatalf("kafkatest: starting kfake: %v", err)
	}
	t.Cleanup(f.Close)
	return &Cluster{Brokers: f.ListenAddrs(), Fake: f}
}

// Backend names the backend for test logs.
func (c *Cluster) Backend() string {
	if c.Fake != nil {
		return "kfake"
	}
	return "Apache Kafka at " + strings.Join(c.Brokers, ",")
}

// Topic returns the actual name of the test's topic with base name name.
func (c *Cluster) Topic(name string) string { return name + c.suffix }

// Group returns the actual consumer group id for base id.
func (c *Cluster) Group(id string) string { return id + c.suffix }

// Client returns an admin client with its own transport: kafka-go's default
// transport caches a broker's topics for seconds, and on a shared cluster
// that cache outlives the test that filled it. The transport keeps its
// connections, each asking the broker for the metadata of every topic
// every few seconds, until it is closed: see Release.
func (c *Cluster) Client() *kafka.Client {
	return &kafka.Client{Addr: kafka.TCP(c.Brokers...), Timeout: adminTimeout, Transport: &kafka.Transport{}}
}

// Release closes the connections of client, one Client returned. A
// transport left open keeps a connection to each broker it reached, and
// refreshes the metadata of every topic on it every six seconds: on the
// Apache Kafka that the system tests share, 600 of them (one per stack
// started and per CreateTopics) kept the broker at most of a core and
// doubled the tests' time.
func Release(client *kafka.Client) {
	if t, ok := client.Transport.(*kafka.Transport); ok {
		t.CloseIdleConnections()
	}
}

// CreateTopics creates topics (by base name) and returns when every
// partition has a leader. A topic that exists already is not an error.
func (c *Cluster) CreateTopics(ctx context.Context, topics ...Topic) error {
	if len(topics) == 0 {
		return nil
	}
	req := &kafka.CreateTopicsRequest{}
	names := make([]string, len(topics))
	for i, tp := range topics {
		tc := kafka.TopicConfig{Topic: c.Topic(tp.Name), NumPartitions: max(tp.Partitions, 1), ReplicationFactor: 1}
		for k, v := range tp.Configs {
			tc.ConfigEntries = append(tc.ConfigEntries, kafka.ConfigEntry{ConfigName: k, ConfigValue: v})
		}
		req.Topics = append(req.Topics, tc)
		names[i] = tc.Topic
	}
	client := c.Client()
	defer Release(client)
	resp, err := client.CreateTopics(ctx, req)
	if err != nil {
		return fmt.Errorf("create topics %v: %w", names, err)
	}
	var errs []error
	for name, err := range resp.Errors {
		if err != nil && !errors.Is(err, kafka.TopicAlreadyExists) {
			errs = append(errs, fmt.Errorf("create topic %s: %w", name, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return lakewapkafka.Await(ctx, client, names...)
}
