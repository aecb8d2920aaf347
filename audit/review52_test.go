package audit

import (
	"context"
	"database/sql"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

// The review 52 INT96 files were written by pyarrow 26.0.1
// (use_deprecated_int96_timestamps, PLAIN, uncompressed, no statistics)
// from id 1, 2, 3 and t 2024-01-01 01:02:03, 2024-01-02 04:05:06,
// 2024-01-03 07:08:09, the first time's 12 bytes then rewritten:
//   - review52_int96_beyond_day.parquet: 2024-01-01's Julian day and
//     nanoseconds of a day and 01:02:03 (86400e9 + 3723e9);
//   - review52_int96_negative_nanos.parquet: 2024-01-01's Julian day and
//     -616 nanoseconds;
//   - review52_int96_julian_day_wraps.parquet (two rows): Julian day
//     2350995351 (past 2^31) and 0 nanoseconds.
var review52Int96Times = []string{"2024-01-02 04:05:06", "2024-01-03 07:08:09"}

// TestReview52Int96NanosecondsBeyondADayReadAlike: an INT96 time whose
// nanoseconds are a day or more is read by DuckDB 1.5.6, pyarrow 26.0.1,
// pandas 3.1.1, PySpark 4.3.0 (both Parquet readers) and deltalake 1.6.6
// alike, as the next day (2024-01-02 01:02:03): every reader adds the
// nanoseconds to the day. Text checks of it pass, as pandas finds.
func TestReview52Int96NanosecondsBeyondADayReadAlike(t *testing.T) {
	const whole = `^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$`
	times := append([]string{"2024-01-02 01:02:03"}, review52Int96Times...)
	for _, check := range []Check{{Kind: KindAcceptedValues, Column: "t", Values: times}, {Kind: KindRegex, Column: "t", Pattern: whole}} {
		t.Run(check.Kind, func(t *testing.T) {
			src, dst := review36File(t, "review52_int96_beyond_day.parquet")
			script := "import sys, pandas as pd\nc = pd.read_parquet(sys.argv[1])[sys.argv[2]].astype(str)\n" +
				`print(int((~(c.isin(["` + strings.Join(times, `", "`) + `"]) & c.str.match(r"` + whole + `"))).sum()))`
			auditLikePandas(t, src, script, []string{dst, "t"}, FormatParquet, check, false)
		})
	}
}

// TestReview52Int96NegativeNanosecondsAreRefused: an INT96 time of -616
// nanoseconds into 2024-01-01 is read by DuckDB 1.5.6 and Spark (and
// delta-rs) as 2024-01-01 00:00:00 (the nanoseconds divided by 1000,
// toward zero), by pandas 3.1.1 as 2023-12-31 23:59:59.999999384 (and
// every other time of the column with nine fraction digits). int96Nanos
// looked for a fraction of a microsecond in the nanoseconds read
// unsigned, 18446744073709551000, a whole number of microseconds: an
// accepted_values of DuckDB's text passed where pandas finds every row
// failing.
func TestReview52Int96NegativeNanosecondsAreRefused(t *testing.T) {
	times := append([]string{"2024-01-01 00:00:00"}, review52Int96Times...)
	src, dst := review36File(t, "review52_int96_negative_nanos.parquet")
	script := "import sys, pandas as pd\nc = pd.read_parquet(sys.argv[1])[sys.argv[2]]\n" +
		`print(int((~c.astype(str).isin(["` + strings.Join(times, `", "`) + `"])).sum()))`
	rep, res, _ := auditLikePandas(t, src, script, []string{dst, "t"}, FormatParquet, Check{Kind: KindAcceptedValues, Column: "t", Values: times}, true)
	if rep.Passed || res.Status != schemas.StatusError || !strings.Contains(res.Message, "a.parquet") || !strings.Contains(res.Message, `column "t"`) || !strings.Contains(res.Message, "nanosecond") {
		t.Fatalf("%s %q (%s); pandas finds rows failing: want it refused naming the file and the column", res.Status, res.Message, res.Observed)
	}
	t.Logf("refused: %s", res.Message)
}

// TestReview52Int96JulianDayThatWrapsIsRefused: an INT96 time of Julian
// day 2350995351 (past 2^31, 6.4 million years on) overflows every
// reader's 64 bits, each otherwise: DuckDB 1.5.6 and pyarrow 26.0.1
// (pandas) read 2000-01-01 07:39:54.932224, PySpark 4.3.0 (its Julian day
// an int) and deltalake 1.6.6's QueryBuilder -66141-12-07
// 00:16:25.964544. int96Range judged DuckDB's reading, within pandas'
// nanosecond range, and a check of the column passed. Now the time each
// INT96 value holds (its day and nanoseconds, not a reader's 64 bits) is
// read in Go and the file refused when it is outside that range.
func TestReview52Int96JulianDayThatWrapsIsRefused(t *testing.T) {
	src, dst := review36File(t, "review52_int96_julian_day_wraps.parquet")
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var duck string
	if err := db.QueryRow("SELECT CAST(min(t) AS VARCHAR) FROM read_parquet(?)", dst).Scan(&duck); err != nil {
		t.Fatal(err)
	}
	if duck != "2000-01-01 07:39:54.932224" {
		t.Fatalf("DuckDB reads %s: the case shows nothing", duck)
	}
	for _, check := range []Check{{Kind: KindNotNull, Column: "t"}, {Kind: KindNotNull, Column: "id"}} {
		check.Name, check.Table = "c", "t"
		rep, err := newEngine(t, src, "").Run(context.Background(), Request{Dataset: "d", Repository: "repo", Ref: "b1", BaseRef: "main", BatchTime: batchTime,
			Suite: Suite{Tables: []Table{{Name: "t", Path: "t/", Format: FormatParquet}}, Checks: []Check{check}}})
		if err != nil {
			t.Fatal(err)
		}
		res := rep.Checks[0]
		if rep.Passed || res.Status != schemas.StatusError || !strings.Contains(res.Message, "a.parquet") || !strings.Contains(res.Message, `column "t"`) || !strings.Contains(res.Message, "Julian day") {
			t.Fatalf("not_null(%s): %s %q; readers read the time otherwise: want it refused naming the file, the column and the day", check.Column, res.Status, res.Message)
		}
		t.Logf("refused: %s", res.Message)
	}
}

// TestReview52SparkReadings: PySpark 4.3.0's readings the review 52 tests
// cite (Spark's text of a column, both Parquet readers): the INT96 files'
// times, DuckDB's BOOLEAN rendered true and false as DuckDB does, and
// pandas' FLOAT16 column, which it does not read.
func TestReview52SparkReadings(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Apache Spark; skipped with -short")
	}
	python, err := sparkPython()
	if err != nil {
		t.Skipf("skipped: %v; set LAKEWAP_SPARK_PYTHON (scripts/sparkenv.sh installs PySpark)", err)
	}
	want := map[string]string{
		"review52_int96_beyond_day.parquet":       "2024-01-02 01:02:03 | 2024-01-02 04:05:06 | 2024-01-03 07:08:09",
		"review52_int96_negative_nanos.parquet":   "2024-01-01 00:00:00 | 2024-01-02 04:05:06 | 2024-01-03 07:08:09",
		"review52_int96_julian_day_wraps.parquet": "-66141-12-07 00:16:25.964544 | 2024-01-02 04:05:06",
		"a.parquet":                       "true | false | NULL",
		"review52_pandas_float16.parquet": "fails: [PARQUET_TYPE_ILLEGAL]",
	}
	var args []string
	for name := range want {
		if name == "a.parquet" {
			continue
		}
		p, err := filepath.Abs(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		col := "t"
		if strings.Contains(name, "float16") {
			col = "h"
		}
		args = append(args, col+"="+p)
	}
	_, booleans := review52Booleans(t)
	args = append(args, "b="+booleans)
	const read = `import sys, os
from pyspark.sql import SparkSession
s = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
s.sparkContext.setLogLevel("ERROR")
for vec in ["true", "false"]:
    s.conf.set("spark.sql.parquet.enableVectorizedReader", vec)
    for a in sys.argv[1:]:
        col, f = a.split("=", 1)
        try:
            df = s.read.parquet(f)
            print(vec + "\t" + os.path.basename(f) + "\t" + " | ".join(r[0] for r in df.orderBy("id").selectExpr("coalesce(CAST(%s AS STRING), 'NULL')" % col).collect()))
        except Exception as e:
            print(vec + "\t" + os.path.basename(f) + "\tfails: " + str(e).split("]")[0] + "]")
s.stop()
`
	out, _ := runPySpark(t, python, read, args)
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		parts := strings.SplitN(line, "\t", 3)
		if len(parts) != 3 {
			continue
		}
		n++
		if want[parts[1]] != parts[2] {
			t.Errorf("%s (vectorized %s): Spark reads %q, want %q", parts[1], parts[0], parts[2], want[parts[1]])
		}
	}
	if n != 2*len(want) {
		t.Fatalf("Spark printed %d readings, want %d:\n%s", n, 2*len(want), out)
	}
}

