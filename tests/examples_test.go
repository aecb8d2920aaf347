package tests

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hamba/avro/v2"

	"github.com/lakewap/lakewap/internal/harness"
	"github.com/lakewap/lakewap/kafka"
	"github.com/lakewap/lakewap/schemas"
)

// exampleLine is one line a results consumer of examples/ prints:
// "TYPE dataset/batch key=value ...".
type exampleLine struct {
	Type    string
	Subject string
	KV      map[string]string
}

func parseExampleLines(t *testing.T, who, out string) []exampleLine {
	t.Helper()
	var lines []exampleLine
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(l)
		if len(f) < 2 {
			t.Errorf("%s printed %q, want TYPE dataset/batch key=value ...", who, l)
			continue
		}
		el := exampleLine{Type: f[0], Subject: f[1], KV: map[string]string{}}
		for _, kv := range f[2:] {
			k, v, _ := strings.Cut(kv, "=")
			el.KV[k] = v
		}
		lines = append(lines, el)
	}
	return lines
}

// javaExampleClasspath is the class path of the built examples/java:
// $LAKEWAP_EXAMPLES_JAVA_CP (test.sh sets it from scripts/javaenv.sh), else
// what scripts/javaenv.sh builds (cached) or why it cannot (no Java 17+ or
// no Maven: skip).
func javaExampleClasspath(ctx context.Context) (cp string, skip, err error) {
	if cp := os.Getenv("LAKEWAP_EXAMPLES_JAVA_CP"); cp != "" {
		return cp, nil, nil
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, filepath.Join(repoDir, "scripts", "javaenv.sh"))
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit) && exit.ExitCode() == 3:
		return "", errors.New(strings.TrimSpace(stderr.String())), nil
	case err != nil:
		return "", nil, fmt.Errorf("scripts/javaenv.sh: %v\n%s", err, tail(stderr.String(), 40))
	}
	return strings.TrimSpace(stdout.String()), nil, nil
}

