package notify

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/lakewap/lakewap/schemas"
)

const oncall = "<!subteam^S0ONCALL>"

func TestSlackMessageContent(t *testing.T) {
	cases := []struct {
		name       string
		n          Notification
		wantMain   []string
		lacksMain  []string
		wantThread []string // nil: no thread reply expected
		lacksThrd  []string
	}{{
		name: "published",
		n:    note(publishedEvent(), schemas.StatePublished),
		wantMain: []string{
			":white_check_mark: orders published · batch b-42",
			"Dataset: orders", "Batch: `b-42`", "Outcome: published", "Duration: 1m23s",
			"Checks: 3 passed · 0 failed · 1 warned",
			"Branch: wap-orders-b-42 (http://lakefs.test:8000/repositories/lake/objects?ref=wap-orders-b-42)",
			"Commit on release: c0ffee123456 (http://lakefs.test:8000/repositories/lake/commits/c0ffee1234567890abcdef)",
			"Warnings: `volume_vs_main` (observed `+38%`, threshold `<= 25%`).",
			"*Next:* nothing to do. If this batch is wrong, undo it on `release` with `lakewap revert -dataset orders -batch b-42 -reason \"...\"`.",
			"event `ev-pub-b-42`",
		},
		lacksMain: []string{oncall, "(deleted)"},
	}, {
		name: "aborted: audit failed",
		n:    note(abortedAuditEvent(), schemas.StateAborted),
		wantMain: []string{
			":no_entry: orders aborted: audit failed · batch b-42",
			oncall + " this batch needs a look.",
			"Duration: 2m0s", "Checks: 1 passed · 2 failed · 1 warned",
			"`release` is untouched.",
			"*Next:* inspect branch wap-orders-b-42 (http://lakefs.test:8000/repositories/lake/objects?ref=wap-orders-b-42) (kept as it was audited), fix the data on it, then run `lakewap retry -dataset orders -batch b-42`.",
		},
		// The failing checks are listed once: in the details.
		lacksMain: []string{"revert", "Commit on", "main", "email_not_null", "freshness"},
		wantThread: []string{
			"*Failing checks* (2 of 4)",
			"*email_not_null* (not_null on `customers`, error): fail",
			"observed `12` vs threshold `0`", "12 rows have a null email",
			`{"id":7,"email":null,"note":"<script>"}`, `{"id":11,"email":null}`,
			"…and 2 more sample rows",
			"*freshness* (freshness on `orders`, error): error", "observed (none) vs threshold `< 1h`", "column updated_at not found",
		},
		lacksThrd: []string{`{"id":12,`, "volume"},
	}, {
		name: "aborted: writes timed out",
		n:    note(timedOutEvent(), schemas.StateAborted),
		wantMain: []string{
			":hourglass: orders aborted: writes timed out · batch b-42", oncall,
			"Duration: 30m0s", "`release` is untouched. missing writes: order_items",
			"*Next:* find out why the expected writes did not arrive before the deadline (what did arrive is on branch wap-orders-b-42 (http://lakefs.test:8000/repositories/lake/objects?ref=wap-orders-b-42)), then send the batch again.",
		},
		lacksMain: []string{"Checks:", "audited", "main"},
	}, {
		name: "failed",
		n:    note(failedEvent(), schemas.StateFailed),
		wantMain: []string{
			":rotating_light: orders failed · batch b-42", oncall, "Duration: 7m0s",
			"lakewap gave up after 5 attempts while publishing. Error: `merge: lakeFS answered 503 Service Unavailable`",
			"*Next:* check lakeFS and Kafka health, inspect branch wap-orders-b-42",
			"then run `lakewap retry -dataset orders -batch b-42`; `release` has not changed",
		},
		lacksMain:  []string{"main"},
		wantThread: []string{"*Error*", "```\nmerge: lakeFS answered 503 Service Unavailable\n```"},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ws := newWorkspace(t)
			sink := newTestSlack(t, ws, "slack", "#wap-alerts")
			d, _, _ := newTestDispatcher(t, []Route{{Sink: "slack", Mention: oncall}}, []Sink{sink}, Options{})
			receipts, err := d.Notify(context.Background(), tc.n)
			if err != nil {
				t.Fatalf("Notify: %v", err)
			}
			top := ws.topLevel()
			if len(top) != 1 {
				t.Fatalf("posted %d top-level messages, want 1", len(top))
			}
			main := top[0]
			if main.Channel != "CWAPALERTS" {
				t.Errorf("posted in %q, want CWAPALERTS", main.Channel)
			}
			wantContains(t, "main message", main.text(), tc.wantMain...)
			wantLacks(t, "main message", main.text(), tc.lacksMain...)
			if tc.n.State != schemas.StatePublished && !strings.HasPrefix(main.Text, oncall) {
				t.Errorf("fallback text %q does not start with the mention, so nobody is paged", main.Text)
			}
			replies := ws.replies(main.TS)
			wantReceipt := "CWAPALERTS/" + main.TS
			if tc.wantThread == nil {
				if len(replies) != 0 {
					t.Errorf("got %d thread replies, want none", len(replies))
				}
			} else {
				if len(replies) != 1 {
					t.Fatalf("got %d thread replies, want 1", len(replies))
				}
				wantContains(t, "thread reply", replies[0].text(), tc.wantThread...)
				wantLacks(t, "thread reply", replies[0].text(), tc.lacksThrd...)
				wantReceipt += "/" + replies[0].TS
			}
			if receipts["slack"] != wantReceipt {
				t.Errorf("receipt %q, want %q", receipts["slack"], wantReceipt)
			}
			if p := pendingSinks(receipts); len(p) != 0 {
				t.Errorf("pending %v after a delivery", p)
			}
		})
	}
}

