package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"
)

// A Delta table's log declares a CHAR(n) column as Spark writes one into
// its schemaString: a `string` field whose metadata holds
// __CHAR_VARCHAR_TYPE_STRING `char(n)` (or `struct<x:char(n)>`,
// `array<char(n)>`, ...). delta-spark hands Spark that schema, metadata
// and all (DeltaLog.buildHadoopFsRelationWithFileIndex drops column
// mapping, type widening, default and leaked Spark-internal keys only),
// and Spark's ApplyCharTypePadding pads the relation's CHAR columns with
// spaces when it reads them (spark.sql.readSideCharPadding, on by
// default), partition columns too: PySpark 4.3.0 reading a table's files
// with its log's schema read `ab` of a char(5) column as `ab   `, and
// through a catalog table of its columns a partition value `a` of a
// char(3) one as `a  `, where deltalake 1.6.6 and DuckDB read them as
// stored (TestDeltaChar60Readers). Spark pads a
// CHAR table's values when it writes them; another writer (delta-rs
// appending to a table Spark made, a forged log) need not.
//
// So a Delta table whose schema, at the last version of a view or at a
// version the batch adds, declares a top-level column a CHAR has its
// files scanned (sparkChars' scan, memoized) for a value of the column
// shorter than n characters, by each declaration, and its active files'
// partition values of a column declared char(n) are compared in the log;
// the first file holding one is refused naming it, the column, the
// declaration and the table's version. A declaration naming a char in a
// text lakewap does not read as Spark's parser does refuses the table.

// deltaSparkChars refuses table's Delta files (files, the views'; cols,
// their Parquet columns) holding values Spark pads by a CHAR the log's
// schema declares (above).
func (r *run) deltaSparkChars(ctx context.Context, key string, cols map[string][]fileColumn, files []string, objPath, ids map[string]string) error {
	want := map[string][]sparkCharWant{}
	// chars are the CHAR(n) declarations of partition columns, by
	// lower-case name.
	type partChar struct {
		n               int
		declared, where string
	}
	chars := map[string][]partChar{}
	seen := map[string]bool{} // schemas read, with their partition columns
	var snaps []*deltaSnapshot
	for _, s := range []string{schemaMain, schemaBase, schemaBatch, schemaInterim} {
		v := r.views[viewKey{s, key}]
		if v == nil || v.delta == nil || v.delta.meta == nil {
			continue
		}
		table := v.table.Name
		snaps = append(snaps, v.delta)
		metas := []deltaMetaAt{{v.delta.version, v.delta.meta}}
		for _, at := range v.delta.metaAt {
			if v.delta.base >= 0 && at.version > v.delta.base {
				metas = append(metas, at)
			}
		}
		for _, at := range metas {
			key := at.meta.SchemaString + "\x00" + strings.Join(at.meta.PartitionColumns, "\x00")
			if seen[key] {
				continue
			}
			seen[key] = true
			fields, err := deltaSchemaTop(at.meta.SchemaString)
			if err != nil {
				return fmt.Errorf("Delta table %s at version %d: its schema cannot be read for CHAR declarations (%v)", table, at.version, err)
			}
			where := fmt.Sprintf("the schema of Delta table %s at version %d (%s)", table, at.version, sparkCharKey)
			for _, f := range fields {
				if slices.Contains(at.meta.PartitionColumns, f.name) {
					decls, why := sparkCharDecls(f, "its schema")
					if why != "" {
						return fmt.Errorf("Delta table %s at version %d: column %q: %s", table, at.version, clip(f.name, 128), why)
					}
					for _, d := range decls {
						if d.typ.kind == "char" {
							k := strings.ToLower(f.name)
							chars[k] = append(chars[k], partChar{d.typ.n, d.text, where})
						}
					}
					continue
				}
				cond, declared, why := sparkCharCondOf(f.name, f, "its schema")
				if why != "" {
					return fmt.Errorf("Delta table %s at version %d: column %q: %s", table, at.version, clip(f.name, 128), why)
				}
				if cond == "" {
					continue
				}
				if err := addSparkCharWant(want, f.name, sparkCharWant{cond, declared, where}); err != nil {
					return fmt.Errorf("Delta table %s: %w", table, err)
				}
			}
		}
	}
	if len(chars) > 0 {
		inViews := map[string]bool{}
		for _, f := range files {
			inViews[objPath[f]] = true
		}
		for _, snap := range snaps {
			for _, p := range slices.Sorted(maps.Keys(snap.active)) {
				f := snap.active[p]
				if !inViews[f.obj.Path] {
					continue
				}
				for _, col := range slices.Sorted(maps.Keys(f.parts)) {
					v := f.parts[col]
					if v == nil || *v == "" {
						continue // NULL to every reader
					}
					for _, c := range chars[strings.ToLower(col)] {
						if utf8.RuneCountInString(*v) < c.n {
							return fmt.Errorf("file %s: partition column %q is %q in the Delta log, shorter than its CHAR's length, and is declared %q in %s: Spark pads it with spaces to that length when it reads it (`a` of a char(3) as `a  `), DuckDB and delta-rs read it as stored: readers disagree on it (write it padded, or declare the column a string)",
								f.obj.Path, clip(col, 128), clip(*v, 128), c.declared, c.where)
						}
					}
				}
			}
		}
	}
	if len(want) > 0 {
		// The change data files of the batch's versions too: Spark's
		// table_changes reads them with the table's schema, padding a
		// delete of a row of a file the batch removes (in no view) as
		// much as the data (TestReader61ChangeDataOfACharTableIsJudgedByItsData).
		var extra []string
		for _, snap := range snaps {
			for _, l := range snap.changeLocal {
				if _, ok := objPath[l]; !ok && !slices.Contains(extra, l) {
					extra = append(extra, l)
				}
			}
		}
		if len(extra) > 0 {
			cols, objPath = maps.Clone(cols), maps.Clone(objPath)
			files = append(slices.Clip(files), extra...)
			for _, snap := range snaps {
				for _, l := range snap.changeLocal {
					cols[l], objPath[l] = snap.changeCols[l], snap.changePath[l]
				}
			}
		}
	}
	return r.scanSparkChars(ctx, want, cols, files, objPath, ids)
}

// deltaSchemaTop reads the top-level fields of a Delta schema (its
// schemaString, bounded by the log's action budget) as sparkFields: their
// names, types and metadata as written.
func deltaSchemaTop(schema string) ([]sparkField, error) {
	var s struct {
		Fields []struct {
			Name     string          `json:"name"`
			Type     json.RawMessage `json:"type"`
			Metadata json.RawMessage `json:"metadata"`
		} `json:"fields"`
	}
	if err := json.Unmarshal([]byte(schema), &s); err != nil {
		return nil, err
	}
	out := make([]sparkField, 0, len(s.Fields))
	for _, f := range s.Fields {
		out = append(out, sparkField{name: f.Name, raw: f.Type, meta: f.Metadata})
	}
	return out, nil
}
