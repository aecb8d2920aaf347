package tests

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/treeverse/lakefs/pkg/api/apigen"

	"github.com/lakewap/lakewap/audit"
	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/internal/daemon"
	"github.com/lakewap/lakewap/schemas"
)

// Two datasets publishing to main share a table: orders (tables orders and
// customers, every order's customer must exist) and customers (table
// customers, unique ids). A customers batch is judged by orders' checks too.

// ordersCheck is the orders dataset's cross_table check as reports name it
// in a customers batch's audit.
const ordersCheck = "orders_have_customers (dataset orders)"

// shopConfig adds datasets orders and customers, which share
// gold/shop/customers/.
func shopConfig(c *config.Config) {
	repo := c.Datasets["billing"].Repository
	orders := config.Dataset{Repository: repo, Target: "main", WriteTimeout: config.Duration(5 * time.Minute)}
	orders.Tables = []audit.Table{{Name: "orders", Path: "gold/shop/orders/"}, {Name: "customers", Path: "gold/shop/customers/"}}
	orders.Checks = []audit.Check{{Name: "orders_have_customers", Kind: audit.KindCrossTable,
		SQL: "SELECT o.* FROM orders o ANTI JOIN customers c USING (customer_id)"}}
	c.Datasets["orders"] = orders
	customers := config.Dataset{Repository: repo, Target: "main", WriteTimeout: config.Duration(5 * time.Minute)}
	customers.Tables = []audit.Table{{Name: "customers", Path: "gold/shop/customers/"}}
	customers.Checks = []audit.Check{{Name: "customer_ids_unique", Kind: audit.KindUnique, Table: "customers", Column: "customer_id"}}
	c.Datasets["customers"] = customers
}

// customersFile is the path of batch's customers file.
func customersFile(batch string) string {
	return "gold/shop/customers/batch=" + batch + "/part-0.parquet"
}

// ordersFile is the path of batch's orders file.
func ordersFile(batch string) string { return "gold/shop/orders/batch=" + batch + "/part-0.parquet" }

// customerRows are customers ids (one row each).
func customerRows(ids ...int) string {
	vals := make([]string, len(ids))
	for i, id := range ids {
		vals[i] = fmt.Sprintf("(%d, 'c%d')", id, id)
	}
	return "SELECT * FROM (VALUES " + strings.Join(vals, ", ") + ") t(customer_id, name)"
}

// orderRows are orders, one per customer id, numbered from first.
func orderRows(first int, customers ...int) string {
	vals := make([]string, len(customers))
	for i, c := range customers {
		vals[i] = fmt.Sprintf("(%d, %d, %d)", first+i, c, 100*(i+1))
	}
	return "SELECT * FROM (VALUES " + strings.Join(vals, ", ") + ") t(order_id, customer_id, total_cents)"
}

// span is the ids from..to, inclusive, without skip.
func span(from, to int, skip ...int) []int {
	var out []int
	for i := from; i <= to; i++ {
		if !slices.Contains(skip, i) {
			out = append(out, i)
		}
	}
	return out
}

// shopBatch is a batch of dataset orders or customers, with one write of
// one file at path.
type shopBatch struct {
	dataset, id, write, path string
}