// User data in a message must not turn into Slack markup (mentions, links).
func TestSlackEscapesUserData(t *testing.T) {
	ev := abortedAuditEvent()
	ev.Detail = "<!channel> see <http://evil.test|here> & there"
	r := runOf(note(ev, schemas.StateAborted))
	m := mainMessage(r, links{base: testUI})
	th, _ := threadMessage(r)
	var raw strings.Builder
	for _, b := range append(m.Blocks, th.Blocks...) {
		raw.WriteString(renderRaw(b))
	}
	wantContains(t, "blocks", raw.String(), "&lt;!channel&gt; see &lt;http://evil.test|here&gt; &amp; there", `\"note\":\"&lt;script&gt;\"`)
	wantLacks(t, "blocks", raw.String(), "<!channel>", "<script>")
	// The fallback text (what notifications and clients without blocks
	// show) is escaped the same way: a dataset or batch id cannot ping.
	ev.Dataset, ev.BatchID = "<!channel>", "<!here>"
	r = runOf(note(ev, schemas.StateAborted))
	m = mainMessage(r, links{base: testUI})
	th, _ = threadMessage(r)
	for _, text := range []string{m.Text, th.Text} {
		wantLacks(t, "fallback text", text, "<!channel>", "<!here>")
		wantContains(t, "fallback text", text, "&lt;!channel&gt;")
	}
}

