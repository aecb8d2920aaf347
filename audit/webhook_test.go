package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/lakewap/lakewap/schemas"
)

// guardMap is Guards over a map of "repo/branch" to guards.
type guardMap map[string][]Guard

func (g guardMap) Guarding(repo, branch string) []Guard { return g[repo+"/"+branch] }

// diffFunc is MergeDiff as a function.
type diffFunc func(repo, base, ref, prefix string) (bool, error)

func (f diffFunc) Touches(_ context.Context, repo, base, ref, prefix string) (bool, error) {
	return f(repo, base, ref, prefix)
}

// countingRunner records the requests it runs and their reports.
type countingRunner struct {
	Runner
	mu   sync.Mutex
	reqs []Request
	reps []schemas.AuditReport
	err  error
}

func (c *countingRunner) Run(ctx context.Context, req Request) (schemas.AuditReport, error) {
	c.mu.Lock()
	c.reqs = append(c.reqs, req)
	c.mu.Unlock()
	if c.err != nil {
		return schemas.AuditReport{}, c.err
	}
	rep, err := c.Runner.Run(ctx, req)
	c.mu.Lock()
	c.reps = append(c.reps, rep)
	c.mu.Unlock()
	return rep, err
}

func billingGuard() Guard {
	return Guard{Dataset: "billing", Suite: Suite{Tables: tables[:1], Checks: []Check{
		{Name: "id_not_null", Kind: KindNotNull, Table: "billing", Column: "id"},
		{Kind: KindRowCount, Table: "billing", Min: f64(1), Scope: ScopeBatch},
	}}}
}

func hookEvent(sourceRef string, meta map[string]string) string {
	// The whole event lakeFS sends (pkg/actions.EventInfo), with the fields
	// HookEvent does not read.
	b, _ := json.Marshal(struct {
		EventType      string            `json:"event_type"`
		EventTime      string            `json:"event_time"`
		ActionName     string            `json:"action_name"`
		HookID         string            `json:"hook_id"`
		RepositoryID   string            `json:"repository_id"`
		BranchID       string            `json:"branch_id,omitempty"`
		SourceRef      string            `json:"source_ref,omitempty"`
		CommitMessage  string            `json:"commit_message,omitempty"`
		Committer      string            `json:"committer,omitempty"`
		CommitMetadata map[string]string `json:"commit_metadata,omitempty"`
		MergeSource    string            `json:"merge_source,omitempty"`
	}{EventType: EventPreMerge, EventTime: "2025-06-01T12:00:00Z", ActionName: "lakewap audit",
		HookID: "lakewap_audit", RepositoryID: "repo", BranchID: "main", SourceRef: sourceRef, MergeSource: "feature",
		CommitMessage: "Merge", Committer: "alice", CommitMetadata: meta})
	return string(b)
}

