package audit

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

// review39Audit audits table t (src's, Parquet) under the one check.
func review39Audit(t *testing.T, src *dirSource, check Check) (schemas.AuditReport, schemas.CheckResult) {
	t.Helper()
	check.Name, check.Table = "c", "t"
	rep, err := newEngine(t, src, "").Run(context.Background(), Request{Dataset: "d", Repository: "repo", Ref: "b1", BaseRef: "main", BatchTime: batchTime,
		Suite: Suite{Tables: []Table{{Name: "t", Path: "t/", Format: FormatParquet}}, Checks: []Check{check}}})
	if err != nil {
		t.Fatal(err)
	}
	return rep, rep.Checks[0]
}

// TestReview39ExtremeTimesUnderTextChecksAreRefused: DuckDB writes its
// TIMESTAMP and DATE infinity and -infinity to Parquet as the extreme
// integers (TIMESTAMP_MICROS 2^63-1, DATE 2^31-1), and reads them back as
// infinity; pyarrow 26.0.1 and pandas 3.1.1 read the timestamps as the
// times they are, 294247-01-10 04:00:54.775807 and
// -290308-12-21 19:59:05.224193 (and render every time of the column
// with six fraction digits), and fail on the dates (ValueError: year
// 5881580 is out of range); PySpark 4.3.0 reads +294247-01-10
// 04:00:54.775807 and +5881580-07-11. A year past 9999 is 10000-01-01 to
// DuckDB and pandas, +10000-01-01 to Spark. The files were written by
// DuckDB 1.6.6 (COPY ... TO): a regex and an accepted_values that DuckDB's
// text infinity passes judge other text under pandas and Spark. A
// not_null reads alike (none NULL), and the years 1500 and 3000 read
// alike (review39_*_years_1500_3000.parquet, DuckDB's and pyarrow's), as
// do TIMESTAMP_NANOS of 1700 and 2200. A TIMESTAMP WITH TIME ZONE of
// infinity pandas fails on (NotImplementedError: toordinal); Spark fails
// on that file, for its TIMESTAMP_NANOS column (TestReview39SparkReadings).
func TestReview39ExtremeTimesUnderTextChecksAreRefused(t *testing.T) {
	const stamp = `^(-?infinity|\d{4,5}-\d\d-\d\d \d\d:\d\d:\d\d)$`
	const date = `^(-?infinity|\d{4}-\d\d-\d\d)$`
	pandasRegex := func(p string) string {
		return `print(int((~c.astype(str).str.match(r"` + p + `")).sum()))`
	}
	cases := []struct {
		name, file, col string
		check           Check
		pandas          string // prints the rows pandas finds failing, column c; "" where pandas is not asked
		refused         bool
	}{
		{"timestamp_regex", "review39_duckdb_infinity_timestamps.parquet", "ts", Check{Kind: KindRegex, Pattern: stamp}, pandasRegex(stamp), true},
		{"timestamp_accepted_values", "review39_duckdb_infinity_timestamps.parquet", "ts", Check{Kind: KindAcceptedValues, Values: []string{"infinity", "-infinity", "2024-01-01 01:02:03"}},
			`print(int((~c.astype(str).isin(["infinity", "-infinity", "2024-01-01 01:02:03"])).sum()))`, true},
		{"timestamp_not_null", "review39_duckdb_infinity_timestamps.parquet", "ts", Check{Kind: KindNotNull}, `print(int(c.isna().sum()))`, false},
		{"date_regex", "review39_duckdb_infinity_dates.parquet", "d", Check{Kind: KindRegex, Pattern: date}, "", true},
		{"date_accepted_values", "review39_duckdb_infinity_dates.parquet", "d", Check{Kind: KindAcceptedValues, Values: []string{"infinity", "-infinity", "2024-01-01"}}, "", true},
		{"date_not_null", "review39_duckdb_infinity_dates.parquet", "d", Check{Kind: KindNotNull}, "", false},
		{"timestamptz_accepted_values", "review39_duckdb_infinity_timestamptz.parquet", "tz", Check{Kind: KindAcceptedValues, Values: []string{"infinity", "2024-01-01 01:02:03+00"}}, "", true},
		{"timestamp_ns_1700_2200", "review39_duckdb_infinity_timestamptz.parquet", "ns", Check{Kind: KindAcceptedValues, Values: []string{"1700-01-01 01:02:03", "2200-01-01 01:02:03"}},
			`print(int((~c.astype(str).isin(["1700-01-01 01:02:03", "2200-01-01 01:02:03"])).sum()))`, false},
		{"year_10000_regex", "review39_duckdb_year_10000.parquet", "ts", Check{Kind: KindRegex, Pattern: stamp}, "", true},
		{"years_1500_3000_duckdb", "review39_duckdb_years_1500_3000.parquet", "ts", Check{Kind: KindRegex, Pattern: stamp}, pandasRegex(stamp), false},
		{"years_1500_3000_pyarrow", "review39_pyarrow_years_1500_3000.parquet", "ts", Check{Kind: KindRegex, Pattern: stamp}, pandasRegex(stamp), false},
		{"years_1500_9999_pyarrow_dates", "review39_pyarrow_years_1500_3000.parquet", "d", Check{Kind: KindAcceptedValues, Values: []string{"1500-01-01", "9999-12-31", "2024-01-01"}},
			`print(int((~c.astype(str).isin(["1500-01-01", "9999-12-31", "2024-01-01"])).sum()))`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src, dst := review36File(t, c.file)
			c.check.Column = c.col
			var rep schemas.AuditReport
			var res schemas.CheckResult
			if c.pandas != "" {
				script := "import sys, pandas as pd\nc = pd.read_parquet(sys.argv[1])[sys.argv[2]]\n" + c.pandas
				rep, res, _ = auditLikePandas(t, src, script, []string{dst, c.col}, FormatParquet, c.check, c.refused)
			} else {
				rep, res = review39Audit(t, src, c.check)
			}
			if !c.refused {
				if !rep.Passed {
					t.Fatalf("%s %q (%s): want it passed", res.Status, res.Message, res.Observed)
				}
				return
			}
			if rep.Passed || res.Status != schemas.StatusError || !strings.Contains(res.Message, "a.parquet") || !strings.Contains(res.Message, `column "`+c.col+`"`) {
				t.Fatalf("%s %q (%s); pandas or Spark read other text: want it refused naming the file and the column", res.Status, res.Message, res.Observed)
			}
			t.Logf("refused: %s", res.Message)
		})
	}
}