func TestSlackUpdatesOneMessageAcrossStates(t *testing.T) {
	ws := newWorkspace(t)
	sink := newTestSlack(t, ws, "slack", "#wap")
	d, _, _ := newTestDispatcher(t, []Route{{Sink: "slack"}}, []Sink{sink}, Options{})
	ctx := context.Background()

	steps := []Notification{
		note(readyEvent(), schemas.StateAwaitingWrites),
		note(nil, schemas.StateAuditing),
		note(abortedAuditEvent(), schemas.StateAborted),
	}
	var receipts map[string]string
	var seen []string
	for i, n := range steps {
		n.Receipts = receipts
		var err error
		if receipts, err = d.Notify(ctx, n); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		seen = append(seen, receipts["slack"])
		top := ws.topLevel()
		if len(top) != 1 {
			t.Fatalf("step %d (%s): %d top-level messages, want 1 updated in place", i, n.State, len(top))
		}
		if top[0].Updates != i {
			t.Errorf("step %d: message updated %d times, want %d", i, top[0].Updates, i)
		}
		switch n.State {
		case schemas.StateAwaitingWrites:
			wantContains(t, "awaiting message", top[0].text(), "orders waiting for writes · batch b-42",
				"Expected writes: `orders`, `order_items`. Deadline: 2026-05-01T03:30:00Z.",
				"writers write to `lakefs://lake/wap-orders-b-42/` (S3 gateway: `s3://lake/wap-orders-b-42/`)")
		case schemas.StateAuditing:
			wantContains(t, "auditing message", top[0].text(), ":mag: orders auditing · batch b-42",
				"Branch: wap-orders-b-42 (http://lakefs.test:8000/repositories/lake/objects?ref=wap-orders-b-42)")
		case schemas.StateAborted:
			wantContains(t, "aborted message", top[0].text(), "orders aborted: audit failed · batch b-42")
			wantLacks(t, "aborted message", top[0].text(), "waiting for writes", "auditing")
		}
	}
	top := ws.topLevel()[0]
	ts := "CWAP/" + top.TS
	if seen[0] != ts || seen[1] != ts || !strings.HasPrefix(seen[2], ts+"/") {
		t.Errorf("receipts across states %q, want %q, %q, %q/<reply>", seen, ts, ts, ts)
	}
	if n := len(ws.replies(top.TS)); n != 1 {
		t.Fatalf("%d thread replies, want 1", n)
	}

	// A restart that replays the last notification with the stored receipts
	// edits the same message and does not post the details again.
	again := steps[2]
	again.Receipts = receipts
	receipts2, err := d.Notify(ctx, again)
	if err != nil {
		t.Fatal(err)
	}
	if receipts2["slack"] != receipts["slack"] {
		t.Errorf("replay changed the receipt: %q -> %q", receipts["slack"], receipts2["slack"])
	}
	if n := len(ws.topLevel()); n != 1 {
		t.Errorf("replay: %d top-level messages, want 1", n)
	}
	if n := len(ws.replies(top.TS)); n != 1 {
		t.Errorf("replay: %d thread replies, want 1", n)
	}
}

func TestSlackRepostsWhenMessageWasDeleted(t *testing.T) {
	ws := newWorkspace(t)
	sink := newTestSlack(t, ws, "slack", "#wap")
	d, _, _ := newTestDispatcher(t, []Route{{Sink: "slack"}}, []Sink{sink}, Options{})
	n := note(nil, schemas.StateAuditing)
	n.Receipts = map[string]string{"slack": "CWAP/1600000000.000001"} // not in the workspace
	receipts, err := d.Notify(context.Background(), n)
	if err != nil {
		t.Fatal(err)
	}
	top := ws.topLevel()
	if len(top) != 1 || receipts["slack"] != "CWAP/"+top[0].TS {
		t.Fatalf("after message_not_found: %d messages, receipt %q; want one new message and its receipt", len(top), receipts["slack"])
	}
}

func TestSlackRateLimitedThenDelivered(t *testing.T) {
	ws := newWorkspace(t)
	limited := 0
	ws.setFail(func(method string, w http.ResponseWriter) bool {
		if method == "chat.postMessage" && limited < 1 {
			limited++
			w.Header().Set("Retry-After", "7")
			w.WriteHeader(http.StatusTooManyRequests)
			return true
		}
		return false
	})
	sink := newTestSlack(t, ws, "slack", "#wap")
	d, clock, _ := newTestDispatcher(t, []Route{{Sink: "slack"}}, []Sink{sink},
		Options{Budget: time.Minute, MinBackoff: 100 * time.Millisecond, MaxBackoff: time.Second})
	receipts, err := d.Notify(context.Background(), note(publishedEvent(), schemas.StatePublished))
	if err != nil {
		t.Fatal(err)
	}
	// Retry-After (7s) wins over the backoff (at most 1s here).
	if w := clock.Waits(); !slices.Equal(w, []time.Duration{7 * time.Second}) {
		t.Errorf("waits %v, want exactly the 7s Slack asked for", w)
	}
	if got := ws.callCount("chat.postMessage"); got != 2 {
		t.Errorf("chat.postMessage called %d times, want 2 (429, then success)", got)
	}
	top := ws.topLevel()
	if len(top) != 1 || receipts["slack"] != "CWAP/"+top[0].TS {
		t.Errorf("messages %d, receipt %q; want one message and its receipt", len(top), receipts["slack"])
	}
	if p := pendingSinks(receipts); len(p) != 0 {
		t.Errorf("pending %v after delivery", p)
	}
}

