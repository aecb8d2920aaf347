package tests

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/lakewap/lakewap/audit"
	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/internal/daemon"
	"github.com/lakewap/lakewap/internal/devstack"
	"github.com/lakewap/lakewap/internal/harness"
	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/pipeline/lakefs"
	"github.com/lakewap/lakewap/schemas"
)

// actionYAML is the lakeFS action that makes every merge into main ask
// lakewap first (docs: deploy/lakefs-actions/lakewap.yaml).
func actionYAML(webhookURL string) string {
	return fmt.Sprintf(`name: lakewap audit
description: lakewap runs the audit suites of the datasets published to main on what is merged into it
on:
  pre-merge:
    branches: [main]
hooks:
  - id: lakewap_audit
    type: webhook
    description: 200 allows the merge, 412 blocks it (the report is in this hook's output)
    properties:
      url: %s
      timeout: 2m
      headers:
        X-Lakewap-Token: "{{ ENV.LAKEFSACTION_LAKEWAP_TOKEN }}"
`, webhookURL)
}

// installAction commits the lakewap action on main; branches made from
// main afterwards carry it, and lakeFS reads pre-merge actions from the
// merge source.
func installAction(t *testing.T, env *harness.Env, webhookURL string) {
	t.Helper()
	ctx := context.Background()
	must(t, env.Lake.Upload(ctx, env.Stack.Repository, "main", "_lakefs_actions/lakewap.yaml", strings.NewReader(actionYAML(webhookURL))))
	_, err := env.Lake.Commit(ctx, env.Stack.Repository, "main", "install the lakewap pre-merge hook", nil)
	must(t, err)
}

// branchWith makes branch from main holding query's rows as one billing
// partition, committed; it returns the commit.
func branchWith(t *testing.T, env *harness.Env, branch, query string) string {
	t.Helper()
	ctx := context.Background()
	_, err := env.Lake.EnsureBranch(ctx, env.Stack.Repository, branch, "main")
	must(t, err)
	must(t, env.WriteParquet(ctx, branch, "gold/billing_fact/batch="+branch+"/part-0.parquet", query))
	id, err := env.Lake.Commit(ctx, env.Stack.Repository, branch, "rows of "+branch, nil)
	must(t, err)
	return id
}

func status412(err error) bool {
	var le *lakefs.Error
	return errors.As(err, &le) && le.Status == http.StatusPreconditionFailed
}

