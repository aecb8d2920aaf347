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