// A Retry-After longer than what is left of the budget is not waited for:
// the notification stays pending and Notify returns.
func TestSlackRetryAfterBeyondBudgetLeavesPending(t *testing.T) {
	ws := newWorkspace(t)
	ws.setFail(func(method string, w http.ResponseWriter) bool {
		w.Header().Set("Retry-After", "120")
		w.WriteHeader(http.StatusTooManyRequests)
		return true
	})
	sink := newTestSlack(t, ws, "slack", "#wap")
	d, clock, _ := newTestDispatcher(t, []Route{{Sink: "slack"}}, []Sink{sink}, Options{Budget: 30 * time.Second})
	receipts, err := d.Notify(context.Background(), note(publishedEvent(), schemas.StatePublished))
	if err != nil {
		t.Fatalf("Notify failed because of Slack: %v", err)
	}
	if len(clock.Waits()) != 0 || ws.callCount("chat.postMessage") != 1 {
		t.Errorf("waited %v over %d calls; want no wait and one call", clock.Waits(), ws.callCount("chat.postMessage"))
	}
	if receipts[PendingKey("slack")] != schemas.StatePublished {
		t.Errorf("receipts %v, want %s pending for slack", receipts, schemas.StatePublished)
	}
}

func TestSlackPermanentErrorIsNotRetriedAndTokenIsRedacted(t *testing.T) {
	ws := newWorkspace(t)
	ws.setFail(func(method string, w http.ResponseWriter) bool {
		// A proxy or Slack echoing the credential back must not leak it.
		writeJSON(w, map[string]any{"ok": false, "error": "invalid_auth for xoxb-test-secret-token"})
		return true
	})
	sink := newTestSlack(t, ws, "slack", "#wap")
	d, clock, logs := newTestDispatcher(t, []Route{{Sink: "slack"}}, []Sink{sink}, Options{})
	receipts, err := d.Notify(context.Background(), note(publishedEvent(), schemas.StatePublished))
	if err != nil {
		t.Fatal(err)
	}
	if n := ws.callCount("chat.postMessage"); n != 1 || len(clock.Waits()) != 0 {
		t.Errorf("%d calls, waits %v; an auth error must not be retried", n, clock.Waits())
	}
	if receipts[PendingKey("slack")] != schemas.StatePublished {
		t.Errorf("receipts %v, want slack pending", receipts)
	}
	wantContains(t, "log", logs.String(), "invalid_auth for [redacted]")
	wantLacks(t, "log", logs.String(), "xoxb-test-secret-token")

	_, _, serr := sink.Send(context.Background(), note(publishedEvent(), schemas.StatePublished))
	if serr == nil || serr.Error() != "slack: chat.postMessage: invalid_auth for [redacted]" {
		t.Errorf("Send error %q, want the redacted text", serr)
	}
}

