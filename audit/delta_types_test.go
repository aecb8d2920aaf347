package audit

import "testing"

// TestDeltaFileOfAnotherTypeThanTheLogIsRefused (review 5): delta-rs
// (deltalake 1.6.6, checked) and Spark read a Delta table's columns in
// the types of the log's schema, casting each data file's column to it;
// DuckDB reads the files' own types, as their union. A batch adding a file
// whose id is text ('01', '02') to a table whose schema says long passed
// unique (DuckDB: '01', '02', '1', '2'), while delta-rs reads 1, 2, 1, 2.
// The audit must refuse it, naming the file and both types; a file of a
// narrower integer type (INTEGER in a long column), which DuckDB reads in
// the log's type too, passes.
func TestDeltaFileOfAnotherTypeThanTheLogIsRefused(t *testing.T) {
	for _, c := range []struct {
		name, q string
		passes  bool
	}{
		{"text_ids", "SELECT * FROM (VALUES ('01', 1.0::DOUBLE), ('02', 2.0)) v(id, amount)", false},
		{"integer_ids", "SELECT * FROM (VALUES (3::INTEGER, 1.0::DOUBLE), (4, 2.0)) v(id, amount)", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := newDirSource(t)
			src.write(t, "main", "gold/events/part-a.parquet", "SELECT * FROM (VALUES (1::BIGINT, 1.0::DOUBLE), (2, 2.0)) v(id, amount)")
			writeDeltaCommit(t, src, "main", "gold/events", 0, deltaProtocol(1), deltaMeta(), deltaAdd("part-a.parquet"))
			src.branch(t, "main", "b1")
			src.write(t, "b1", "gold/events/part-b.parquet", c.q)
			writeDeltaCommit(t, src, "b1", "gold/events", 1, deltaAdd("part-b.parquet"))
			rep := deltaAudit(t, src, "b1", FormatDelta, Check{Name: "u", Kind: KindUnique, Table: "events", Column: "id"})
			if got := rep.Checks[0]; rep.Passed != c.passes {
				t.Errorf("passed %v (%s %s), want %v", rep.Passed, got.Observed, got.Message, c.passes)
			} else {
				t.Logf("passed %v (%s %s)", rep.Passed, got.Observed, got.Message)
			}
		})
	}
}