// TestReview52Int96WithinPandasRange: int96Within's bounds are pandas'
// (pd.Timestamp.min and max, 1677-09-21 00:12:43.145224193 and
// 2262-04-11 23:47:16.854775807), whatever part of the time the
// nanoseconds hold.
func TestReview52Int96WithinPandasRange(t *testing.T) {
	const perDay = int64(86400e9)
	const maxNanos = int64(1<<63 - 1)
	epoch := uint32(julianUnixEpoch)
	for _, c := range []struct {
		day   uint32
		nanos int64
		want  bool
	}{
		{epoch, 0, true},
		{epoch, maxNanos, true},                               // 2262-04-11 23:47:16.854775807 in nanoseconds alone
		{epoch + 1, maxNanos, false},                          // a day past it
		{epoch + 106751, maxNanos % perDay, true},             // pd.Timestamp.max
		{epoch + 106751, maxNanos%perDay + 1, false},          // a nanosecond past it
		{epoch - 106752, perDay - maxNanos%perDay, true},      // pd.Timestamp.min
		{epoch - 106752, perDay - maxNanos%perDay - 1, false}, // -2^63: NaT to pandas
		{epoch, -maxNanos, true},                              // pd.Timestamp.min in nanoseconds alone
		{epoch - 1, -maxNanos, false},                         // a day before it
		{epoch + 1, 2 * perDay, true},                         // beyond a day: 1970-01-04
		{2350995351, 0, false},                                // TestReview52Int96JulianDayThatWrapsIsRefused
		{0, 0, false},                                         // 4713 BC
		{^uint32(0), -maxNanos, false},
	} {
		if got := int96Within(c.day, c.nanos); got != c.want {
			t.Errorf("int96Within(%d, %d) = %v, want %v", c.day, c.nanos, got, c.want)
		}
	}
}

