package notify

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lakewap/lakewap/schemas"
)

// recordingSink records what it was sent.
type recordingSink struct {
	name     string
	required bool
	mu       sync.Mutex
	got      []Notification
}

func (r *recordingSink) Name() string   { return r.name }
func (r *recordingSink) Required() bool { return r.required }
func (r *recordingSink) Send(_ context.Context, n Notification) (string, bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, n)
	return fmt.Sprintf("%s#%d", r.name, len(r.got)), false, nil
}

func (r *recordingSink) states() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, n := range r.got {
		out = append(out, n.Dataset+"/"+n.State+"/"+n.Mention)
	}
	return out
}

func TestRouting(t *testing.T) {
	alerts := &recordingSink{name: "alerts"}
	quiet := &recordingSink{name: "quiet"}
	orders := &recordingSink{name: "orders-team"}
	results := &recordingSink{name: "results", required: true}
	routes := []Route{
		{Sink: "alerts", On: []string{schemas.StateAborted, schemas.StateFailed}, Mention: oncall},
		{Sink: "alerts", Datasets: []string{"orders"}, On: []string{schemas.StateFailed}, Mention: "<@U0ORDERS>"}, // same sink: once, first mention wins
		{Sink: "quiet", On: []string{schemas.StatePublished}},
		{Sink: "orders-team", Datasets: []string{"orders"}},
	}
	d, _, _ := newTestDispatcher(t, routes, []Sink{alerts, quiet, orders, results}, Options{})
	for _, n := range []Notification{
		{Dataset: "orders", State: schemas.StateAwaitingWrites},
		{Dataset: "orders", State: schemas.StatePublished},
		{Dataset: "orders", State: schemas.StateFailed},
		{Dataset: "clicks", State: schemas.StateAborted},
		{Dataset: "clicks", State: schemas.StatePublished},
	} {
		if _, err := d.Notify(context.Background(), n); err != nil {
			t.Fatal(err)
		}
	}
	want := map[*recordingSink][]string{
		alerts: {"orders/failed/" + oncall, "clicks/aborted/" + oncall},
		quiet:  {"orders/published/", "clicks/published/"},
		orders: {"orders/awaiting_writes/", "orders/published/", "orders/failed/"},
		// the results topic takes no route and hears everything
		results: {"orders/awaiting_writes/", "orders/published/", "orders/failed/", "clicks/aborted/", "clicks/published/"},
	}
	for s, w := range want {
		if got := s.states(); !slices.Equal(got, w) {
			t.Errorf("%s got %q, want %q", s.name, got, w)
		}
	}
}

func TestNewDispatcherValidates(t *testing.T) {
	sinks := func() []Sink {
		return []Sink{&recordingSink{name: "slack"}, &recordingSink{name: "kafka", required: true}}
	}
	cases := []struct {
		routes []Route
		sinks  []Sink
		want   string
	}{
		{[]Route{{Sink: "slak"}}, sinks(), `routes[0].sink: no sink named "slak"`},
		{[]Route{{Sink: ""}}, sinks(), `routes[0].sink: empty`},
		{[]Route{{Sink: "slack"}, {Sink: "kafka"}}, sinks(), `routes[1].sink: "kafka" is required and receives every notification; it takes no route`},
		{[]Route{{Sink: "slack", On: []string{"published", "publish"}}}, sinks(),
			`routes[0].on[1]: unknown state "publish" (want one of pending, landed, awaiting_writes, auditing, publishing, published, aborted, failed)`},
		{[]Route{{Sink: "slack", Mention: "@oncall"}}, sinks(), `routes[0].mention: "@oncall" is not a Slack mention such as <@U123> or <!subteam^S123>`},
		{nil, append(sinks(), &recordingSink{name: "slack"}), `sinks[2]: duplicate name "slack"`},
		{nil, []Sink{&recordingSink{name: "pending:x"}}, `sinks[0]: invalid name "pending:x"`},
	}
	for _, tc := range cases {
		_, err := NewDispatcher(tc.routes, tc.sinks, Options{})
		if err == nil || err.Error() != tc.want {
			t.Errorf("routes %+v: error %v, want %q", tc.routes, err, tc.want)
		}
	}
}

