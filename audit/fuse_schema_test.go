package audit

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A batch's first audit takes its file's columns and types (the
// statistics' schema, issue 21 review 3) from its one fused statement, as
// typeof of each column its footer names, instead of a DESCRIBE that reads
// the file again; the schema is the one DESCRIBE gives, for columns of
// many types, nested ones and spellings that need quoting included.
func TestFusedFirstAuditReadsTheBatchSchema(t *testing.T) {
	r := newFuseRig(t)
	r.audit(r.batch("b0", demoRows(200)))
	extra := `, (i % 100)::TINYINT AS "t8", (i % 200)::UTINYINT AS u8, i::SMALLINT AS s16, i::UINTEGER AS u32, i::HUGEINT AS h128, i::UBIGINT AS u64,
	i::FLOAT AS f32, i::DOUBLE AS f64, (i / 7)::DECIMAL(18,3) AS dec, (i / 7)::DECIMAL(4,1) AS dec4, i % 2 = 0 AS flag,
	DATE '2026-01-01' + i::INTEGER AS day, TIME '10:00:00' AS tod, TIMESTAMP '2026-01-01 00:00:00' + INTERVAL (i) SECOND AS ts,
	TIMESTAMPTZ '2026-01-01 00:00:00+00' AS tstz, (TIMESTAMP '2026-01-01')::TIMESTAMP_MS AS tsms, (TIMESTAMP '2026-01-01')::TIMESTAMP_NS AS tsns,
	INTERVAL (i) DAY AS iv, uuid() AS id_uuid, 'x'::BLOB AS raw, [i, i + 1] AS ints, {'a': i, 'b': 'z'} AS st, MAP {'k': i} AS mp,
	NULL::VARCHAR AS empty, i AS "Mixed Case", i AS "quo""te", i AS "com,ma", [[i]] AS nested`
	rows := strings.Replace(demoRows(300), "AS currency", "AS currency"+extra, 1)
	s := r.batch("b1", rows)
	rep, fused, _ := r.audit(s)
	if !rep.Passed {
		t.Fatalf("want a pass: %+v", rep.Checks)
	}
	for _, q := range fused {
		if strings.HasPrefix(q, "DESCRIBE") {
			t.Errorf("the first audit read the batch's schema in a statement of its own: %s", q)
		}
	}
	objs, err := r.lake.List(context.Background(), "r", s, "gold/billing_fact/b1/")
	if err != nil || len(objs) != 1 {
		t.Fatal(err, objs)
	}
	r.fused.stats.mu.Lock()
	st, ok := r.fused.stats.mem[statsKey("r", objs[0])]
	r.fused.stats.mu.Unlock()
	if !ok {
		t.Fatal("the batch file's statistics were not kept")
	}
	want := describeFile(t, filepath.Join(r.lake.root, s, filepath.FromSlash(objs[0].Path)))
	if !slices.Equal(st.Schema, want) {
		t.Errorf("schema from the fused statement:\n%v\nDESCRIBE:\n%v", st.Schema, want)
	}
}

// describeFile is DESCRIBE of f read alone, as fileSchema asks it.
func describeFile(t *testing.T, f string) [][2]string {
	t.Helper()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query("DESCRIBE SELECT * FROM " + readSQL(FormatParquet, []string{filepath.Clean(f)}))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out [][2]string
	for rows.Next() {
		vals, err := scanValues(rows.Scan, 6)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, [2]string{fmt.Sprint(vals[0]), fmt.Sprint(vals[1])})
	}
	return out
}
