package audit

import (
	"context"
	"testing"
	"time"

	"github.com/lakewap/lakewap/schemas"
)

// shopSource: main holds customers 0..4 and ten orders of them; branch b1
// is a customers batch that removes customer 4, whom two orders reference.
func shopSource(t *testing.T) *dirSource {
	t.Helper()
	src := newDirSource(t)
	src.write(t, "main", "gold/customers/c.parquet", "SELECT i::INTEGER AS customer_id, 'c' || i AS name FROM range(0, 5) r(i)")
	src.write(t, "main", "gold/orders/o.parquet", "SELECT i::INTEGER AS order_id, (i % 5)::INTEGER AS customer_id FROM range(0, 10) r(i)")
	src.branch(t, "main", "b1")
	src.remove(t, "b1", "gold/customers/c.parquet")
	src.write(t, "b1", "gold/customers/c2.parquet", "SELECT i::INTEGER AS customer_id, 'c' || i AS name FROM range(0, 4) r(i)")
	return src
}

// auditShopBatch audits b1 as a customers batch, with orders' checks as
// given beside its own unique order ids.
func auditShopBatch(t *testing.T, src *dirSource, orders ...Check) schemas.AuditReport {
	t.Helper()
	tabs := []Table{{Name: "orders", Path: "gold/orders/"}, {Name: "customers", Path: "gold/customers/"}}
	datasets := map[string]Dataset{
		"customers": {Repository: "repo", Target: "main", Suite: Suite{Tables: tabs[1:],
			Checks: []Check{{Name: "customer_ids_unique", Kind: KindUnique, Table: "customers", Column: "customer_id"}}}},
		"orders": {Repository: "repo", Target: "main", Suite: Suite{Tables: tabs,
			Checks: append([]Check{{Name: "order_ids_unique", Kind: KindUnique, Table: "orders", Column: "order_id"}}, orders...)}},
	}
	s, err := NewService(ServiceOptions{Engine: newEngine(t, src, ""), Datasets: datasets, Concurrency: 1, Budget: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	objs, err := src.Changed(ctx, "repo", "main", "b1", "")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := s.Audit(ctx, Request{Dataset: "customers", Repository: "repo", Ref: "b1", BaseRef: "main", BatchTime: batchTime,
		Changes: &Changes{Objects: objs, Removed: []string{"gold/customers/c.parquet"}, Removals: true}})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// A neighbor's check whose where condition reads the shared table is a
// query over it, whatever table the check names: a customers batch that
// orphans orders breaks it. Before, only the checks naming the shared
// table (and sql, cross_table) were judged: a check of orders whose where
// reads customers was not asked, and a check of customers whose where
// reads orders ran without orders, erred at the batch and at the base
// alike and was excused as failing on main already. Both published.
func TestNeighborCheckWhoseWhereReadsTheSharedTable(t *testing.T) {
	for _, tc := range []struct {
		name  string
		check Check
	}{
		{"a check of the other table reading the shared one", Check{Name: "no_orphan_orders", Kind: KindRowCount, Table: "orders",
			Where: "customer_id NOT IN (SELECT customer_id FROM customers)", Max: f64(0)}},
		{"a check of the shared table reading the other one", Check{Name: "ordered_customers_exist", Kind: KindRowCount, Table: "customers",
			Where: "customer_id IN (FROM (SELECT DISTINCT customer_id FROM orders))", Min: f64(5)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := auditShopBatch(t, shopSource(t), tc.check)
			name := neighborName(tc.check.Name, "orders")
			var got schemas.CheckResult
			for _, c := range rep.Checks {
				if c.Name == name {
					got = c
				}
			}
			if rep.Passed || got.Status != schemas.StatusFail {
				t.Fatalf("a customers batch orphaning two orders: passed %v, %s %q: %s; want it held back by %s (%+v)",
					rep.Passed, got.Status, got.Observed, got.Message, name, rep.Checks)
			}
		})
	}
}

// A where condition of the row's values alone reads no table, whatever
// words it holds: a column named like another table of the suite does not
// make the audit read that table; a subquery naming it does.
func TestWhereReadsOnlyTheTablesItsSubqueriesName(t *testing.T) {
	src := newDirSource(t)
	src.write(t, "main", "gold/orders/o.parquet", "SELECT i::INTEGER AS order_id, (i % 5)::INTEGER AS customers FROM range(0, 10) r(i)")
	src.write(t, "main", "gold/customers/c.parquet", "SELECT i::INTEGER AS customer_id FROM range(0, 5) r(i)")
	e := newEngine(t, src, "")
	suite := Suite{Tables: []Table{{Name: "orders", Path: "gold/orders/"}, {Name: "customers", Path: "gold/customers/"}}}
	for _, tc := range []struct {
		where string
		reads bool
	}{
		{"customers > 0", false},
		{"customers IN (SELECT customer_id FROM customers)", true},
	} {
		before := src.downloaded("main", "gold/customers/c.parquet")
		suite.Checks = []Check{{Name: "ids", Kind: KindNotNull, Table: "orders", Column: "order_id", Where: tc.where}}
		rep, err := e.Run(context.Background(), Request{Dataset: "orders", Repository: "repo", Ref: "main", Suite: suite, BatchTime: batchTime})
		if err != nil || !rep.Passed {
			t.Fatalf("%s: %+v %v", tc.where, rep, err)
		}
		if read := src.downloaded("main", "gold/customers/c.parquet") > before; read != tc.reads {
			t.Errorf("where %s: customers read %v; want %v", tc.where, read, tc.reads)
		}
	}
}

// A where condition's subquery may name the batch's files of another
// table (batch.customers): the run has that view too. Before, the check
// erred ("not a table of the audit") at the batch and at the base alike,
// and a neighbor's such check was excused as failing already.
func TestWhereSubqueryOfTheBatchSchema(t *testing.T) {
	check := Check{Name: "orders_of_removed_customers", Kind: KindRowCount, Table: "orders",
		Where: "customer_id NOT IN (SELECT customer_id FROM main.customers) AND customer_id NOT IN (SELECT customer_id FROM batch.customers)", Max: f64(0)}
	rep := auditShopBatch(t, shopSource(t), check)
	var got schemas.CheckResult
	for _, c := range rep.Checks {
		if c.Name == neighborName(check.Name, "orders") {
			got = c
		}
	}
	if rep.Passed || got.Status != schemas.StatusFail {
		t.Fatalf("a customers batch orphaning two orders: passed %v, %s %q: %s; want held back", rep.Passed, got.Status, got.Observed, got.Message)
	}
}