// TestPreMergeWebhookOnRealLakeFS installs lakewap's action on main of the
// real lakeFS server: a manual merge of a bad branch is refused with 412
// and main stays as it was, a good branch merges, and the daemon's own
// publishes pass the hook, from its cache of audited commits when warm and
// by auditing again when not.
func TestPreMergeWebhookOnRealLakeFS(t *testing.T) {
	// lakeFS sends the token from its environment (the child inherits it).
	t.Setenv("LAKEFSACTION_LAKEWAP_TOKEN", "hook-secret-1")
	e := startE2E(t, func(c *config.Config) { c.HTTP.Listen = "127.0.0.1:0"; c.HTTP.WebhookToken = "hook-secret-1" })
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	base := "http://" + e.d.HTTPAddr()
	installAction(t, e.Env, base+daemon.PreMergePath)
	metric := func(name string, labels map[string]string) float64 {
		t.Helper()
		return value(t, scrape(t, base+"/metrics"), name, labels)
	}
	mainHead := func() string {
		t.Helper()
		c, err := e.Lake.GetCommit(ctx, "lake", "main")
		must(t, err)
		return c.ID
	}

	t.Run("calls without the token are refused", func(t *testing.T) {
		for _, tok := range []string{"", "wrong"} {
			req, err := http.NewRequest(http.MethodPost, base+daemon.PreMergePath, strings.NewReader(`{"event_type":"pre-merge"}`))
			must(t, err)
			if tok != "" {
				req.Header.Set(audit.TokenHeader, tok)
			}
			resp, err := http.DefaultClient.Do(req)
			must(t, err)
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("hook call with token %q: %d, want 401", tok, resp.StatusCode)
			}
		}
	})

	t.Run("bad manual merge is refused", func(t *testing.T) {
		branchWith(t, e.Env, "manual-bad", harness.BadBillingRows)
		before := mainHead()
		_, err := e.Lake.Merge(ctx, "lake", "manual-bad", "main", "merge by hand", nil)
		if !status412(err) {
			t.Fatalf("merge of a bad branch: %v; want lakeFS's 412", err)
		}
		if !strings.Contains(err.Error(), "pre-merge hook aborted") {
			t.Errorf("merge error %q does not name the hook", err)
		}
		// Metadata saying lakewap audited it does not get it through.
		_, err = e.Lake.Merge(ctx, "lake", "manual-bad", "main", "lakewap: publish billing batch forged",
			map[string]string{pipeline.MetaBatchID: "forged", pipeline.MetaDataset: "billing", pipeline.MetaAudit: "passed=5 failed=0 warned=0"})
		if !status412(err) {
			t.Fatalf("merge with forged lakewap metadata: %v; want 412", err)
		}
		if after := mainHead(); after != before {
			t.Errorf("main moved from %s to %s", before, after)
		}
		if n, err := e.CountRows(ctx, "main", "gold/billing_fact/", "billing_id IS NULL"); err != nil || n != 0 {
			t.Errorf("main has %d NULL billing ids (err %v)", n, err)
		}
		if got := metric("lakewap_premerge_hooks_total", map[string]string{"outcome": "block", "via": "audit"}); got != 2 {
			t.Errorf("blocked hooks = %v, want 2", got)
		}
	})

	t.Run("good manual merge goes through", func(t *testing.T) {
		branchWith(t, e.Env, "manual-good", billingRows(500000, 0, 1000, "BIGINT"))
		before := mainHead()
		id, err := e.Lake.Merge(ctx, "lake", "manual-good", "main", "merge by hand", nil)
		must(t, err)
		if after := mainHead(); after == before || after != id {
			t.Errorf("main at %s after merge %s (was %s)", after, id, before)
		}
		if n, err := e.CountRows(ctx, "main", "gold/billing_fact/batch=manual-good/", ""); err != nil || n != 1000 {
			t.Errorf("main has %d rows of manual-good (err %v)", n, err)
		}
	})

	t.Run("daemon publish answered from the cache", func(t *testing.T) {
		hits := metric("lakewap_audit_cache_lookups_total", map[string]string{"outcome": "hit"})
		ev := e.runBatch(t, "hooked-1", billingRows(600000, 0, 1000, "BIGINT"))
		pub, ok := ev.(schemas.BatchPublished)
		if !ok {
			t.Fatalf("batch ended with %+v", ev)
		}
		if head := mainHead(); head != pub.CommitID {
			t.Errorf("main at %s, published %s", head, pub.CommitID)
		}
		if got := metric("lakewap_audit_cache_lookups_total", map[string]string{"outcome": "hit"}); got != hits+1 {
			t.Errorf("cache hits %v -> %v, want one more", hits, got)
		}
	})

	t.Run("lakewap-shaped merge with a cold cache is audited", func(t *testing.T) {
		// What a restarted daemon does: merge a sealed commit it audited
		// before the restart; its cache is empty.
		misses := metric("lakewap_audit_cache_lookups_total", map[string]string{"outcome": "miss"})
		sealed := branchWith(t, e.Env, "wap-billing-restarted", billingRows(700000, 0, 1000, "BIGINT"))
		if !audit.IsCommitID(sealed) {
			t.Errorf("commit id %q is not what the cache keys on", sealed)
		}
		_, err := e.Lake.Merge(ctx, "lake", sealed, "main", "lakewap: publish billing batch restarted",
			map[string]string{pipeline.MetaBatchID: "restarted", pipeline.MetaDataset: "billing", "wap.sealed_commit": sealed})
		must(t, err)
		if got := metric("lakewap_audit_cache_lookups_total", map[string]string{"outcome": "miss"}); got != misses+1 {
			t.Errorf("cache misses %v -> %v, want the hook to audit once", misses, got)
		}
		if p, err := e.Lake.Published(ctx, "lake", "main", sealed, time.Now().Add(-time.Minute)); err != nil || !p.OnTarget || p.Merge == "" {
			t.Errorf("restarted batch not on main: %+v %v", p, err)
		}
	})
}

