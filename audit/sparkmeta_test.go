package audit

import (
	"context"
	"database/sql"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// sparkCalendarCases are testdata/spark_legacy.py's files (pyarrow
// 26.0.1), the column a refusal names ("" passes) and a value as written
// (DuckDB's and pyarrow's reading), which PySpark 4.3.0 in a JVM whose
// zone is America/Los_Angeles read as another (refused) or alike.
var sparkCalendarCases = []struct {
	file, column, written string
}{
	{"spark_legacy_date.parquet", "d", "1500-01-01"},          // Spark: 1499-12-23
	{"spark_legacy_ts.parquet", "ts", "1500-01-01"},           // 1499-12-22T23:52:58Z
	{"spark_legacy_struct.parquet", "st", "1500-01-01"},       // st.d 1499-12-23
	{"spark_legacy_list.parquet", "l", "1500-01-01"},          // l[].d
	{"spark_legacy_map.parquet", "m", "1800-01-01"},           // 1799-12-31T23:52:58Z; alike in a UTC JVM
	{"spark_legacy_int96.parquet", "ts96", "1800-01-01"},      // Spark 3.0.1's INT96; its d reads alike
	{"spark_legacy_duckdb_footer.parquet", "d", "1500-01-01"}, // the footer DuckDB reads for lakewap
	{"spark_corrected.parquet", "", "1500-01-01"},             // Spark 3.5.0, no legacy key
	{"spark_legacy_key_only.parquet", "", "1500-01-01"},       // no version: Spark 4 reads as written
	{"spark_legacy_new_values.parquet", "", "1582-10-15"},     // and ts 1900-01-01, n (NTZ) 1500-01-01
	{"spark_int96_corrected.parquet", "", "1800-01-01"},       // INT96 under Spark 3.1.0
	{"spark_legacy_nested_new.parquet", "", "1900-01-01"},     // l[].d 1582-10-15, m's 1900-01-01
}

// TestSparkLegacyCalendarIsRefused: Spark 3 and 4 read a Parquet file whose
// key-value metadata says Spark before 3.0.0 wrote it
// (org.apache.spark.version, compared as text), or a later Spark with
// org.apache.spark.legacyDateTime, as written in the hybrid Julian
// calendar, and rebase its dates and times adjusted to UTC (at any depth
// of structs, lists and maps; INT96 likewise below 3.1.0 or with
// org.apache.spark.legacyINT96): PySpark 4.3.0 read 1500-01-01 in the
// files below as 1499-12-23, where DuckDB, pyarrow and pandas read
// 1500-01-01, so a sql check finding no row before 1500-01-01 passed on a
// table Spark reads with one (TestSparkReadsTheRefusedCalendarOtherwise).
// Files Spark reads as written pass: Spark 3+ metadata without the legacy
// key (as Spark 4 writes), the legacy key without a version, only values
// from 1582-10-15 (dates) and 1900 (times) on, and a timestamp not
// adjusted to UTC, which Spark reads as TIMESTAMP_NTZ without rebasing.
func TestSparkLegacyCalendarIsRefused(t *testing.T) {
	early := "SELECT * FROM t WHERE d < DATE '1500-01-01' OR ts < TIMESTAMPTZ '1500-01-01 00:00:00+00' OR n < TIMESTAMP '1500-01-01'"
	queries := map[string]string{
		"spark_legacy_date.parquet":       early,
		"spark_legacy_ts.parquet":         early,
		"spark_legacy_struct.parquet":     early + " OR st.d < DATE '1500-01-01'",
		"spark_corrected.parquet":         early,
		"spark_legacy_key_only.parquet":   early,
		"spark_legacy_new_values.parquet": early + " OR st.d < DATE '1500-01-01'",
	}
	for _, c := range sparkCalendarCases {
		b, err := os.ReadFile(filepath.Join("testdata", c.file))
		if err != nil {
			t.Fatal(err)
		}
		q, ok := queries[c.file]
		if !ok {
			q = "SELECT * FROM t WHERE false"
		}
		src := oneFileBatch(t, b)
		for _, cache := range []string{"", filepath.Join(t.TempDir(), "cache")} {
			e := newEngine(t, src, cache)
			for range 2 { // the second run of an engine with a cache may take the memo
				rep, err := e.Run(context.Background(), Request{Dataset: "d", Repository: "repo", Ref: "b1", BaseRef: "main", BatchTime: batchTime,
					Suite: Suite{Tables: []Table{{Name: "t", Path: "t/"}}, Checks: []Check{{Name: "early", Kind: KindSQL, Table: "t", SQL: q}}}})
				if err != nil {
					t.Fatal(err)
				}
				got := rep.Checks[0]
				if c.column == "" {
					if !rep.Passed {
						t.Errorf("%s, cache %v: refused (%s %s), want passed", c.file, cache != "", got.Observed, got.Message)
					}
					continue
				}
				if rep.Passed || !strings.Contains(got.Message, "t/part-0.parquet") || !strings.Contains(got.Message, "\""+c.column+"\"") || !strings.Contains(got.Message, "Spark") {
					t.Errorf("%s, cache %v: passed %v (%s %s), want refused naming the file, column %q and Spark", c.file, cache != "", rep.Passed, got.Observed, got.Message, c.column)
				}
			}
		}
	}
}

// TestSparkKeysAsSparkLooksThemUp: the version is compared as text (2.4.8
// and 10.0 are before 3.0.0, 3.0.0-SNAPSHOT is not), a key without a
// value is absent, the legacy keys count only beside a version, and a key
// seen twice counts by each of its values.
func TestSparkKeysAsSparkLooksThemUp(t *testing.T) {
	type kv struct{ key, value string }
	for _, c := range []struct {
		kvs          []kv
		dates, int96 bool
	}{
		{[]kv{{sparkVersionKey, "2.4.8"}}, true, true},
		{[]kv{{sparkVersionKey, "10.0"}}, true, true},
		{[]kv{{sparkVersionKey, "3.0.0-SNAPSHOT"}}, false, true},
		{[]kv{{sparkVersionKey, "3.0.1"}}, false, true},
		{[]kv{{sparkVersionKey, "3.1.0"}}, false, false},
		{[]kv{{sparkVersionKey, "3.5.0"}, {sparkLegacyDateTimeKey, ""}}, true, false},
		{[]kv{{sparkVersionKey, "4.0.0"}, {sparkLegacyINT96Key, ""}}, false, true},
		{[]kv{{sparkLegacyDateTimeKey, ""}, {sparkLegacyINT96Key, ""}}, false, false},
		{[]kv{{sparkVersionKey, "3.5.0"}, {sparkVersionKey, "2.4.0"}}, true, true},
		{[]kv{{sparkVersionKey, "\xff"}}, false, false},
	} {
		var k sparkKeys
		for _, p := range c.kvs {
			k.note([]byte(p.key), []byte(p.value))
		}
		k.note([]byte(sparkVersionKey), nil) // no value: as absent
		if k.dates() != c.dates || k.int96() != c.int96 {
			t.Errorf("%q: dates %v int96 %v, want %v %v", c.kvs, k.dates(), k.int96(), c.dates, c.int96)
		}
	}
	var k sparkKeys
	k.note([]byte(sparkVersionKey), nil)
	k.note([]byte(sparkLegacyDateTimeKey), []byte(""))
	if k.dates() {
		t.Error("a version key without a value is a version")
	}
}

// sparkCalendarRead prints, for each Parquet file given, its rows as
// Spark's to_json renders them (times in UTC), one JSON list a line.
const sparkCalendarRead = `
import json, sys
from pyspark.sql import SparkSession, functions as F
spark = (SparkSession.builder.master("local[1]").config("spark.driver.host", "127.0.0.1")
    .config("spark.driver.bindAddress", "127.0.0.1").config("spark.ui.enabled", "false")
    .config("spark.sql.session.timeZone", "UTC").getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
for f in sys.argv[1:]:
    df = spark.read.parquet(f)
    cols = [F.col("` + "`" + `" + c + "` + "`" + `") for c in df.columns]
    print(json.dumps([r[0] for r in df.select(F.to_json(F.struct(*cols))).collect()]), flush=True)
spark.stop()
`

// TestSparkReadsTheRefusedCalendarOtherwise asks PySpark what it reads in
// each file of TestSparkLegacyCalendarIsRefused, in a JVM whose default
// zone is America/Los_Angeles (Spark rebases times in the JVM's zone): a
// refused file's written value is not among Spark's, though DuckDB reads
// it; a passed file's is.
func TestSparkReadsTheRefusedCalendarOtherwise(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Apache Spark; skipped with -short")
	}
	python, err := sparkPython()
	if err != nil {
		t.Skipf("skipped: %v; set LAKEWAP_SPARK_PYTHON (scripts/sparkenv.sh installs PySpark)", err)
	}
	var args []string
	for _, c := range sparkCalendarCases {
		p, err := filepath.Abs(filepath.Join("testdata", c.file))
		if err != nil {
			t.Fatal(err)
		}
		args = append(args, p)
	}
	out, stderr := runPySpark(t, python, sparkCalendarRead, args, "JAVA_TOOL_OPTIONS=-Duser.timezone=America/Los_Angeles")
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != len(sparkCalendarCases) {
		t.Fatalf("spark printed %d lines for %d files:\n%s\n%s", len(lines), len(sparkCalendarCases), out, stderr)
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for i, c := range sparkCalendarCases {
		var duck string
		if err := db.QueryRow("SELECT string_agg(to_json(t)::VARCHAR, ' ') FROM read_parquet(" + quoteLiteral(args[i]) + ") t").Scan(&duck); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(duck, c.written) {
			t.Fatalf("%s: DuckDB reads %s, without %s: the case shows nothing", c.file, duck, c.written)
		}
		if spark := lines[i]; strings.Contains(spark, c.written) != (c.column == "") {
			t.Errorf("%s: Spark reads %s; written %s; refused %v", c.file, spark, c.written, c.column != "")
		}
	}
}

// TestSparkLeavesFollowDuckDBsNesting: each rebased leaf's steps are its
// own, as DuckDB nests a LIST of structs of two dates, a MAP's values and
// a repeated leaf, and a repeated struct of two dates two structs down
// (whose fields once shared their last step: the first read the second's
// field).
func TestSparkLeavesFollowDuckDBsNesting(t *testing.T) {
	date := nodeTypes{physical: 1, repetition: 1, converted: 6, logical: 6}
	group := func(converted, repetition int32) nodeTypes {
		return nodeTypes{physical: -1, repetition: repetition, converted: converted}
	}
	nodes := []schemaNode{
		{name: "schema", children: 4},
		{name: "l", children: 1}, {name: "list", children: 1}, {name: "element", children: 2}, {name: "a"}, {name: "b"},
		{name: "m", children: 1}, {name: "key_value", children: 2}, {name: "key"}, {name: "value"},
		{name: "r"},
		{name: "s", children: 1}, {name: "t", children: 1}, {name: "g", children: 2}, {name: "a"}, {name: "b"},
	}
	types := []nodeTypes{
		group(-1, 0),
		group(3, 1), group(-1, 2), group(-1, 1), date, date,
		group(1, 1), group(-1, 2), {physical: 6, repetition: 0, converted: 0}, date,
		{physical: 1, repetition: 2, converted: 6, logical: 6},
		group(-1, 1), group(-1, 1), group(-1, 2), date, date,
	}
	got := sparkLeaves(nodes, types, sparkKeys{version: true, before300: true})
	lo := " < DATE '1582-10-15'"
	want := map[string][]string{
		"l": {
			`len(list_filter("l", lambda lakewap_y2: struct_extract(lakewap_y2, 'a')` + lo + `)) > 0`,
			`len(list_filter("l", lambda lakewap_y2: struct_extract(lakewap_y2, 'b')` + lo + `)) > 0`,
		},
		"m": {`len(list_filter(map_values("m"), lambda lakewap_y1: lakewap_y1` + lo + `)) > 0`},
		"r": {`len(list_filter("r", lambda lakewap_y1: lakewap_y1` + lo + `)) > 0`},
		"s": {
			`len(list_filter(struct_extract(struct_extract("s", 't'), 'g'), lambda lakewap_y2: struct_extract(lakewap_y2, 'a')` + lo + `)) > 0`,
			`len(list_filter(struct_extract(struct_extract("s", 't'), 'g'), lambda lakewap_y2: struct_extract(lakewap_y2, 'b')` + lo + `)) > 0`,
		},
	}
	for col, conds := range want {
		if len(got[col]) != len(conds) {
			t.Fatalf("%s: %d leaves %+v, want %d", col, len(got[col]), got[col], len(conds))
		}
		for i, c := range conds {
			if g := got[col][i].cond(col); g != c {
				t.Errorf("%s leaf %d (%s): %s, want %s", col, i, got[col][i].path, g, c)
			}
		}
	}
}

// runPySpark runs the PySpark script with args (files) under python, with
// extra environment variables, and returns its output and its stderr; it
// fails t when the script fails. Spark's JVM is in the script's process
// group, killed with it on the timeout: a guard against a hung JVM, not a
// speed bound (one delta-spark process over ten tables took 177 to 284 s on
// a loaded 2-core machine, and CI runs other packages beside it).
func runPySpark(t *testing.T, python, script string, args []string, env ...string) (out []byte, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, append([]string{"-c", script}, args...)...)
	cmd.Env = append(append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1", "SPARK_LOCAL_IP=127.0.0.1", "PYSPARK_PYTHON="+python), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	var errs strings.Builder
	cmd.Stderr = &errs
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("spark: %v\n%s", err, errs.String())
	}
	return out, errs.String()
}

// sparkReadingsAre checks PySpark's output out, a line a reading
// ("mode\tfile\twhat Spark read"), against want by file: each file read
// as want says, readings times (one a mode: the vectorized reader on and
// off, and mergeSchema where a script turns it too).
func sparkReadingsAre(t *testing.T, out []byte, want map[string]string, mode string, readings int) {
	t.Helper()
	got := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		parts := strings.SplitN(line, "\t", 3)
		if len(parts) != 3 {
			continue
		}
		got[parts[1]]++
		if w, ok := want[parts[1]]; !ok || parts[2] != w {
			t.Errorf("%s %s, %s: Spark reads %q, want %q", mode, parts[0], parts[1], parts[2], w)
		}
	}
	for name := range want {
		if got[name] != readings {
			t.Errorf("%s: %d readings, want %d", name, got[name], readings)
		}
	}
}
