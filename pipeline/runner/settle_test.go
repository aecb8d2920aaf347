package runner

import (
	"context"
	"maps"
	"testing"

	. "github.com/lakewap/lakewap/pipeline"

	"github.com/lakewap/lakewap/schemas"
)

// settlingNotifier leaves Slack's part of every notification in the
// background, as a slow Slack does (the run's record holds pending:slack),
// and tells at revocation what that delivery left (Settler).
type settlingNotifier struct {
	*recordingNotifier
	asked int
}

func (n *settlingNotifier) Notify(ctx context.Context, pn Notification) (map[string]string, error) {
	got, err := n.recordingNotifier.Notify(ctx, pn)
	out := maps.Clone(got)
	if out == nil {
		out = map[string]string{}
	}
	out[schemas.PendingReceiptPrefix+"slack"] = string(pn.State)
	return out, err
}

func (n *settlingNotifier) Settled(_ context.Context, run Run) (map[string]string, bool) {
	n.asked++
	if run.Receipts[schemas.PendingReceiptPrefix+"slack"] == "" {
		return nil, false
	}
	out := maps.Clone(run.Receipts)
	delete(out, schemas.PendingReceiptPrefix+"slack")
	out["slack"] = "C0WAP/1700000000.000100"
	return out, true
}

// A partition handed back (a graceful stop, a rebalance) while a run's Slack
// message was still going out in the background left the run's record
// holding only pending:slack: the receipt of the message Slack took was in
// memory only, and the next owner posted a second message unless it could
// find the first in the channel's history (a channel named, not an id; a
// token without channels:history). The revocation now stores what the
// finished delivery left.
func TestRevocationStoresTheReceiptsOfDeliveriesLeftInTheBackground(t *testing.T) {
	notes := &settlingNotifier{recordingNotifier: &recordingNotifier{ch: make(chan schemas.Event, 100)}}
	f := newRunnerFixtureWith(t, func(c *Config) { c.Notifier = notes })
	f.land(t, "b1")
	<-notes.ch // BranchReady
	<-notes.ch // BatchPublished
	f.awaitStored(t, "b1 published", func(n int) bool {
		r, ok := f.run("billing", "b1")
		return ok && n == 1 && r.State == StatePublished && r.Receipts[schemas.PendingReceiptPrefix+"slack"] != ""
	})
	f.r.Revoked(0)
	if err := f.r.Assigned(context.Background(), 0, nil); err != nil { // what the next owner restores
		t.Fatal(err)
	}
	r, ok := f.run("billing", "b1")
	if !ok || r.Receipts["slack"] != "C0WAP/1700000000.000100" || r.Receipts[schemas.PendingReceiptPrefix+"slack"] != "" {
		t.Fatalf("the run as restored: receipts %v (found %v); want Slack's receipt stored and nothing pending", r.Receipts, ok)
	}
}