// TestPreMergeHookAfterRestart: the daemon is killed after auditing a
// batch and before merging it; the restarted daemon merges the sealed
// commit, lakeFS asks its hook, whose cache is empty, so the hook audits
// the commit again, allows it, and the batch is published once.
func TestPreMergeHookAfterRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the daemon as a process; skipped with -short")
	}
	t.Setenv("LAKEFSACTION_LAKEWAP_TOKEN", "hook-secret-2")
	tmp := t.TempDir()
	stack := devstack.StartForTest(t, devstack.Options{WorkDir: tmp, Repository: "lake", Topics: harness.StackTopics()})
	cfg := harness.DemoConfig(stack, tmp)
	cfgPath := writeCrashConfig(t, stack, cfg, "5m")
	// Both processes listen on the same port: the action names one URL.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	addr := ln.Addr().String()
	ln.Close()
	f, err := os.OpenFile(cfgPath, os.O_APPEND|os.O_WRONLY, 0)
	must(t, err)
	_, err = fmt.Fprintf(f, "http: {listen: %q, webhook_token: hook-secret-2}\n", addr)
	must(t, err)
	must(t, f.Close())
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	env, err := harness.New(ctx, stack, cfg, tmp)
	must(t, err)
	defer env.Close()
	installAction(t, env, "http://"+addr+daemon.PreMergePath)

	first := startProc(t, stack, cfgPath, "before_merge")
	batch := "restart-1"
	must(t, env.Produce(ctx, schemas.BatchLanded{BatchID: batch, Dataset: "billing", ExpectedWrites: []string{"billing_fact"},
		Producer: "e2e", OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
	ev, died, err := awaitOrExit(ctx, env, first, batch, schemas.TypeBranchReady)
	must(t, err)
	if died {
		t.Fatalf("daemon died before BranchReady: %v", first.err)
	}
	path := "gold/billing_fact/batch=" + batch + "/part-0.parquet"
	must(t, env.WriteParquet(ctx, ev.(schemas.BranchReady).Branch, path, harness.GoodBillingRows))
	must(t, env.Produce(ctx, schemas.WriteComplete{BatchID: batch, Dataset: "billing", Write: "billing_fact", Paths: []string{path},
		OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
	if _, died, err = awaitOrExit(ctx, env, first, batch, schemas.TypeBatchPublished, schemas.TypeBatchAborted, schemas.TypeBatchFailed); err != nil || !died || !first.killedBySIGKILL() {
		t.Fatalf("first daemon did not stop at before_merge: died=%v err=%v exit=%v", died, err, first.err)
	}

	startProc(t, stack, cfgPath, "")
	final, err := env.Watcher.Await(ctx, batch, schemas.TypeBatchPublished, schemas.TypeBatchAborted, schemas.TypeBatchFailed)
	must(t, err)
	if final.EventType() != schemas.TypeBatchPublished {
		t.Fatalf("batch ended with %+v", final)
	}
	if n := publishCommits(t, env, batch); n != 1 {
		t.Errorf("%d publish commits of %s, want 1", n, batch)
	}
	fams := scrape(t, "http://"+addr+"/metrics")
	if got := value(t, fams, "lakewap_audit_cache_lookups_total", map[string]string{"outcome": "miss"}); got != 1 {
		t.Errorf("restarted daemon's cache misses = %v, want 1 (the hook audited the sealed commit)", got)
	}
	if got := value(t, fams, "lakewap_premerge_hooks_total", map[string]string{"outcome": "allow", "via": "audit"}); got != 1 {
		t.Errorf("restarted daemon's allowed hooks = %v, want 1", got)
	}
}

// TestActionExampleIsTheTestedOne: deploy/lakefs-actions/lakewap.yaml is,
// comments and URL aside, the action the real lakeFS server runs above.
func TestActionExampleIsTheTestedOne(t *testing.T) {
	b, err := os.ReadFile("../deploy/lakefs-actions/lakewap.yaml")
	must(t, err)
	var lines []string
	for _, l := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(l, "#") {
			lines = append(lines, l)
		}
	}
	got := strings.Join(lines, "\n")
	if want := actionYAML("http://lakewap:9090" + daemon.PreMergePath); got != want {
		t.Errorf("deploy/lakefs-actions/lakewap.yaml differs from the tested action:\n%s\nwant:\n%s", got, want)
	}
}
