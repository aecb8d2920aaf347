package notify

import (
	"context"
	"fmt"
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
