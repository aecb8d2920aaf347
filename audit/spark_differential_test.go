package audit

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lakewap/lakewap/schemas"
)

// sparkCases are tables hostile to a Spark reader in particular: CSV files
// Spark reads by position, with backslash escapes and without multi-line
// records; JSON lines Spark reads otherwise than DuckDB; Parquet types
// Spark maps (unsigned, decimal, timestamps); names Spark skips or reads.
var sparkCases = []pyarrowCase{
	{name: "spark_unsigned", format: FormatParquet, columns: []string{"u8", "u16", "u32", "u64"}, files: map[string]string{
		"a.parquet": "SELECT (i * 20)::UTINYINT AS u8, (i * 6000)::USMALLINT AS u16, (i * 400000000)::UINTEGER AS u32, CASE WHEN i = 3 THEN NULL ELSE 18446744073709551615 - i END::UBIGINT AS u64 FROM range(0, 10) r(i)"}},
	{name: "spark_decimals", format: FormatParquet, columns: []string{"d9", "d18", "d38"}, files: map[string]string{
		"a.parquet": "SELECT (i / 7)::DECIMAL(9,2) AS d9, (i * 1000000000.123)::DECIMAL(18,3) AS d18, CASE WHEN i = 2 THEN NULL ELSE (i * 12345678901234567890.0123456789)::DECIMAL(38,10) END AS d38 FROM range(0, 10) r(i)"}},
	{name: "spark_timestamps", format: FormatParquet, columns: []string{"ts", "tstz", "d"}, files: map[string]string{
		"a.parquet": "SELECT TIMESTAMP '2024-01-01 00:00:00' + INTERVAL (i) HOUR AS ts, CASE WHEN i = 1 THEN NULL ELSE TIMESTAMPTZ '2024-01-01 00:00:00+00' + INTERVAL (i % 3) HOUR END AS tstz, DATE '2024-01-01' + i::INTEGER AS d FROM range(0, 5) r(i)"}},
	{name: "spark_timestamp_nanos", format: FormatParquet, columns: []string{"tsns"}, files: map[string]string{
		"a.parquet": "SELECT (TIMESTAMP '2024-01-01' + INTERVAL (i) SECOND)::TIMESTAMP_NS AS tsns FROM range(0, 5) r(i)"}},
	{name: "spark_old_dates", format: FormatParquet, columns: []string{"d", "ts"}, files: map[string]string{
		"a.parquet": "SELECT DATE '1500-01-01' + i::INTEGER AS d, TIMESTAMP '1500-01-01' + INTERVAL (i) DAY AS ts FROM range(0, 5) r(i)"}},
	{name: "spark_doubles", format: FormatParquet, columns: []string{"x"}, files: map[string]string{
		"a.parquet": "SELECT CASE WHEN i = 1 THEN 'Infinity'::DOUBLE WHEN i = 2 THEN '-Infinity'::DOUBLE WHEN i = 3 THEN -0.0 ELSE i / 3 END::DOUBLE AS x FROM range(0, 6) r(i)"}},
	{name: "spark_typed_partition", format: FormatParquet, columns: []string{"x", "part"}, files: map[string]string{
		"part=007/a.parquet": "SELECT i::BIGINT AS x FROM range(0, 5) r(i)"}},
	{name: "spark_underscore_partition", format: FormatParquet, columns: []string{"x"}, files: map[string]string{
		"a.parquet":      "SELECT i::BIGINT AS x FROM range(0, 5) r(i)",
		"_p=1/b.parquet": "SELECT NULL::BIGINT AS x FROM range(0, 5) r(i)"}},
	{name: "spark_copying", format: FormatParquet, columns: []string{"x"}, files: map[string]string{
		"a.parquet":           "SELECT i::BIGINT AS x FROM range(0, 5) r(i)",
		"c.parquet.tmp":       "SELECT i::BIGINT AS x FROM range(5, 10) r(i)",
		"d.parquet._COPYING_": "SELECT NULL::BIGINT AS x FROM range(0, 5) r(i)"}},
	{name: "spark_root_and_partition_files", format: FormatParquet, columns: []string{"x"}, files: map[string]string{
		"a.parquet":           "SELECT i::BIGINT AS x FROM range(0, 5) r(i)",
		"region=eu/b.parquet": "SELECT NULL::BIGINT AS x FROM range(0, 5) r(i)"}},
	{name: "spark_no_extension", format: FormatParquet, columns: []string{"x"}, files: map[string]string{
		"a.parquet": "SELECT i::BIGINT AS x FROM range(0, 5) r(i)",
		"000001_0":  "SELECT NULL::BIGINT AS x FROM range(0, 5) r(i)"}},
	{name: "csv_multiline_field", format: FormatCSV, columns: []string{"id", "name"}, raw: map[string]string{
		"a.csv": "id,name\n1,\"a\nb\"\n2,c\n"}},
	{name: "csv_column_order", format: FormatCSV, columns: []string{"id", "name"}, raw: map[string]string{
		"a.csv": "id,name\n1,x\n", "b.csv": "name,id\n,2\n"}},
	{name: "csv_other_column_at_a_position", format: FormatCSV, columns: []string{"id", "x"}, raw: map[string]string{
		"a.csv": "id,x\n1,2\n", "b.csv": "id,y\n3,4\n"}},
	{name: "csv_extra_trailing_column", format: FormatCSV, columns: []string{"id", "name"}, raw: map[string]string{
		"a.csv": "id,name\n1,x\n", "b.csv": "id,name,extra\n2,y,z\n", "c.csv": "id\n3\n"}},
	{name: "csv_backslash", format: FormatCSV, columns: []string{"id", "p"}, raw: map[string]string{
		"a.csv": "id,p\n1,\"C:\\\"\n2,x\n"}},
	{name: "csv_doubled_quote", format: FormatCSV, columns: []string{"id", "p"}, raw: map[string]string{
		"a.csv": "id,p\n1,\"a\"\"b\"\n2,x\n"}},
	{name: "csv_quoted_empty", format: FormatCSV, columns: []string{"id", "p"}, raw: map[string]string{
		"a.csv": "id,p\n1,\"\"\n2,x\n3,\n"}},
	{name: "csv_bom", format: FormatCSV, columns: []string{"id", "v"}, raw: map[string]string{
		"a.csv": "\ufeffid,v\n1,2\n2,3\n"}},
	{name: "csv_whitespace", format: FormatCSV, columns: []string{"id", "v"}, raw: map[string]string{
		"a.csv": "id,v\n1, 2\n2 ,3\n3,4 \n"}},
	{name: "csv_nan_infinity", format: FormatCSV, columns: []string{"id", "v"}, raw: map[string]string{
		"a.csv": "id,v\n1,Infinity\n2,-Infinity\n3,1.5\n4,Inf\n5,-Inf\n"}},
	{name: "csv_ragged_rows", format: FormatCSV, columns: []string{"id", "v"}, raw: map[string]string{
		"a.csv": "id,v\n1,2,3\n4\n5,6\n"}},
	{name: "csv_crlf", format: FormatCSV, columns: []string{"id", "v"}, raw: map[string]string{
		"a.csv": "id,v\r\n1,2\r\n3,4\r\n"}},
	{name: "csv_numbers", format: FormatCSV, columns: []string{"id", "v"}, raw: map[string]string{
		"a.csv": "id,v\n1,1e3\n2,1.50\n3,+4\n4,9223372036854775808\n"}},
	{name: "csv_number_spellings", format: FormatCSV, columns: []string{"id", "v"}, raw: map[string]string{
		"a.csv": "id,v\n1,007\n2,7\n3,1.0\n4,1\n"}},
	{name: "csv_cr_line_ends", format: FormatCSV, columns: []string{"id", "v"}, raw: map[string]string{
		"a.csv": "id,v\r1,2\r3,4\r"}},
	{name: "csv_duplicate_header", format: FormatCSV, columns: []string{"id", "v"}, raw: map[string]string{
		"a.csv": "id,id,v\n1,2,3\n4,5,6\n"}},
	{name: "csv_header_only_file", format: FormatCSV, columns: []string{"id", "v"}, raw: map[string]string{
		"a.csv": "id,v\n", "b.csv": "id,v\n1,2\n"}},
	{name: "csv_quoted_header", format: FormatCSV, columns: []string{"id", "v"}, raw: map[string]string{
		"a.csv": "\"id\",\"v\"\n1,\"x\"\n2,y\n"}},
	{name: "csv_booleans", format: FormatCSV, columns: []string{"id", "b"}, raw: map[string]string{
		"a.csv": "id,b\n1,true\n2,False\n3,TRUE\n4,\n"}},
	{name: "csv_dates_and_times", format: FormatCSV, columns: []string{"d", "ts"}, raw: map[string]string{
		"a.csv": "d,ts\n2024-01-02,2024-01-02 03:04:05\n2024-01-03,2024-01-02 03:04:06\n"}},
	{name: "json_bool_and_number", format: FormatJSONL, columns: []string{"id"}, raw: map[string]string{
		"a.jsonl": "{\"id\": true}\n{\"id\": 1}\n"}},
	{name: "json_object_and_string", format: FormatJSONL, columns: []string{"s"}, raw: map[string]string{
		"a.jsonl": "{\"s\": {\"a\": 1}}\n{\"s\": \"x\"}\n"}},
	{name: "json_float_and_int", format: FormatJSONL, columns: []string{"x"}, raw: map[string]string{
		"a.jsonl": "{\"x\": 1.0}\n{\"x\": 1}\n{\"x\": 2.5}\n"}},
	{name: "json_strings", format: FormatJSONL, columns: []string{"s"}, raw: map[string]string{
		"a.jsonl": "{\"s\": \"a\\u0000b\"}\n{\"s\": \" x \"}\n{\"s\": \"\"}\n{\"s\": \"2024-01-02\"}\n"}},
	{name: "spark_blob_and_map", format: FormatParquet, columns: []string{"b", "m"}, files: map[string]string{
		"a.parquet": "SELECT CASE WHEN i = 1 THEN NULL ELSE ('x' || i)::BLOB END AS b, MAP {'k': i} AS m FROM range(0, 3) r(i)"}},
	{name: "spark_dotted_name", format: FormatParquet, columns: []string{"a.b"}, files: map[string]string{
		"a.parquet": "SELECT i AS \"a.b\" FROM range(0, 3) r(i)"}},
	{name: "spark_empty_file", format: FormatParquet, columns: []string{"x"}, files: map[string]string{
		"a.parquet": "SELECT 1::BIGINT AS x WHERE false", "b.parquet": "SELECT i::BIGINT AS x FROM range(0, 3) r(i)"}},
	{name: "csv_empty_lines", format: FormatCSV, columns: []string{"id", "v"}, raw: map[string]string{
		"a.csv": "id,v\n1,2\n\n3,4\n   \n5,6\n"}},
	{name: "csv_leading_empty_lines", format: FormatCSV, columns: []string{"id", "v"}, raw: map[string]string{
		"a.csv": "\n\nid,v\n1,2\n"}},
	{name: "csv_trailing_comma", format: FormatCSV, columns: []string{"id", "v"}, raw: map[string]string{
		"a.csv": "id,v\n1,2,\n3,4,\n"}},
	{name: "json_truncated_line", format: FormatJSONL, columns: []string{"id"}, raw: map[string]string{
		"a.jsonl": "{\"id\": 1}\n{\"id\": 2\n"}},
	{name: "json_leading_zero", format: FormatJSONL, columns: []string{"id"}, raw: map[string]string{
		"a.jsonl": "{\"id\": 01}\n{\"id\": 2}\n"}},
	{name: "json_single_quotes", format: FormatJSONL, columns: []string{"id"}, raw: map[string]string{
		"a.jsonl": "{'id': 1}\n{\"id\": 2}\n"}},
	{name: "json_trailing_text", format: FormatJSONL, columns: []string{"id"}, raw: map[string]string{
		"a.jsonl": "{\"id\": 1} {\"id\": 5}\n{\"id\": 2}\n"}},
	{name: "json_duplicate_keys", format: FormatJSONL, columns: []string{"id"}, raw: map[string]string{
		"a.jsonl": "{\"id\": 1, \"id\": null}\n{\"id\": 2}\n"}},
	{name: "json_array_line", format: FormatJSONL, columns: []string{"id"}, raw: map[string]string{
		"a.jsonl": "[{\"id\": 1}, {\"id\": 2}]\n{\"id\": 3}\n"}},
	{name: "json_scalar_line", format: FormatJSONL, columns: []string{"id"}, raw: map[string]string{
		"a.jsonl": "{\"id\": 1}\n5\n{\"id\": 3}\n"}},
	{name: "json_nan", format: FormatJSONL, columns: []string{"x"}, raw: map[string]string{
		"a.jsonl": "{\"x\": 1.5}\n{\"x\": NaN}\n{\"x\": Infinity}\n"}},
	{name: "json_big_numbers", format: FormatJSONL, columns: []string{"x"}, raw: map[string]string{
		"a.jsonl": "{\"x\": 9223372036854775808}\n{\"x\": 1}\n"}},
	{name: "json_string_and_number", format: FormatJSONL, columns: []string{"id"}, raw: map[string]string{
		"a.jsonl": "{\"id\": \"1\"}\n{\"id\": 1}\n{\"id\": 2}\n"}},
	{name: "json_blank_lines", format: FormatJSONL, columns: []string{"id"}, raw: map[string]string{
		"a.jsonl": "{\"id\": 1}\n\n{\"id\": 2}\n   \n"}},
	{name: "json_multiline_object", format: FormatJSONL, columns: []string{"id"}, raw: map[string]string{
		"a.jsonl": "{\"id\": 1}\n{\n\"id\": 2\n}\n"}},
	{name: "json_case_in_one_object", format: FormatJSONL, columns: []string{"id"}, raw: map[string]string{
		"a.jsonl": "{\"id\": 1, \"ID\": 2}\n"}},
	{name: "json_comments", format: FormatJSONL, columns: []string{"id"}, raw: map[string]string{
		"a.jsonl": "{\"id\": 1}\n// {\"id\": 2}\n{'id': 3}\n"}},
}

