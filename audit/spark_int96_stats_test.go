package audit

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

// sparkInt96Write has PySpark write, with
// spark.sql.parquet.outputTimestampType=INT96, its rows into one file of
// one row group under each of the directories argv[1] and argv[2] (same,
// then differ): a top-level timestamp ts, a struct's st.t and an array's
// l, all INT96. parquet-mr 1.17.0 claims an INT96 leaf's min and max
// (both pairs) only where they are equal (its order is undefined), so
// the file whose times are all one time claims them, and the other does
// not. It then reads each file of argv[3:] with both Parquet readers,
// printing for a filter on each INT96 column the ids read.
const sparkInt96Write = `import sys, datetime as dt
from pyspark.sql import SparkSession
from pyspark.sql.types import StructType, StructField, IntegerType, TimestampType, ArrayType
s = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").config("spark.sql.session.timeZone", "UTC").config("spark.sql.parquet.outputTimestampType", "INT96").getOrCreate()
s.sparkContext.setLogLevel("ERROR")
schema = StructType([StructField("id", IntegerType()), StructField("ts", TimestampType()),
    StructField("st", StructType([StructField("t", TimestampType())])), StructField("l", ArrayType(TimestampType()))])
t1 = dt.datetime(2024, 1, 1, 12, 0, 0)
t2 = dt.datetime(2024, 6, 1, 0, 0, 0, 123456)
same = [(1, t1, (t1,), [t1]), (2, t1, (None,), [t1, None]), (3, None, None, None)]
differ = [(1, t1, (t1,), [t1]), (2, t2, (t2,), [t1, t2]), (3, None, None, None)]
for d, rows in zip(sys.argv[1:3], [same, differ]):
    s.createDataFrame(rows, schema).coalesce(1).write.mode("overwrite").parquet(d)
for vec in ["true", "false"]:
    s.conf.set("spark.sql.parquet.enableVectorizedReader", vec)
    for f in sys.argv[3:]:
        df = s.read.parquet(f)
        for w in ["ts = TIMESTAMP '2024-01-01 12:00:00'", "st.t = TIMESTAMP '2024-01-01 12:00:00'", "array_contains(l, TIMESTAMP '2024-01-01 12:00:00')"]:
            print(vec + "\t" + f + "\t" + w + "\t" + ",".join(str(r[0]) for r in df.where(w).orderBy("id").select("id").collect()), flush=True)
s.stop()
`

// TestSparkNestedInt96TimesPass: PySpark 4.3.0 writing timestamps as
// INT96 (spark.sql.parquet.outputTimestampType=INT96), a top-level one,
// a struct's and an array's, within pandas' range. A row group whose
// INT96 times are all one time claims it as min and max (parquet-mr
// does so where min and max are equal), and claimsHold refused every
// min or max claimed for an INT96 leaf ("a type lakewap does not
// order"): an honest Spark table of one time per row group (a batch of
// one row) was refused. Both files pass, and DuckDB 1.5.6, filtering on
// each column (row groups skipped by the claims), reads the rows
// written. Spark, with both readers, reads the rows written from the
// forged files of TestForgedInt96ClaimsAreRefused too, whose claims
// made DuckDB 1.5.6 read none: it skips by no INT96 claim.
func TestSparkNestedInt96TimesPass(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Apache Spark; skipped with -short")
	}
	python, err := sparkPython()
	if err != nil {
		t.Skipf("skipped: %v; set LAKEWAP_SPARK_PYTHON (scripts/sparkenv.sh installs PySpark)", err)
	}
	out := t.TempDir()
	dirs := []string{filepath.Join(out, "same"), filepath.Join(out, "differ")}
	forged := sparkInt96ForgedFiles(t, out)
	lines, _ := runPySpark(t, python, sparkInt96Write, append(slices.Clone(dirs), forged...))
	sparkInt96ReadAsWritten(t, "Spark", string(lines), len(forged)*2*3)
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for i, d := range dirs {
		parts, err := filepath.Glob(filepath.Join(d, "part-*.parquet"))
		if err != nil || len(parts) != 1 {
			t.Fatalf("%s: %v %v: want one part", d, parts, err)
		}
		b, err := os.ReadFile(parts[0])
		if err != nil {
			t.Fatal(err)
		}
		claimed := sparkInt96Claimed(t, b)
		if want := i == 0; claimed != want {
			t.Fatalf("%s: INT96 min and max claimed %v, want %v: the case shows nothing", filepath.Base(d), claimed, want)
		}
		sparkInt96Audit(t, db, filepath.Base(d), b, false)
	}
}

