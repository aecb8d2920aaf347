package notify

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lakewap/lakewap/kafka"
	"github.com/lakewap/lakewap/kafka/kafkatest"
	"github.com/lakewap/lakewap/schemas"
)

// A result event larger than the results topic takes is written with less
// of its report (sample rows first), never retried as it is forever: once
// over the sink's own limit, once over a topic limit lower than it.
func TestResultEventFitsTheResultsTopic(t *testing.T) {
	kc := kafkatest.Start(t, kafkatest.Topic{Name: DefaultResultsTopic, Partitions: 1,
		Configs: map[string]string{"max.message.bytes": "60000"}})
	k, codec := newTestKafkaSink(t, kc)
	rep := schemas.AuditReport{Dataset: "orders", Ref: "c1"}
	for i := range 20 {
		c := schemas.CheckResult{Name: fmt.Sprintf("check_%d", i), Kind: "not_null", Table: "t", Severity: "error", Status: schemas.StatusFail}
		for range 5 {
			c.SampleRows = append(c.SampleRows, `{"v":"`+strings.Repeat("x", 1000)+`"}`)
		}
		rep.Checks = append(rep.Checks, c)
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	big := schemas.BatchAborted{EventID: "e-big", BatchID: "b-big", Dataset: "orders", Repository: "lake", Branch: "wap-orders-b-big",
		Reason: schemas.ReasonAuditFailed, Report: &rep, OccurredAt: now}
	ctx := context.Background()
	// Over the topic's limit (60000) but under the sink's default.
	if _, _, err := k.Send(ctx, Notification{Event: big}); err != nil {
		t.Fatalf("over the topic's limit: %v", err)
	}
	// Over the sink's own limit.
	k.MaxMessageBytes = 30000
	big.EventID, big.BatchID = "e-big2", "b-big2"
	if _, _, err := k.Send(ctx, Notification{Event: big}); err != nil {
		t.Fatalf("over the sink's limit: %v", err)
	}
	for i, m := range readResults(t, kc, 2) {
		ev, err := codec.Decode(ctx, m.Value)
		if err != nil {
			t.Fatal(err)
		}
		ab := ev.(schemas.BatchAborted)
		if ab.Report == nil || len(ab.Report.Checks) != 20 {
			t.Fatalf("result %d report %+v, want the 20 failed checks", i, ab.Report)
		}
		for _, c := range ab.Report.Checks {
			if len(c.SampleRows) != 0 {
				t.Errorf("result %d check %s kept its sample rows", i, c.Name)
			}
		}
		if n := kafka.Size(kafka.FromWire(m)); n > 30000 {
			t.Errorf("result %d is %d bytes", i, n)
		}
	}
}

// A result event sent with less of its report says what it left out, the
// way the audit's report budget does: the checks it dropped are summed up in
// an omitted_checks result (how many, how many failed; the audit's own
// omitted_checks counted in), and a check whose sample rows went says so. Before, the passing checks and the sample rows
// were gone without a word: a consumer read an audit of 3 checks where 600
// ran.
func TestShrunkResultEventSaysWhatItLeftOut(t *testing.T) {
	kc := kafkatest.Start(t, kafkatest.Topic{Name: DefaultResultsTopic, Partitions: 1})
	k, codec := newTestKafkaSink(t, kc)
	k.MaxMessageBytes = 20000
	rep := schemas.AuditReport{Dataset: "orders", Ref: "c1", Passed: false}
	for i := range 600 {
		rep.Checks = append(rep.Checks, schemas.CheckResult{Name: fmt.Sprintf("check_%03d", i), Kind: "not_null", Table: "t",
			Severity: "error", Status: schemas.StatusPass, Observed: "0 nulls"})
	}
	for i := range 3 {
		rep.Checks[i*200].Status = schemas.StatusFail
		rep.Checks[i*200].SampleRows = []string{`{"v":"` + strings.Repeat("x", 1000) + `"}`}
	}
	// The audit's own report budget had left 100 checks out already.
	rep.Checks = append(rep.Checks, schemas.CheckResult{Name: "omitted_checks", Kind: "report_budget", Severity: "error",
		Status: schemas.StatusFail, Observed: "100 more checks, 2 failed", Message: "left out: the report is over its 32768-byte budget"})
	now := time.Now().UTC().Truncate(time.Millisecond)
	ev := schemas.BatchAborted{EventID: "e-shrunk", BatchID: "b-shrunk", Dataset: "orders", Repository: "lake", Branch: "wap-orders-b-shrunk",
		Reason: schemas.ReasonAuditFailed, Report: &rep, OccurredAt: now}
	if _, _, err := k.Send(context.Background(), Notification{Event: ev}); err != nil {
		t.Fatal(err)
	}
	m := readResults(t, kc, 1)[0]
	got, err := codec.Decode(context.Background(), m.Value)
	if err != nil {
		t.Fatal(err)
	}
	checks := got.(schemas.BatchAborted).Report.Checks
	var names []string
	for _, c := range checks {
		names = append(names, c.Name)
	}
	want := []string{"check_000", "check_200", "check_400", "omitted_checks"}
	if !slices.Equal(names, want) {
		t.Fatalf("checks sent %v, want %v", names, want)
	}
	for _, c := range checks[:3] {
		if len(c.SampleRows) != 0 || !strings.Contains(c.Message, "1 sample row(s) left out") {
			t.Errorf("check %s: %d sample rows, message %q; want none and a note", c.Name, len(c.SampleRows), c.Message)
		}
	}
	o := checks[3]
	if o.Status != schemas.StatusFail || o.Observed != "697 more checks, 2 failed" || !strings.Contains(o.Message, "20000-byte") {
		t.Errorf("omitted_checks = %+v", o)
	}
	if n := kafka.Size(kafka.FromWire(m)); n > 20000 {
		t.Errorf("result is %d bytes", n)
	}
}

// MinMaxMessageBytes, the least kafka.results_max_message_bytes the config
// takes, holds every result event that shrink cannot make smaller, at the
// largest its fields may be (inputs as validated, texts as the machine and
// the audit clip them): such an event over the limit would be refused on
// every attempt, and a required sink retries it for ever.
func TestUnshrinkableEventsFitTheLeastLimit(t *testing.T) {
	codec, err := schemas.NewCodec(schemas.Options{})
	if err != nil {
		t.Fatal(err)
	}
	k := &KafkaResults{name: "kafka", topic: DefaultResultsTopic, enc: codec}
	s := func(n int) string { return strings.Repeat("x", n) }
	now := time.Now().UTC()
	writes := make([]string, schemas.MaxExpectedWrites)
	for i := range writes {
		writes[i] = fmt.Sprintf("%03d", i) + s(schemas.MaxWriteNameLen-3)
	}
	batch, dataset, branch, repo := s(schemas.MaxBatchIDLen), s(schemas.MaxDatasetLen), s(schemas.MaxBranchNameLen), s(63)
	bare := &schemas.AuditReport{Dataset: dataset, Ref: s(64), ModeReason: s(1024), Mode: "full",
		Checks: []schemas.CheckResult{{Name: omittedName, Kind: omittedKind, Severity: "error", Status: schemas.StatusFail,
			Observed: "100000 more checks, 100000 failed", Message: "left out: " + s(200)}}}
	events := []schemas.Event{
		schemas.BranchReady{EventID: s(32), BatchID: batch, Dataset: dataset, Repository: repo, Branch: branch,
			LakeFSURI: "lakefs://" + repo + "/" + branch + "/", S3URI: "s3://" + repo + "/" + branch + "/", ExpectedWrites: writes, WriteDeadline: &now, OccurredAt: now},
		schemas.BatchAborted{EventID: s(32), BatchID: batch, Dataset: dataset, Repository: repo, Branch: branch, Reason: schemas.ReasonInvalid,
			Detail: s(4 << 10), Report: bare, OccurredAt: now, TargetRef: branch},
		schemas.BatchPublished{EventID: s(32), BatchID: batch, Dataset: dataset, Repository: repo, Branch: branch, TargetRef: branch,
			CommitID: s(64), Report: *bare, LandedAt: now, PublishedAt: now},
		schemas.BatchFailed{EventID: s(32), BatchID: batch, Dataset: dataset, Repository: repo, Branch: branch, State: "auditing",
			Error: s(2 << 10), OccurredAt: now, TargetRef: branch},
		schemas.BatchReverted{EventID: s(32), BatchID: batch, Dataset: dataset, Repository: repo, TargetRef: branch, PublishedCommitID: s(64),
			CommitID: s(64), Reason: s(schemas.MaxTextLen), RevertedBy: s(schemas.MaxTextLen), OccurredAt: now},
		schemas.RequestRefused{EventID: s(32), RequestID: s(128), RequestType: "RevertRequested", BatchID: batch, Dataset: dataset,
			State: "published", Reason: "revert_failed", Detail: s(4 << 10), OccurredAt: now},
		schemas.UnattestedChange{EventID: s(32), Kind: schemas.ChangeSuiteChanged, BatchID: batch, Dataset: dataset, Repository: repo,
			TargetRef: branch, CommitID: s(64), Committer: s(256), Message: s(256), Detail: s(512), Suite: s(32), PreviousSuite: s(1024),
			PublishedCommitID: s(64), OccurredAt: now},
	}
	trace := schemas.TraceContext{Parent: "00-" + strings.Repeat("1", 32) + "-" + strings.Repeat("2", 16) + "-01", State: s(schemas.MaxTraceStateBytes)}
	for _, ev := range events {
		for step := 1; ; step++ {
			smaller, ok := shrink(ev, step, "the result event is over the results topic's limit")
			if !ok {
				break
			}
			ev = smaller
		}
		msg, _, err := k.message(context.Background(), ev, s(32), s(128), trace)
		if err != nil {
			t.Fatal(err)
		}
		if n := kafka.Size(msg); n > MinMaxMessageBytes {
			t.Errorf("%s at its largest, as small as shrink makes it, is %d bytes, more than %d", ev.EventType(), n, MinMaxMessageBytes)
		} else {
			t.Logf("%s: %d bytes", ev.EventType(), n)
		}
	}
}