// sparkReaders are the ways a Spark user reads a table of each format.
var sparkReaders = map[string][]string{
	FormatParquet: {"parquet"},
	FormatCSV:     {"csv", "csv_infer"},
	FormatJSONL:   {"json"},
}

// sparkStats is Spark's reading of one column.
type sparkStats struct {
	Nulls    int64    `json:"nulls"`
	NaNs     int64    `json:"nans"`
	Distinct int64    `json:"distinct"`
	Min      any      `json:"min"`
	Max      any      `json:"max"`
	Values   []string `json:"values"`
}

// sparkAnswer is what spark_read.py printed for one table and reader.
type sparkAnswer struct {
	Rows    int64                  `json:"rows"`
	Columns []string               `json:"columns"`
	Types   map[string]string      `json:"types"`
	Stats   map[string]*sparkStats `json:"stats"`
	Error   string                 `json:"error"`
}

// sparkPython is the interpreter of scripts/sparkenv.sh's venv.
func sparkPython() (string, error) {
	return venvPython("LAKEWAP_SPARK_PYTHON", "sparkvenv-", filepath.Join("tests", "spark", "requirements.txt"), "PySpark")
}

// sparkReading is lakewap's reading of one column, from the checks that passed.
type sparkReading struct {
	nulls, distinct *int64
	min, max        *float64
}

