package audit

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lakewap/lakewap/schemas"
)

// mergeBook is Merges over maps: commit id -> commit, branch -> head.
type mergeBook struct {
	commits map[string]MergeCommit
	heads   map[string]string
	err     error
}

func (m mergeBook) Commit(_ context.Context, _, id string) (MergeCommit, error) {
	if m.err != nil {
		return MergeCommit{}, m.err
	}
	c, ok := m.commits[id]
	if !ok {
		return MergeCommit{}, ErrUnknownCommit
	}
	return c, nil
}

func (m mergeBook) Head(_ context.Context, _, branch string) (string, error) {
	return m.heads[branch], m.err
}

// callFor is a pre-merge event naming source and commit_id.
func callFor(source, commit string) string {
	var ev map[string]any
	_ = json.Unmarshal([]byte(hookEvent(source, nil)), &ev)
	if commit != "" {
		ev["commit_id"] = commit
	}
	b, _ := json.Marshal(ev)
	return string(b)
}

// A call is decided only when lakeFS has the merge it names in progress:
// commit_id is a commit whose parents are the destination's current head
// and the source. Anything else (what someone who read the token out of
// an action file can send) is refused with 403 and runs no audit.
func TestPreMergeHandlerChecksTheMergeWithLakeFS(t *testing.T) {
	hex := func(c string) string { return strings.Repeat(c, 64) }
	head, src, merge, stray, seal := hex("1"), hex("2"), hex("3"), hex("4"), hex("8")
	book := mergeBook{heads: map[string]string{"main": head}, commits: map[string]MergeCommit{
		merge: {Parents: []string{head, src}, Committer: "alice"},
		stray: {Parents: []string{hex("5"), src}, Committer: "mallory"}, // a merge of src elsewhere
		// One parent, main's head: a commit on any branch made from main,
		// lakewap's own seal commit among them. It ties nothing to source.
		seal: {Parents: []string{head}, Committer: "lakewap"},
	}}
	ran := 0
	h, err := NewPreMergeHandler(PreMergeOptions{Guards: guardMap{"repo/main": {billingGuard()}},
		Runner: passFunc(func() { ran++ }), Merges: book})
	if err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{
		"no commit_id":            callFor(src, ""),
		"a branch as source":      callFor("feature", merge),
		"unknown commit":          callFor(src, hex("6")),
		"merge onto another head": callFor(src, stray),
		"another source":          callFor(hex("7"), merge),
		"a one-parent commit":     callFor(src, seal),
	} {
		status, ans := postHook(t, h, body)
		if status != http.StatusForbidden || ans.Allowed || ans.Error == "" || len(ans.Verdicts) != 0 {
			t.Errorf("%s: status %d, answer %+v; want 403", name, status, ans)
		}
	}
	if ran != 0 {
		t.Fatalf("%d audits ran for calls naming no merge in progress", ran)
	}
	if status, ans := postHook(t, h, callFor(src, merge)); status != http.StatusOK || !ans.Allowed || ran != 1 {
		t.Errorf("the merge in progress: status %d, %d audits, answer %+v", status, ran, ans)
	}
	// lakeFS not answering blocks the merge (fail closed) without an audit.
	book.err = errors.New("connection refused")
	h, _ = NewPreMergeHandler(PreMergeOptions{Guards: guardMap{"repo/main": {billingGuard()}}, Runner: passFunc(func() { ran++ }), Merges: book})
	if status, _ := postHook(t, h, callFor(src, merge)); status != http.StatusInternalServerError || ran != 1 {
		t.Errorf("lakeFS down: status %d, %d audits", status, ran)
	}
}

// A blocked merge's answer names the checks that failed, never what the
// data holds: no observed values, messages or sample rows of the ref.
func TestPreMergeAnswerCarriesVerdictsNotData(t *testing.T) {
	src := fixture(t)
	src.branch(t, "main", "bad")
	src.write(t, "bad", "gold/billing/part-2.parquet", "SELECT CASE WHEN id % 10 = 0 THEN NULL ELSE id END AS id, * EXCLUDE (id) FROM ("+billingRows(2001, 100)+")")
	runner := &countingRunner{Runner: newEngine(t, src, t.TempDir())}
	h, err := NewPreMergeHandler(PreMergeOptions{Guards: guardMap{"repo/main": {billingGuard()}}, Runner: runner})
	if err != nil {
		t.Fatal(err)
	}
	status, ans := postHook(t, h, hookEvent("bad", nil))
	// Two audits: the merge's, then main's, where the failing check passes.
	if status != http.StatusPreconditionFailed || len(runner.reps) != 2 {
		t.Fatalf("status %d, %d reports", status, len(runner.reps))
	}
	body, _ := json.Marshal(ans)
	var leaked []string
	for _, c := range runner.reps[0].Checks {
		for _, s := range append([]string{c.Observed, c.Message}, c.SampleRows...) {
			if len(s) > 3 && strings.Contains(string(body), s) {
				leaked = append(leaked, s)
			}
		}
	}
	if len(runner.reps[0].Failed()[0].SampleRows) == 0 {
		t.Fatalf("the audit found no sample rows: the test shows nothing")
	}
	if len(leaked) > 0 {
		t.Errorf("the hook's answer carries what the data holds: %q", leaked)
	}
}

