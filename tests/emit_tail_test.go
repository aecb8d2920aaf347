package tests

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"

	"github.com/lakewap/lakewap/kafka"

	"github.com/lakewap/lakewap/consumer"
	"github.com/lakewap/lakewap/internal/harness"
	"github.com/lakewap/lakewap/internal/opclient"
	"github.com/lakewap/lakewap/schemas"
)

// records parses JSON lines as emit and tail print them.
func records(t *testing.T, out string) []opclient.Record {
	t.Helper()
	var rs []opclient.Record
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		var r opclient.Record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("not a JSON record: %q: %v", line, err)
		}
		rs = append(rs, r)
	}
	return rs
}

// TestEmitAndTailOnTheStack drives a daemon with lakewap emit only (a
// batch from flags, one from a JSON file, an invalid one) and reads the
// results and dead letters back with lakewap tail.
func TestEmitAndTailOnTheStack(t *testing.T) {
	e := startE2E(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	k := e.cfg.Kafka
	brokers := strings.Join(e.Stack.KafkaBrokers, ",")
	dir := t.TempDir()

	t.Run("flags", func(t *testing.T) {
		code, out, errOut := runCLI(t, "emit", "--brokers", brokers, "--topic", k.InputTopic, "landed", "--batch", "cli-1",
			"--dataset", "billing", "--writes", "billing_fact", "--deadline", "1h", "--attr", "owner=e2e", "--source-ref", "main")
		if code != 0 {
			t.Fatalf("emit landed: exit %d: %s", code, errOut)
		}
		rs := records(t, out)
		if len(rs) != 1 || rs[0].Topic != k.InputTopic || rs[0].Key != "cli-1" || rs[0].Type != schemas.TypeBatchLanded ||
			rs[0].Headers[schemas.HeaderEventType] != schemas.TypeBatchLanded || rs[0].Headers[schemas.HeaderBatchID] != "cli-1" {
			t.Fatalf("emit printed %+v", rs)
		}
		ev, err := schemas.FromJSON(rs[0].Type, rs[0].Event)
		must(t, err)
		l := ev.(schemas.BatchLanded)
		if l.WriteDeadline == nil || l.WriteDeadline.Sub(l.OccurredAt) != time.Hour || l.Attributes["owner"] != "e2e" || l.SourceRef != "main" {
			t.Errorf("landed = %+v", l)
		}
		// Partitioned by key like a Java producer: where upstream's own
		// murmur2 writer puts cli-1 (3 partitions).
		if want := (&kafkago.Murmur2Balancer{}).Balance(kafkago.Message{Key: []byte("cli-1")}, 0, 1, 2); rs[0].Partition != want {
			t.Errorf("cli-1 went to partition %d, murmur2 says %d", rs[0].Partition, want)
		}
		got := readAt(ctx, t, e.Stack.KafkaBrokers, k.InputTopic, rs[0].Partition, rs[0].Offset)
		if string(got.Key) != "cli-1" {
			t.Errorf("printed offset %d/%d holds key %q", rs[0].Partition, rs[0].Offset, got.Key)
		}

		rev, err := e.Watcher.Await(ctx, "cli-1", schemas.TypeBranchReady)
		must(t, err)
		path := "gold/billing_fact/batch=cli-1/part-0.parquet"
		must(t, e.WriteParquet(ctx, rev.(schemas.BranchReady).Branch, path, harness.GoodBillingRows))
		// Event flags may also come before the event name.
		code, out, errOut = runCLI(t, "emit", "--brokers", brokers, "--topic", k.InputTopic, "write", "--batch", "cli-1",
			"--dataset", "billing", "--write", "billing_fact", "--paths", path, "--rows", "1000")
		if code != 0 {
			t.Fatalf("emit write: exit %d: %s", code, errOut)
		}
		if rs := records(t, out); len(rs) != 1 || !strings.Contains(string(rs[0].Event), `"row_count":1000`) {
			t.Errorf("emit write printed %s", out)
		}
		if ev, err := e.Watcher.Await(ctx, "cli-1", schemas.TypeBatchPublished, schemas.TypeBatchAborted, schemas.TypeBatchFailed); err != nil || ev.EventType() != schemas.TypeBatchPublished {
			t.Fatalf("cli-1 ended with %v %+v", err, ev)
		}
	})

	t.Run("json", func(t *testing.T) {
		f := filepath.Join(dir, "events.json")
		doc := `{
  "type": "BatchLanded",
  "batch_id": "cli-2", "dataset": "billing",
  "expected_writes": ["billing_fact", "billing_dim"]
}
{"type":"batch-cancelled","batch_id":"cli-2","dataset":"billing","reason":"upstream re-run"}
`
		must(t, os.WriteFile(f, []byte(doc), 0o600))
		code, out, errOut := runCLI(t, "emit", "--json", f, "--brokers", brokers, "--topic", k.InputTopic)
		if code != 0 {
			t.Fatalf("emit --json: exit %d: %s", code, errOut)
		}
		rs := records(t, out)
		if len(rs) != 2 || rs[0].Type != schemas.TypeBatchLanded || rs[1].Type != schemas.TypeBatchCancelled ||
			rs[0].Partition != rs[1].Partition || rs[1].Offset <= rs[0].Offset {
			t.Fatalf("emit --json printed %+v, want landed then cancelled, in order on one partition", rs)
		}
		ev, err := e.Watcher.Await(ctx, "cli-2", schemas.TypeBatchAborted, schemas.TypeBatchPublished)
		must(t, err)
		if ab := ev.(schemas.BatchAborted); ab.Reason != schemas.ReasonCancelled || !strings.Contains(ab.Detail, "upstream re-run") {
			t.Errorf("cli-2: %+v", ab)
		}
	})

	t.Run("refused", func(t *testing.T) {
		resultDoc := filepath.Join(dir, "result.json")
		must(t, os.WriteFile(resultDoc, []byte(`{"type":"BranchReady","batch_id":"x","dataset":"billing","branch":"b","expected_writes":["w"]}`), 0o600))
		cfgFile := writeStackConfig(t, e)
		flags := []string{"emit", "--brokers", brokers, "--topic", k.InputTopic}
		for _, c := range []struct {
			name string
			args []string
			want string
		}{
			{"bad batch id", append(flags, "landed", "--batch", "no spaces please", "--dataset", "billing", "--writes", "billing_fact"), "batch_id: contains ' '"},
			{"no writes", append(flags, "landed", "--batch", "cli-3", "--dataset", "billing"), "expected_writes: is empty"},
			// Brokers, topic and datasets from the config.
			{"unknown dataset", []string{"emit", "--config", cfgFile, "landed", "--batch", "cli-3", "--dataset", "nope", "--writes", "a"}, `"nope" is not a configured dataset`},
			{"result event on the input topic", []string{"emit", "--config", cfgFile, "--json", resultDoc}, "BranchReady is a result event"},
		} {
			code, out, errOut := runCLI(t, c.args...)
			if code != 1 || out != "" || !strings.Contains(errOut, c.want) || !strings.Contains(errOut, "nothing sent") {
				t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit 1, nothing sent, saying %q", c.name, code, out, errOut, c.want)
			}
		}
		if code, _, errOut := runCLI(t, "emit", "--brokers", brokers, "frobnicate"); code != 2 || !strings.Contains(errOut, "unknown event") {
			t.Errorf("unknown event: exit %d %q", code, errOut)
		}
	})

	t.Run("tail results", func(t *testing.T) {
		cfgFile := writeStackConfig(t, e)
		// The results topic from the config, up to its end.
		code, out, errOut := runCLI(t, "tail", "--config", cfgFile, "--from-beginning", "--follow=false")
		if code != 0 {
			t.Fatalf("tail: exit %d: %s", code, errOut)
		}
		rs := records(t, out)
		kinds := map[string]map[string]bool{}
		for _, r := range rs {
			if r.Topic != k.ResultsTopic || r.DecodeError != "" || r.ValueBase64 != "" || r.Headers[schemas.HeaderEventType] != r.Type || r.Time == "" {
				t.Errorf("tail record %+v", r)
			}
			if kinds[r.Key] == nil {
				kinds[r.Key] = map[string]bool{}
			}
			kinds[r.Key][r.Type] = true
		}
		if !kinds["cli-1"][schemas.TypeBranchReady] || !kinds["cli-1"][schemas.TypeBatchPublished] || !kinds["cli-2"][schemas.TypeBatchAborted] {
			t.Errorf("tail of the results topic: %v, want cli-1 ready and published, cli-2 aborted\n%s", kinds, out)
		}
		code, out, _ = runCLI(t, "tail", "--brokers", brokers, "--topic", k.ResultsTopic, "--from-beginning", "--follow=false", "--max", "2")
		if n := len(records(t, out)); code != 0 || n != 2 {
			t.Errorf("tail --max 2: exit %d, %d records", code, n)
		}

		// --follow waits for new events: tail everything there is plus
		// two more, then make two more (a cancel of a batch that never
		// landed and an invalid event of a configured dataset both end in
		// BatchAborted; one of an unknown dataset would only be a dead letter).
		done := make(chan string, 1)
		go func() {
			_, out, errOut := runCLI(t, "tail", "--brokers", brokers, "--topic", k.ResultsTopic, "--from-beginning", "--max", fmt.Sprint(len(rs)+2))
			done <- out + errOut
		}()
		code, _, errOut = runCLI(t, "emit", "--brokers", brokers, "--topic", k.InputTopic, "cancel", "--batch", "cli-4", "--dataset", "billing", "--reason", "r")
		must(t, cliErr(code, errOut))
		code, _, errOut = runCLI(t, "emit", "--brokers", brokers, "--topic", k.InputTopic, "landed", "--batch", "cli-5", "--dataset", "billing", "--writes", "a,a", "--no-validate")
		must(t, cliErr(code, errOut))
		select {
		case out := <-done:
			got := records(t, out)
			// Partitions are read concurrently: new records are the ones
			// at positions the first tail did not print.
			before := map[string]bool{}
			for _, r := range rs {
				before[fmt.Sprint(r.Partition, "@", r.Offset)] = true
			}
			var last []string
			for _, r := range got {
				if !before[fmt.Sprint(r.Partition, "@", r.Offset)] {
					last = append(last, r.Key+" "+r.Type)
				}
			}
			sort.Strings(last)
			if len(got) != len(rs)+2 || strings.Join(last, ", ") != "cli-4 BatchAborted, cli-5 BatchAborted" {
				t.Errorf("tail --follow printed %d records, the new ones %v; want %d, ending with cli-4's and cli-5's BatchAborted", len(got), last, len(rs)+2)
			}
		case <-ctx.Done():
			t.Fatal("tail --follow did not print the new events")
		}
	})

	t.Run("tail dead letters", func(t *testing.T) {
		garbage := []byte{0xC3, 0x01, 0xFF}
		must(t, e.Writer.Write(ctx, kafka.Message{Key: []byte("cli-junk"), Value: garbage}))
		// cli-5 (a write listed twice) and cli-junk end in the dead-letter topic.
		readTopicUntil(ctx, t, e.Stack.KafkaBrokers, k.DeadLetterTopic, 2)
		code, out, errOut := runCLI(t, "tail", "--brokers", brokers, "--topic", k.DeadLetterTopic, "--from-beginning", "--follow=false")
		if code != 0 {
			t.Fatalf("tail dlq: exit %d: %s", code, errOut)
		}
		byKey := map[string]opclient.Record{}
		for _, r := range records(t, out) {
			byKey[r.Key] = r
		}
		junk, invalid := byKey["cli-junk"], byKey["cli-5"]
		raw, err := base64.StdEncoding.DecodeString(junk.ValueBase64)
		if err != nil || !bytes.Equal(raw, garbage) || !strings.Contains(junk.DecodeError, "truncated") ||
			junk.Headers[consumer.HeaderDLQReason] != schemas.DecodeTruncated || junk.Event != nil {
			t.Errorf("garbage dead letter: %+v", junk)
		}
		raw, err = base64.StdEncoding.DecodeString(invalid.ValueBase64)
		if err != nil || len(raw) == 0 || invalid.DecodeError != "" || invalid.Type != schemas.TypeBatchLanded ||
			!strings.Contains(string(invalid.Event), `"dataset":"billing"`) || invalid.Headers[consumer.HeaderDLQReason] != schemas.ReasonInvalid ||
			!strings.Contains(invalid.Headers[consumer.HeaderDLQError], `"a" is listed twice`) {
			t.Errorf("invalid dead letter: %+v", invalid)
		}
	})
}

func cliErr(code int, stderr string) error {
	if code != 0 {
		return fmt.Errorf("exit %d: %s", code, stderr)
	}
	return nil
}

// writeStackConfig writes a lakewap config file for the e2e stack.
func writeStackConfig(t *testing.T, e *e2e) string {
	t.Helper()
	k := e.cfg.Kafka
	doc := fmt.Sprintf(`kafka:
  brokers: [%q]
  group_id: %q
  input_topic: %q
  requests_topic: %q
  results_topic: %q
  dead_letter_topic: %q
  changelog_topic: %q
lakefs:
  endpoint: %q
  access_key_id: %q
  secret_access_key: %q
datasets:
  billing:
    repository: lake
    target: main
    tables:
      - {name: billing_fact, path: gold/billing_fact/, format: parquet}
    checks: [{kind: row_count, table: billing_fact, min: 1}]
`, k.Brokers[0], k.GroupID, k.InputTopic, k.RequestsTopic, k.ResultsTopic, k.DeadLetterTopic, k.ChangelogTopic,
		e.cfg.LakeFS.Endpoint, e.cfg.LakeFS.AccessKeyID, e.cfg.LakeFS.SecretAccessKey)
	f := filepath.Join(t.TempDir(), "lakewap.yaml")
	must(t, os.WriteFile(f, []byte(doc), 0o600))
	return f
}