func TestSlackWebhook(t *testing.T) {
	ws := newWebhookServer(t)
	hook, err := NewSlackWebhook(SlackWebhookConfig{URL: ws.URL + "/services/T0/B0/hooksecret", LakeFSURL: testUI})
	if err != nil {
		t.Fatal(err)
	}
	d, _, _ := newTestDispatcher(t, []Route{{Sink: "slack-webhook"}}, []Sink{hook}, Options{})
	ctx := context.Background()
	var receipts map[string]string
	for _, n := range []Notification{
		note(readyEvent(), schemas.StateAwaitingWrites), // not an outcome: a webhook cannot edit it later
		note(nil, schemas.StateAuditing),
		note(abortedAuditEvent(), schemas.StateAborted),
		note(abortedAuditEvent(), schemas.StateAborted), // replay after a restart
	} {
		n.Receipts = receipts
		if receipts, err = d.Notify(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	got := ws.posts()
	if len(got) != 1 {
		t.Fatalf("webhook got %d posts, want 1 (the outcome, once)", len(got))
	}
	if receipts["slack-webhook"] != "ev-abort-b-42" {
		t.Errorf("receipt %q, want the event id", receipts["slack-webhook"])
	}
	// No thread with a webhook: the details are in the one message.
	wantContains(t, "webhook message", got[0], "orders aborted: audit failed · batch b-42",
		"*Failing checks* (2 of 4)", "observed `12` vs threshold `0`", `{"id":9,"email":null}`)
}

func TestSlackWebhookURLIsRedacted(t *testing.T) {
	// A port nobody listens on: the HTTP client's error quotes the URL.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	secretURL := "http://" + addr + "/services/T0/B0/hooksecret"
	hook, err := NewSlackWebhook(SlackWebhookConfig{Name: "hook", URL: secretURL})
	if err != nil {
		t.Fatal(err)
	}
	d, _, logs := newTestDispatcher(t, []Route{{Sink: "hook"}}, []Sink{hook}, Options{Budget: 5 * time.Second})
	receipts, err := d.Notify(context.Background(), note(failedEvent(), schemas.StateFailed))
	if err != nil {
		t.Fatal(err)
	}
	if receipts[PendingKey("hook")] != schemas.StateFailed {
		t.Errorf("receipts %v, want hook pending", receipts)
	}
	_, retry, serr := hook.Send(context.Background(), note(failedEvent(), schemas.StateFailed))
	if serr == nil || !retry {
		t.Fatalf("Send to a closed port: err %v retry %v; want a retryable error", serr, retry)
	}
	for what, text := range map[string]string{"log": logs.String(), "error": serr.Error()} {
		wantLacks(t, what, text, "hooksecret", "/services/T0")
		wantContains(t, what, text, "[redacted]")
	}
	if _, err := NewSlackWebhook(SlackWebhookConfig{URL: "hooks.slack.test/services/T0/B0/hooksecret"}); err == nil ||
		strings.Contains(err.Error(), "hooksecret") {
		t.Errorf("invalid URL error %v: want an error that does not echo the URL", err)
	}
}

type webhookServer struct {
	*httptest.Server
	mu   chan struct{}
	body []string
}

func newWebhookServer(t *testing.T) *webhookServer {
	ws := &webhookServer{mu: make(chan struct{}, 1)}
	ws.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var msg struct {
			Text   string       `json:"text"`
			Blocks slack.Blocks `json:"blocks"`
		}
		if err := json.NewDecoder(r.Body).Decode(&msg); err != nil {
			http.Error(w, "invalid_payload", http.StatusBadRequest)
			return
		}
		ws.mu <- struct{}{}
		ws.body = append(ws.body, renderText(msg.Blocks.BlockSet, ""))
		<-ws.mu
		_, _ = w.Write([]byte("ok"))
	}))
	t.Cleanup(ws.Close)
	return ws
}

func (ws *webhookServer) posts() []string {
	ws.mu <- struct{}{}
	defer func() { <-ws.mu }()
	return slices.Clone(ws.body)
}

