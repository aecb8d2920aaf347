package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/schemas"
	"github.com/lakewap/lakewap/schemas/registrytest"
)

// lakewap registry registers every subject lakewap writes with, behind the
// registry's basic auth, with the compatibility level asked for; a codec of
// the same config then encodes with the ids registered, without registering.
func TestRegistryRegistersSubjectsAhead(t *testing.T) {
	reg := registrytest.New(t)
	reg.RequireBasicAuth("sr-key", "sr-secret")
	dir := t.TempDir()
	path := filepath.Join(dir, "client.yaml")
	t.Setenv("SR_SECRET", "sr-secret")
	body := "kafka:\n  brokers: [\"127.0.0.1:1\"]\n  schema_registry_url: " + reg.URL + "\n" +
		"  schema_registry_auth: {username: sr-key, password: \"${SR_SECRET}\"}\n"
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI("registry", "-config", path, "-compatibility", "FULL_TRANSITIVE", "-json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var got []schemas.Registered
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("-json printed %q: %v", out, err)
	}
	subjects := reg.Subjects()
	want := []string{"wap.events-io.lakewap.events.BatchLanded", "wap.requests-io.lakewap.events.RetryRequested",
		"wap.results-io.lakewap.events.BatchPublished", "wap.results-io.lakewap.events.RequestRefused"}
	for _, s := range want {
		if len(subjects[s]) != 1 || reg.Compatibility(s) != "FULL_TRANSITIVE" {
			t.Errorf("subject %s: ids %v, compatibility %q", s, subjects[s], reg.Compatibility(s))
		}
	}
	if _, ok := subjects["wap.results-io.lakewap.events.BatchLanded"]; ok {
		t.Error("an input type was registered on the results topic")
	}
	if len(got) != len(subjects) {
		t.Errorf("printed %d subjects, registered %d", len(got), len(subjects))
	}

	// With the subjects there, lakewap's encoder finds them: the id it
	// writes is the one registered ahead.
	cfg, err := config.LoadClient(path)
	if err != nil {
		t.Fatal(err)
	}
	codec, err := cfg.Kafka.Codec()
	if err != nil {
		t.Fatal(err)
	}
	b, err := codec.Encode(context.Background(), "wap.results", sampleAborted())
	if err != nil {
		t.Fatal(err)
	}
	if id := int(b[1])<<24 | int(b[2])<<16 | int(b[3])<<8 | int(b[4]); b[0] != 0 || id != subjects["wap.results-io.lakewap.events.BatchAborted"][0] {
		t.Errorf("encoded with % x, want the Confluent wire format with id %v", b[:5], subjects["wap.results-io.lakewap.events.BatchAborted"])
	}

	// Without the credentials the registry refuses, and the command says so.
	if err := os.WriteFile(path, []byte(strings.Replace(body, "sr-key", "intruder", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := runCLI("registry", "-config", path); code != 1 || !strings.Contains(errOut, "Unauthorized") {
		t.Errorf("wrong credentials: exit %d: %s", code, errOut)
	}
}

func sampleAborted() schemas.BatchAborted {
	return schemas.BatchAborted{EventID: "e", BatchID: "b", Dataset: "d", Reason: schemas.ReasonCancelled, TargetRef: "main"}
}