// prepareShop lands b, deletes remove on its branch and writes query's
// rows at b.path.
func (e *e2e) prepareShop(t *testing.T, ctx context.Context, b shopBatch, query string, remove ...string) {
	t.Helper()
	must(t, e.Produce(ctx, schemas.BatchLanded{BatchID: b.id, Dataset: b.dataset, ExpectedWrites: []string{b.write},
		Producer: "e2e", OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
	ev, err := e.Watcher.Await(ctx, b.id, schemas.TypeBranchReady)
	must(t, err)
	branch := ev.(schemas.BranchReady).Branch
	api := e.lakeFSAPI(t)
	for _, p := range remove {
		del, err := api.DeleteObjectWithResponse(ctx, "lake", branch, &apigen.DeleteObjectParams{Path: p})
		must(t, err)
		if del.StatusCode() != http.StatusNoContent {
			t.Fatalf("delete %s on %s: %d %s", p, branch, del.StatusCode(), del.Body)
		}
	}
	must(t, e.WriteParquet(ctx, branch, b.path, query))
}

// completeShop sends b's write complete.
func (e *e2e) completeShop(t *testing.T, ctx context.Context, b shopBatch) {
	t.Helper()
	must(t, e.Produce(ctx, schemas.WriteComplete{BatchID: b.id, Dataset: b.dataset, Write: b.write, Paths: []string{b.path},
		OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
}

// finalOf awaits b's result.
func (e *e2e) finalOf(t *testing.T, ctx context.Context, b shopBatch) schemas.Event {
	t.Helper()
	ev, err := e.Watcher.Await(ctx, b.id, schemas.TypeBatchPublished, schemas.TypeBatchAborted, schemas.TypeBatchFailed)
	must(t, err)
	return ev
}

// runShop prepares, completes and awaits b.
func (e *e2e) runShop(t *testing.T, ctx context.Context, b shopBatch, query string, remove ...string) schemas.Event {
	t.Helper()
	e.prepareShop(t, ctx, b, query, remove...)
	e.completeShop(t, ctx, b)
	return e.finalOf(t, ctx, b)
}

func customersBatch(id string) shopBatch {
	return shopBatch{dataset: "customers", id: id, write: "customers", path: customersFile(id)}
}

func ordersBatch(id string) shopBatch {
	return shopBatch{dataset: "orders", id: id, write: "orders", path: ordersFile(id)}
}

func publishedOK(t *testing.T, what string, ev schemas.Event) schemas.BatchPublished {
	t.Helper()
	p, ok := ev.(schemas.BatchPublished)
	if !ok {
		t.Fatalf("%s ended %s %+v; want published", what, ev.EventType(), ev)
	}
	return p
}

// abortedByNeighbor asserts ev is an audit_failed abort of a batch whose
// report fails orders' check, and whose detail names it (and commit, when
// set: the one the batch collides with).
func abortedByNeighbor(t *testing.T, what string, ev schemas.Event, commit string) {
	t.Helper()
	ab, ok := ev.(schemas.BatchAborted)
	if !ok || ab.Reason != schemas.ReasonAuditFailed || ab.Report == nil {
		t.Fatalf("%s ended %s %+v; want aborted audit_failed by orders' check", what, ev.EventType(), ev)
	}
	failed := ab.Report.Failed()
	if len(failed) != 1 || failed[0].Name != ordersCheck || failed[0].Status != schemas.StatusFail {
		t.Errorf("%s: blocking checks %+v; want only %q", what, failed, ordersCheck)
	}
	if !strings.Contains(ab.Detail, ordersCheck) || (commit != "" && !strings.Contains(ab.Detail, commit)) {
		t.Errorf("%s: detail %q does not name %q and commit %q", what, ab.Detail, ordersCheck, commit)
	}
}

// TestNeighborsCheckGuardsASharedTable: a customers batch that removes a
// customer orders' rows on main reference passes its own suite (unique
// ids); it must not publish, since main would then fail orders' check and
// every later orders batch abort audit_failed. Before the fix it was
// published (main held an order of a customer it no longer had).
func TestNeighborsCheckGuardsASharedTable(t *testing.T) {
	e := startE2E(t, shopConfig)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	run := time.Now().UnixNano()
	c1 := customersBatch(fmt.Sprintf("c1-%d", run))
	publishedOK(t, "the first customers batch", e.runShop(t, ctx, c1, customerRows(span(1, 10)...)))
	o1 := ordersBatch(fmt.Sprintf("o1-%d", run))
	publishedOK(t, "the orders batch", e.runShop(t, ctx, o1, orderRows(1, span(1, 10)...)))

	// Customer 10 goes: the file is rewritten without it.
	c2 := customersBatch(fmt.Sprintf("c2-%d", run))
	abortedByNeighbor(t, "the customers batch removing customer 10", e.runShop(t, ctx, c2, customerRows(span(1, 9)...), customersFile(c1.id)), "")
	if n, err := e.CountRows(ctx, "main", "gold/shop/customers/", "customer_id = 10"); err != nil || n != 1 {
		t.Errorf("main holds customer 10 %d times (err %v); want once", n, err)
	}
	// orders goes on publishing.
	o2 := ordersBatch(fmt.Sprintf("o2-%d", run))
	publishedOK(t, "the next orders batch", e.runShop(t, ctx, o2, orderRows(11, 10, 3)))
	// A customers batch that removes no referenced customer publishes,
	// and its report carries orders' check, passed.
	c3 := customersBatch(fmt.Sprintf("c3-%d", run))
	p := publishedOK(t, "a customers batch adding customer 11", e.runShop(t, ctx, c3, customerRows(11)))
	if c := check(&p.Report, ordersCheck); c.Status != schemas.StatusPass {
		t.Errorf("orders' check in the customers batch's report: %+v; want pass", c)
	}
}

// TestNeighborsInFlightTogether: an orders batch referencing customer X and
// a customers batch removing X are in flight together (both audited against
// the same main); whichever merges second is refused, naming orders' check
// and the commit it collides with. Before the fix, when the orders batch
// merged first, the customers batch's recheck ran its own suite only and
// published.
func TestNeighborsInFlightTogether(t *testing.T) {
	hold := &holdAudit{}
	e := startE2EWith(t, shopConfig, daemon.Options{Failpoint: hold.failpoint})
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	run := time.Now().UnixNano()
	for i, ordersFirst := range []bool{true, false} {
		from := 100 * (i + 1)
		x := from + 5
		seed := customersBatch(fmt.Sprintf("seed%d-%d", i, run))
		publishedOK(t, "the seed customers batch", e.runShop(t, ctx, seed, customerRows(span(from, from+9)...)))
		c := customersBatch(fmt.Sprintf("drop%d-%d", i, run))
		o := ordersBatch(fmt.Sprintf("ref%d-%d", i, run))
		e.prepareShop(t, ctx, c, customerRows(span(from, from+9, x)...), customersFile(seed.id))
		e.prepareShop(t, ctx, o, orderRows(1000*(i+1), x))
		first, second := o, c
		if !ordersFirst {
			first, second = c, o
		}
		// The second is held in its audit, after its seal, until the first
		// published: it was audited against the main the first found.
		arrived, release := hold.arm()
		e.completeShop(t, ctx, second)
		select {
		case <-arrived:
		case <-ctx.Done():
			t.Fatal("the second batch's audit never started")
		}
		e.completeShop(t, ctx, first)
		p := publishedOK(t, "the first batch ("+first.dataset+")", e.finalOf(t, ctx, first))
		close(release)
		ev := e.finalOf(t, ctx, second)
		ab, ok := ev.(schemas.BatchAborted)
		want := ordersCheck
		if !ordersFirst {
			want = "orders_have_customers" // the orders batch's own check
		}
		if !ok || ab.Reason != schemas.ReasonAuditFailed || !ab.BranchKept || ab.Report == nil {
			t.Fatalf("the second batch (%s) ended %s %+v; want aborted audit_failed, branch kept", second.dataset, ev.EventType(), ev)
		}
		if !strings.Contains(ab.Detail, want) || !strings.Contains(ab.Detail, p.CommitID) {
			t.Errorf("the second batch (%s): detail %q; want it to name %q and the first's publish %s", second.dataset, ab.Detail, want, p.CommitID)
		}
		if n, err := e.CountRows(ctx, "main", "gold/shop/orders/", fmt.Sprintf("customer_id = %d", x)); err != nil || n != boolInt(ordersFirst) {
			t.Errorf("main holds %d orders of customer %d (err %v)", n, x, err)
		}
		if n, err := e.CountRows(ctx, "main", "gold/shop/customers/", fmt.Sprintf("customer_id = %d", x)); err != nil || n != boolInt(ordersFirst) {
			t.Errorf("main holds customer %d %d times (err %v)", x, n, err)
		}
	}
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// TestNeighborAlreadyFailingDoesNotBlock: main already fails orders' check
// (an order of an unknown customer, committed by hand). A customers batch
// is not to blame: it publishes, and its report says orders' check fails
// on main already.
func TestNeighborAlreadyFailingDoesNotBlock(t *testing.T) {
	e := startE2E(t, shopConfig)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	run := time.Now().UnixNano()
	c1 := customersBatch(fmt.Sprintf("c1-%d", run))
	publishedOK(t, "the first customers batch", e.runShop(t, ctx, c1, customerRows(span(1, 10)...)))
	must(t, e.WriteParquet(ctx, "main", ordersFile("by-hand"), orderRows(1, 3, 999)))
	_, err := e.Lake.Commit(ctx, "lake", "main", "by hand: an order of customer 999", nil)
	must(t, err)

	c2 := customersBatch(fmt.Sprintf("c2-%d", run))
	p := publishedOK(t, "a customers batch while orders already fails on main", e.runShop(t, ctx, c2, customerRows(11, 12)))
	c := check(&p.Report, ordersCheck)
	if c.Status != schemas.StatusWarn || !strings.Contains(c.Message, "already") {
		t.Errorf("orders' check in the customers batch's report: %+v; want warn, saying it failed already", c)
	}
}