func TestAbortReasonsSayWhatToDo(t *testing.T) {
	cases := []struct {
		reason     string
		kept       bool
		wantHeader string
		wantNext   string
		mentioned  bool
	}{
		{schemas.ReasonAuditFailed, false, "aborted: audit failed", "*Next:* the branch was deleted; fix the source data and send the batch again.", true},
		{schemas.ReasonCancelled, false, "aborted: cancelled", "*Next:* nothing to do; the batch was cancelled on request.", false},
		{schemas.ReasonMergeConflict, true, "aborted: merge conflict", "*Next:* branch wap-orders-b-42 (http://lakefs.test:8000/repositories/lake/objects?ref=wap-orders-b-42) conflicts with `release`; resolve the conflicting writes on it, then run `lakewap retry -dataset orders -batch b-42`.", true},
		{schemas.ReasonInvalid, false, "aborted: invalid batch", "*Next:* fix the producer of this batch's events", true},
		{schemas.ReasonUnauditedObjects, false, "aborted: objects the audit did not read", "*Next:* the batch wrote objects under a table's path that the audit does not read (hidden names, empty objects, files a Delta log does not name) and readers of `release` would; stop the writer from leaving them (or list real markers in the table's markers) and send the batch again.", true},
		{schemas.ReasonAuditCrashed, true, "aborted: its audit took the process down", "*Next:* find out what ended the process during the audit (out of memory: audit.memory_limit, the instance's memory; a crash inside DuckDB: the log), inspect branch wap-orders-b-42 (http://lakefs.test:8000/repositories/lake/objects?ref=wap-orders-b-42), then run `lakewap retry -dataset orders -batch b-42`.", true},
	}
	for _, tc := range cases {
		ev := abortedAuditEvent()
		ev.Reason, ev.BranchKept, ev.Report = tc.reason, tc.kept, nil
		n := note(ev, schemas.StateAborted)
		n.Mention = oncall
		text := renderText(mainMessage(runOf(n), links{base: testUI}).Blocks, "")
		wantContains(t, tc.reason, text, "orders "+tc.wantHeader+" · batch b-42", tc.wantNext)
		if got := strings.Contains(text, oncall); got != tc.mentioned {
			t.Errorf("%s: mention shown %v, want %v", tc.reason, got, tc.mentioned)
		}
		if got := strings.Contains(text, "(deleted)"); got == tc.kept {
			t.Errorf("%s: branch marked deleted = %v with BranchKept %v", tc.reason, got, tc.kept)
		}
		if _, ok := threadMessage(runOf(n)); ok {
			t.Errorf("%s: a thread reply with no checks and no error adds nothing", tc.reason)
		}
	}
}

// A route can name its own channel: its batches are posted there, later
// states update the message where it is, and other routes' batches stay in
// the sink's channel.
func TestSlackRouteChannel(t *testing.T) {
	ws := newWorkspace(t)
	sink := newTestSlack(t, ws, "slack", "#wap-alerts")
	routes := []Route{
		{Sink: "slack", Datasets: []string{testDataset}, Channel: "#orders-alerts"},
		{Sink: "slack", Datasets: []string{"billing"}},
	}
	d, _, _ := newTestDispatcher(t, routes, []Sink{sink}, Options{})
	ctx := context.Background()
	receipts, err := d.Notify(ctx, note(nil, schemas.StateAuditing))
	if err != nil {
		t.Fatal(err)
	}
	n := note(abortedAuditEvent(), schemas.StateAborted)
	n.Receipts = receipts
	if _, err := d.Notify(ctx, n); err != nil {
		t.Fatal(err)
	}
	other := note(nil, schemas.StateAuditing)
	other.Dataset = "billing"
	if _, err := d.Notify(ctx, other); err != nil {
		t.Fatal(err)
	}
	top := ws.topLevel()
	if len(top) != 2 {
		t.Fatalf("%d top-level messages, want 2 (one per batch)", len(top))
	}
	byChannel := map[string]string{}
	for _, m := range top {
		byChannel[m.Channel] = m.text()
	}
	if got := byChannel["CORDERSALERTS"]; !strings.Contains(got, "orders aborted: audit failed") {
		t.Errorf("orders' message in its route's channel is %q, want it updated to the abort", got)
	}
	if _, ok := byChannel["CWAPALERTS"]; !ok {
		t.Errorf("billing's message is not in the sink's channel: %v", byChannel)
	}
}

// The commands in "Next:" are ones a shell runs as written, whatever the
// batch id holds.
func TestNextCommandIsQuotedForTheShell(t *testing.T) {
	for _, tc := range []struct{ batch, want string }{
		{"2024-06-01", "lakewap retry -dataset orders -batch 2024-06-01"},
		{"it's $(rm -rf)", `lakewap retry -dataset orders -batch 'it'\''s $(rm -rf)'`},
	} {
		r := run{Dataset: "orders", BatchID: tc.batch}
		if got := r.command("retry"); got != tc.want {
			t.Errorf("batch %q: %s, want %s", tc.batch, got, tc.want)
		}
	}
}
