package tests

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lakewap/lakewap/audit"
	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/internal/harness"
	"github.com/lakewap/lakewap/schemas"
)

// tableWrite is one expected write of a batch: a Parquet object at path
// made of query's rows.
type tableWrite struct{ write, path, query string }

// landBatch lands a batch of dataset expecting writes, writes each where
// BranchReady says, and returns the final result event.
func (e *e2e) landBatch(t *testing.T, dataset, batch string, writes []tableWrite) schemas.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	names := make([]string, len(writes))
	for i, w := range writes {
		names[i] = w.write
	}
	must(t, e.Produce(ctx, schemas.BatchLanded{BatchID: batch, Dataset: dataset, ExpectedWrites: names,
		Producer: "e2e", OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
	ev, err := e.Watcher.Await(ctx, batch, schemas.TypeBranchReady)
	must(t, err)
	branch := ev.(schemas.BranchReady).Branch
	for _, w := range writes {
		must(t, e.WriteParquet(ctx, branch, w.path, w.query))
		must(t, e.Produce(ctx, schemas.WriteComplete{BatchID: batch, Dataset: dataset, Write: w.write, Paths: []string{w.path},
			OccurredAt: time.Now().UTC().Truncate(time.Millisecond)}))
	}
	final, err := e.Watcher.Await(ctx, batch, schemas.TypeBatchPublished, schemas.TypeBatchAborted, schemas.TypeBatchFailed)
	must(t, err)
	return final
}

// billingWrite is one billing_fact partition of batch.
func billingWrite(batch, query string) []tableWrite {
	return []tableWrite{{"billing_fact", "gold/billing_fact/batch=" + batch + "/part-0.parquet", query}}
}

// billingRows is harness.GoodBillingRows with ids from idFrom, billed on day
// (2026-11-29 plus days), n rows, and amount_cents cast to amountType.
func billingRows(idFrom, days, n int, amountType string) string {
	q := strings.Replace(harness.GoodBillingRows, "lpad(i::VARCHAR, 7, '0')", fmt.Sprintf("lpad((%d + i)::VARCHAR, 7, '0')", idFrom), 1)
	q = strings.Replace(q, "TIMESTAMP '2026-11-29 02:00:00'", fmt.Sprintf("TIMESTAMP '2026-11-29 02:00:00' + INTERVAL %d DAY", days), 1)
	q = strings.Replace(q, "::BIGINT AS amount_cents", "::"+amountType+" AS amount_cents", 1)
	return strings.Replace(q, "range(1000)", fmt.Sprintf("range(%d)", n), 1)
}

// aborted asserts ev is an audit_failed abort whose blocking checks are
// exactly want, and returns it.
func aborted(t *testing.T, ev schemas.Event, want ...string) schemas.BatchAborted {
	t.Helper()
	ab, ok := ev.(schemas.BatchAborted)
	if !ok || ab.Reason != schemas.ReasonAuditFailed || ab.Report == nil {
		t.Fatalf("batch ended with %s: %+v; want aborted by its audit", ev.EventType(), ev)
	}
	var got []string
	for _, c := range ab.Report.Failed() {
		got = append(got, c.Name)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("blocking checks %v, want %v; report %+v", got, want, ab.Report.Checks)
	}
	return ab
}

func check(rep *schemas.AuditReport, name string) schemas.CheckResult {
	for _, c := range rep.Checks {
		if c.Name == name {
			return c
		}
	}
	return schemas.CheckResult{}
}

// Six related tables of one sales batch, in write order.
var salesTables = []string{"customers", "orders", "order_lines", "payments", "shipments", "invoices"}

// salesWrites is a consistent sales batch: 100 orders and, for each,
// a customer, a line, a payment, a shipment and an invoice. Shipments of
// orders the batch does not have make the fifth table fail.
func salesWrites(batch string, from int, orphanShipments bool) []tableWrite {
	ship := fmt.Sprintf("SELECT %d + i AS shipment_id, %d + i AS order_id, 'DHL' AS carrier FROM range(100) t(i)", from, from)
	if orphanShipments {
		ship = fmt.Sprintf("SELECT %d + i AS shipment_id, CASE WHEN i < 5 THEN 900000000 + i ELSE %d + i END AS order_id, 'DHL' AS carrier FROM range(100) t(i)", from, from)
	}
	queries := map[string]string{
		"customers":   fmt.Sprintf("SELECT %d + i AS customer_id, 'c' || i AS name FROM range(100) t(i)", from),
		"orders":      fmt.Sprintf("SELECT %d + i AS order_id, %d + i AS customer_id, 10 * i AS total_cents FROM range(100) t(i)", from, from),
		"order_lines": fmt.Sprintf("SELECT %d + i AS line_id, %d + i AS order_id, 10 * i AS cents FROM range(100) t(i)", from, from),
		"payments":    fmt.Sprintf("SELECT %d + i AS payment_id, %d + i AS order_id, 10 * i AS cents FROM range(100) t(i)", from, from),
		"shipments":   ship,
		"invoices":    fmt.Sprintf("SELECT %d + i AS invoice_id, %d + i AS order_id FROM range(100) t(i)", from, from),
	}
	var out []tableWrite
	for _, tb := range salesTables {
		out = append(out, tableWrite{tb, "gold/sales/" + tb + "/batch=" + batch + "/part-0.parquet", queries[tb]})
	}
	return out
}

// failureModesConfig adds to the demo's billing suite a schema contract on
// each batch's files and a day-over-day volume check; a full-refresh
// customer snapshot with volume_change; and six related sales tables.
func failureModesConfig(c *config.Config) {
	ds := c.Datasets["billing"]
	ds.Checks = append(ds.Checks,
		audit.Check{Name: "billing_contract", Kind: audit.KindSchema, Table: "billing_fact", Scope: audit.ScopeBatch,
			Schema: []audit.ColumnType{{Name: "billing_id", Type: "VARCHAR"}, {Name: "customer_id", Type: "VARCHAR"},
				{Name: "amount_cents", Type: "BIGINT"}, {Name: "currency", Type: "VARCHAR"}, {Name: "billed_at", Type: "TIMESTAMP"}}},
		// billing_fact is append-only, one partition per daily batch: the
		// table only grows, so "90% fewer rows than main" means the batch
		// against main's latest day (the previous daily batch).
		audit.Check{Name: "billing_day_over_day", Kind: audit.KindSQL, Table: "billing_fact", Scope: audit.ScopeBatch, SQL: `
			WITH batch AS (SELECT count(*) AS batch_rows FROM billing_fact),
			     prev AS (SELECT count(*) AS last_day_rows FROM base.billing_fact
			              WHERE billed_at > (SELECT max(billed_at) - INTERVAL 1 DAY FROM base.billing_fact))
			SELECT * FROM batch, prev WHERE batch_rows < 0.5 * last_day_rows`})
	c.Datasets["billing"] = ds

	drop, growth, one := 50.0, 300.0, 1.0
	snap := config.Dataset{Repository: c.Datasets["billing"].Repository, Target: "main", WriteTimeout: config.Duration(5 * time.Minute)}
	snap.Tables = []audit.Table{{Name: "customer_snapshot", Path: "gold/customer_snapshot/"}}
	snap.Checks = []audit.Check{
		{Name: "snapshot_volume", Kind: audit.KindVolumeChange, Table: "customer_snapshot", MaxDropPct: &drop, MaxGrowthPct: &growth},
		{Kind: audit.KindNotNull, Table: "customer_snapshot", Column: "customer_id"},
	}
	c.Datasets["snapshot"] = snap

	sales := config.Dataset{Repository: c.Datasets["billing"].Repository, Target: "main", WriteTimeout: config.Duration(5 * time.Minute)}
	for _, tb := range salesTables {
		sales.Tables = append(sales.Tables, audit.Table{Name: tb, Path: "gold/sales/" + tb + "/"})
		sales.Checks = append(sales.Checks, audit.Check{Kind: audit.KindRowCount, Table: tb, Min: &one, Scope: audit.ScopeBatch})
	}
	for _, tb := range []string{"order_lines", "payments", "shipments", "invoices"} {
		sales.Checks = append(sales.Checks, audit.Check{Name: tb + "_have_orders", Kind: audit.KindCrossTable,
			SQL: "SELECT x.* FROM " + tb + " x ANTI JOIN orders o USING (order_id)"})
	}
	sales.Checks = append(sales.Checks, audit.Check{Name: "orders_have_customers", Kind: audit.KindCrossTable,
		SQL: "SELECT o.* FROM orders o ANTI JOIN customers c USING (customer_id)"})
	c.Datasets["sales"] = sales
}

// TestEndToEndFailureModes: the failures lakewap exists for (besides the
// NULL identifiers of TestEndToEndPublishesGoodAndStopsBadBatch) are
// caught, and main is left exactly as it was.
func TestEndToEndFailureModes(t *testing.T) {
	e := startE2E(t, failureModesConfig)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	mainHead := func() string {
		t.Helper()
		c, err := e.Lake.GetCommit(ctx, "lake", "main")
		must(t, err)
		return c.ID
	}
	published := func(ev schemas.Event) {
		t.Helper()
		if ev.EventType() != schemas.TypeBatchPublished {
			t.Fatalf("batch ended with %s: %+v; want published", ev.EventType(), ev)
		}
	}

	published(e.landBatch(t, "billing", "day-1", billingWrite("day-1", billingRows(0, 0, 1000, "BIGINT"))))

	t.Run("type changed", func(t *testing.T) {
		before := mainHead()
		// Upstream starts sending amounts as decimals of a currency unit.
		ab := aborted(t, e.landBatch(t, "billing", "typed-2", billingWrite("typed-2", billingRows(100000, 1, 1000, "DOUBLE"))), "billing_contract")
		if got := check(ab.Report, "billing_contract").Observed; got != "amount_cents is DOUBLE, not BIGINT" {
			t.Errorf("billing_contract observed %q", got)
		}
		if after := mainHead(); after != before {
			t.Errorf("main moved from %s to %s", before, after)
		}
		if n, err := e.CountRows(ctx, "main", "gold/billing_fact/batch=typed-2/", ""); err != nil || n != 0 {
			t.Errorf("main has %d rows of typed-2 (err %v)", n, err)
		}
	})

	t.Run("append-only batch with 90% fewer rows than the last day on main", func(t *testing.T) {
		before := mainHead()
		ab := aborted(t, e.landBatch(t, "billing", "day-2-short", billingWrite("day-2-short", billingRows(200000, 1, 100, "BIGINT"))), "billing_day_over_day")
		if c := check(ab.Report, "billing_day_over_day"); c.Observed != "1 rows returned" || len(c.SampleRows) != 1 ||
			!strings.Contains(c.SampleRows[0], `"batch_rows":100`) || !strings.Contains(c.SampleRows[0], `"last_day_rows":1000`) {
			t.Errorf("billing_day_over_day = %+v", c)
		}
		if after := mainHead(); after != before {
			t.Errorf("main moved from %s to %s", before, after)
		}
		// A normal next day passes the same check.
		published(e.landBatch(t, "billing", "day-2", billingWrite("day-2", billingRows(300000, 1, 950, "BIGINT"))))
	})

	t.Run("full-refresh table with 90% fewer rows than main", func(t *testing.T) {
		path := "gold/customer_snapshot/part-0.parquet"
		rows := func(n int) string {
			return fmt.Sprintf("SELECT i AS customer_id, 'c' || i AS name FROM range(%d) t(i)", n)
		}
		published(e.landBatch(t, "snapshot", "snap-1", []tableWrite{{"customer_snapshot", path, rows(1000)}}))
		before := mainHead()
		ab := aborted(t, e.landBatch(t, "snapshot", "snap-2", []tableWrite{{"customer_snapshot", path, rows(100)}}), "snapshot_volume")
		if got := check(ab.Report, "snapshot_volume").Observed; got != "100 rows vs 1000 on main (-90.0%)" {
			t.Errorf("snapshot_volume observed %q", got)
		}
		if after := mainHead(); after != before {
			t.Errorf("main moved from %s to %s", before, after)
		}
		if n, err := e.CountRows(ctx, "main", "gold/customer_snapshot/", ""); err != nil || n != 1000 {
			t.Errorf("main's snapshot has %d rows (err %v), want the 1000 of snap-1", n, err)
		}
	})

	t.Run("six related tables, the fifth fails", func(t *testing.T) {
		published(e.landBatch(t, "sales", "sales-1", salesWrites("sales-1", 1000, false)))
		before := mainHead()
		mainFiles, err := e.Lake.List(ctx, "lake", "main", "gold/sales/")
		must(t, err)
		if len(mainFiles) != 6 {
			t.Fatalf("main has %d sales files after sales-1, want 6", len(mainFiles))
		}

		ab := aborted(t, e.landBatch(t, "sales", "sales-2", salesWrites("sales-2", 2000, true)), "shipments_have_orders")
		if c := check(ab.Report, "shipments_have_orders"); c.Observed != "5 rows returned" || len(c.SampleRows) == 0 {
			t.Errorf("shipments_have_orders = %+v", c)
		}
		if after := mainHead(); after != before {
			t.Errorf("main moved from %s to %s", before, after)
		}
		after, err := e.Lake.List(ctx, "lake", "main", "gold/sales/")
		must(t, err)
		var paths []string
		for _, o := range after {
			paths = append(paths, o.Path)
			if strings.Contains(o.Path, "batch=sales-2") {
				t.Errorf("%s of the aborted batch is on main", o.Path)
			}
		}
		if len(after) != 6 {
			t.Errorf("main's sales files after the aborted batch: %v", paths)
		}
		// All six tables of the batch are on its kept branch, for inspection.
		kept, err := e.Lake.List(ctx, "lake", ab.Branch, "gold/sales/")
		must(t, err)
		n := 0
		for _, o := range kept {
			if strings.Contains(o.Path, "batch=sales-2") {
				n++
			}
		}
		if !ab.BranchKept || n != 6 {
			t.Errorf("kept=%v, %d files of sales-2 on %s, want 6", ab.BranchKept, n, ab.Branch)
		}
	})
}
