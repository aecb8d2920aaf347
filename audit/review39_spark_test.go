package audit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReview39SparkReadings: PySpark 4.3.0's readings the review 39
// tests cite, in one session: each file's last column as Spark's text
// (CAST AS STRING), and its type. The extreme times DuckDB reads as
// infinity Spark reads as times of years past 9999, rendered with a sign;
// the duplicate keys of a map it keeps; a file of TIMESTAMP_NANOS it
// fails on; the lists DuckDB reads otherwise
// (review39Lists refused) it reads as lists of structs, the others as
// DuckDB does.
func TestReview39SparkReadings(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Apache Spark; skipped with -short")
	}
	python, err := sparkPython()
	if err != nil {
		t.Skipf("skipped: %v; set LAKEWAP_SPARK_PYTHON (scripts/sparkenv.sh installs PySpark)", err)
	}
	want := map[string]string{
		"review39_duckdb_infinity_timestamps.parquet":  "timestamp_ntz: +294247-01-10 04:00:54.775807 | -290308-12-21 19:59:05.224193 | 2024-01-01 01:02:03",
		"review39_duckdb_infinity_dates.parquet":       "date: +5881580-07-11 | -5877641-06-24 | 2024-01-01",
		"review39_duckdb_infinity_timestamptz.parquet": "fails: [PARQUET_TYPE_ILLEGAL]", // its TIMESTAMP_NANOS column
		"review39_duckdb_year_10000.parquet":           "timestamp_ntz: +10000-01-01 01:02:03 | 0001-01-01 01:02:03 | 2024-01-01 01:02:03",
		"review39_duckdb_years_1500_3000.parquet":      "timestamp_ntz: 1500-01-01 01:02:03 | 3000-01-01 01:02:03 | 2024-01-01 01:02:03",
		"review39_pyarrow_years_1500_3000.parquet":     "date: 1500-01-01 | 9999-12-31 | 2024-01-01",
		"review39_pyarrow_map_duplicate_keys.parquet":  "map<string,bigint>: {k -> 1, k -> 2} | {j -> 3}",
	}
	dir := t.TempDir()
	var args []string
	for name := range want {
		p, err := filepath.Abs(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		args = append(args, p)
	}
	for _, l := range review39Lists {
		p := filepath.Join(dir, "review39_list_"+l.name+".parquet")
		if err := os.WriteFile(p, l.file(), 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, p)
		want[filepath.Base(p)] = map[bool]string{false: "array<int>: [1, 2] | [3]", true: "array<struct<x:int>>: [{1}, {2}] | [{3}]"}[l.refused]
	}
	const read = `import sys, os
from pyspark.sql import SparkSession
s = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
s.sparkContext.setLogLevel("ERROR")
for f in sys.argv[1:]:
    try:
        df = s.read.parquet(f)
        c = df.schema.fields[-1]
        print(os.path.basename(f) + "\t" + c.dataType.simpleString() + ": " + " | ".join(r[0] for r in df.selectExpr("CAST(` + "`%s`" + ` AS STRING)" % c.name).collect()))
    except Exception as e:
        print(os.path.basename(f) + "\tfails: " + str(e).split("]")[0] + "]")
s.stop()
`
	out, _ := runPySpark(t, python, read, args)
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if name, reading, ok := strings.Cut(line, "\t"); ok {
			got[name] = reading
		}
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("%s: Spark reads %q, want %q", name, got[name], w)
		}
	}
}
