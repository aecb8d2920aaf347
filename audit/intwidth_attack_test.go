package audit

import "testing"

// TestBatchOfAnotherIntegerWidthUnderAWhereIsAuditedWhole: integers of
// one signedness were taken as one type (a union of INTEGER and BIGINT
// holds every value, spelled alike), but a where condition can tell the
// widths apart: typeof, or hex and bit_count of a negative value. The
// table is BIGINT (1, and 3000); a batch writes INTEGER 50 and 150. Read
// whole, the batch's rows are BIGINT and row_count(where typeof(id) =
// 'BIGINT', max 2) counts 4 and fails; the batch's view read them as
// INTEGER, counted none of them, and the incremental audit passed on
// 2 + 0. A table whose incremental checks have a where condition now
// needs one exact type per column.
func TestBatchOfAnotherIntegerWidthUnderAWhereIsAuditedWhole(t *testing.T) {
	eachCache(t, func(t *testing.T, cache bool) {
		suite := Suite{Tables: []Table{{Name: "t", Path: "data/t/"}}, Checks: []Check{
			{Name: "wide", Kind: KindRowCount, Table: "t", Max: f64(2), Where: "typeof(id) = 'BIGINT'"},
		}}
		r := newMemoRigOf(t, cache, map[string][]string{"data/t/a.parquet": {"1"}}, suite)
		s := cid("s1")
		r.lake.branch(t, cid("c001"), s)
		r.lake.commit(s, []string{cid("c001")}, nil)
		r.lake.write(t, s, "data/t/s1/part-0.parquet", "SELECT * FROM (VALUES (50::INTEGER), (150::INTEGER)) v(id)")
		wantFailsAsFull(t, r, s, cid("c001"), ModeFull, `column "id" is BIGINT in`)
	})
}
