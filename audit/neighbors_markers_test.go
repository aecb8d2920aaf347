package audit

import (
	"context"
	"testing"
	"time"

	"github.com/lakewap/lakewap/schemas"
)

// A batch's objects under another dataset's table are judged by that
// dataset's rule of what may go unread there too. Before, the neighbor's
// unaudited_objects result was dropped as the batch's own audit's to
// judge, by the batch's tables and markers; but the batch's markers for a
// shared path may be wider than the neighbor's (customers lists _extra*,
// orders keeps the defaults), and a path the batch may write outside its
// tables (allowed_paths) can lie under a neighbor's table, where its own
// audit looks at nothing. Either way a _x.parquet no audit read, which
// DuckDB's globs and Polars read, was published into a table orders reads.
func TestNeighborJudgesTheBatchsUnreadObjectsByItsOwnMarkers(t *testing.T) {
	for _, tc := range []struct {
		name, path string
	}{
		{"a marker of the batch's dataset alone", "gold/customers/_extra.parquet"},
		{"under the neighbor's table, outside the batch's", "gold/orders/_extra.parquet"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := newDirSource(t)
			src.write(t, "main", "gold/customers/c.parquet", "SELECT i::INTEGER AS customer_id, 'c' || i AS name FROM range(0, 5) r(i)")
			src.write(t, "main", "gold/orders/o.parquet", "SELECT i::INTEGER AS order_id, (i % 5)::INTEGER AS customer_id FROM range(0, 10) r(i)")
			src.branch(t, "main", "b1")
			// Orders of a customer that does not exist, in a file lakewap does not read.
			src.write(t, "b1", tc.path, "SELECT (100 + i)::INTEGER AS order_id, 99::INTEGER AS customer_id, 'x' AS name FROM range(0, 3) r(i)")
			datasets := map[string]Dataset{
				"customers": {Repository: "repo", Target: "main", Suite: Suite{
					Tables: []Table{{Name: "customers", Path: "gold/customers/", Markers: []string{"_SUCCESS", "_extra*"}}},
					Checks: []Check{{Name: "customer_ids_unique", Kind: KindUnique, Table: "customers", Column: "customer_id"}}}},
				"orders": {Repository: "repo", Target: "main", Suite: Suite{
					Tables: []Table{{Name: "orders", Path: "gold/orders/"}, {Name: "customers", Path: "gold/customers/"}},
					Checks: []Check{{Name: "order_ids_unique", Kind: KindUnique, Table: "orders", Column: "order_id"},
						{Name: "customer_names", Kind: KindNotNull, Table: "customers", Column: "name"}}}},
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
				Changes: &Changes{Objects: objs, Removals: true}})
			if err != nil {
				t.Fatal(err)
			}
			var got []schemas.CheckResult
			for _, c := range rep.Checks {
				if c.Kind == KindUnaudited {
					got = append(got, c)
				}
			}
			if rep.Passed || len(got) != 1 || got[0].Status != schemas.StatusFail || got[0].Name != neighborName(KindUnaudited+"(customers)", "orders") &&
				got[0].Name != neighborName(KindUnaudited+"(orders)", "orders") {
				t.Fatalf("a batch writing %s, which orders does not read: passed %v, unaudited results %+v; want it held back by orders' unaudited_objects",
					tc.path, rep.Passed, got)
			}
		})
	}
}