// review52Booleans is table t's one file a.parquet on branch b1, written
// by DuckDB: id 1, 2, 3; BOOLEAN b true, false, NULL; VARCHAR s their
// text.
func review52Booleans(t *testing.T) (*dirSource, string) {
	t.Helper()
	src := newBatchSource(t)
	dst := filepath.Join(src.root, "b1", "t", "a.parquet")
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("COPY (SELECT * FROM (VALUES (1, true, 'true'), (2, false, 'false'), (3, NULL, NULL)) v(id, b, s)) TO " + quoteLiteral(dst) + " (FORMAT parquet)"); err != nil {
		t.Fatal(err)
	}
	return src, dst
}

// TestReview52AcceptedValuesOverBooleansMeanTheValue: accepted_values
// compared DuckDB's text of a BOOLEAN, true and false, which Spark
// renders alike and pandas 3.1.1 as True and False (run here when the
// interop Python is there; PySpark's in TestReview52SparkReadings); dbt
// renders a YAML true it quotes as 'True'. Listed as True the value failed
// the audit, where pandas' text accepts it, and listed as true the reverse:
// the verdict was one reader's. Now a listed true or false in any case
// names the boolean, which every reader reads alike; a text column's
// values are still compared as text.
func TestReview52AcceptedValuesOverBooleansMeanTheValue(t *testing.T) {
	src, dst := review52Booleans(t)
	if python, err := testPython(); err == nil && !testing.Short() {
		out, err := exec.Command(python, "-c", "import sys, pandas as pd; print(' '.join(pd.read_parquet(sys.argv[1])['b'].dropna().astype(str)))", dst).CombinedOutput()
		if err != nil {
			t.Fatalf("pandas: %v: %s", err, out)
		}
		if got := strings.TrimSpace(string(out)); got != "True False" {
			t.Fatalf("pandas renders %q, want True False: the case shows nothing", got)
		}
	}
	for _, c := range []struct {
		col    string
		values []string
		passed bool
	}{
		{"b", []string{"true", "false"}, true},
		{"b", []string{"True", "False"}, true}, // failed every row before
		{"b", []string{"TRUE", "false"}, true}, // failed the true row before
		{"b", []string{"True"}, false},         // false is not listed
		{"b", []string{"yes", "no"}, false},
		{"s", []string{"True", "False"}, false}, // text: compared as text
		{"s", []string{"true", "false"}, true},
	} {
		check := Check{Name: "c", Table: "t", Kind: KindAcceptedValues, Column: c.col, Values: c.values}
		rep, err := newEngine(t, src, "").Run(context.Background(), Request{Dataset: "d", Repository: "repo", Ref: "b1", BaseRef: "main", BatchTime: batchTime,
			Suite: Suite{Tables: []Table{{Name: "t", Path: "t/", Format: FormatParquet}}, Checks: []Check{check}}})
		if err != nil {
			t.Fatal(err)
		}
		res := rep.Checks[0]
		if rep.Passed != c.passed || (res.Status != schemas.StatusPass && res.Status != schemas.StatusFail) {
			t.Errorf("accepted_values(%s, %q): %s %q (%s), want passed %v", c.col, c.values, res.Status, res.Message, res.Observed, c.passed)
		}
	}
}

