package audit

import (
	"testing"
)

// TestIncrementalAuditSeesTheTablesLayout: Spark reads a table by how all
// its files sit under partition directories, and the audit refuses a
// table whose files disagree (partitionLayout). An incremental audit reads
// only the batch's files, which agree with one another: before the fix it
// passed a batch that made main's table one Spark reads otherwise (a file
// under k=1/ beside files under no key: Spark leaves those out), where the
// full audit refuses. It now runs full, saying why, and fails.
func TestIncrementalAuditSeesTheTablesLayout(t *testing.T) {
	eachCache(t, func(t *testing.T, cache bool) {
		suite := Suite{Tables: []Table{{Name: "t", Path: "data/t/"}}, Checks: []Check{{Kind: KindNotNull, Table: "t", Column: "id"}}}
		r := newMemoRigOf(t, cache, map[string][]string{"data/t/a.parquet": {"9", "10"}}, suite)
		s := r.batch("c001", "s1", "data/t/k=1/part-0.parquet", "11")
		wantFailsAsFull(t, r, s, cid("c001"), ModeFull, "sits under partition directories of keys [] and data/t/k=1/part-0.parquet under [k]")
	})
}