// TestReview39ExtremeTimesRefusedIncrementally: an attested table of
// ordinary dates under an accepted_values (over timestamps it runs full:
// pandasTimestampText), and a batch adding a file of DuckDB's infinity:
// the incremental audit refuses the batch's file as the full one does
// (the reader checks read every file of the table's views), and a batch
// of ordinary dates passes incrementally.
func TestReview39ExtremeTimesRefusedIncrementally(t *testing.T) {
	dates := func(vs ...string) string {
		return "SELECT * FROM (VALUES " + strings.Join(each(vs, func(v string) string { return "(DATE '" + v + "')" }), ", ") + ") v(d)"
	}
	values := Suite{Tables: []Table{{Name: "t", Path: "data/t/"}}, Checks: []Check{{Kind: KindAcceptedValues, Table: "t", Column: "d",
		Values: []string{"infinity", "2024-01-01", "2024-01-02", "2024-01-03", "2024-01-04"}}}}
	eachCache(t, func(t *testing.T, cache bool) {
		r := newMemoRigSQL(t, cache, map[string]string{"data/t/d.parquet": dates("2024-01-01")}, dates("2024-01-02"), values)
		if rep := r.audit(Request{Ref: r.batchSQL("c001", "s2", "data/t/s2/part-0.parquet", dates("2024-01-04")), BaseRef: cid("c001")}); !rep.Passed || rep.Mode != ModeIncremental {
			t.Fatalf("ordinary dates: %s %q passed %v: %+v", rep.Mode, rep.ModeReason, rep.Passed, rep.Checks)
		}
		s := r.batchSQL("c001", "s1", "data/t/s1/part-0.parquet", dates("infinity", "2024-01-03"))
		if rep := r.audit(Request{Ref: s, BaseRef: cid("c001"), Full: true}); rep.Passed || !strings.Contains(checkMessages(rep), `column "d" holds 1 dates or times`) {
			t.Fatalf("full: passed %v: %s", rep.Passed, checkMessages(rep))
		}
		if rep := r.audit(Request{Ref: s, BaseRef: cid("c001")}); rep.Passed || !strings.Contains(checkMessages(rep), "s1/part-0.parquet: column \"d\" holds 1 dates or times") {
			t.Fatalf("%s: passed %v: %s", rep.Mode, rep.Passed, checkMessages(rep))
		}
	})
}

// TestReview39AcceptedValuesOverTimestampsPandasRendersOtherwise: pandas
// renders a timestamp column without a zone by all its values (every
// midnight as a date, 2024-01-01, where DuckDB's text is 2024-01-01
// 00:00:00; every time with the digits of the finest fraction), which a
// regex over it was refused for (pandasTimestampText); lakewap's
// accepted_values compares the same text, and passed where pandas 3.1.1's
// astype(str).isin finds every row failing. Whole seconds not all
// midnights render alike and pass. The files were written by DuckDB.
func TestReview39AcceptedValuesOverTimestampsPandasRendersOtherwise(t *testing.T) {
	cases := []struct {
		name    string
		values  []string
		refused bool
	}{
		{"midnights", []string{"2024-01-01 00:00:00", "2024-01-02 00:00:00"}, true},
		{"fractions", []string{"2024-01-01 01:02:03.5", "2024-01-02 01:02:03"}, true},
		{"whole_seconds", []string{"2024-01-01 01:02:03", "2024-01-02 00:00:00"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := newBatchSource(t)
			src.write(t, "b1", "t/a.parquet", "SELECT * FROM (VALUES "+strings.Join(each(c.values, func(v string) string { return "(TIMESTAMP '" + v + "')" }), ", ")+") v(ts)")
			script := "import sys, json, pandas as pd\nc = pd.read_parquet(sys.argv[1])['ts']\nprint(int((~c.astype(str).isin(json.loads(sys.argv[2]))).sum()))"
			values := `["` + strings.Join(c.values, `", "`) + `"]`
			rep, res, _ := auditLikePandas(t, src, script, []string{filepath.Join(src.root, "b1", "t", "a.parquet"), values}, FormatParquet,
				Check{Kind: KindAcceptedValues, Column: "ts", Values: c.values}, c.refused)
			if !c.refused {
				return
			}
			if rep.Passed || res.Status != schemas.StatusError || !strings.Contains(res.Message, `column "ts"`) {
				t.Fatalf("%s %q (%s); pandas finds every row failing: want it refused naming the column", res.Status, res.Message, res.Observed)
			}
			t.Logf("refused: %s", res.Message)
		})
	}
}