// TestReview52HalfFloatsUnderTextChecksAreRefused: pandas 3.1.1 writes a
// float16 column (review52_pandas_float16.parquet: 0.1, 1.5, 0.3 as
// np.float16, to_parquet) as a FLOAT16 leaf. DuckDB 1.5.6 reads it as a
// FLOAT and renders 0.099975586 and 0.30004883, pandas reads float16 and
// renders 0.1 and 0.3, and PySpark 4.3.0 does not read the file
// (TestReview52SparkReadings). An accepted_values of DuckDB's text passed
// where pandas finds two rows failing (and one of pandas' text failed
// where pandas finds none): such a check is refused, naming the file and
// the column; checks of its values pass.
func TestReview52HalfFloatsUnderTextChecksAreRefused(t *testing.T) {
	duck := []string{"0.099975586", "1.5", "0.30004883"}
	two := 2.0
	cases := []struct {
		name    string
		check   Check
		pandas  string // prints the rows pandas finds failing, column c
		refused bool
	}{
		{"accepted_values_duckdb", Check{Kind: KindAcceptedValues, Column: "h", Values: duck}, `print(int((~c.astype(str).isin(["` + strings.Join(duck, `", "`) + `"])).sum()))`, true},
		{"range", Check{Kind: KindRange, Column: "h", Max: &two}, `print(int((c > 1.5).sum()))`, false},
		{"not_null", Check{Kind: KindNotNull, Column: "h"}, `print(int(c.isna().sum()))`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src, dst := review36File(t, "review52_pandas_float16.parquet")
			script := "import sys, pandas as pd\nc = pd.read_parquet(sys.argv[1])[sys.argv[2]]\n" + c.pandas
			rep, res, _ := auditLikePandas(t, src, script, []string{dst, "h"}, FormatParquet, c.check, c.refused)
			if !c.refused {
				return
			}
			if rep.Passed || res.Status != schemas.StatusError || !strings.Contains(res.Message, "a.parquet") || !strings.Contains(res.Message, `column "h"`) || !strings.Contains(res.Message, "FLOAT16") {
				t.Fatalf("%s %q (%s); pandas finds rows failing: want it refused naming the file and the column", res.Status, res.Message, res.Observed)
			}
			t.Logf("refused: %s", res.Message)
		})
	}
}
