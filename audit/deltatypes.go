package audit

import (
	"context"
	"fmt"
	"strings"
)

// Delta readers (delta-rs, Spark, delta-kernel) read each column in the
// type the log's schema gives it, casting a data file's column to it;
// DuckDB reads the files' own types (their union). A file of another type
// makes the two read other values: text ids '01' and '02' in a long
// column are 1 and 2 to delta-rs, and unique passed on them beside the
// table's 1 and 2 (TestDeltaFileOfAnotherTypeThanTheLogIsRefused). So a
// Delta view whose column reads in another type than the log's is refused,
// naming the first file of that type.

// deltaTypeAgrees: DuckDB reading a column as got is reading it as the
// log's want. Timestamps of any unit or zone annotation pass as either
// Delta timestamp: Spark writes INT96, which DuckDB reads as TIMESTAMP.
func deltaTypeAgrees(want, got string) bool {
	norm := func(t string) string {
		t = strings.ToUpper(strings.TrimSpace(t))
		if t == "TIMESTAMP WITH TIME ZONE" {
			return "TIMESTAMPTZ"
		}
		return t
	}
	want, got = norm(want), norm(got)
	if strings.HasPrefix(want, "TIMESTAMP") {
		return strings.HasPrefix(got, "TIMESTAMP")
	}
	return want == got
}

// deltaTypeDisagreement is the first column of the Delta view k (made)
// that DuckDB reads in another type than the log's schema gives it, with
// the first of the view's files that holds it so, or nil.
func (r *run) deltaTypeDisagreement(ctx context.Context, k viewKey, v *view) error {
	if v.delta == nil || len(v.files) == 0 {
		return nil
	}
	want := map[string]string{}
	for _, c := range v.delta.schema {
		if c.Type != "" {
			want[strings.ToLower(c.Name)] = c.Type
		}
	}
	if len(want) == 0 {
		return nil
	}
	got, err := r.describe(ctx, k.schema, v.table.Name)
	if err != nil {
		return err
	}
	for _, c := range got {
		w, ok := want[strings.ToLower(c.name)]
		if !ok || deltaTypeAgrees(w, c.typ) {
			continue
		}
		for i, f := range v.files {
			cols, err := r.queryColumns(ctx, "DESCRIBE SELECT * FROM "+readSQL(FormatParquet, []string{f}))
			if err != nil {
				return err
			}
			for _, fc := range cols {
				if strings.EqualFold(fc.name, c.name) && !deltaTypeAgrees(w, fc.typ) {
					return fmt.Errorf("%w: data file %s has column %q as %s where the log's schema says %s: Delta readers read it as %s, DuckDB as %s (readers disagree)",
						ErrDeltaUnsupported, v.objects[i].Path, fc.name, fc.typ, w, w, c.typ)
				}
			}
		}
		return fmt.Errorf("%w: column %q reads as %s where the log's schema says %s (readers disagree)", ErrDeltaUnsupported, c.name, c.typ, w)
	}
	return nil
}

// deltaRecordDisagreement is the first of the Delta view's files whose row
// count is not the numRecords the log's stats state for it. delta-rs
// answers count(*) from those stats (and Spark's metadata-only count), so
// a writer stating 50 records for a file of 2 made them count rows the
// audit did not (TestDeltaStatsRecordCountIsTheFiles). One query counts
// the rows of every file that has a stated count (row group metadata; no
// column is read).
func (r *run) deltaRecordDisagreement(ctx context.Context, v *view) error {
	if v.delta == nil {
		return nil
	}
	stated := map[string]int64{}
	for _, f := range v.delta.active {
		if f.records != nil {
			stated[f.obj.Path] = *f.records
		}
	}
	var files []string
	objPath := map[string]string{}
	for i, o := range v.objects {
		if _, ok := stated[o.Path]; ok && i < len(v.files) {
			files = append(files, v.files[i])
			objPath[v.files[i]] = o.Path
		}
	}
	if len(files) == 0 {
		return nil
	}
	rows, err := r.conn.QueryContext(ctx, fmt.Sprintf("SELECT filename, count(*) FROM read_parquet(%s, filename = true, union_by_name = true%s) GROUP BY filename",
		literalList(files), noHive))
	if err != nil {
		return err
	}
	defer rows.Close()
	counted := map[string]int64{}
	for rows.Next() {
		var f string
		var n int64
		if err := rows.Scan(&f, &n); err != nil {
			return err
		}
		counted[f] = n
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for _, f := range files {
		if n, want := counted[f], stated[objPath[f]]; n != want {
			return fmt.Errorf("%w: the log's stats say data file %s has %d records, the file has %d: delta-rs and Spark count %d (readers disagree)",
				ErrDeltaUnsupported, objPath[f], want, n, want)
		}
	}
	return nil
}
