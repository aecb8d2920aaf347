package notify

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lakewap/lakewap/schemas"
)

// A flood of one kind (other batches of the dataset published within the
// window) holds back new messages; it must not hold back the edit of a
// run's message whose receipt was lost (the record holds only "slack
// pending"): before, the limiter took the run's update for a new message
// and dropped it, and its one message said "awaiting writes" for good
// while the run was published.
func TestLostReceiptEditIsNotHeldBackByTheFloodLimit(t *testing.T) {
	ws := newWorkspace(t)
	letGo := heldPosts(t, ws)
	results := &recordingSink{name: "results", required: true}
	crashed, _, _ := newTestDispatcher(t, []Route{{Sink: "slack"}}, []Sink{results, newTestSlack(t, ws, "slack", slackChannel)},
		Options{BestEffortWait: time.Nanosecond})
	ctx := context.Background()
	stored, err := crashed.Notify(ctx, note(readyEvent(), schemas.StateAwaitingWrites))
	if err != nil {
		t.Fatal(err)
	}
	if stored["slack"] != "" || stored[PendingKey("slack")] == "" {
		t.Fatalf("stored receipts %v: want slack left pending without a receipt", stored)
	}
	letGo()
	awaitMessages(t, ws, 1)

	// The restarted instance, one new message of published runs an hour.
	limited := Limit(newTestSlack(t, ws, "slack", slackChannel), LimitConfig{Burst: 1, Per: time.Hour})
	d, _, _ := newTestDispatcher(t, []Route{{Sink: "slack"}}, []Sink{&recordingSink{name: "results", required: true}, limited},
		Options{BestEffortWait: time.Minute})
	other := publishedEvent()
	other.BatchID, other.EventID = "b-other", "ev-pub-b-other"
	on := note(other, schemas.StatePublished)
	on.BatchID = other.BatchID
	if _, err := d.Notify(ctx, on); err != nil {
		t.Fatal(err)
	}
	awaitMessages(t, ws, 2) // the window's one new message

	published := note(publishedEvent(), schemas.StatePublished)
	published.Receipts = stored
	got, err := d.Notify(ctx, published)
	if err != nil {
		t.Fatal(err)
	}
	top := ws.topLevel()
	if len(top) != 2 {
		t.Fatalf("%d top-level messages; want the two runs' one each", len(top))
	}
	var ours string
	for _, m := range top {
		if m.TS != "" && strings.Contains(m.text(), "batch b-42") {
			ours = m.text()
		}
	}
	wantContains(t, "the run's message", ours, "orders published · batch b-42")
	if got["slack"] == "" || got[PendingKey("slack")] != "" {
		t.Errorf("receipts %v: want the found message's receipt and nothing pending", got)
	}
}

// The flood limit's lookup of a lost receipt's message is the only one: a
// run whose message is not there (its first send never reached Slack) costs
// one conversations.history call, not the limiter's and the sink's.
func TestLimitLooksForALostReceiptsMessageOnce(t *testing.T) {
	ws := newWorkspace(t)
	limited := Limit(newTestSlack(t, ws, "slack", slackChannel), LimitConfig{Burst: 5, Per: time.Hour})
	d, _, _ := newTestDispatcher(t, []Route{{Sink: "slack"}}, []Sink{&recordingSink{name: "results", required: true}, limited},
		Options{BestEffortWait: time.Minute})
	published := note(publishedEvent(), schemas.StatePublished)
	published.Receipts = map[string]string{PendingKey("slack"): schemas.StateAwaitingWrites}
	got, err := d.Notify(context.Background(), published)
	if err != nil {
		t.Fatal(err)
	}
	if got["slack"] == "" || len(ws.topLevel()) != 1 {
		t.Fatalf("receipts %v, %d messages; want the run's message posted", got, len(ws.topLevel()))
	}
	ws.mu.Lock()
	n := ws.calls["conversations.history"]
	ws.mu.Unlock()
	if n != 1 {
		t.Errorf("%d conversations.history calls for one message not found; want 1", n)
	}
}

// Settled awaits a run's delivery left in the background and tells its
// receipt, for the runner to store when it hands the partition back; a
// delivery that failed, or a run whose record moved on, tells nothing.
func TestSettledTellsTheReceiptOfADeliveryLeftInTheBackground(t *testing.T) {
	ws := newWorkspace(t)
	letGo := heldPosts(t, ws)
	d, _, _ := newTestDispatcher(t, []Route{{Sink: "slack"}}, []Sink{&recordingSink{name: "results", required: true}, newTestSlack(t, ws, "slack", slackChannel)},
		Options{BestEffortWait: time.Nanosecond})
	ctx := context.Background()
	stored, err := d.Notify(ctx, note(readyEvent(), schemas.StateAwaitingWrites))
	if err != nil {
		t.Fatal(err)
	}
	if stored["slack"] != "" || stored[PendingKey("slack")] == "" {
		t.Fatalf("stored receipts %v: want slack left pending", stored)
	}
	other := map[string]string{"results": stored["results"], "slack": "C0WAP00001/1.000001"}
	if got, ok := d.Settled(ctx, testDataset, testBatch, other); ok {
		t.Errorf("Settled of a record that moved on: %v; want nothing", got)
	}
	letGo()
	got, ok := d.Settled(ctx, testDataset, testBatch, stored)
	top := ws.topLevel()
	if !ok || len(top) != 1 || got["slack"] != slackChannel+"/"+top[0].TS || got[PendingKey("slack")] != "" || got["results"] != stored["results"] {
		t.Fatalf("Settled = %v, %v (%d messages); want the posted message's receipt, nothing pending, the rest kept", got, ok, len(top))
	}
}
