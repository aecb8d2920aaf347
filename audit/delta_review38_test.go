package audit

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReview38DeltaClaimsOfAColumnTheFileLacks: a Delta table's schema
// has a column (file_row_number, file_index: read_parquet's virtual
// columns; later: any other name) that the batch's data file lacks
// (NULL to Delta readers), and the log's stats claim nullCount 0 and
// values 0 to 0 of it for that file: delta-rs skips the file for WHERE
// col IS NULL, which the full scan reads a row of. The claims were
// compared with a bare read_parquet of the file, whose virtual column
// stood for the one it lacks (0 NULLs, its row numbers or index): the
// claims held and the audit passed. It must refuse the table, as it does
// for a column of any other name.
func TestReview38DeltaClaimsOfAColumnTheFileLacks(t *testing.T) {
	for _, col := range []string{"file_row_number", "file_index", "later"} {
		t.Run(col, func(t *testing.T) {
			schema := fmt.Sprintf(`{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},{"name":%q,"type":"long","nullable":true,"metadata":{}}]}`, col)
			meta := fmt.Sprintf(`{"metaData":{"id":"t1","format":{"provider":"parquet","options":{}},"schemaString":%q,"partitionColumns":[],"configuration":{},"createdTime":1}}`, schema)
			add := func(src *dirSource, ref, path, stats string) string {
				info, err := os.Stat(filepath.Join(src.root, ref, "gold", "events", path))
				if err != nil {
					t.Fatal(err)
				}
				return fmt.Sprintf(`{"add":{"path":%q,"partitionValues":{},"size":%d,"modificationTime":1,"dataChange":true,"stats":%q}}`, path, info.Size(), stats)
			}
			src := newDirSource(t)
			src.write(t, "main", "gold/events/part-a.parquet", fmt.Sprintf("SELECT * FROM (VALUES (1::BIGINT, 10::BIGINT), (2, 20)) v(id, %s)", quoteIdent(col)))
			writeDeltaCommit(t, src, "main", "gold/events", 0, deltaProtocol(1), meta, add(src, "main", "part-a.parquet", `{"numRecords":2}`))
			src.branch(t, "main", "b1")
			src.write(t, "b1", "gold/events/part-b.parquet", "SELECT 3::BIGINT AS id")
			stats := fmt.Sprintf(`{"numRecords":1,"minValues":{"id":3,%[1]q:0},"maxValues":{"id":3,%[1]q:0},"nullCount":{"id":0,%[1]q:0}}`, col)
			writeDeltaCommit(t, src, "b1", "gold/events", 1, add(src, "b1", "part-b.parquet", stats))
			deltaRSSkips(t, filepath.Join(src.root, "b1", "gold", "events"), fmt.Sprintf(`[(%q, "=", None)]`, col))
			rep := deltaAudit(t, src, "b1", FormatDelta, Check{Name: "rows", Kind: KindRowCount, Table: "events", Max: f64(10)})
			got := rep.Checks[0]
			if rep.Passed || !strings.Contains(got.Message, "part-b.parquet") {
				t.Errorf("passed %v (%s %s), want refused naming part-b.parquet", rep.Passed, got.Observed, got.Message)
			}
			t.Logf("%s: %s", got.Status, got.Message)
		})
	}
}

// TestReview38DeltaTableWithAFilenameColumn: a Delta table's data files
// are counted against the numRecords of the log's stats (every writer
// states them) with read_parquet's filename option, which DuckDB refuses
// over a file that has a column named filename: an honest table with such
// a column could not be audited at all.
func TestReview38DeltaTableWithAFilenameColumn(t *testing.T) {
	schema := `{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},{"name":"filename","type":"string","nullable":true,"metadata":{}}]}`
	meta := fmt.Sprintf(`{"metaData":{"id":"t1","format":{"provider":"parquet","options":{}},"schemaString":%q,"partitionColumns":[],"configuration":{},"createdTime":1}}`, schema)
	for _, records := range []int{2, 3} {
		t.Run(fmt.Sprint("stated_", records), func(t *testing.T) {
			src := newDirSource(t)
			src.write(t, "main", "gold/events/part-a.parquet", "SELECT * FROM (VALUES (1::BIGINT, 'x'), (2, 'y')) v(id, filename)")
			info, err := os.Stat(filepath.Join(src.root, "main", "gold", "events", "part-a.parquet"))
			if err != nil {
				t.Fatal(err)
			}
			add := fmt.Sprintf(`{"add":{"path":"part-a.parquet","partitionValues":{},"size":%d,"modificationTime":1,"dataChange":true,"stats":"{\"numRecords\":%d}"}}`, info.Size(), records)
			writeDeltaCommit(t, src, "main", "gold/events", 0, deltaProtocol(1), meta, add)
			rep := deltaAudit(t, src, "main", FormatDelta, Check{Name: "rows", Kind: KindRowCount, Table: "events", Max: f64(10)})
			got := rep.Checks[0]
			if records == 2 && (!rep.Passed || got.Observed != "2 rows") {
				t.Errorf("honest numRecords: passed %v (%s %s), want 2 rows, pass", rep.Passed, got.Observed, got.Message)
			}
			if records == 3 && (rep.Passed || !strings.Contains(got.Message, "has 3 records, the file has 2")) {
				t.Errorf("numRecords 3 of a file of 2 rows: passed %v (%s %s), want refused", rep.Passed, got.Observed, got.Message)
			}
		})
	}
}
