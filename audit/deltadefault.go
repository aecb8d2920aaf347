package audit

import (
	"fmt"
	"slices"
	"strings"
)

// A Delta table's column defaults (the writer feature allowColumnDefaults)
// are kept in the metadata of the column's field in the log's schema, as
// Spark keeps them in a Parquet file's Spark schema (sparkdefault.go):
// CURRENT_DEFAULT, which delta-spark writes by on INSERT, and
// EXISTS_DEFAULT. delta-spark refuses to add a column with a default
// (WRONG_COLUMN_DEFAULTS_FOR_DELTA_ALTER_TABLE_ADD_COLUMN_NOT_SUPPORTED),
// so it never writes an EXISTS_DEFAULT over files lacking the column; but a
// log that declares one is read by it all the same: delta-spark 4.4.0
// (PySpark 4.2.0) read the rows of the files written before column c was
// added as c = 7 once a later metaData declared c's EXISTS_DEFAULT "7",
// where delta-rs (deltalake 1.6.6) and the audit read NULL, and a range of
// 0 to 3 passed (TestReader63DeltaExistsDefaultIsRefused,
// TestReader63DeltaSparkReadsExistsDefaults). A CURRENT_DEFAULT alone
// changes nothing any reader reads (delta-spark read NULL there).
//
// So a Delta table whose schema, in any metaData the audit's views read
// (main's, the base's, the batch's, its versions'), declares a top-level
// data column's EXISTS_DEFAULT, and one of whose data files lacks that
// column, is refused, naming the file, the column, the default and the
// version (deltaExistsDefaults). Partition columns are the log's values;
// a struct's field's default is not looked at (Spark's Parquet reader did
// not read one, sparkdefault.go; nor did delta-spark 4.4.0, review 64: a
// field s.b declared EXISTS_DEFAULT "7" by a later metaData read NULL in
// the rows of a file whose s lacks b, as delta-rs and the audit read).

// deltaExistsDefaults names the first file of files (a Delta table's, in
// the views of key) lacking a top-level column that a metaData of the
// table's log declares an EXISTS_DEFAULT.
func (r *run) deltaExistsDefaults(key string, cols map[string][]fileColumn, files []string, objPath map[string]string) error {
	type decl struct {
		name, def, table string
		version          int64
	}
	var decls []decl
	seen := map[string]bool{}
	for _, s := range []string{schemaMain, schemaBase, schemaBatch, schemaInterim} {
		v := r.views[viewKey{s, key}]
		if v == nil || v.delta == nil || v.delta.meta == nil {
			continue
		}
		metas := []deltaMetaAt{{v.delta.version, v.delta.meta}}
		for _, at := range v.delta.metaAt {
			if v.delta.base >= 0 && at.version > v.delta.base {
				metas = append(metas, at)
			}
		}
		for _, at := range metas {
			if seen[at.meta.SchemaString+"\x00"+strings.Join(at.meta.PartitionColumns, "\x00")] {
				continue
			}
			seen[at.meta.SchemaString+"\x00"+strings.Join(at.meta.PartitionColumns, "\x00")] = true
			fields, err := deltaSchemaTop(at.meta.SchemaString)
			if err != nil {
				return fmt.Errorf("Delta table %s at version %d: its schema cannot be read for column defaults (%v)", v.table.Name, at.version, err)
			}
			for _, f := range fields {
				if slices.ContainsFunc(at.meta.PartitionColumns, func(p string) bool { return strings.EqualFold(p, f.name) }) {
					continue
				}
				var c fileColumn
				if why := markSparkDefault(&c, f); why != "" {
					return fmt.Errorf("Delta table %s at version %d: column %q: the schema's metadata of the column cannot be read for its default: readers may disagree on it", v.table.Name, at.version, clip(f.name, 128))
				}
				if c.sparkDefault != "" {
					decls = append(decls, decl{f.name, c.sparkDefault, v.table.Name, at.version})
				}
			}
		}
	}
	if len(decls) == 0 {
		return nil
	}
	for _, f := range files {
		for _, d := range decls {
			if slices.ContainsFunc(cols[f], func(c fileColumn) bool { return strings.EqualFold(c.name, d.name) }) {
				continue
			}
			return fmt.Errorf("file %s lacks column %q, whose EXISTS_DEFAULT the schema of Delta table %s at version %d declares %s: delta-spark reads the default in the rows of a data file lacking the column, delta-rs, DuckDB and the audit NULL: readers disagree on them (rewrite the file with the column, or declare no EXISTS_DEFAULT)",
				objPath[f], clip(d.name, 128), d.table, d.version, d.def)
		}
	}
	return nil
}