// Slack is down for a whole run: every Notify still returns with the result
// event on Kafka, the first after at most its Slack budget, the later ones
// after a single attempt each; when Slack is back the pending message goes
// out.
func TestSlackDownForWholeRun(t *testing.T) {
	ws := newWorkspace(t)
	var down sync.Mutex
	isDown := true
	ws.setFail(func(_ string, w http.ResponseWriter) bool {
		down.Lock()
		defer down.Unlock()
		if isDown {
			http.Error(w, "<html>upstream unavailable</html>", http.StatusServiceUnavailable)
		}
		return isDown
	})
	k := startKafka(t)
	kafkaSink, _ := newTestKafkaSink(t, k)
	reg := prometheus.NewRegistry()
	const budget = 20 * time.Second
	d, clock, _ := newTestDispatcher(t, []Route{{Sink: "slack"}}, []Sink{kafkaSink, newTestSlack(t, ws, "slack", "#wap")},
		Options{Budget: budget, MinBackoff: time.Second, MaxBackoff: 8 * time.Second, Registerer: reg})
	ctx := context.Background()

	var receipts map[string]string
	run := []Notification{note(readyEvent(), schemas.StateAwaitingWrites), note(nil, schemas.StateAuditing), note(nil, schemas.StatePublishing), note(publishedEvent(), schemas.StatePublished)}
	for i, n := range run {
		before, waitedBefore := ws.callCount("chat.postMessage"), clock.Waited()
		n.Receipts = receipts
		var err error
		receipts, err = d.Notify(ctx, n)
		if err != nil {
			t.Fatalf("step %d (%s): Notify failed while only Slack is down: %v", i, n.State, err)
		}
		attempts := ws.callCount("chat.postMessage") - before
		waited := clock.Waited() - waitedBefore
		if i == 0 {
			if attempts < 2 || waited > budget {
				t.Errorf("first notification: %d attempts, waited %v; want retries within the %v budget", attempts, waited, budget)
			}
		} else if attempts != 1 || waited != 0 {
			t.Errorf("step %d: %d attempts, waited %v; a sink known to be down gets one attempt and no wait", i, attempts, waited)
		}
		if id := EventID(n.Event); id != "" && receipts["kafka"] != id {
			t.Errorf("step %d: kafka receipt %q, want %q", i, receipts["kafka"], id)
		}
		if receipts[PendingKey("slack")] != n.State {
			t.Errorf("step %d: receipts %v, want slack pending with %s", i, receipts, n.State)
		}
	}
	readResults(t, k, 2) // BranchReady and BatchPublished, each once

	if got := counterValue(t, reg, "lakewap_notify_undelivered_total", "slack"); got != 4 {
		t.Errorf("undelivered counter %v, want 4", got)
	}

	// Slack is back: the caller retries the pending notification.
	down.Lock()
	isDown = false
	down.Unlock()
	last := run[len(run)-1]
	last.Receipts = receipts
	receipts, err := d.Notify(ctx, last)
	if err != nil {
		t.Fatal(err)
	}
	if p := pendingSinks(receipts); len(p) != 0 {
		t.Errorf("still pending %v after Slack came back", p)
	}
	top := ws.topLevel()
	if len(top) != 1 || !strings.Contains(top[0].text(), "orders published · batch b-42") {
		t.Errorf("after recovery: %d messages; want the published message", len(top))
	}
	readResults(t, k, 2) // the retry did not write the result again
}

