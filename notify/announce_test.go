package notify

import (
	"context"
	"maps"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

// An announcement is a Slack message of its own: posted once in the route's
// channel, never an update of the run's message, whose receipt stays as it
// was; a route for aborted runs only gets it too (it is about the target,
// not the run's state), and the results topic gets it as any result.
func TestAnnouncementIsAMessageOfItsOwn(t *testing.T) {
	ws := newWorkspace(t)
	slack := newTestSlack(t, ws, "slack", "#data")
	results := &recordingSink{name: "results", required: true}
	d, _, _ := newTestDispatcher(t, []Route{{Sink: "slack", On: []string{schemas.StateAborted}, Channel: "#alerts"}}, []Sink{slack, results}, Options{})
	run := map[string]string{"slack": "C0DATA/1600000000.000001", "results": "e-published"}
	c := schemas.UnattestedChange{EventID: "e-ann", Kind: schemas.ChangeUnattestedCommit, BatchID: "b2", Dataset: "billing", Repository: "lake",
		TargetRef: "main", CommitID: "d1rec7c0ffee", Committer: "ana", Message: "fix <!channel> by hand", Detail: "no lakewap attestation"}
	got, err := d.Notify(context.Background(), Notification{Event: c, State: schemas.StatePublished, Dataset: "billing", BatchID: "b2", Receipts: run})
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(got, run) {
		t.Errorf("receipts after the announcement %v, want the run's %v", got, run)
	}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if len(ws.messages) != 1 || ws.calls["chat.update"] != 0 || ws.messages[0].Channel != "CALERTS" {
		t.Fatalf("slack: %d messages, %d updates; want one new message in #alerts", len(ws.messages), ws.calls["chat.update"])
	}
	wantContains(t, "announcement", ws.messages[0].Text+ws.messages[0].text(), "did not attest", "d1rec7c0ffee"[:12], "ana")
	for _, b := range ws.messages[0].Blocks.BlockSet {
		if raw := renderRaw(b); strings.Contains(raw, "<!channel>") {
			t.Errorf("the commit's message mentions the channel: %s", raw)
		}
	}
	if len(results.got) != 1 {
		t.Errorf("results topic got %d events, want the announcement", len(results.got))
	}
}
