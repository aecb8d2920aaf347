package notify

import (
	"context"
	"fmt"
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

// announcementSink counts the announcements that reach it.
type announcementSink struct{ posts int }

func (c *announcementSink) Name() string { return "slack" }
func (c *announcementSink) Send(_ context.Context, n Notification) (string, bool, error) {
	if _, ok := announcement(n); ok {
		c.posts++
	}
	return n.Receipts["slack"], false, nil
}

// TestReview43AnnouncementsOfRunsWithAMessageAreLimited: an announcement
// (UnattestedChange) is a new Slack message of its own, never an update,
// but it is sent with the receipts of the run whose publish found it, and
// that run's message is usually posted already. The limiter took such a
// notification for an update of a posted message and let every one
// through: each commit on the target that lakewap did not attest (a
// writer's revert of a protected target goes through under lakeFS's
// simplified ACL) posted a message, whatever the burst. They must count
// against their kind's burst like any new message.
func TestReview43AnnouncementsOfRunsWithAMessageAreLimited(t *testing.T) {
	inner := &announcementSink{}
	now := time.Date(2026, 12, 6, 15, 0, 0, 0, time.UTC)
	s := Limit(inner, LimitConfig{Burst: 3, Per: time.Minute, Now: func() time.Time { return now }})
	for i := range 50 {
		commit := fmt.Sprintf("c%063d", i)
		c := schemas.UnattestedChange{EventID: schemas.UnattestedChangeID("lake", "main", schemas.ChangeUnattestedCommit, commit),
			Kind: schemas.ChangeUnattestedCommit, BatchID: fmt.Sprintf("b%d", i), Dataset: "billing", Repository: "lake",
			TargetRef: "main", CommitID: commit}
		_, retry, err := s.Send(context.Background(), Notification{Event: c, State: schemas.StatePublished, Dataset: "billing",
			BatchID: c.BatchID, Receipts: map[string]string{"slack": "C1/1733497200.000100"}})
		if err != nil || retry {
			t.Fatalf("a held-back announcement must not fail or be retried: %v %v", retry, err)
		}
	}
	if inner.posts != 3 {
		t.Errorf("50 announcements of runs whose message was posted: %d posted, want the burst (3)", inner.posts)
	}
}
