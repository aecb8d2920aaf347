package notify

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lakewap/lakewap/schemas"
)

const (
	testUI      = "http://lakefs.test:8000"
	testRepo    = "lake"
	testBranch  = "wap-orders-b-42"
	testBatch   = "b-42"
	testDataset = "orders"
	testCommit  = "c0ffee1234567890abcdef"
)

var landedAt = time.Date(2026, 5, 1, 3, 0, 0, 0, time.UTC)

func readyEvent() schemas.BranchReady {
	deadline := landedAt.Add(30 * time.Minute)
	return schemas.BranchReady{
		EventID: "ev-ready-b-42", BatchID: testBatch, Dataset: testDataset, Repository: testRepo,
		Branch: testBranch, LakeFSURI: "lakefs://lake/wap-orders-b-42/", S3URI: "s3://lake/wap-orders-b-42/",
		ExpectedWrites: []string{"orders", "order_items"}, WriteDeadline: &deadline, OccurredAt: landedAt,
	}
}

func check(name, status string) schemas.CheckResult {
	sev := "error"
	if status == schemas.StatusWarn {
		sev = "warn"
	}
	return schemas.CheckResult{Name: name, Kind: "not_null", Table: "orders", Severity: sev, Status: status,
		Observed: "0", Threshold: "0", DurationMs: 12}
}

func passingReport() schemas.AuditReport {
	warn := check("volume_vs_main", schemas.StatusWarn)
	warn.Kind, warn.Observed, warn.Threshold = "volume_change", "+38%", "<= 25%"
	return schemas.AuditReport{Dataset: testDataset, Ref: testBranch, Passed: true, DurationMs: 900, Checks: []schemas.CheckResult{
		check("orders_id_not_null", schemas.StatusPass), check("orders_id_unique", schemas.StatusPass),
		check("amount_range", schemas.StatusPass), warn,
	}}
}

func failingReport() *schemas.AuditReport {
	bad := schemas.CheckResult{
		Name: "email_not_null", Kind: "not_null", Table: "customers", Severity: "error", Status: schemas.StatusFail,
		Observed: "12", Threshold: "0", Message: "12 rows have a null email",
		SampleRows: []string{
			`{"id":7,"email":null,"note":"<script>"}`,
			`{"id":9,"email":null}`,
			`{"id":11,"email":null}`,
			`{"id":12,"email":null}`,
			`{"id":15,"email":null}`,
		},
	}
	broken := schemas.CheckResult{Name: "freshness", Kind: "freshness", Table: "orders", Severity: "error",
		Status: schemas.StatusError, Observed: "", Threshold: "< 1h", Message: "column updated_at not found"}
	return &schemas.AuditReport{Dataset: testDataset, Ref: testBranch, Passed: false, Checks: []schemas.CheckResult{
		check("orders_id_not_null", schemas.StatusPass), bad, broken, check("volume", schemas.StatusWarn),
	}}
}

// testTarget is the datasets' target: not main, so that a message naming
// main where it means the target shows.
const testTarget = "release"

func publishedEvent() schemas.BatchPublished {
	return schemas.BatchPublished{
		EventID: "ev-pub-b-42", BatchID: testBatch, Dataset: testDataset, Repository: testRepo, Branch: testBranch,
		TargetRef: testTarget, CommitID: testCommit, Report: passingReport(), LandedAt: landedAt,
		PublishedAt: landedAt.Add(83 * time.Second), DurationMs: 83_000,
	}
}

func abortedAuditEvent() schemas.BatchAborted {
	return schemas.BatchAborted{
		EventID: "ev-abort-b-42", BatchID: testBatch, Dataset: testDataset, Repository: testRepo, Branch: testBranch,
		Reason: schemas.ReasonAuditFailed, Detail: "2 error checks failed", Report: failingReport(), BranchKept: true,
		OccurredAt: landedAt.Add(2 * time.Minute), DurationMs: 120_000, TargetRef: testTarget,
	}
}

func timedOutEvent() schemas.BatchAborted {
	return schemas.BatchAborted{
		EventID: "ev-timeout-b-42", BatchID: testBatch, Dataset: testDataset, Repository: testRepo, Branch: testBranch,
		Reason: schemas.ReasonWriteTimeout, Detail: "missing writes: order_items", BranchKept: true,
		OccurredAt: landedAt.Add(30 * time.Minute), DurationMs: 1_800_000, TargetRef: testTarget,
	}
}

func failedEvent() schemas.BatchFailed {
	return schemas.BatchFailed{
		EventID: "ev-fail-b-42", BatchID: testBatch, Dataset: testDataset, Repository: testRepo, Branch: testBranch,
		State: schemas.StatePublishing, Error: "merge: lakeFS answered 503 Service Unavailable", Attempts: 5, BranchKept: true,
		OccurredAt: landedAt.Add(7 * time.Minute), TargetRef: testTarget,
	}
}

// note builds the notification the pipeline would send for ev.
func note(ev schemas.Event, state string) Notification {
	return Notification{Event: ev, State: state, Dataset: testDataset, BatchID: testBatch,
		Repository: testRepo, Branch: testBranch, LandedAt: landedAt}
}

// fakeClock stands in for time in the Dispatcher: waits are recorded and
// move the clock on at once, so retry schedules are asserted, not spent.
type fakeClock struct {
	mu    sync.Mutex
	now   time.Time
	waits []time.Duration
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.waits = append(c.waits, d)
	c.now = c.now.Add(d)
	return nil
}

func (c *fakeClock) Waits() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.waits...)
}

func (c *fakeClock) Waited() time.Duration {
	var sum time.Duration
	for _, w := range c.Waits() {
		sum += w
	}
	return sum
}

// logBuffer collects log output for assertions.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func newTestDispatcher(t *testing.T, routes []Route, sinks []Sink, opts Options) (*Dispatcher, *fakeClock, *logBuffer) {
	t.Helper()
	logs := &logBuffer{}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	d, err := NewDispatcher(routes, sinks, opts)
	if err != nil {
		t.Fatalf("NewDispatcher: %v", err)
	}
	clock := &fakeClock{now: landedAt}
	d.now, d.sleep = clock.Now, clock.Sleep
	return d, clock, logs
}

func newTestSlack(t *testing.T, ws *workspace, name, channel string) *Slack {
	t.Helper()
	s, err := NewSlack(SlackConfig{Name: name, Token: "xoxb-test-secret-token", Channel: channel,
		LakeFSURL: testUI + "/", APIURL: ws.apiURL()})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func wantContains(t *testing.T, what, got string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(got, w) {
			t.Errorf("%s lacks %q; it is:\n%s", what, w, got)
		}
	}
}

func wantLacks(t *testing.T, what, got string, unwanted ...string) {
	t.Helper()
	for _, w := range unwanted {
		if strings.Contains(got, w) {
			t.Errorf("%s contains %q; it is:\n%s", what, w, got)
		}
	}
}