// counterValue reads a counter with label sink=sink from reg.
func counterValue(t *testing.T, reg *prometheus.Registry, name, sink string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "sink" && l.GetValue() == sink {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// pendingSinks lists the sinks receipts say still owe a notification.
func pendingSinks(receipts map[string]string) (out []string) {
	for k := range receipts {
		if s, ok := strings.CutPrefix(k, schemas.PendingReceiptPrefix); ok {
			out = append(out, s)
		}
	}
	return out
}

func TestBackoffGrowsAndIsCapped(t *testing.T) {
	d, _, _ := newTestDispatcher(t, nil, nil, Options{MinBackoff: time.Second, MaxBackoff: 8 * time.Second})
	for attempt, ceiling := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 4: 8 * time.Second, 9: 8 * time.Second} {
		for range 50 {
			if b := d.backoff(attempt); b < ceiling/2 || b > ceiling {
				t.Fatalf("backoff(%d) = %v, want within [%v, %v]", attempt, b, ceiling/2, ceiling)
			}
		}
	}
}

// Slack hangs on the run's first message: the run's next result event still
// reaches the results topic while that Slack request is in flight (not after
// the Dispatcher gave up on it), and once Slack answers, the run has one
// Slack message, edited to its last state, and no sink owes anything.
func TestSlowSlackDoesNotHoldUpTheResultsTopic(t *testing.T) {
	ws := newWorkspace(t)
	release := make(chan struct{})
	var releaseOnce sync.Once
	letGo := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(letGo) // before the server stops
	var first atomic.Bool
	ws.setHold(func(method string, r *http.Request) {
		if method != "chat.postMessage" || !first.CompareAndSwap(false, true) {
			return
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	k := startKafka(t)
	kafkaSink, _ := newTestKafkaSink(t, k)
	d, _, _ := newTestDispatcher(t, []Route{{Sink: "slack"}}, []Sink{kafkaSink, newTestSlack(t, ws, "slack", "#wap")}, Options{})
	ctx := context.Background()

	ready, published := note(readyEvent(), schemas.StateAwaitingWrites), note(publishedEvent(), schemas.StatePublished)
	receipts, err := d.Notify(ctx, ready)
	if err != nil {
		t.Fatal(err)
	}
	published.Receipts = receipts
	receipts, err = d.Notify(ctx, published)
	if err != nil {
		t.Fatal(err)
	}
	// The held request is the only one: the Dispatcher neither cut it at
	// its attempt timeout nor tried again before writing BatchPublished.
	if n := ws.callCount("chat.postMessage"); n != 1 {
		t.Fatalf("the run's second result event waited for the slow Slack sink: %d chat.postMessage requests (the held one cut and retried) before BatchPublished was written", n)
	}
	if receipts["kafka"] != EventID(published.Event) || receipts[PendingKey("slack")] != schemas.StatePublished {
		t.Errorf("receipts %v: want kafka delivered and slack pending with published", receipts)
	}
	readResults(t, k, 2)

	// Slack answers: the re-notification the pending receipt asks for
	// leaves the one message, edited to published, and nothing owed.
	letGo()
	for i := 0; len(pendingSinks(receipts)) > 0; i++ {
		if i == 50 {
			t.Fatalf("slack still pending after %d re-notifications: %v", i, receipts)
		}
		published.Receipts = receipts
		if receipts, err = d.Notify(ctx, published); err != nil {
			t.Fatal(err)
		}
	}
	top := ws.topLevel()
	if len(top) != 1 || !strings.Contains(top[0].text(), "orders published · batch b-42") {
		t.Errorf("%d top-level messages; want one, edited to published", len(top))
	}
	if got := ws.callCount("chat.postMessage"); got != 1 {
		t.Errorf("%d chat.postMessage calls; want 1 (the message is edited in place)", got)
	}
	readResults(t, k, 2)
}

// A best-effort delivery that fails after Notify returned without it is
// still counted undelivered and logged, so a hung Slack shows on
// lakewap_notify_undelivered_total.
func TestBackgroundFailureIsCountedUndelivered(t *testing.T) {
	ws := newWorkspace(t)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })                  // before the server stops
	ws.setHold(func(string, *http.Request) { <-release }) // Slack hangs
	reg := prometheus.NewRegistry()
	results := &recordingSink{name: "results", required: true}
	d, _, logs := newTestDispatcher(t, []Route{{Sink: "slack"}}, []Sink{results, newTestSlack(t, ws, "slack", "#wap")},
		Options{Registerer: reg, Budget: 200 * time.Millisecond, BestEffortWait: time.Nanosecond})
	receipts, err := d.Notify(context.Background(), note(readyEvent(), schemas.StateAwaitingWrites))
	if err != nil {
		t.Fatal(err)
	}
	if receipts[PendingKey("slack")] != schemas.StateAwaitingWrites {
		t.Fatalf("receipts %v: want slack pending", receipts)
	}
	deadline := time.Now().Add(time.Minute)
	for counterValue(t, reg, "lakewap_notify_undelivered_total", "slack") != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("the background failure was not counted; log:\n%s", logs)
		}
		time.Sleep(10 * time.Millisecond)
	}
	wantContains(t, "log", logs.String(), "notification not delivered in the background")
}