// sparkInt96Claimed says whether the footer of the Parquet file b claims
// a min or max of an INT96 leaf.
func sparkInt96Claimed(t *testing.T, b []byte) bool {
	t.Helper()
	f := filepath.Join(t.TempDir(), "f.parquet")
	if err := os.WriteFile(f, b, 0o644); err != nil {
		t.Fatal(err)
	}
	buf, err := footerBytes(f)
	if err != nil {
		t.Fatal(err)
	}
	leaves, groups, err := decodeFooterClaims(buf)
	if err != nil {
		t.Fatal(err)
	}
	for k, l := range leaves {
		for _, g := range groups {
			c := g.chunks[k]
			if l.physical == ptInt96 && (c.min != nil || c.max != nil || c.minValue != nil || c.maxValue != nil) {
				return true
			}
		}
	}
	return false
}

// sparkInt96Filters are filters on each INT96 column of sparkInt96Write's
// rows and the ids they match as written, in its file same and in differ.
var sparkInt96Filters = []struct{ where, same, differ string }{
	{"ts = TIMESTAMP '2024-01-01 12:00:00'", "1,2", "1"},
	{"ts < TIMESTAMP '2025-01-01'", "1,2", "1,2"},
	{"st.t = TIMESTAMP '2024-01-01 12:00:00'", "1", "1"},
	{"st.t < TIMESTAMP '2025-01-01'", "1", "1,2"},
	{"list_contains(l, TIMESTAMP '2024-01-01 12:00:00')", "1,2", "1,2"},
}

// sparkInt96Audit audits b (sparkInt96Write's file named name) as table
// t's one file under a custom SQL check of its INT96 columns and a
// not_null: refused wants the audit refused, else passed with DuckDB's
// filters reading the rows written.
func sparkInt96Audit(t *testing.T, db *sql.DB, name string, b []byte, refused bool) {
	t.Helper()
	src := oneFileBatch(t, b)
	dst := filepath.Join(src.root, "b1", "t", "part-0.parquet")
	if !refused {
		for _, f := range sparkInt96Filters {
			var ids sql.NullString
			if err := db.QueryRow("SELECT string_agg(id::VARCHAR, ',' ORDER BY id) FROM read_parquet(" + quoteLiteral(dst) + ") WHERE " + f.where).Scan(&ids); err != nil {
				t.Fatal(err)
			}
			want := f.same
			if name == "differ" {
				want = f.differ
			}
			if ids.String != want {
				t.Errorf("%s: DuckDB reads ids %q WHERE %s, want %s", name, ids.String, f.where, want)
			}
		}
	}
	for _, check := range []Check{
		{Kind: KindSQL, SQL: "SELECT id FROM t WHERE ts < TIMESTAMP '2000-01-01' OR st.t < TIMESTAMP '2000-01-01' OR list_min(l) < TIMESTAMP '2000-01-01'"},
		{Kind: KindNotNull, Column: "id"},
	} {
		check.Name, check.Table = "c", "t"
		// The batch's one file's claims are compared from the fused
		// statement, and unfused from a scan of their own.
		for _, unfused := range []bool{false, true} {
			e := newEngine(t, src, "")
			e.unfused = unfused
			rep, err := e.Run(context.Background(), Request{Dataset: "d", Repository: "repo", Ref: "b1", BaseRef: "main", BatchTime: batchTime,
				Suite: Suite{Tables: []Table{{Name: "t", Path: "t/", Format: FormatParquet}}, Checks: []Check{check}}})
			if err != nil {
				t.Fatal(err)
			}
			res := rep.Checks[0]
			if rep.Passed == refused {
				t.Errorf("%s, %s, unfused %v: %s %q; want refused %v", name, check.Kind, unfused, res.Status, res.Message, refused)
			}
		}
	}
}

// sparkInt96OneTime is testdata/spark_int96_nested_one_time.parquet,
// sparkInt96Write's file same as PySpark 4.3.0 wrote it: its times are
// 2024-01-01 12:00:00 (Julian day 2460311, 12 hours of nanoseconds), and
// its footer claims that time as min, max, min_value and max_value (in
// that order: max, min, max_value, min_value) of ts, st.t and l.list.element,
// in the order of the leaves.
const sparkInt96OneTime = "spark_int96_nested_one_time.parquet"

