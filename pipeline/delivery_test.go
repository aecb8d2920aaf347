package pipeline

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/lakewap/lakewap/schemas"
)

// delivery's methods alone: a confirmed entry leaves the outbox; a sink
// that still owes it is asked again after NotifyRetry, NotifyRetries
// times, and the count starts over once every sink delivered.
func TestDeliveryBookkeeping(t *testing.T) {
	p := Policy{NotifyRetry: time.Minute, NotifyRetries: 2}
	now := time.Date(2026, 12, 1, 5, 0, 0, 0, time.UTC)
	pub := Outgoing{EventID: "e1", State: StatePublished, Published: &schemas.BatchPublished{EventID: "e1"}}
	var d delivery
	d.add(Outgoing{EventID: "s1", State: StatePublishing})
	d.add(pub)
	if e, ok := d.next(StatePublished, "r", now); !ok || e.Kind != DoSend || e.Send.EventID != "s1" {
		t.Fatalf("next = %+v %v, want the oldest entry", e, ok)
	}
	d, changed := d.sent(Sent{EventID: "s1"}, p, now)
	if !changed {
		t.Error("a confirmed outbox entry did not change the delivery")
	}
	if _, changed := d.sent(Sent{EventID: "s1"}, p, now); changed {
		t.Error("a second Sent of the same entry changed the delivery")
	}
	owed := map[string]string{schemas.PendingReceiptPrefix + "slack": "published"}
	before := d.clone()
	d, _ = d.sent(Sent{EventID: "e1", Receipts: owed}, p, now)
	if len(before.Outbox) != 1 {
		t.Fatal("sent changed the delivery it was called on")
	}
	if len(d.Outbox) != 0 || d.Sent != 2 || d.LastSent == nil || d.LastSent.EventID != "e1" {
		t.Fatalf("after both sent: %+v", d)
	}
	for i := 1; i <= 3; i++ {
		e, ok := d.next(StatePublished, "r", now)
		switch {
		case i <= p.NotifyRetries && (!ok || e.Kind != DoWake || !e.At.Equal(now.Add(time.Minute))):
			t.Fatalf("retry %d: next = %+v %v, want a wake a minute later", i, e, ok)
		case i > p.NotifyRetries && ok:
			t.Fatalf("retry %d: next = %+v, want idle after %d retries", i, e, p.NotifyRetries)
		}
		if !ok {
			break
		}
		now = e.At
		if e, _ := d.next(StatePublished, "r", now); e.Kind != DoSend || e.Send.EventID != "e1" || e.Send.State != StatePublished {
			t.Fatalf("retry %d at its time: %+v, want the last event again", i, e)
		}
		d, _ = d.sent(Sent{EventID: "e1", Receipts: owed}, p, now)
	}
	d, _ = d.sent(Sent{EventID: "e1", Receipts: map[string]string{"slack": "ts"}}, p, now)
	if !d.idle() || d.NotifyRetries != 0 {
		t.Errorf("delivered: %+v, want idle with the retry count reset", d)
	}
}

// A run's record keeps the delivery fields at its top level, as stored
// before Delivery was split out, so stored runs restore unchanged.
func TestDeliveryStoredInline(t *testing.T) {
	old := `{"batch_id":"b","dataset":"d","state":"published","state_since":"2026-12-01T05:00:00Z","updated_at":"2026-12-01T05:00:00Z",` +
		`"outbox":[{"event_id":"e1","state":"published"}],"receipts":{"pending:slack":"published"},"sent":3,` +
		`"last_sent":{"event_id":"e0","state":"awaiting_writes"},"notify_retry_at":"2026-12-01T05:01:00Z","notify_retries":2}`
	var r Run
	if err := json.Unmarshal([]byte(old), &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Outbox) != 1 || r.Receipts["pending:slack"] != "published" || r.Sent != 3 || r.LastSent.EventID != "e0" ||
		r.NotifyRetryAt.IsZero() || r.NotifyRetries != 2 {
		t.Fatalf("restored %+v", r.delivery)
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var back, want map[string]any
	_ = json.Unmarshal(b, &back)
	_ = json.Unmarshal([]byte(old), &want)
	for k := range want {
		if _, ok := back[k]; !ok {
			t.Errorf("stored record lost %q: %s", k, b)
		}
	}
	if _, ok := back["Delivery"]; ok {
		t.Errorf("stored record nests the delivery: %s", b)
	}
}