func postHook(t *testing.T, h http.Handler, body string) (int, PreMergeAnswer) {
	t.Helper()
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := http.Post(srv.URL+"/webhooks/lakefs/pre-merge", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var ans PreMergeAnswer
	if err := json.NewDecoder(resp.Body).Decode(&ans); err != nil {
		t.Fatalf("answer is not JSON: %v", err)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	return resp.StatusCode, ans
}

func TestPreMergeHandler(t *testing.T) {
	src := fixture(t)
	src.branch(t, "main", "bad")
	src.write(t, "bad", "gold/billing/part-2.parquet", "SELECT CASE WHEN id % 10 = 0 THEN NULL ELSE id END AS id, * EXCLUDE (id) FROM ("+billingRows(2001, 100)+")")
	src.write(t, "b1", "gold/billing/part-2.parquet", billingRows(2001, 100))
	runner := &countingRunner{Runner: newEngine(t, src, t.TempDir())}
	h, err := NewPreMergeHandler(PreMergeOptions{Guards: guardMap{"repo/main": {billingGuard()}}, Runner: runner})
	if err != nil {
		t.Fatal(err)
	}

	t.Run("good source is allowed", func(t *testing.T) {
		status, ans := postHook(t, h, hookEvent("b1", nil))
		if status != http.StatusOK || !ans.Allowed || len(ans.Verdicts) != 1 || !ans.Verdicts[0].Passed || ans.Verdicts[0].PassedChecks != 2 {
			t.Fatalf("status %d, answer %+v", status, ans)
		}
		last := runner.reqs[len(runner.reqs)-1]
		if last.Ref != "b1" || last.BaseRef != "main" || last.Dataset != "billing" || !last.BatchTime.Equal(batchTime) {
			t.Errorf("audit request %+v: want ref b1 against main at the event time", last)
		}
		if got := runner.reps[len(runner.reps)-1].Checks[1].Observed; got != "100 rows" {
			t.Errorf("batch row count observed %q, want the 100 rows of the source's new file", got)
		}
	})

	t.Run("bad source is blocked with the report", func(t *testing.T) {
		// Metadata saying lakewap already audited it changes nothing.
		status, ans := postHook(t, h, hookEvent("bad", map[string]string{"wap.batch_id": "b-1", "wap.audit": "passed=2 failed=0 warned=0"}))
		if status != http.StatusPreconditionFailed || ans.Allowed {
			t.Fatalf("status %d, answer %+v; want 412", status, ans)
		}
		v := ans.Verdicts[0]
		if v.Passed || v.FailedChecks != 1 || len(v.Checks) != 1 || v.Checks[0] != (CheckVerdict{Name: "id_not_null", Kind: "not_null", Table: "billing", Status: "fail"}) {
			t.Errorf("verdict %+v, want id_not_null failed", v)
		}
		text := strings.Join(ans.Summary, "\n")
		for _, want := range []string{"blocks the merge of feature (bad) into repo/main", "FAIL id_not_null (not_null on billing)"} {
			if !strings.Contains(text, want) {
				t.Errorf("summary lacks %q:\n%s", want, text)
			}
		}
	})

	t.Run("unguarded branch is allowed without an audit", func(t *testing.T) {
		before := len(runner.reqs)
		body := strings.Replace(hookEvent("bad", nil), `"branch_id":"main"`, `"branch_id":"dev"`, 1)
		status, ans := postHook(t, h, body)
		if status != http.StatusOK || !ans.Allowed || len(runner.reqs) != before {
			t.Errorf("status %d, %d audits, answer %+v", status, len(runner.reqs)-before, ans)
		}
	})

	t.Run("bad requests fail closed", func(t *testing.T) {
		for name, body := range map[string]string{
			"not json":      "{",
			"no source_ref": strings.Replace(hookEvent("b1", nil), `"source_ref":"b1",`, "", 1),
			"pre-commit":    strings.Replace(hookEvent("b1", nil), `"event_type":"pre-merge"`, `"event_type":"pre-commit"`, 1),
		} {
			if status, ans := postHook(t, h, body); status != http.StatusBadRequest || ans.Allowed || ans.Error == "" {
				t.Errorf("%s: status %d, answer %+v; want 400", name, status, ans)
			}
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/webhooks/lakefs/pre-merge", nil))
		if rec.Code != http.StatusMethodNotAllowed {
			t.Errorf("GET answered %d", rec.Code)
		}
	})

	t.Run("audit that cannot run blocks with 500", func(t *testing.T) {
		broken := &countingRunner{Runner: runner, err: errors.New("lakeFS unreachable")}
		h, _ := NewPreMergeHandler(PreMergeOptions{Guards: guardMap{"repo/main": {billingGuard()}}, Runner: broken})
		status, ans := postHook(t, h, hookEvent("b1", nil))
		if status != http.StatusInternalServerError || ans.Allowed || strings.Contains(ans.Error, "lakeFS unreachable") {
			t.Errorf("status %d, answer %+v", status, ans)
		}
	})
}

func TestPreMergeHandlerSkipsDatasetsTheMergeDoesNotTouch(t *testing.T) {
	src := fixture(t)
	src.write(t, "b1", "gold/billing/part-2.parquet", billingRows(2001, 100))
	// customers has a batch-scope row count: it would fail a merge that
	// does not touch it.
	customers := Guard{Dataset: "customers", Suite: Suite{Tables: tables[1:], Checks: []Check{
		{Kind: KindRowCount, Table: "customers", Min: f64(1), Scope: ScopeBatch}}}}
	runner := &countingRunner{Runner: newEngine(t, src, "")}
	var asked []string
	h, err := NewPreMergeHandler(PreMergeOptions{Guards: guardMap{"repo/main": {billingGuard(), customers}}, Runner: runner,
		Diff: diffFunc(func(repo, base, ref, prefix string) (bool, error) {
			asked = append(asked, prefix)
			changed, err := src.Changed(context.Background(), repo, base, ref, prefix)
			return len(changed) > 0, err
		})})
	if err != nil {
		t.Fatal(err)
	}
	status, ans := postHook(t, h, hookEvent("b1", nil))
	if status != http.StatusOK || len(ans.Verdicts) != 1 || ans.Verdicts[0].Dataset != "billing" ||
		len(ans.Skipped) != 1 || ans.Skipped[0] != "customers" {
		t.Fatalf("status %d, answer %+v; want billing audited, customers skipped", status, ans)
	}
	if len(runner.reqs) != 1 || strings.Join(asked, ",") != "gold/billing/,gold/customers/" {
		t.Errorf("audits %d, diff asked for %v", len(runner.reqs), asked)
	}
	// A merge touching neither is allowed without any audit.
	status, ans = postHook(t, h, hookEvent("main", nil))
	if status != http.StatusOK || !ans.Allowed || len(ans.Verdicts) != 0 || len(runner.reqs) != 1 {
		t.Errorf("untouched merge: status %d, answer %+v, audits %d", status, ans, len(runner.reqs))
	}
	for _, dv := range [][3]string{{"allow", "audit", "1"}, {"allow", "untouched", "1"}, {"block", "audit", "0"}, {"allow", "unguarded", "0"}} {
		if got := fmt.Sprint(testutil.ToFloat64(h.metrics.hooks.WithLabelValues(dv[0], dv[1]))); got != dv[2] {
			t.Errorf("lakewap_premerge_hooks_total{outcome=%s,via=%s} = %s, want %s", dv[0], dv[1], got, dv[2])
		}
	}
}

// With a Token, a call without it or with another one is refused before
// anything is read or audited; the right one is served.
func TestPreMergeHandlerRequiresItsToken(t *testing.T) {
	ran := 0
	runner := passFunc(func() { ran++ })
	h, err := NewPreMergeHandler(PreMergeOptions{Guards: guardMap{"repo/main": {billingGuard()}}, Runner: runner, Token: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	for tok, want := range map[string]int{"": http.StatusUnauthorized, "s3cre": http.StatusUnauthorized, "s3cret2": http.StatusUnauthorized, "s3cret": http.StatusOK} {
		req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(hookEvent(strings.Repeat("a", 64), nil)))
		if tok != "" {
			req.Header.Set(TokenHeader, tok)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("token %q: status %d, want %d", tok, resp.StatusCode, want)
		}
	}
	if ran != 1 {
		t.Errorf("%d audits ran, want 1 (only the call with the token)", ran)
	}
}

// passFunc passes every audit, calling f first.
type passFunc func()

func (f passFunc) Run(_ context.Context, req Request) (schemas.AuditReport, error) {
	f()
	return schemas.AuditReport{Dataset: req.Dataset, Ref: req.Ref, Passed: true}, nil
}

// ancestryFunc is Ancestry as a function.
type ancestryFunc func(repo, ref, branch string) (bool, error)

func (f ancestryFunc) Holds(_ context.Context, repo, ref, branch string) (bool, error) {
	return f(repo, ref, branch)
}

// TestPreMergeHandlerAuditsWhatTheMergeLeaves: a source made from an older
// head of the destination is audited as the merge commit lakeFS is about to
// put there (its changes with the commits it has not seen: a duplicate of a
// row main gained since is only visible there); a source the destination's
// head is in the history of is audited itself (the cache of the daemon's
// own publishes is keyed by it).
func TestPreMergeHandlerAuditsWhatTheMergeLeaves(t *testing.T) {
	merge := strings.Repeat("e", 64)
	for _, tt := range []struct {
		name     string
		holds    bool
		commitID string
		want     string
	}{
		{"the destination did not move", true, merge, "b1"},
		{"the destination moved", false, merge, merge},
		{"an event without the merge commit", false, "", "b1"},
	} {
		runner := &countingRunner{Runner: passFunc(func() {})}
		h, err := NewPreMergeHandler(PreMergeOptions{Guards: guardMap{"repo/main": {billingGuard()}}, Runner: runner,
			Ancestry: ancestryFunc(func(repo, ref, branch string) (bool, error) {
				if repo != "repo" || ref != "b1" || branch != "main" {
					t.Errorf("%s: Holds(%s, %s, %s)", tt.name, repo, ref, branch)
				}
				return tt.holds, nil
			})})
		if err != nil {
			t.Fatal(err)
		}
		var ev map[string]any
		_ = json.Unmarshal([]byte(hookEvent("b1", nil)), &ev)
		if tt.commitID != "" {
			ev["commit_id"] = tt.commitID
		}
		body, _ := json.Marshal(ev)
		if code, ans := postHook(t, h, string(body)); code != http.StatusOK {
			t.Errorf("%s: %d %v", tt.name, code, ans.Summary)
		}
		if len(runner.reqs) != 1 || runner.reqs[0].Ref != tt.want || runner.reqs[0].BaseRef != "main" {
			t.Errorf("%s: audits %+v, want one of %s against main", tt.name, runner.reqs, tt.want)
		}
	}
}
