package notify

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/lakewap/lakewap/schemas"
)

type countingSink struct{ posts int }

func (c *countingSink) Name() string { return "slack" }
func (c *countingSink) Send(_ context.Context, n Notification) (string, bool, error) {
	if n.Receipts["slack"] == "" {
		c.posts++
	}
	return "C1/" + n.BatchID, false, nil
}

// A flood of one kind (10,000 batches of one dataset aborted too_many_runs)
// posts at most the burst of new Slack messages per window; another
// dataset's or another outcome's messages still go out, updates of messages
// already posted are never held back, and the window refills.
func TestSlackFloodOfOneKindIsLimited(t *testing.T) {
	inner := &countingSink{}
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	s := Limit(inner, LimitConfig{Burst: 5, Per: time.Minute, Now: func() time.Time { return now }})
	suppressed := func() int { return int(testutil.ToFloat64(s.(*limited).metrics.suppressed)) }
	flood := func(dataset, reason string, n int) {
		for i := range n {
			ev := schemas.BatchAborted{BatchID: dataset + "-" + reason + "-" + string(rune('a'+i%26)) + time.Duration(i).String(), Dataset: dataset, Reason: reason}
			receipt, retry, err := s.Send(context.Background(), Notification{Event: ev, State: schemas.StateAborted, Dataset: dataset, BatchID: ev.BatchID})
			if err != nil || retry {
				t.Fatalf("a suppressed message must not be retried or fail the notification: %v %v", retry, err)
			}
			_ = receipt
		}
	}
	flood("billing", schemas.ReasonTooManyRuns, 10000)
	if inner.posts != 5 || suppressed() != 9995 {
		t.Fatalf("flood of one kind: %d posts, %d suppressed; want 5 and 9995", inner.posts, suppressed())
	}
	flood("orders", schemas.ReasonTooManyRuns, 1)
	flood("billing", schemas.ReasonAuditFailed, 1)
	if inner.posts != 7 {
		t.Errorf("other dataset and other outcome: %d posts in all, want 7", inner.posts)
	}
	// An update of a message already posted goes out whatever the bucket says.
	if _, _, err := s.Send(context.Background(), Notification{State: schemas.StateAborted, Dataset: "billing", BatchID: "x",
		Event: schemas.BatchAborted{BatchID: "x", Dataset: "billing", Reason: schemas.ReasonTooManyRuns}, Receipts: map[string]string{"slack": "C1/x"}}); err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Minute)
	flood("billing", schemas.ReasonTooManyRuns, 10)
	if inner.posts != 12 {
		t.Errorf("after the window: %d posts in all, want 12 (the burst again)", inner.posts)
	}
}