// forgeInt96Claims is b with the four claims of leaf (0 ts, 1 st.t, 2
// l.list.element) made Julian day day and nanos nanoseconds.
func forgeInt96Claims(t *testing.T, b []byte, leaf int, day uint32, nanos int64) []byte {
	t.Helper()
	n := int(binary.LittleEndian.Uint32(b[len(b)-8:]))
	start := len(b) - 8 - n
	var was, now [12]byte
	binary.LittleEndian.PutUint64(was[:], 12*3600e9)
	binary.LittleEndian.PutUint32(was[8:], 2460311)
	binary.LittleEndian.PutUint64(now[:], uint64(nanos))
	binary.LittleEndian.PutUint32(now[8:], day)
	out := slices.Clone(b)
	foot := out[start : len(out)-8]
	if c := bytes.Count(foot, was[:]); c != 12 {
		t.Fatalf("the footer holds the time %d times, want 12", c)
	}
	at := 0
	for i := range 12 {
		k := bytes.Index(foot[at:], was[:]) + at
		if i/4 == leaf {
			copy(foot[k:], now[:])
		}
		at = k + 12
	}
	return out
}

// sparkInt96Forged are the forgeries of TestForgedInt96ClaimsAreRefused:
// the leaf forged, its claims' day and nanoseconds, the leaf named when
// refused ("" for passed), and a filter DuckDB 1.5.6 reads otherwise
// than the file's rows with the ids it reads.
var sparkInt96Forged = []struct {
	name        string
	leaf        int
	day         uint32
	nanos       int64
	refused     string
	where, duck string
}{
	{"top_level_2030", 0, 2460311 + 2192, 12 * 3600e9, `"ts"`, "ts = TIMESTAMP '2024-01-01 12:00:00'", ""},
	{"struct_2030", 1, 2460311 + 2192, 12 * 3600e9, `"st.t"`, "st.t = TIMESTAMP '2024-01-01 12:00:00'", ""},
	// Julian day 2350995351 is 2000-01-01 07:39:54.932224 to DuckDB (wrapped).
	{"struct_wraps", 1, 2350995351, 0, `"st.t"`, "st.t = TIMESTAMP '2024-01-01 12:00:00'", ""},
	// A nanosecond claim above the data's 12:00:00 is 12:00:00 to DuckDB,
	// which truncates claims and values alike; no other reader skips by it.
	{"struct_sub_microsecond", 1, 2460311, 12*3600e9 + 999, "", "st.t = TIMESTAMP '2024-01-01 12:00:00'", "1"},
	// A list's claims are not compared: no reader skips row groups by them.
	{"list_2030", 2, 2460311 + 2192, 12 * 3600e9, "", "list_contains(l, TIMESTAMP '2024-01-01 12:00:00')", "1,2"},
}

// TestForgedInt96ClaimsAreRefused: DuckDB 1.5.6 skips row groups by an
// INT96 leaf's claimed min and max, read as it reads the values, a
// top-level one's and a struct field's: the footer of PySpark's file of
// 2024-01-01 12:00:00 forged to claim 2030-01-01 12:00:00 made its WHERE
// ts = (or st.t =) TIMESTAMP '2024-01-01 12:00:00' read no row where the
// audit's scan reads them. Refused, naming the file, the leaf and the
// claim, as a claim DuckDB would read wrapped around. A claim to the
// nanosecond above the data, which DuckDB truncates as it truncates the
// values, and a list's claims, by which DuckDB skips nothing, pass, and
// DuckDB reads the rows. (pyarrow 26.0.1, PySpark 4.3.0, deltalake 1.6.6
// and DuckDB 2.0.1 skip by no INT96 claim: pyarrow's and pandas' reading
// of these files is TestPyArrowReadsForgedInt96ClaimsAsWritten, Spark's
// TestSparkNestedInt96TimesPass.)
func TestForgedInt96ClaimsAreRefused(t *testing.T) {
	honest, err := os.ReadFile(filepath.Join("testdata", sparkInt96OneTime))
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	sparkInt96Audit(t, db, "same", honest, false)
	for _, c := range sparkInt96Forged {
		t.Run(c.name, func(t *testing.T) {
			b := forgeInt96Claims(t, honest, c.leaf, c.day, c.nanos)
			if c.where != "" {
				f := filepath.Join(t.TempDir(), "f.parquet")
				if err := os.WriteFile(f, b, 0o644); err != nil {
					t.Fatal(err)
				}
				var ids sql.NullString
				if err := db.QueryRow("SELECT string_agg(id::VARCHAR, ',' ORDER BY id) FROM read_parquet(" + quoteLiteral(f) + ") WHERE " + c.where).Scan(&ids); err != nil {
					t.Fatal(err)
				}
				if ids.String != c.duck {
					t.Fatalf("DuckDB reads ids %q WHERE %s, want %q: the case shows nothing", ids.String, c.where, c.duck)
				}
			}
			if c.refused == "" {
				sparkInt96Audit(t, db, "same", b, false)
				return
			}
			src := oneFileBatch(t, b)
			for _, unfused := range []bool{false, true} {
				e := newEngine(t, src, "")
				e.unfused = unfused
				rep, err := e.Run(context.Background(), Request{Dataset: "d", Repository: "repo", Ref: "b1", BaseRef: "main", BatchTime: batchTime,
					Suite: Suite{Tables: []Table{{Name: "t", Path: "t/", Format: FormatParquet}}, Checks: []Check{{Name: "c", Table: "t", Kind: KindNotNull, Column: "id"}}}})
				if err != nil {
					t.Fatal(err)
				}
				res := rep.Checks[0]
				if rep.Passed || res.Status != schemas.StatusError || !strings.Contains(res.Message, "part-0.parquet") || !strings.Contains(res.Message, c.refused) || !strings.Contains(res.Message, "claims a") {
					t.Fatalf("unfused %v: %s %q: want it refused naming the file, the leaf %s and the claim", unfused, res.Status, res.Message, c.refused)
				}
				t.Logf("unfused %v, refused: %s", unfused, res.Message)
			}
		})
	}
}

