package audit

import (
	"bytes"
	"context"
	"database/sql"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

// TestReview55NestedInt96OutsidePandasRangeIsRefused: an INT96 time inside
// a struct or a list (Spark writes every timestamp as INT96 by default, its
// structs' and arrays' too) is read by DuckDB 1.5.6 as written and by
// pyarrow 26.0.1 and pandas 3.1.1 in 64 bits of nanoseconds, wrapped: the
// struct field st.t of 2500-01-01 read 1915-06-14 00:25:26.290448384 to
// pandas, the list element 1500-06-01 2084-12-18 23:34:33.709551616.
// int96Range and int96Days looked at top-level INT96 columns only, so a
// custom SQL check finding no time before 2000 in st.t (or after 2050 in
// l) passed where pandas finds a row failing. Such a file is now refused,
// naming the file and the leaf, under any check, as a top-level column is;
// nested INT96 times within pandas' range pass.
// review55_int96_*.parquet were written by pyarrow 26.0.1
// (use_deprecated_int96_timestamps, snappy).
func TestReview55NestedInt96OutsidePandasRangeIsRefused(t *testing.T) {
	if python, err := testPython(); err == nil && !testing.Short() {
		const read = `import sys, pandas as pd
for f in sys.argv[1:]:
    df = pd.read_parquet(f)
    col = "st" if "st" in df.columns else "l"
    vals = [str(pd.Timestamp(v["t"])) for v in df[col]] if col == "st" else [str(pd.Timestamp(x)) for v in df[col] for x in v]
    print(" | ".join(vals))`
		var args []string
		for _, f := range []string{"review55_int96_struct_wraps.parquet", "review55_int96_list_wraps.parquet"} {
			args = append(args, filepath.Join("testdata", f))
		}
		out, err := exec.Command(python, append([]string{"-c", read}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("pandas: %v: %s", err, out)
		}
		want := "1915-06-14 00:25:26.290448384 | 2024-01-01 00:00:00\n2024-01-01 00:00:00 | 2084-12-18 23:34:33.709551616 | 2024-01-02 00:00:00"
		if got := strings.TrimSpace(string(out)); got != want {
			t.Fatalf("pandas reads\n%s\nwant\n%s\nthe case shows nothing", got, want)
		}
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, c := range []struct {
		file, duck, query string
		refused           bool
		leaf              string
	}{
		{"review55_int96_struct_wraps.parquet", "SELECT CAST(max(st.t) AS VARCHAR) FROM read_parquet(?)",
			"SELECT id FROM t WHERE st.t < TIMESTAMP '2000-01-01'", true, `"st.t"`},
		{"review55_int96_list_wraps.parquet", "SELECT CAST(min(list_min(l)) AS VARCHAR) FROM read_parquet(?)",
			"SELECT id FROM t WHERE list_max(l) > TIMESTAMP '2050-01-01'", true, `"l.list.element"`},
		{"review55_int96_nested_in_range.parquet", "SELECT CAST(min(st.t) AS VARCHAR) FROM read_parquet(?)",
			"SELECT id FROM t WHERE st.t < TIMESTAMP '1900-01-01' OR list_max(l) > TIMESTAMP '2050-01-01' OR m['k'] > TIMESTAMP '2050-01-01'", false, ""},
	} {
		src, dst := review36File(t, c.file)
		var duck string
		if err := db.QueryRow(c.duck, dst).Scan(&duck); err != nil {
			t.Fatal(err)
		}
		if c.refused && duck != "2500-01-01 00:00:00" && duck != "1500-06-01 00:00:00" {
			t.Fatalf("%s: DuckDB reads %s: the case shows nothing", c.file, duck)
		}
		for _, check := range []Check{{Kind: KindSQL, SQL: c.query}, {Kind: KindNotNull, Column: "id"}} {
			check.Name, check.Table = "c", "t"
			rep, err := newEngine(t, src, "").Run(context.Background(), Request{Dataset: "d", Repository: "repo", Ref: "b1", BaseRef: "main", BatchTime: batchTime,
				Suite: Suite{Tables: []Table{{Name: "t", Path: "t/", Format: FormatParquet}}, Checks: []Check{check}}})
			if err != nil {
				t.Fatal(err)
			}
			res := rep.Checks[0]
			if !c.refused {
				if !rep.Passed {
					t.Errorf("%s, %s: %s %q; nested INT96 times within pandas' range read alike: want it passed", c.file, check.Kind, res.Status, res.Message)
				}
				continue
			}
			if rep.Passed || res.Status != schemas.StatusError || !strings.Contains(res.Message, "a.parquet") || !strings.Contains(res.Message, c.leaf) || !strings.Contains(res.Message, "Julian day") {
				t.Errorf("%s, %s: %s %q; pandas reads the time otherwise: want it refused naming the file, the leaf %s and the day", c.file, check.Kind, res.Status, res.Message, c.leaf)
				continue
			}
			t.Logf("refused: %s", res.Message)
		}
	}
}

// TestReview55NestedInt96ThatCannotBeReadIsRefused: a nested INT96 leaf
// whose pages the Go reader cannot read (here a codec it does not decode,
// LZO, forged into the footer of review55_int96_struct_wraps.parquet) is
// looked into by nothing else: no scan reads nested leaves. Its file is
// refused, naming the leaf, where a not_null of id, which DuckDB reads
// without st, passed.
func TestReview55NestedInt96ThatCannotBeReadIsRefused(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "review55_int96_struct_wraps.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	// st.t's ColumnMetaData: path_in_schema ["st", "t"], then codec
	// SNAPPY (1, zigzag 2), made LZO (3, zigzag 6).
	pat := []byte("\x28\x02st\x01t\x15\x02")
	if bytes.Count(b, pat) != 1 {
		t.Fatal("st.t's codec not found in the footer")
	}
	b = bytes.Replace(b, pat, append(pat[:len(pat)-1:len(pat)-1], 0x06), 1)
	src, dst := review36File(t, "review55_int96_struct_wraps.parquet")
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err := newEngine(t, src, "").Run(context.Background(), Request{Dataset: "d", Repository: "repo", Ref: "b1", BaseRef: "main", BatchTime: batchTime,
		Suite: Suite{Tables: []Table{{Name: "t", Path: "t/", Format: FormatParquet}}, Checks: []Check{{Name: "c", Table: "t", Kind: KindNotNull, Column: "id"}}}})
	if err != nil {
		t.Fatal(err)
	}
	res := rep.Checks[0]
	if rep.Passed || res.Status != schemas.StatusError || !strings.Contains(res.Message, "a.parquet") || !strings.Contains(res.Message, `"st.t"`) {
		t.Fatalf("%s %q: want the file refused naming the leaf", res.Status, res.Message)
	}
	t.Logf("refused: %s", res.Message)
}
