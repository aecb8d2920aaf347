package audit

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lakewap/lakewap/schemas"
)

// A neighbor's check of the batch alone (scope: batch on the shared table)
// judges the batch's files there: at the base there is no batch, so a
// check that fails on no rows (freshness, row_count with a min) fails
// there always, and was taken for a check failing on the target already.
// A customers batch of stale rows then published past orders' rule that
// every batch into customers is fresh, warned only.
func TestNeighborBatchScopeCheckIsNotExcusedByTheEmptyBase(t *testing.T) {
	src := newDirSource(t)
	src.write(t, "main", "gold/customers/c.parquet",
		"SELECT i::INTEGER AS customer_id, 'c' || i AS name, TIMESTAMP '2025-06-01 11:00:00' AS updated_at FROM range(0, 5) r(i)")
	src.write(t, "main", "gold/orders/o.parquet", "SELECT i::INTEGER AS order_id, (i % 5)::INTEGER AS customer_id FROM range(0, 10) r(i)")
	src.branch(t, "main", "b1")
	// The batch's customers are a year old.
	src.write(t, "b1", "gold/customers/c1.parquet",
		"SELECT i::INTEGER AS customer_id, 'c' || i AS name, TIMESTAMP '2024-06-01 11:00:00' AS updated_at FROM range(5, 8) r(i)")
	tabs := []Table{{Name: "orders", Path: "gold/orders/"}, {Name: "customers", Path: "gold/customers/"}}
	datasets := map[string]Dataset{
		"customers": {Repository: "repo", Target: "main", Suite: Suite{Tables: tabs[1:],
			Checks: []Check{{Name: "customer_ids_unique", Kind: KindUnique, Table: "customers", Column: "customer_id"}}}},
		"orders": {Repository: "repo", Target: "main", Suite: Suite{Tables: tabs, Checks: []Check{
			{Name: "order_ids_unique", Kind: KindUnique, Table: "orders", Column: "order_id"},
			{Name: "fresh_customer_batches", Kind: KindFreshness, Table: "customers", Column: "updated_at", MaxAge: "1d", Scope: ScopeBatch}}}},
	}
	s, err := NewService(ServiceOptions{Engine: newEngine(t, src, ""), Datasets: datasets, Concurrency: 1, Budget: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	objs, err := src.Changed(context.Background(), "repo", "main", "b1", "")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := s.Audit(context.Background(), Request{Dataset: "customers", Repository: "repo", Ref: "b1", BaseRef: "main",
		BatchTime: batchTime, Changes: &Changes{Objects: objs, Removals: true}})
	if err != nil {
		t.Fatal(err)
	}
	name := neighborName("fresh_customer_batches", "orders")
	var got schemas.CheckResult
	for _, c := range rep.Checks {
		if c.Name == name {
			got = c
		}
	}
	if rep.Passed || got.Status != schemas.StatusFail {
		t.Fatalf("a customers batch of year-old rows: passed %v, %s %q: %s; want the batch held back by orders' check of its batches",
			rep.Passed, got.Status, got.Observed, got.Message)
	}
	if strings.Contains(got.Message, "already") {
		t.Errorf("message %q excuses the batch", got.Message)
	}
}