// sparkInt96ForgedFiles writes the files of sparkInt96Forged that claim
// 2030 over 2024 (DuckDB 1.5.6 reads no row by such a claim) into dir,
// and returns their paths.
func sparkInt96ForgedFiles(t *testing.T, dir string) []string {
	t.Helper()
	honest, err := os.ReadFile(filepath.Join("testdata", sparkInt96OneTime))
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, c := range sparkInt96Forged {
		if c.refused == "" || c.duck != "" || c.day != 2460311+2192 {
			continue
		}
		f := filepath.Join(dir, "forged_"+c.name+".parquet")
		if err := os.WriteFile(f, forgeInt96Claims(t, honest, c.leaf, c.day, c.nanos), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	if len(files) != 2 {
		t.Fatalf("%d forged files, want 2 (ts, st.t)", len(files))
	}
	return files
}

// sparkInt96ReadAsWritten checks the lines a reader printed for the
// forged files (a tag, the file, the filter, the ids read; want of
// them): each filter reads the ids written.
func sparkInt96ReadAsWritten(t *testing.T, reader, out string, want int) {
	t.Helper()
	written := map[string]string{"ts": "1,2", "st.t": "1", "array_contains(l": "1,2"}
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		parts := strings.Split(line, "\t")
		if len(parts) != 4 {
			continue
		}
		n++
		col := strings.Fields(parts[2])[0]
		col, _, _ = strings.Cut(col, ",")
		if w, ok := written[col]; !ok || parts[3] != w {
			t.Errorf("%s (%s) reads ids %q from %s WHERE %s, want %q", reader, parts[0], parts[3], filepath.Base(parts[1]), parts[2], w)
		}
	}
	if n != want {
		t.Errorf("%s printed %d readings, want %d:\n%s", reader, n, want, out)
	}
}

// TestPyArrowReadsForgedInt96ClaimsAsWritten: pyarrow 26.0.1 (a
// dataset's filter, read_table's filters, pandas' read_parquet's) reads
// the rows written from the forged files of
// TestForgedInt96ClaimsAreRefused, whose claims made DuckDB 1.5.6 read
// none: it skips by no INT96 claim (their order is undefined).
func TestPyArrowReadsForgedInt96ClaimsAsWritten(t *testing.T) {
	python, err := testPython()
	if err != nil || testing.Short() {
		t.Skipf("skipped: %v (or -short); set LAKEWAP_INTEROP_PYTHON", err)
	}
	forged := sparkInt96ForgedFiles(t, t.TempDir())
	const read = `import sys, datetime as dt, pyarrow as pa, pyarrow.compute as pc, pyarrow.dataset as ds, pyarrow.parquet as pq, pandas as pd
t1 = dt.datetime(2024, 1, 1, 12)
lit = pa.scalar(t1, pa.timestamp("ns"))
ids = lambda tb: ",".join(str(i) for i in sorted(tb.column("id").to_pylist()))
for f in sys.argv[1:]:
    print("dataset\t" + f + "\tts\t" + ids(ds.dataset(f).to_table(filter=pc.field("ts") == lit)))
    print("dataset\t" + f + "\tst.t\t" + ids(ds.dataset(f).to_table(filter=pc.field("st", "t") == lit)))
    print("read_table\t" + f + "\tts\t" + ids(pq.read_table(f, filters=[("ts", "=", t1)])))
    print("pandas\t" + f + "\tts\t" + ",".join(str(i) for i in sorted(pd.read_parquet(f, filters=[("ts", "=", pd.Timestamp(t1))])["id"])))
`
	out, err := exec.Command(python, append([]string{"-c", read}, forged...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("pyarrow: %v: %s", err, out)
	}
	sparkInt96ReadAsWritten(t, "pyarrow", string(out), len(forged)*4)
}