// TestExamples runs examples/ as a user would, against a lakewap daemon on
// the embedded stack (or Apache Kafka with LAKEWAP_TEST_KAFKA_BROKERS): the
// Python producer hands over a good and a bad batch (BatchLanded, its file
// through lakeFS's S3 gateway to the branch BranchReady names,
// WriteComplete), then the Python and the Java consumers read the results
// topic and must each print the good batch published at main's commit and
// the bad one aborted by its failing check, with its counts.
func TestExamples(t *testing.T) {
	if testing.Short() {
		t.Skip("the examples test runs Python and Java clients; skipped with -short")
	}
	python, err := interopPython()
	if err != nil {
		t.Skipf("examples test skipped: %v; scripts/pyenv.sh installs the pinned Python clients (./test.sh runs it)", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// The Java build (first run only: Maven fetches its jars) goes on
	// while the stack starts.
	type javaBuild struct {
		cp         string
		skip, fail error
	}
	java := make(chan javaBuild, 1)
	go func() {
		cp, skip, err := javaExampleClasspath(ctx)
		java <- javaBuild{cp, skip, err}
	}()

	e := startE2E(t, nil)
	stack := e.Stack
	tmp := t.TempDir()
	examples, err := filepath.Abs(filepath.Join(repoDir, "examples"))
	must(t, err)
	schemaDir, err := filepath.Abs(filepath.Join(repoDir, "schemas"))
	must(t, err)
	brokers := strings.Join(stack.KafkaBrokers, ",")
	run := func(ctx context.Context, name string, args ...string) (string, error) {
		var stdout, stderr bytes.Buffer
		cmd := exec.CommandContext(ctx, args[0], args[1:]...)
		cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1", "LAKEWAP_SCHEMAS="+schemaDir,
			"AWS_ACCESS_KEY_ID="+stack.AccessKeyID, "AWS_SECRET_ACCESS_KEY="+stack.SecretAccessKey)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		began := time.Now()
		if err := cmd.Run(); err != nil {
			return stdout.String(), fmt.Errorf("%s: %v\nstdout:\n%s\nstderr:\n%s", name, err, stdout.String(), tail(stderr.String(), 40))
		}
		t.Logf("%s took %s; it printed:\n%s", name, time.Since(began).Round(time.Millisecond), stdout.String())
		return stdout.String(), nil
	}

	// The producer's files: the demo's 1,000 invoices, the bad one with 40
	// NULL billing ids.
	const good, bad = "ex-good-1", "ex-bad-1"
	files := map[string]string{good: harness.GoodBillingRows, bad: harness.BadBillingRows}
	db, err := sql.Open("duckdb", "")
	must(t, err)
	for batch, query := range files {
		f := filepath.Join(tmp, batch+".parquet")
		_, err := db.ExecContext(ctx, fmt.Sprintf("COPY (%s) TO '%s' (FORMAT parquet)", query, f))
		must(t, err)
		files[batch] = f
	}
	must(t, db.Close())

	produced := make(chan error, len(files))
	for batch, file := range files {
		go func() {
			_, err := run(ctx, "producer.py "+batch, python, filepath.Join(examples, "python", "producer.py"),
				"--brokers", brokers, "--input-topic", e.cfg.Kafka.InputTopic, "--results-topic", e.cfg.Kafka.ResultsTopic,
				"--s3-endpoint", stack.LakeFSEndpoint, "--dataset", "billing", "--batch", batch, "--write", "billing_fact",
				"--file", file, "--path", "gold/billing_fact/batch="+batch+"/part-0.parquet")
			produced <- err
		}()
	}
	for range files {
		must(t, <-produced)
	}
	final := map[string]schemas.Event{}
	for batch := range files {
		ev, err := e.Watcher.Await(ctx, batch, schemas.TypeBatchPublished, schemas.TypeBatchAborted, schemas.TypeBatchFailed)
		must(t, err)
		final[batch] = ev
	}
	pub, ok := final[good].(schemas.BatchPublished)
	if !ok {
		t.Fatalf("the good batch the Python producer sent ended with %s: %+v", final[good].EventType(), final[good])
	}
	head, err := e.Lake.GetCommit(ctx, stack.Repository, "main")
	must(t, err)
	rows, err := e.CountRows(ctx, "main", "gold/billing_fact/", "")
	must(t, err)
	if head.ID != pub.CommitID || rows != 1000 {
		t.Errorf("main is at %s with %d rows; want BatchPublished's %s with the producer's 1000", head.ID, rows, pub.CommitID)
	}

	// An outcome as an older lakewap wrote it (BatchAborted of the shipped
	// v1 schema, before target_ref), sent twice as after a crash: each
	// consumer must read it into the current schema and print it once.
	const old = "ex-old-1"
	writeOldOutcome(t, ctx, e, schemas.BatchAborted{EventID: "old-outcome-1", BatchID: old, Dataset: "billing",
		Reason: schemas.ReasonCancelled, Detail: "given up by its producer", OccurredAt: time.Now().UTC().Truncate(time.Millisecond)})

	// The bad batch's billing_id_not_null counts 40 NULL ids of the rows
	// its audit read: its 1,000 against its snapshot, or 2,000 when the
	// good batch was published first and the failing batch was judged
	// again as its merge leaves main (Runner.ontoHead). Both consumers must
	// print what lakewap's event says.
	aborted, ok := final[bad].(schemas.BatchAborted)
	if !ok || aborted.Report == nil {
		t.Fatalf("the bad batch ended with %s, want BatchAborted with a report: %+v", final[bad].EventType(), final[bad])
	}
	notNull := ""
	for _, c := range aborted.Report.Checks {
		if c.Name == "billing_id_not_null" && c.Failures != nil && c.RowsChecked != nil {
			notNull = fmt.Sprintf("billing_id_not_null:%d/%d", *c.Failures, *c.RowsChecked)
		}
	}
	if notNull != "billing_id_not_null:40/1000" && notNull != "billing_id_not_null:40/2000" {
		t.Fatalf("the bad batch's billing_id_not_null counted %q, want 40 NULL ids of 1000 or 2000 rows", notNull)
	}

	// What each consumer must print, by subject and type: the good batch
	// published at main's head, the bad one stopped by billing_id_not_null,
	// its branch kept.
	want := map[string]map[string]string{
		"billing/" + good + " BranchReady":    {"branch": schemas.BranchName("billing", good)},
		"billing/" + good + " BatchPublished": {"target": "main", "commit": head.ID, "checks": "5", "passed": "true"},
		"billing/" + bad + " BranchReady":     {"branch": schemas.BranchName("billing", bad)},
		"billing/" + bad + " BatchAborted": {"reason": schemas.ReasonAuditFailed, "failed": notNull,
			"branch": schemas.BranchName("billing", bad), "kept": "true"},
		"billing/" + old + " BatchAborted": {"reason": schemas.ReasonCancelled, "branch": "", "kept": "false"},
	}
	check := func(t *testing.T, who, out string) {
		got := map[string]map[string]string{}
		for _, l := range parseExampleLines(t, who, out) {
			k := l.Subject + " " + l.Type
			if _, dup := got[k]; dup {
				t.Errorf("%s printed %s twice (duplicates are dropped by event_id)", who, k)
			}
			got[k] = l.KV
		}
		for k, kv := range want {
			for field, v := range kv {
				if got[k][field] != v {
					t.Errorf("%s: %s %s=%q, want %q (printed: %v)", who, k, field, got[k][field], v, got[k])
				}
			}
		}
		for k := range got {
			if want[k] == nil {
				t.Errorf("%s printed %s %v, which no batch here produced", who, k, got[k])
			}
		}
	}
	consumer := func(name string, cmd ...string) []string {
		return append(cmd, "--brokers", brokers, "--topic", e.cfg.Kafka.ResultsTopic, "--from-beginning", "--exit-at-end",
			"--group", stack.GroupID("examples-"+name))
	}

	// A group, so that the consumers run side by side before ctx ends.
	t.Run("consumers", func(t *testing.T) {
		t.Run("python", func(t *testing.T) {
			t.Parallel()
			out, err := run(ctx, "consumer.py", consumer("python", python, filepath.Join(examples, "python", "consumer.py"))...)
			must(t, err)
			check(t, "consumer.py", out)
		})
		t.Run("java", func(t *testing.T) {
			t.Parallel()
			b := <-java
			must(t, b.fail)
			if b.skip != nil {
				t.Skipf("Java example skipped: %v", b.skip)
			}
			javaBin := "java"
			if home := os.Getenv("JAVA_HOME"); home != "" {
				javaBin = filepath.Join(home, "bin", "java")
			}
			out, err := run(ctx, "ResultsConsumer", consumer("java", javaBin, "-XX:TieredStopAtLevel=1", "-cp", b.cp,
				"io.lakewap.examples.ResultsConsumer")...)
			must(t, err)
			check(t, "ResultsConsumer", out)
		})
	})
}

// writeOldOutcome writes ev to the results topic twice, encoded with the
// first shipped version of its schema (schemas/history/<type>.v1.avsc).
func writeOldOutcome(t *testing.T, ctx context.Context, e *e2e, ev schemas.Event) {
	t.Helper()
	text, err := os.ReadFile(filepath.Join(repoDir, "schemas", "history", ev.EventType()+".v1.avsc"))
	must(t, err)
	v1, err := avro.ParseWithCache(string(text), "", &avro.SchemaCache{})
	must(t, err)
	body, err := avro.Marshal(v1, ev)
	must(t, err)
	value := append(binary.LittleEndian.AppendUint64([]byte{0xc3, 0x01}, schemas.Fingerprint(v1)), body...)
	currentText, err := schemas.SchemaText(ev.EventType())
	must(t, err)
	current, err := avro.ParseWithCache(currentText, "", &avro.SchemaCache{})
	must(t, err)
	if schemas.Fingerprint(current) == schemas.Fingerprint(v1) {
		t.Fatalf("%s v1 is the current schema: the test needs an older one", ev.EventType())
	}
	client, err := kafka.NewClient(e.Stack.KafkaBrokers, kafka.Security{})
	must(t, err)
	defer client.Close()
	w := client.Writer(kafka.WriterConfig{Topic: e.cfg.Kafka.ResultsTopic, Attempts: 10})
	defer w.Close()
	var hs []kafka.Header
	for k, v := range schemas.Headers(ev) {
		hs = append(hs, kafka.Header{Key: k, Value: []byte(v)})
	}
	for range 2 {
		must(t, w.Write(ctx, kafka.Message{Key: []byte(ev.Batch()), Value: value, Headers: hs}))
	}
}
