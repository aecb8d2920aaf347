package audit

import (
	"path/filepath"
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

// TestKeyValueFolderInLocalPathsAddsNoColumn: DuckDB guesses hive
// partitions from the paths of the files it reads, and the engine reads
// local copies: a WorkDir or CacheDir under a key=value folder ("env=prod")
// added a column env to every view of two or more files (an exact schema
// check failed; before the fix it did). The engine must see the table an
// engine elsewhere sees, a table whose lakeFS paths hold key=value folders
// included (lakewap adds no hive partition columns, DESIGN.md).
func TestKeyValueFolderInLocalPathsAddsNoColumn(t *testing.T) {
	lake := newLakeSim(t)
	c0 := cid("c000")
	lake.commit(c0, nil, nil)
	lake.write(t, c0, "data/t/a.parquet", idsSQL("1"))
	lake.write(t, c0, "data/t/b.parquet", idsSQL("2"))
	lake.write(t, c0, "data/u/region=a/a.parquet", idsSQL("1"))
	lake.write(t, c0, "data/u/region=b/b.parquet", idsSQL("2"))
	lake.write(t, c0, "data/c/a.csv", idsSQL("1"))
	lake.write(t, c0, "data/c/b.csv", idsSQL("2"))
	lake.write(t, c0, "data/j/a.jsonl", idsSQL("1"))
	lake.write(t, c0, "data/j/b.jsonl", idsSQL("2"))
	exact := []ColumnType{{Name: "id", Type: "BIGINT"}}
	suite := Suite{Tables: []Table{{Name: "t", Path: "data/t/"}, {Name: "u", Path: "data/u/"},
		{Name: "c", Path: "data/c/", Format: FormatCSV}, {Name: "j", Path: "data/j/", Format: FormatJSONL}}, Checks: []Check{
		{Name: "t_exact_schema", Kind: KindSchema, Table: "t", Schema: exact},
		{Name: "u_exact_schema", Kind: KindSchema, Table: "u", Schema: exact},
		{Name: "c_exact_schema", Kind: KindSchema, Table: "c", Schema: exact},
		{Name: "j_exact_schema", Kind: KindSchema, Table: "j", Schema: exact},
		{Name: "t_rows", Kind: KindRowCount, Table: "t", Min: f64(2), Max: f64(2)},
	}}
	var reps []schemas.AuditReport
	for _, opts := range []Options{
		{WorkDir: t.TempDir()},
		{WorkDir: filepath.Join(t.TempDir(), "env=prod")},
		{WorkDir: t.TempDir(), CacheDir: filepath.Join(t.TempDir(), "env=prod")},
	} {
		opts.Source = lake
		e, err := New(opts)
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		rep := runReport(t, e, Request{Dataset: "d", Suite: suite, Repository: "r", Ref: c0, BatchTime: batchTime})
		if !rep.Passed {
			t.Errorf("WorkDir %s, CacheDir %q: %+v", opts.WorkDir, opts.CacheDir, rep.Checks)
		}
		reps = append(reps, rep)
	}
	sameReport(t, "WorkDir under env=prod", reps[1], reps[0])
	sameReport(t, "CacheDir under env=prod", reps[2], reps[0])
}
