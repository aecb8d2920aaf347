package tests

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lakewap/lakewap/audit"
	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/internal/daemon"
)

// TestCommitBeforeTheRevertLandsIsJudged (real lakeFS, lakewap's pre-merge
// action on main; review 51): the revert of a customers batch is audited
// on main's head, where no order references its customers, and passes.
// Between that audit and the revert landing on main, a writer commits
// orders of those customers to main by hand. Before, lakeFS's revert took
// no precondition and landed on that commit: main failed orders' check, a
// state no audit judged. The revert now lands as a merge of its audited
// scratch commit, which lakeFS runs lakewap's pre-merge hook on: the hook
// judges the revert with the commit it had not seen and refuses it, the
// step looks again, audits the revert on the new head and refuses it,
// naming orders' check. Main stays at the writer's commit. The revert's
// audits are counted in /metrics as the dataset's audits.
func TestCommitBeforeTheRevertLandsIsJudged(t *testing.T) {
	t.Setenv("LAKEFSACTION_LAKEWAP_TOKEN", "review51-revert")
	hooks := &turnHooks{}
	e := startE2EWith(t, func(c *config.Config) {
		shopConfig(c)
		c.HTTP.Listen, c.HTTP.WebhookToken = "127.0.0.1:0", "review51-revert"
	}, daemon.Options{Failpoint: hooks.failpoint})
	installAction(t, e.Env, "http://"+e.d.HTTPAddr()+daemon.PreMergePath)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	run := time.Now().UnixNano()
	c1 := customersBatch(fmt.Sprintf("wc1-%d", run))
	publishedOK(t, "customers 1-3", e.runShop(t, ctx, c1, customerRows(1, 2, 3)))
	c2 := customersBatch(fmt.Sprintf("wc2-%d", run))
	publishedOK(t, "customer 4", e.runShop(t, ctx, c2, customerRows(4)))

	var byHand string
	var byHandErr error
	hooks.mu.Lock()
	hooks.beforeRevert = func() { // past the revert's audit and last look at main
		path := ordersFile(fmt.Sprintf("by-hand-%d", run))
		if byHandErr = e.WriteParquet(ctx, "main", path, orderRows(1, 1, 2)); byHandErr == nil {
			byHand, byHandErr = e.Lake.Commit(ctx, "lake", "main", "by hand: orders of customers 1 and 2", nil)
		}
	}
	hooks.mu.Unlock()

	ordersPass := func(ref string) bool {
		t.Helper()
		rep, err := e.d.Engine().Run(ctx, audit.Request{Dataset: "orders", Suite: e.cfg.Datasets["orders"].Suite, Repository: "lake", Ref: ref, BaseRef: ref, BaseName: "main", Full: true})
		must(t, err)
		return rep.Passed
	}
	metrics := "http://" + e.d.HTTPAddr() + "/metrics"
	auditsBefore := histCount(scrape(t, metrics), "lakewap_audit_duration_seconds", map[string]string{"dataset": "customers"})
	code, out := e.ask(t, "revert", "-batch", c1.id, "-dataset", "customers", "-reason", "review 51", "-by", "test")
	must(t, byHandErr)
	if byHand == "" {
		t.Fatal("the revert never reached the point before it lands on main")
	}
	head, err := e.Lake.GetCommit(ctx, "lake", "main")
	must(t, err)
	if !ordersPass(head.ID) {
		t.Errorf("main at %s (%q, parents %v) fails orders' check: the revert landed on the commit by hand %s, unjudged", head.ID, head.Message, head.Parents, byHand)
	}
	if code != 1 || !strings.Contains(out, "refused (revert_failed)") || !strings.Contains(out, "orders_have_customers") {
		t.Errorf("revert with orders of its customers committed before it lands exited %d; want refused naming orders_have_customers:\n%s", code, out)
	}
	if head.ID != byHand {
		t.Errorf("main at %s (%q); want the commit by hand %s, nothing after it", head.ID, head.Message, byHand)
	}
	// The revert's audits (on the head it first saw, and again on the head
	// with the commit by hand) are the dataset's audits in /metrics.
	if n := histCount(scrape(t, metrics), "lakewap_audit_duration_seconds", map[string]string{"dataset": "customers"}); n < auditsBefore+2 {
		t.Errorf("lakewap_audit_duration_seconds{dataset=customers} count %d after the refused revert, %d before; want at least 2 more", n, auditsBefore)
	}
	if n, err := e.CountRows(ctx, "main", "gold/shop/customers/", "customer_id IN (1, 2)"); err != nil || n != 2 {
		t.Errorf("main holds customers 1 and 2 %d times (err %v); want twice", n, err)
	}
}
