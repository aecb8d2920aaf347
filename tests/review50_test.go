package tests

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lakewap/lakewap/audit"
	"github.com/lakewap/lakewap/schemas"
)

// TestRevertIsAuditedAsItLeavesTheTarget (real lakeFS through the daemon;
// review 50): an operator's revert of a customers batch whose customers a
// later orders batch references would leave main failing orders' check
// (every order of those customers an orphan), a state of main no audit
// judged, after which every orders batch's audit fails. lakewap audits the
// target as the revert will leave it (a revert on a scratch branch from
// main's head, audited onto the head) and refuses the revert, naming the
// check and its dataset; main does not move. With -force, carried in the
// signed request, the revert is made. A revert that breaks nothing (a
// customers batch no order references) goes through as before. Before,
// the refused revert was made: main failed orders' check.
func TestRevertIsAuditedAsItLeavesTheTarget(t *testing.T) {
	e := startE2E(t, shopConfig)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	run := time.Now().UnixNano()
	c1 := customersBatch(fmt.Sprintf("rc1-%d", run))
	publishedOK(t, "customers 1-3", e.runShop(t, ctx, c1, customerRows(1, 2, 3)))
	o1 := ordersBatch(fmt.Sprintf("ro1-%d", run))
	publishedOK(t, "orders of customers 1 and 2", e.runShop(t, ctx, o1, orderRows(1, 1, 2)))
	c2 := customersBatch(fmt.Sprintf("rc2-%d", run))
	publishedOK(t, "customer 50, in no order", e.runShop(t, ctx, c2, customerRows(50)))

	// Reverting customer 50 breaks nothing: done.
	if code, out := e.ask(t, "revert", "-batch", c2.id, "-dataset", "customers", "-reason", "unused customer", "-by", "test"); code != 0 {
		t.Fatalf("revert of a batch no order references exited %d:\n%s", code, out)
	}
	if n, err := e.CountRows(ctx, "main", "gold/shop/customers/", "customer_id = 50"); err != nil || n != 0 {
		t.Errorf("main holds customer 50 %d times after its revert (err %v); want none", n, err)
	}
	if ev, err := e.Watcher.Await(ctx, c2.id, schemas.TypeBatchReverted); err != nil || !ev.(schemas.BatchReverted).Audited {
		t.Errorf("the audited revert's BatchReverted %+v (err %v); want audited (review 51)", ev, err)
	}

	ordersPass := func(ref string) bool {
		t.Helper()
		rep, err := e.d.Engine().Run(ctx, audit.Request{Dataset: "orders", Suite: e.cfg.Datasets["orders"].Suite, Repository: "lake", Ref: ref, BaseRef: ref, BaseName: "main", Full: true})
		must(t, err)
		return rep.Passed
	}
	before, err := e.Lake.GetCommit(ctx, "lake", "main")
	must(t, err)
	if !ordersPass(before.ID) {
		t.Fatalf("orders' check fails on main before the revert")
	}
	code, out := e.ask(t, "revert", "-batch", c1.id, "-dataset", "customers", "-reason", "bad names", "-by", "test")
	refusedOut := out
	head, err := e.Lake.GetCommit(ctx, "lake", "main")
	must(t, err)
	if code != 1 || !strings.Contains(out, "refused (revert_failed)") || !strings.Contains(out, "orders_have_customers") || !strings.Contains(out, "dataset orders") ||
		!strings.Contains(out, "-force") {
		t.Errorf("revert of customers orders reference exited %d; want refused naming orders_have_customers of dataset orders and -force:\n%s", code, out)
	}
	if head.ID != before.ID {
		t.Errorf("main moved to %s (%q) by a refused revert; want %s; orders' check passes there: %v", head.ID, head.Message, before.ID, ordersPass(head.ID))
	}
	if n, err := e.CountRows(ctx, "main", "gold/shop/customers/", "customer_id IN (1, 2)"); err != nil || n != 2 {
		t.Errorf("main holds customers 1 and 2 %d times (err %v); want twice", n, err)
	}
	if bs, err := e.Lake.ListBranches(ctx, "lake", ""); err != nil {
		t.Error(err)
	} else {
		for _, b := range bs {
			if strings.HasSuffix(b.Name, "-revert-audit") {
				t.Errorf("the revert audit's scratch branch %s is left", b.Name)
			}
		}
	}

	// The operator's call: -force makes it, in one revert commit on main.
	code, out = e.ask(t, "revert", "-force", "-batch", c1.id, "-dataset", "customers", "-reason", "bad names, orders fixed next", "-by", "test")
	if code != 0 || !strings.Contains(out, "reverted batch "+c1.id) {
		t.Fatalf("forced revert exited %d:\n%s", code, out)
	}
	ev, err := e.Watcher.Await(ctx, c1.id, schemas.TypeBatchReverted)
	must(t, err)
	head, err = e.Lake.GetCommit(ctx, "lake", "main")
	must(t, err)
	if ev.(schemas.BatchReverted).Audited {
		t.Errorf("the forced revert's BatchReverted says audited")
	}
	if head.ID != ev.(schemas.BatchReverted).CommitID || len(head.Parents) != 1 || head.Parents[0] != before.ID {
		t.Errorf("main at %s (parents %v); want the revert %s, one commit on %s", head.ID, head.Parents, ev.(schemas.BatchReverted).CommitID, before.ID)
	}
	t.Logf("refused revert output:\n%s", refusedOut)
	if ordersPass(head.ID) {
		t.Errorf("orders' check passes after the forced revert; the test shows nothing")
	}
}
