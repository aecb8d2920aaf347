package audit

import (
	"testing"
)

// Review 61: a full audit whose suite compares with the target (a
// volume_change) reads the target's files too (the base view), and
// compares their footers with the batch's (columnCollision): files the
// batch removes are among them. The incremental audit judged the batch
// beside the unchanged files only, and passed a batch removing the
// table's CHAR(5) files (or its INT(8) ones) beside its `ab` (or its
// plain INT32), which the full audit refuses.

// removedSuite checks column col of t, and its volume against the
// target's (a warning, which reads the target's files in a full audit).
func removedSuite(col string) Suite {
	return Suite{Tables: []Table{{Name: "t", Path: "data/t/"}}, Checks: []Check{
		{Kind: KindNotNull, Table: "t", Column: col},
		{Kind: KindVolumeChange, Table: "t", MaxGrowthPct: f64(100000), Severity: SeverityWarn},
	}}
}

// TestMerge61BatchRemovingTheTablesFilesIsJudgedAsTheFullAudit: the
// table's two files declare c char(5) (values 5 long), or hold x as an
// INT(8); a batch removes both and writes `ab` undeclared, or a plain
// INT32. The full audit refuses either (the target's files beside the
// batch's); the incremental one must not pass it.
func TestMerge61BatchRemovingTheTablesFilesIsJudgedAsTheFullAudit(t *testing.T) {
	for _, tc := range []struct {
		name, col, table, batch, spark, why string
	}{
		{"char", "c", textsSQL("abcde"), textsSQL("ab"), charSpark, "shorter than their CHAR's length"},
		{"int8", "x", "SELECT 1::TINYINT AS x", "SELECT 300::INTEGER AS x", "", "Spark reads"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eachCache(t, func(t *testing.T, cache bool) {
				r := newMemoRigWith(t, cache, removedSuite(tc.col), func(l *lakeSim, ref, path string) {
					writeSQLMeta(t, l, ref, path, tc.table, tc.spark)
				})
				s := r.charBatch("c001", "s1", "data/t/s1/part-0.parquet", "", "")
				writeSQLMeta(t, r.lake, s, "data/t/s1/part-0.parquet", tc.batch, "")
				for _, p := range []string{"data/t/d.parquet", "data/t/s0/part-0.parquet"} {
					r.lake.remove(t, s, p)
				}
				wantFailsAsFull(t, r, s, cid("c001"), ModeFull, tc.why)
			})
		})
	}
}
