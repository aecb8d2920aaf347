package tests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/lakewap/lakewap/kafka/kafkatest"
	"github.com/lakewap/lakewap/schemas"
)

// A producer's config has only a kafka section, with its own SASL
// credentials: no lakeFS secret, no webhook token, no datasets. emit and
// tail work with it against a broker that requires SASL/SCRAM, and fail
// without the credentials.
func TestEmitAndTailWithAClientOnlyConfig(t *testing.T) {
	k := kafkatest.StartFake(t, kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-256", "producer", "pr0ducer-secret"),
		kfake.SeedTopics(3, "wap.events"))
	dir := t.TempDir()
	write := func(name, body string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	t.Setenv("KAFKA_PASSWORD", "pr0ducer-secret")
	client := write("client.yaml", "kafka:\n  brokers: [\""+k.Brokers[0]+"\"]\n"+
		"  sasl: {mechanism: SCRAM-SHA-256, username: producer, password: \"${KAFKA_PASSWORD}\"}\n")

	code, out, errOut := runCLI(t, "emit", "-config", client, "landed", "-batch", "client-1", "-dataset", "billing", "-writes", "billing_fact")
	if code != 0 {
		t.Fatalf("emit with a client config: exit %d: %s", code, errOut)
	}
	if rs := records(t, out); len(rs) != 1 || rs[0].Key != "client-1" || rs[0].Type != schemas.TypeBatchLanded {
		t.Fatalf("emit printed %+v", rs)
	}
	code, out, errOut = runCLI(t, "tail", "-config", client, "-topic", "wap.events", "-from-beginning", "-follow=false")
	if code != 0 {
		t.Fatalf("tail with a client config: exit %d: %s", code, errOut)
	}
	if rs := records(t, out); len(rs) != 1 || rs[0].Key != "client-1" {
		t.Fatalf("tail printed %+v", rs)
	}

	// The same broker refuses a config without the credentials.
	anon := write("anon.yaml", "kafka: {brokers: [\""+k.Brokers[0]+"\"]}\n")
	if code, _, errOut := runCLI(t, "emit", "-config", anon, "-timeout", "3s", "landed", "-batch", "client-2", "-dataset", "billing", "-writes", "billing_fact"); code == 0 || strings.Contains(errOut, "flag provided but not defined") {
		t.Fatalf("emit without SASL credentials against a SASL broker: exit %d: %s", code, errOut)
	} else {
		t.Logf("without credentials: %s", strings.TrimSpace(errOut))
	}

	// A client config is checked like the daemon's kafka section.
	bad := write("bad.yaml", "kafka: {brokers: [\""+k.Brokers[0]+"\"], sasl: {mechanism: KERBEROS, username: u, password: p}}\n")
	if code, _, errOut := runCLI(t, "emit", "-config", bad, "landed", "-batch", "c", "-dataset", "d", "-writes", "w"); code == 0 || !strings.Contains(errOut, "kafka.sasl.mechanism") {
		t.Fatalf("bad client config: exit %d: %s", code, errOut)
	}
}