// heldSink is a best-effort sink whose first Send waits for release and
// answers receipt first; every Send records the receipt it was given.
type heldSink struct {
	release chan struct{}
	first   string
	mu      sync.Mutex
	given   []string
}

func (h *heldSink) Name() string { return "slack" }
func (h *heldSink) Send(_ context.Context, n Notification) (string, bool, error) {
	h.mu.Lock()
	h.given = append(h.given, n.Receipts["slack"])
	calls := len(h.given)
	h.mu.Unlock()
	if calls == 1 {
		<-h.release
		return h.first, false, nil
	}
	return n.Receipts["slack"], false, nil
}

// givenTwice awaits the second Send (which may run in the background) and
// returns the receipts the two were given.
func (h *heldSink) givenTwice(t *testing.T) []string {
	deadline := time.Now().Add(time.Minute)
	for {
		h.mu.Lock()
		given := slices.Clone(h.given)
		h.mu.Unlock()
		if len(given) >= 2 {
			return given
		}
		if time.Now().After(deadline) {
			t.Fatalf("the second notification never reached the sink: given %q", given)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A delivery left in the background posts the run's message (receipt A);
// meanwhile the run's record moved on elsewhere (its partition went to
// another instance, which posted B and stored it). When the run's next
// notification reaches this instance again, the stored receipt B is
// newer than what the left delivery started from: the sink is given B,
// not the left delivery's A (which would edit the older message).
func TestLeftDeliveryDoesNotOverrideANewerStoredReceipt(t *testing.T) {
	given := afterALeftDelivery(t, func(left map[string]string) map[string]string {
		if left[PendingKey("slack")] == "" {
			t.Fatalf("receipts %v: want slack left pending", left)
		}
		return map[string]string{"results": left["results"], "slack": "B"}
	})
	if len(given) != 2 || given[1] != "B" {
		t.Errorf("slack was given receipts %q; want the stored B for the second notification", given)
	}
}

// With the stored receipt unchanged since the left delivery started, the
// left delivery's receipt is the newer: the next notification starts from
// it (edits the message it posted).
func TestLeftDeliverysReceiptIsTakenWhenNothingNewerIsStored(t *testing.T) {
	given := afterALeftDelivery(t, func(left map[string]string) map[string]string { return left })
	if len(given) != 2 || given[1] != "A" {
		t.Errorf("slack was given receipts %q; want the left delivery's A for the second notification", given)
	}
}

// afterALeftDelivery notifies a run's first state, whose Slack delivery is
// left in the background (it posts receipt A once let go), then its second
// with the receipts stored returns from the first's, and returns the
// receipts Slack was given by the two.
func afterALeftDelivery(t *testing.T, stored func(left map[string]string) map[string]string) []string {
	slack := &heldSink{release: make(chan struct{}), first: "A"}
	results := &recordingSink{name: "results", required: true}
	d, _, _ := newTestDispatcher(t, []Route{{Sink: "slack"}}, []Sink{results, slack}, Options{BestEffortWait: time.Nanosecond})
	ctx := context.Background()
	receipts, err := d.Notify(ctx, note(readyEvent(), schemas.StateAwaitingWrites))
	if err != nil {
		t.Fatal(err)
	}
	close(slack.release)
	published := note(publishedEvent(), schemas.StatePublished)
	published.Receipts = stored(receipts)
	if _, err := d.Notify(ctx, published); err != nil {
		t.Fatal(err)
	}
	return slack.givenTwice(t)
}
