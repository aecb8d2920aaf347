package tests

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/kafka"
	"github.com/lakewap/lakewap/schemas"
)

// setTopicLimit sets topic's max.message.bytes on the stack's brokers, as
// an operator with kafka-configs would.
func setTopicLimit(t *testing.T, brokers []string, topic string, bytes int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin := &kafkago.Client{Addr: kafkago.TCP(brokers...)}
	res, err := admin.IncrementalAlterConfigs(ctx, &kafkago.IncrementalAlterConfigsRequest{
		Resources: []kafkago.IncrementalAlterConfigsRequestResource{{
			ResourceType: kafkago.ResourceTypeTopic, ResourceName: topic,
			Configs: []kafkago.IncrementalAlterConfigsRequestConfig{
				{Name: "max.message.bytes", Value: strconv.Itoa(bytes), ConfigOperation: kafkago.ConfigOperationSet},
			},
		}},
	})
	if err == nil && len(res.Resources) == 1 {
		err = res.Resources[0].Error
	}
	if err != nil {
		t.Fatalf("setting %s's max.message.bytes: %v", topic, err)
	}
}

// An operator lowers the results topic's max.message.bytes after start-up,
// under any result event: lakewap keeps the event in the run's outbox and
// retries it for ever, and /readyz says which topic refuses lakewap's
// records and what to raise. When the limit is raised again, the event goes
// out and lakewap is ready again.
func TestReadinessSaysATopicRefusesLakewapsRecords(t *testing.T) {
	e := startE2E(t, func(c *config.Config) { c.HTTP.Listen = "127.0.0.1:0"; c.HTTP.WebhookToken = "test-token" })
	base := "http://" + e.d.HTTPAddr()
	waitFor(t, func() bool { code, _ := get(t, base+"/readyz"); return code == http.StatusOK })

	results := e.cfg.Kafka.ResultsTopic
	setTopicLimit(t, e.Stack.KafkaBrokers, results, 300)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	must(t, e.Produce(ctx, schemas.BatchLanded{BatchID: "refused-1", Dataset: "billing", SourceRef: "no-such-branch",
		ExpectedWrites: []string{"billing_fact"}, Producer: "e2e", OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
	var body string
	waitFor(t, func() bool {
		var code int
		code, body = get(t, base+"/readyz")
		return code == http.StatusServiceUnavailable
	})
	for _, want := range []string{"topic " + results + " refuses lakewap's records", "Message Size Too Large", "raise its max.message.bytes"} {
		if !strings.Contains(body, want) {
			t.Errorf("/readyz says %q; want it to say %q", body, want)
		}
	}
	// The refusal shows on /metrics too (alert LakewapTopicRefusesRecords):
	// readiness alone tells a load balancer, not an operator.
	refusing := `lakewap_kafka_topic_refusing{topic="` + results + `"} 1`
	refused := `lakewap_kafka_refused_writes_total{reason="Message Size Too Large",topic="` + results + `"}`
	_, metrics := get(t, base+"/metrics")
	if !strings.Contains(metrics, refusing) || !strings.Contains(metrics, refused) {
		t.Errorf("/metrics while %s refuses: want %q and %q; have\n%s", results, refusing, refused, grepLines(metrics, "lakewap_kafka_"))
	}

	setTopicLimit(t, e.Stack.KafkaBrokers, results, 1<<20)
	ev, err := e.Watcher.Await(ctx, "refused-1", schemas.TypeBatchAborted)
	must(t, err)
	if ab, ok := ev.(schemas.BatchAborted); !ok || ab.Reason != schemas.ReasonInvalid {
		t.Errorf("got %+v, want the BatchAborted invalid that waited", ev)
	}
	waitFor(t, func() bool { code, _ := get(t, base+"/readyz"); return code == http.StatusOK })
	if _, metrics := get(t, base+"/metrics"); !strings.Contains(metrics, `lakewap_kafka_topic_refusing{topic="`+results+`"} 0`) {
		t.Errorf("/metrics once %s takes the record again: want it refusing 0; have\n%s", results, grepLines(metrics, "lakewap_kafka_"))
	}
}

// grepLines is the lines of s that start with prefix.
func grepLines(s, prefix string) string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		if strings.HasPrefix(line, prefix) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

// A producer's record too large for the dead-letter topic with its original
// is dead-lettered without it, which the topic takes: nothing waits, and
// lakewap stays ready. (A refusal that a smaller write then handled is no
// refusal to report: else any producer could keep lakewap unready, and with
// it lakeFS's hook calls, by sending such records.)
func TestADeadLetterWrittenWithoutItsOriginalLeavesLakewapReady(t *testing.T) {
	e := startE2E(t, func(c *config.Config) { c.HTTP.Listen = "127.0.0.1:0"; c.HTTP.WebhookToken = "test-token" })
	base := "http://" + e.d.HTTPAddr()
	waitFor(t, func() bool { code, _ := get(t, base+"/readyz"); return code == http.StatusOK })

	setTopicLimit(t, e.Stack.KafkaBrokers, e.cfg.Kafka.DeadLetterTopic, 4000)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	must(t, e.Writer.Write(ctx, kafka.Message{Key: []byte("junk-1"), Value: []byte(strings.Repeat("{", 8000))}))
	waitFor(t, func() bool { // the dead letter is written
		_, body := get(t, base+"/metrics")
		for _, line := range strings.Split(body, "\n") {
			if strings.HasPrefix(line, "lakewap_consumer_dead_letters_total{") && !strings.HasSuffix(line, " 0") {
				return true
			}
		}
		return false
	})
	if code, body := get(t, base+"/readyz"); code != http.StatusOK {
		t.Errorf("/readyz = %d %q after a dead letter was written without its original; want ready", code, body)
	}
}

// A dead-letter topic that refuses even a dead letter without its original
// holds its input partition: /readyz names it.
func TestReadinessSaysTheDeadLetterTopicRefusesEvenWithoutTheOriginal(t *testing.T) {
	e := startE2E(t, func(c *config.Config) { c.HTTP.Listen = "127.0.0.1:0"; c.HTTP.WebhookToken = "test-token" })
	base := "http://" + e.d.HTTPAddr()
	waitFor(t, func() bool { code, _ := get(t, base+"/readyz"); return code == http.StatusOK })

	dlq := e.cfg.Kafka.DeadLetterTopic
	setTopicLimit(t, e.Stack.KafkaBrokers, dlq, 100)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	must(t, e.Writer.Write(ctx, kafka.Message{Key: []byte("junk-2"), Value: []byte("{")}))
	var body string
	waitFor(t, func() bool {
		var code int
		code, body = get(t, base+"/readyz")
		return code == http.StatusServiceUnavailable
	})
	if want := "topic " + dlq + " refuses lakewap's records: Message Size Too Large"; !strings.Contains(body, want) {
		t.Errorf("/readyz says %q; want %q", body, want)
	}
	setTopicLimit(t, e.Stack.KafkaBrokers, dlq, 1<<20) // let the partition go before the stack stops
	waitFor(t, func() bool { code, _ := get(t, base+"/readyz"); return code == http.StatusOK })
}
