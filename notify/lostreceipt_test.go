package notify

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/lakewap/lakewap/schemas"
)

// slackChannel is a channel id, which conversations.history takes.
const slackChannel = "C0WAP00001"

// heldPosts makes ws hold every chat.postMessage until the returned func
// is called (also at cleanup, before the server stops).
func heldPosts(t *testing.T, ws *workspace) (letGo func()) {
	release := make(chan struct{})
	var once sync.Once
	letGo = func() { once.Do(func() { close(release) }) }
	t.Cleanup(letGo)
	ws.setHold(func(method string, r *http.Request) {
		if method != "chat.postMessage" {
			return
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	return letGo
}

// awaitMessages waits until ws holds want messages, replies included.
func awaitMessages(t *testing.T, ws *workspace, want int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		ws.mu.Lock()
		n := len(ws.messages)
		ws.mu.Unlock()
		if n >= want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d messages in Slack after a minute; want %d", n, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A restarted instance: a new Slack sink and Dispatcher over the same
// workspace, knowing only what the run's record stored.
func restarted(t *testing.T, ws *workspace) *Dispatcher {
	results := &recordingSink{name: "results", required: true}
	// Its notifications are awaited whole, however slow the machine.
	d, _, _ := newTestDispatcher(t, []Route{{Sink: "slack"}}, []Sink{results, newTestSlack(t, ws, "slack", slackChannel)}, Options{BestEffortWait: time.Minute})
	return d
}

// The process ends after Slack took the run's first message but before the
// run's record stored its receipt: the delivery was left in the background,
// so the record holds only "slack pending". The restarted instance, given
// that record, edits the run's one message instead of posting a second.
func TestLostSlackReceiptDoesNotPostASecondMessage(t *testing.T) {
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
	awaitMessages(t, ws, 1) // Slack took it; then the process ended

	published := note(publishedEvent(), schemas.StatePublished)
	published.Receipts = stored
	got, err := restarted(t, ws).Notify(ctx, published)
	if err != nil {
		t.Fatal(err)
	}
	top := ws.topLevel()
	if len(top) != 1 {
		t.Fatalf("%d top-level messages for one run; want its one message, edited to published", len(top))
	}
	wantContains(t, "the message", top[0].text(), "orders published · batch b-42")
	if want := slackChannel + "/" + top[0].TS; got["slack"] != want || got[PendingKey("slack")] != "" {
		t.Errorf("receipts %v: want slack %q and nothing pending", got, want)
	}
}

// Likewise for a failed run's details: the process ends after Slack took
// the thread reply, the record holding only the message's receipt. The
// restarted instance does not post the details twice.
func TestLostSlackReplyReceiptDoesNotPostTheDetailsTwice(t *testing.T) {
	ws := newWorkspace(t)
	results := &recordingSink{name: "results", required: true}
	crashed, _, _ := newTestDispatcher(t, []Route{{Sink: "slack"}}, []Sink{results, newTestSlack(t, ws, "slack", slackChannel)},
		Options{BestEffortWait: time.Nanosecond})
	ctx := context.Background()
	stored, err := restarted(t, ws).Notify(ctx, note(readyEvent(), schemas.StateAwaitingWrites)) // an earlier life
	if err != nil {
		t.Fatal(err)
	}
	if stored["slack"] == "" {
		t.Fatalf("stored receipts %v: want the first message's", stored)
	}
	letGo := heldPosts(t, ws)
	aborted := note(abortedAuditEvent(), schemas.StateAborted)
	aborted.Receipts = stored
	if stored, err = crashed.Notify(ctx, aborted); err != nil {
		t.Fatal(err)
	}
	if stored[PendingKey("slack")] == "" {
		t.Fatalf("stored receipts %v: want slack left pending", stored)
	}
	letGo()
	awaitMessages(t, ws, 2) // the reply is in; then the process ended

	aborted.Receipts = stored
	if _, err := restarted(t, ws).Notify(ctx, aborted); err != nil {
		t.Fatal(err)
	}
	top := ws.topLevel()
	if len(top) != 1 {
		t.Fatalf("%d top-level messages; want 1", len(top))
	}
	if n := len(ws.replies(top[0].TS)); n != 1 {
		t.Errorf("%d detail replies for one aborted run; want 1", n)
	}
}

// A token without channels:history: the lookup's refusal is logged once,
// naming the scope, the message is posted all the same, and the channel's
// history is not asked again.
func TestSlackHistoryRefusedIsLoggedOnceAndPosts(t *testing.T) {
	ws := newWorkspace(t)
	ws.setFail(func(method string, w http.ResponseWriter) bool {
		if method != "conversations.history" {
			return false
		}
		writeJSON(w, map[string]any{"ok": false, "error": "missing_scope", "needed": "channels:history"})
		return true
	})
	results := &recordingSink{name: "results", required: true}
	logs := &logBuffer{}
	sl, err := NewSlack(SlackConfig{Token: "xoxb-test-secret-token", Channel: slackChannel, APIURL: ws.apiURL(),
		Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	d, _, _ := newTestDispatcher(t, []Route{{Sink: "slack"}}, []Sink{results, sl}, Options{BestEffortWait: time.Minute})
	for _, batch := range []string{"b-1", "b-2"} {
		n := note(readyEvent(), schemas.StateAwaitingWrites)
		n.BatchID = batch
		got, err := d.Notify(context.Background(), n)
		if err != nil {
			t.Fatal(err)
		}
		if got["slack"] == "" || got[PendingKey("slack")] != "" {
			t.Errorf("batch %s: receipts %v; want the message posted", batch, got)
		}
	}
	if n := ws.callCount("conversations.history"); n != 1 {
		t.Errorf("conversations.history asked %d times; want once (refused for good)", n)
	}
	if n := strings.Count(logs.String(), "channels:history"); n != 1 {
		t.Errorf("the refusal is logged %d times; want once:\n%s", n, logs)
	}
}

// A graceful stop awaits the delivery a slow Slack was still taking when
// Notify returned: when Close returns, the message is in Slack.
func TestCloseAwaitsBackgroundDeliveries(t *testing.T) {
	ws := newWorkspace(t)
	letGo := heldPosts(t, ws)
	results := &recordingSink{name: "results", required: true}
	d, _, _ := newTestDispatcher(t, []Route{{Sink: "slack"}}, []Sink{results, newTestSlack(t, ws, "slack", slackChannel)},
		Options{BestEffortWait: time.Nanosecond})
	stored, err := d.Notify(context.Background(), note(readyEvent(), schemas.StateAwaitingWrites))
	if err != nil {
		t.Fatal(err)
	}
	if stored[PendingKey("slack")] == "" {
		t.Fatalf("stored receipts %v: want slack left pending", stored)
	}

	// A stop whose time is up says what it leaves.
	over, cancel := context.WithCancel(context.Background())
	cancel()
	if err := d.Close(over); err == nil || !strings.Contains(err.Error(), "1 of 1 background deliveries still sending") {
		t.Errorf("Close with no time left: %v; want it to name the one delivery left", err)
	}

	letGo()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := d.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if top := ws.topLevel(); len(top) != 1 {
		t.Errorf("%d messages in Slack when Close returned; want the one it awaited", len(top))
	}
}

// Another app in the channel posts a reply in the run's thread carrying the
// metadata of lakewap's details: it is not taken for them, and lakewap's
// own details are posted (before, the lookup believed any reply's metadata,
// so any app with chat:write could silence a failed run's details).
func TestAnotherAppsReplyIsNotTakenForTheDetails(t *testing.T) {
	ws := newWorkspace(t)
	ctx := context.Background()
	stored, err := restarted(t, ws).Notify(ctx, note(readyEvent(), schemas.StateAwaitingWrites))
	if err != nil {
		t.Fatal(err)
	}
	top := ws.topLevel()
	if len(top) != 1 {
		t.Fatalf("%d messages; want the run's", len(top))
	}
	aborted := note(abortedAuditEvent(), schemas.StateAborted)
	other := slack.New("xoxb-another-apps-token", slack.OptionAPIURL(ws.apiURL()))
	if _, _, err := other.PostMessageContext(ctx, slackChannel, slack.MsgOptionText("nothing to see", false), slack.MsgOptionTS(top[0].TS),
		slack.MsgOptionMetadata((&Slack{}).runMetadata(runDetailsType, aborted))); err != nil {
		t.Fatal(err)
	}

	aborted.Receipts = stored
	if _, err := restarted(t, ws).Notify(ctx, aborted); err != nil {
		t.Fatal(err)
	}
	ours := 0
	for _, r := range ws.replies(top[0].TS) {
		if r.BotID == top[0].BotID {
			ours++
		}
	}
	if ours != 1 {
		t.Errorf("lakewap posted %d detail replies; want 1 (another app's reply is not its)", ours)
	}
}

// A channel's history page is as large as its members make it (slack-go
// reads an answer whole): a page that does not end is read up to
// maxSlackAnswerBytes, the lookup stops there, and the message is posted
// (before, the page was read until the attempt's deadline, every attempt,
// and the run's message never went out).
func TestEndlessHistoryPageIsCutAndTheMessagePosted(t *testing.T) {
	ws := newWorkspace(t)
	ws.setFail(func(method string, w http.ResponseWriter) bool {
		if method != "conversations.history" {
			return false
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"ok":true,"messages":[`)
		filler := `{"type":"message","ts":"1.000001","text":"` + strings.Repeat("x", 32<<10) + `"},`
		for {
			if _, err := io.WriteString(w, filler); err != nil {
				return true // the client hung up
			}
		}
	})
	results := &recordingSink{name: "results", required: true}
	d, _, _ := newTestDispatcher(t, []Route{{Sink: "slack"}}, []Sink{results, newTestSlack(t, ws, "slack", slackChannel)},
		Options{Budget: 15 * time.Second, BestEffortWait: time.Minute}) // the answer is awaited, however slow the race detector makes it
	got, err := d.Notify(context.Background(), note(readyEvent(), schemas.StateAwaitingWrites))
	if err != nil {
		t.Fatal(err)
	}
	if got["slack"] == "" || got[PendingKey("slack")] != "" || len(ws.topLevel()) != 1 {
		t.Errorf("receipts %v, %d messages: want the run's message posted past an endless history page", got, len(ws.topLevel()))
	}
}

// Staging and production post with one bot token to one channel, each a run
// of the same dataset and batch id: production, without a receipt, does not
// take staging's message for its own (before, it edited it to its state).
func TestAnotherDeploymentsMessageIsNotTakenForTheRuns(t *testing.T) {
	ws := newWorkspace(t)
	deployment := func(scope string) *Dispatcher {
		sl, err := NewSlack(SlackConfig{Token: "xoxb-test-secret-token", Channel: slackChannel, APIURL: ws.apiURL(), Scope: scope})
		if err != nil {
			t.Fatal(err)
		}
		d, _, _ := newTestDispatcher(t, []Route{{Sink: "slack"}}, []Sink{&recordingSink{name: "results", required: true}, sl},
			Options{BestEffortWait: time.Minute})
		return d
	}
	ctx := context.Background()
	if _, err := deployment("staging").Notify(ctx, note(readyEvent(), schemas.StateAwaitingWrites)); err != nil {
		t.Fatal(err)
	}
	if _, err := deployment("production").Notify(ctx, note(publishedEvent(), schemas.StatePublished)); err != nil {
		t.Fatal(err)
	}
	top := ws.topLevel()
	if len(top) != 2 || top[0].Updates != 0 {
		t.Errorf("%d messages, staging's updated %d times; want each deployment's own, staging's untouched", len(top), top[0].Updates)
	}
}

// Slack rate-limits conversations.history apart from chat.postMessage (a
// burst of runs, each a first message): a lookup told to come back later is
// skipped and the message posted, rather than the run's message waiting for
// the history's rate limit (a receipt lost then gives a second message).
func TestRateLimitedLookupDoesNotHoldUpTheMessage(t *testing.T) {
	ws := newWorkspace(t)
	ws.setFail(func(method string, w http.ResponseWriter) bool {
		if method != "conversations.history" {
			return false
		}
		w.Header().Set("Retry-After", "60")
		w.WriteHeader(http.StatusTooManyRequests)
		return true
	})
	got, err := restarted(t, ws).Notify(context.Background(), note(readyEvent(), schemas.StateAwaitingWrites))
	if err != nil {
		t.Fatal(err)
	}
	if got["slack"] == "" || got[PendingKey("slack")] != "" || len(ws.topLevel()) != 1 {
		t.Errorf("receipts %v, %d messages: want the message posted though the history is rate-limited", got, len(ws.topLevel()))
	}
}

// Any app in the channel reads lakewap's messages' metadata (dataset,
// batch id, scope) and may post a top-level message carrying the same. A
// lakewap that lost a run's receipt looked for its message, found that
// app's (newer, so first), was refused its edit (Slack lets an app edit only
// its own) and posted a second message: what the lookup is there to
// prevent. Only a message of lakewap's own bot counts.
func TestAnotherAppsMessageIsNotTakenForTheRuns(t *testing.T) {
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
	letGo()
	awaitMessages(t, ws, 1)
	ws.mu.Lock()
	md := ws.messages[0].Metadata
	ws.mu.Unlock()
	other := slack.New("xoxb-other-app", slack.OptionAPIURL(ws.apiURL()))
	if _, _, err := other.PostMessageContext(ctx, slackChannel, slack.MsgOptionText("not lakewap's", false), slack.MsgOptionMetadata(md)); err != nil {
		t.Fatal(err)
	}

	published := note(publishedEvent(), schemas.StatePublished)
	published.Receipts = stored
	if _, err := restarted(t, ws).Notify(ctx, published); err != nil {
		t.Fatal(err)
	}
	var ours []postedMessage
	for _, m := range ws.topLevel() {
		if m.BotID == botOf("xoxb-test-secret-token") {
			ours = append(ours, m)
		}
	}
	if len(ours) != 1 {
		t.Fatalf("lakewap has %d top-level messages for one run; want its one message, edited", len(ours))
	}
	wantContains(t, "the run's message", ours[0].text(), "orders published · batch b-42")
}
