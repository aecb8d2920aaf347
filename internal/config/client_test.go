package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestClientConfig(t *testing.T) {
	env := func(string) (string, bool) { return "", false }
	c, err := ParseClient([]byte(`kafka:
  brokers: ["kafka-1:9093"]
  sasl: {mechanism: SCRAM-SHA-512, username: producer, password: s3cret}
  tls: {insecure_skip_verify: true}
`), env)
	if err != nil {
		t.Fatalf("a kafka-only config: %v", err)
	}
	if !c.IsClient() || c.Kafka.InputTopic != "wap.events" || c.Kafka.SASL.Username != "producer" || c.Kafka.RequestsTopic == "" {
		t.Errorf("client config = %+v", c.Kafka)
	}
	for _, tc := range []struct{ name, src, want string }{
		{"bad mechanism", "kafka: {brokers: [\"k:9092\"], sasl: {mechanism: GSSAPI, username: u, password: p}}", "kafka.sasl.mechanism"},
		{"no brokers", "kafka: {group_id: x}", "kafka.brokers"},
		{"unknown kafka key", "kafka: {brokers: [\"k:9092\"], brokerz: [x]}", "brokerz"},
		{"short operator key", "kafka: {brokers: [\"k:9092\"]}\noperators: [{name: ana, key: short}]", "operators"},
	} {
		if _, err := ParseClient([]byte(tc.src), env); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one naming %s", tc.name, err, tc.want)
		}
	}
}

// LoadClient reads a client config as one, and any other file as the
// daemon's config, with all its checks.
func TestLoadClientTellsClientFromDaemonConfigs(t *testing.T) {
	dir := t.TempDir()
	client := filepath.Join(dir, "client.yaml")
	if err := os.WriteFile(client, []byte("kafka: {brokers: [\"k:9092\"]}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := LoadClient(client)
	if err != nil || !c.IsClient() {
		t.Fatalf("client config: %v %+v", err, c)
	}
	daemon := filepath.Join(dir, "lakewap.yaml")
	if err := os.WriteFile(daemon, []byte("kafka: {brokers: [\"k:9092\"]}\nlakefs: {endpoint: http://l:8000}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadClient(daemon); err == nil || !strings.Contains(err.Error(), "datasets") {
		t.Fatalf("a daemon config without datasets loaded as a client one: %v", err)
	}
}
