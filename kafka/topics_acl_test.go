package kafka_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/lakewap/lakewap/kafka"
	"github.com/lakewap/lakewap/kafka/kafkatest"
)

// The start-up check of max.message.bytes needs DescribeConfigs on each
// topic. A principal with the ACLs of docs/trust-model.md (Read and Write
// on the topics, Create and DescribeConfigs on the cluster) may lack it on
// some: those topics are not checked, and start-up goes on; a topic it may
// describe is still held to its size. (Review 7's check stopped start-up
// on such a principal.)
func TestMessageBytesCheckSkipsTopicsItMayNotDescribe(t *testing.T) {
	allow := func(res kmsg.ACLResourceType, name string, op kmsg.ACLOperation) kfake.ACL {
		return kfake.ACL{Resource: res, Name: name, Pattern: kmsg.ACLResourcePatternTypeLiteral, Operation: op, Allow: true}
	}
	acls := []kfake.ACL{
		allow(kmsg.ACLResourceTypeCluster, "kafka-cluster", kmsg.ACLOperationCreate),
		allow(kmsg.ACLResourceTypeCluster, "kafka-cluster", kmsg.ACLOperationDescribeConfigs),
		allow(kmsg.ACLResourceTypeTopic, "runs", kmsg.ACLOperationDescribeConfigs),
	}
	for _, topic := range []string{"results", "dlq", "runs"} {
		acls = append(acls, allow(kmsg.ACLResourceTypeTopic, topic, kmsg.ACLOperationRead), allow(kmsg.ACLResourceTypeTopic, topic, kmsg.ACLOperationWrite))
	}
	c := kafkatest.StartFake(t, kfake.EnableSASL(), kfake.EnableACLs(), kfake.Superuser(kafka.SASLPlain, "admin", "pw-admin"),
		kfake.User(kafka.SASLPlain, "lakewap", "pw-lakewap", acls...))
	client := func(user, pw string) *kafka.Client {
		kc, err := kafka.NewClient(c.Brokers, kafka.Security{SASL: &kafka.SASLConfig{Mechanism: kafka.SASLPlain, Username: user, Password: pw}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(kc.Close)
		return kc
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin := client("admin", "pw-admin")
	if err := admin.EnsureTopics(ctx, kafka.TopicSpec{Name: "results", Partitions: 1, Configs: map[string]string{"max.message.bytes": "1000"}},
		kafka.TopicSpec{Name: "dlq", Partitions: 1}, kafka.TopicSpec{Name: "runs", Partitions: 1, Configs: map[string]string{"max.message.bytes": "1000"}}); err != nil {
		t.Fatal(err)
	}
	lakewap := client("lakewap", "pw-lakewap")
	specs := []kafka.TopicSpec{{Name: "results", MinMessageBytes: 65536}, {Name: "dlq", MinMessageBytes: 8192}}
	if err := lakewap.CheckTopics(ctx, specs...); err != nil {
		t.Errorf("CheckTopics of topics lakewap may not describe: %v, want them left unchecked", err)
	}
	var small *kafka.SmallTopicError
	if err := lakewap.CheckTopics(ctx, append(specs, kafka.TopicSpec{Name: "runs", MinMessageBytes: 4096})...); !errors.As(err, &small) || small.Topic != "runs" {
		t.Errorf("CheckTopics of a topic lakewap may describe, below its need: %v, want a SmallTopicError of runs", err)
	}
}