// lakewap's own publishes keep their hook capacity: with every slot of
// other callers taken, an audit of lakewap's own merge still runs.
func TestOwnPublishesKeepTheirHookSlots(t *testing.T) {
	b := &blockingRunner{release: make(chan struct{})}
	defer close(b.release)
	a, err := NewService(ServiceOptions{Engine: b, Concurrency: 2, Budget: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	req := func(ref string, own bool) Request {
		return Request{Dataset: "billing", Repository: "lake", Ref: strings.Repeat(ref, 64), BaseRef: strings.Repeat("c", 64),
			BatchTime: time.Unix(1, 0), Own: own}
	}
	short := func() context.Context {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		t.Cleanup(cancel)
		return ctx
	}
	for _, ref := range []string{"a", "b"} { // a foreign flood takes every shared slot
		if _, err := a.Run(short(), req(ref, false)); err == nil || !strings.Contains(err.Error(), "still running") {
			t.Fatalf("foreign audit %s: %v", ref, err)
		}
	}
	if _, err := a.Run(short(), req("d", false)); err == nil || !strings.Contains(err.Error(), "webhook_concurrency") {
		t.Fatalf("third foreign audit: %v, want refused", err)
	}
	if _, err := a.Run(short(), req("e", true)); err == nil || !strings.Contains(err.Error(), "still running") {
		t.Errorf("lakewap's own publish: %v; want its audit started (still running), not refused", err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.runs != 3 {
		t.Errorf("%d audits started, want 3 (two foreign, one own)", b.runs)
	}
}

// The hook judges lakewap's own merge as the run's audit was: the batch
// time comes from the merge commit's metadata, read from the commit the
// call is verified against (no call back into the runner, and it survives
// a restart). A merge by anyone else that writes the same key is judged by
// the call's event time: metadata is only believed of lakewap's merges.
func TestOwnMergeBatchTimeFromItsCommit(t *testing.T) {
	hex := func(c string) string { return strings.Repeat(c, 64) }
	head, src, own, forged := hex("1"), hex("2"), hex("3"), hex("4")
	batchTime := time.Date(2026, 5, 1, 12, 30, 0, 123456789, time.UTC)
	meta := map[string]string{schemas.MetaBatchTime: batchTime.Format(time.RFC3339Nano)}
	book := mergeBook{heads: map[string]string{"main": head}, commits: map[string]MergeCommit{
		own:    {Parents: []string{head, src}, Committer: "lakewap", Metadata: meta},
		forged: {Parents: []string{head, src}, Committer: "mallory", Metadata: meta},
	}}
	runner := &countingRunner{Runner: passFunc(func() {})}
	h, err := NewPreMergeHandler(PreMergeOptions{Guards: guardMap{"repo/main": {billingGuard()}},
		Runner: runner, Merges: book, OwnCommitter: "lakewap"})
	if err != nil {
		t.Fatal(err)
	}
	for _, commit := range []string{own, forged} {
		if status, _ := postHook(t, h, callFor(src, commit)); status != http.StatusOK {
			t.Fatalf("status %d", status)
		}
	}
	runner.mu.Lock()
	defer runner.mu.Unlock()
	if len(runner.reqs) != 2 {
		t.Fatalf("%d audits, want 2", len(runner.reqs))
	}
	if r := runner.reqs[0]; !r.Own || !r.BatchTime.Equal(batchTime) {
		t.Errorf("own merge audited with own=%v batch time %v, want own at %v", r.Own, r.BatchTime, batchTime)
	}
	if r := runner.reqs[1]; r.Own || r.BatchTime.Equal(batchTime) {
		t.Errorf("foreign merge with the key audited with own=%v batch time %v, want the call's event time", r.Own, r.BatchTime)
	}
}