// TestDifferentialAgainstSpark audits hostile Parquet, CSV and JSON tables
// (the pyarrow test's and Spark's own) and reads them with Spark as a
// Spark user does (testdata/spark_read.py): where a check of lakewap's
// passes, Spark's reading of what it judged (row count; a column's nulls,
// distinct values, numeric min and max) must be lakewap's. Elsewhere
// lakewap must refuse (the check errors or fails). A table Spark cannot
// read, or reads without the column, is counted: its users get an error,
// not other values.
func TestDifferentialAgainstSpark(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Apache Spark; skipped with -short")
	}
	python, err := sparkPython()
	if err != nil {
		t.Skipf("Spark differential test skipped: %v; scripts/sparkenv.sh installs PySpark (./test.sh runs it)", err)
	}
	cases := append(append([]pyarrowCase{}, pyarrowCases...), sparkCases...)
	// INT96 times, as Spark writes timestamps by default (pyarrow's files of TestInt96OutsidePandasRangeIsRefused).
	for _, name := range []string{"int96_in_range", "int96_wraps"} {
		b, err := os.ReadFile(filepath.Join("testdata", name+".parquet"))
		if err != nil {
			t.Fatal(err)
		}
		cases = append(cases, pyarrowCase{name: "spark_" + name, format: FormatParquet, columns: []string{"id", "ts"}, raw: map[string]string{"a.parquet": string(b)}})
	}
	src := newBatchSource(t)
	type read struct {
		c      pyarrowCase
		reader string
	}
	var reads []read
	var args []string
	for _, c := range cases {
		for p, q := range c.files {
			src.write(t, "b1", c.name+"/"+p, q)
		}
		for p, b := range c.raw {
			dst := filepath.Join(src.root, "b1", c.name, filepath.FromSlash(p))
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(dst, []byte(b), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		for _, r := range sparkReaders[c.format] {
			reads = append(reads, read{c, r})
			args = append(args, r+":"+strings.Join(c.columns, ",")+":"+filepath.Join(src.root, "b1", c.name))
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	script, err := filepath.Abs(filepath.Join("testdata", "spark_read.py"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, python, append([]string{script}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1", "SPARK_LOCAL_IP=127.0.0.1", "PYSPARK_PYTHON="+python)
	// Spark's JVM is a child of the script: on a timeout the whole
	// process group goes, and the pipes are not waited on for ever.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	began := time.Now()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("spark_read.py: %v\n%s", err, stderr.String())
	}
	t.Logf("Spark read %d tables in %s", len(args), time.Since(began).Round(time.Second))
	var answers []sparkAnswer
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var a sparkAnswer
		if err := json.Unmarshal(sc.Bytes(), &a); err != nil {
			t.Fatalf("spark_read.py printed %q: %v", sc.Bytes(), err)
		}
		answers = append(answers, a)
	}
	if len(answers) != len(reads) {
		t.Fatalf("%d answers for %d reads\n%s", len(answers), len(reads), stderr.String())
	}

	e := newEngine(t, src, "")
	readings := map[string]map[string]sparkReading{}
	rows := map[string]*int64{}
	refused := map[string]bool{}
	for _, c := range cases {
		lo, hi := -math.MaxFloat64, math.MaxFloat64
		checks := []Check{{Name: "rows", Kind: KindRowCount, Table: "t", Min: new(float64)}}
		for _, col := range c.columns {
			checks = append(checks,
				Check{Name: "nulls_" + col, Kind: KindNotNull, Table: "t", Column: col, Mostly: new(float64)},
				Check{Name: "unique_" + col, Kind: KindUnique, Table: "t", Column: col, Mostly: new(float64)},
				Check{Name: "min_" + col, Kind: KindStat, Stat: StatMin, Table: "t", Column: col, Min: &lo, Max: &hi},
				Check{Name: "max_" + col, Kind: KindStat, Stat: StatMax, Table: "t", Column: col, Min: &lo, Max: &hi})
		}
		rep, err := e.Run(ctx, Request{Dataset: "d", Repository: "repo", Ref: "b1", BaseRef: "main", BatchTime: batchTime,
			Suite: Suite{Tables: []Table{{Name: "t", Path: c.name + "/", Format: c.format}}, Checks: checks}})
		if err != nil {
			t.Fatal(err)
		}
		ours := func(name string) bool {
			return name == "rows" || slices.ContainsFunc([]string{"nulls_", "unique_", "min_", "max_"}, func(p string) bool { return strings.HasPrefix(name, p) })
		}
		if i := slices.IndexFunc(rep.Failed(), func(r schemas.CheckResult) bool { return !ours(r.Name) }); i >= 0 {
			refused[c.name] = true // the whole table, by unaudited_objects say
			t.Logf("%s: lakewap refuses the table: %s", c.name, refusal(rep))
			continue
		}
		cols := map[string]sparkReading{}
		for _, r := range rep.Checks {
			if r.Status != schemas.StatusPass {
				continue
			}
			name, col, _ := strings.Cut(r.Name, "_")
			got := cols[col]
			switch name {
			case "rows":
				n, err := strconv.ParseInt(strings.Fields(r.Observed)[0], 10, 64)
				if err != nil {
					t.Fatalf("%s: row count %q", c.name, r.Observed)
				}
				rows[c.name] = &n
			case "nulls":
				var n, of int64
				if _, err := fmt.Sscanf(r.Observed, "%d null rows of %d", &n, &of); err == nil {
					got.nulls = &n
				}
			case "unique":
				var dup, of int64
				if _, err := fmt.Sscanf(r.Observed, "%d duplicate rows of %d", &dup, &of); err == nil {
					d := -dup // completed with the null count below
					got.distinct = &d
				}
			case "min", "max":
				var f float64
				var ok bool
				if v, found := strings.CutPrefix(r.Observed, name+" "); found {
					v, _, _ = strings.Cut(v, " of ")
					f, err = strconv.ParseFloat(v, 64)
					ok = err == nil
				}
				if ok && name == "min" {
					got.min = &f
				} else if ok {
					got.max = &f
				}
			}
			cols[col] = got
		}
		for col, got := range cols {
			if got.distinct != nil && got.nulls != nil && rows[c.name] != nil {
				d := *rows[c.name] - *got.nulls + *got.distinct
				got.distinct = &d
			} else {
				got.distinct = nil
			}
			cols[col] = got
		}
		readings[c.name] = cols
		if !rep.Passed {
			t.Logf("%s: lakewap refuses %s", c.name, refusal(rep))
		}
	}

	var compared, unreadable int
	for i, r := range reads {
		a := answers[i]
		label := r.c.name + " (" + r.reader + ")"
		if refused[r.c.name] {
			continue
		}
		if a.Error != "" {
			unreadable++
			t.Logf("%s: Spark cannot read it: %s", label, a.Error)
			continue
		}
		if n := rows[r.c.name]; n != nil {
			compared++
			if *n != a.Rows {
				t.Errorf("%s: lakewap passes reading %d rows, Spark reads %d (columns %v)", label, *n, a.Rows, a.Columns)
			}
		}
		for _, col := range r.c.columns {
			s := a.Stats[col]
			ours := readings[r.c.name][col]
			if s == nil {
				if ours.nulls != nil || ours.distinct != nil || ours.min != nil {
					unreadable++
					t.Logf("%s: Spark's table has no column %s (columns %v)", label, col, a.Columns)
				}
				continue
			}
			if ours.nulls != nil {
				compared++
				// not_null counts NaN as missing, as pandas does (the
				// stricter reading); Spark reads it as a value.
				if *ours.nulls != s.Nulls+s.NaNs {
					t.Errorf("%s: column %s: lakewap passes reading %d nulls (NaN counted), Spark reads %d nulls and %d NaN (type %s)", label, col, *ours.nulls, s.Nulls, s.NaNs, a.Types[col])
				}
			}
			if ours.distinct != nil {
				compared++
				// Derived from not_null's count, which has the NaN.
				if *ours.distinct != s.Distinct-s.NaNs {
					t.Errorf("%s: column %s: lakewap passes reading %d distinct values (NaN left out), Spark reads %d and %d NaN (type %s)", label, col, *ours.distinct, s.Distinct, s.NaNs, a.Types[col])
				}
			}
			for _, m := range []struct {
				name   string
				ours   *float64
				theirs any
			}{{"min", ours.min, s.Min}, {"max", ours.max, s.Max}} {
				f, ok := m.theirs.(float64)
				if m.ours == nil || !ok {
					continue // not a number to both
				}
				compared++
				if *m.ours != f && math.Abs(*m.ours-f) > 1e-9*math.Abs(f) {
					t.Errorf("%s: column %s: lakewap passes reading %s %v, Spark reads %v (type %s)", label, col, m.name, *m.ours, f, a.Types[col])
				}
			}
		}
	}
	// Text Spark reads: lakewap's accepted_values with Spark's values as
	// the accepted ones must pass (its values are among Spark's; with the
	// distinct counts compared above, they are Spark's), or be refused.
	for i, r := range reads {
		a := answers[i]
		label := r.c.name + " (" + r.reader + ")"
		if refused[r.c.name] || a.Error != "" {
			continue
		}
		var checks []Check
		for _, col := range r.c.columns {
			if s := a.Stats[col]; s != nil && a.Types[col] == "string" && len(s.Values) > 0 && len(s.Values) <= 64 {
				checks = append(checks, Check{Name: "values_" + col, Kind: KindAcceptedValues, Table: "t", Column: col, Values: s.Values})
			}
		}
		if len(checks) == 0 {
			continue
		}
		rep, err := e.Run(ctx, Request{Dataset: "d", Repository: "repo", Ref: "b1", BaseRef: "main", BatchTime: batchTime,
			Suite: Suite{Tables: []Table{{Name: "t", Path: r.c.name + "/", Format: r.c.format}}, Checks: checks}})
		if err != nil {
			t.Fatal(err)
		}
		for j, res := range rep.Checks {
			if j >= len(checks) || res.Name != checks[j].Name {
				continue // unaudited_objects and the like
			}
			switch res.Status {
			case schemas.StatusPass:
				compared++
			case schemas.StatusFail:
				t.Errorf("%s: column %s: lakewap reads values Spark does not (%s; Spark's: %q)", label, checks[j].Column, res.Observed, checks[j].Values)
			}
		}
	}
	t.Logf("%d tables, %d Spark reads: %d readings compared, %d unreadable by Spark (or without a checked column)", len(cases), len(reads), compared, unreadable)
	if compared < 50 {
		t.Errorf("only %d readings compared", compared)
	}
}
