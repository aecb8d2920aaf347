package audit

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

// ARROW:schema values as pyarrow 26.0.1 serializes them
// (base64 of pa.schema(...).serialize()).
const (
	// pa.schema([("a", pa.duration("us"))])
	arrowDurationA = "/////3AAAAAQAAAAAAAKAAwABgAFAAgACgAAAAABBAAMAAAACAAIAAAABAAIAAAABAAAAAEAAAAUAAAAEAAUAAgABgAHAAwAAAAQABAAAAAAAAESEAAAABgAAAAEAAAAAAAAAAEAAABhAAYACAAGAAYAAAAAAAIA"
	// pa.schema([("b", pa.duration("s")), ("a", pa.int64())])
	arrowDurationSwapped = "/////6gAAAAQAAAAAAAKAAwABgAFAAgACgAAAAABBAAMAAAACAAIAAAABAAIAAAABAAAAAIAAABMAAAABAAAAMz///8AAAECEAAAABwAAAAEAAAAAAAAAAEAAABhAAAACAAMAAgABwAIAAAAAAAAAUAAAAAQABQACAAGAAcADAAAABAAEAAAAAAAARIQAAAAGAAAAAQAAAAAAAAAAQAAAGIABgAIAAYABgAAAAAAAAA="
	// pa.schema([("a", pa.int64()), ("b", pa.duration("ns"))])
	arrowDurationB = "/////6gAAAAQAAAAAAAKAAwABgAFAAgACgAAAAABBAAMAAAACAAIAAAABAAIAAAABAAAAAIAAABEAAAABAAAANT///8AAAESEAAAABgAAAAEAAAAAAAAAAEAAABiAAYACAAGAAYAAAAAAAMAEAAUAAgABgAHAAwAAAAQABAAAAAAAAECEAAAABwAAAAEAAAAAAAAAAEAAABhAAAACAAMAAgABwAIAAAAAAAAAUAAAAA="
	// pa.schema([pa.field("a", pa.int64(), metadata={ARROW:extension:name: pandas.period, ARROW:extension:metadata: {"freq":"D"}})])
	arrowPeriodA = "/////xABAAAQAAAAAAAKAAwABgAFAAgACgAAAAABBAAMAAAACAAIAAAABAAIAAAABAAAAAEAAAAYAAAAAAASABgACAAGAAcADAAAABAAFAASAAAAAAABAhQAAACwAAAACAAAABAAAAAAAAAAAQAAAGEAAAACAAAAUAAAAAQAAADA////HAAAAAQAAAAMAAAAeyJmcmVxIjoiRCJ9AAAAABgAAABBUlJPVzpleHRlbnNpb246bWV0YWRhdGEAAAAACAAMAAQACAAIAAAAHAAAAAQAAAANAAAAcGFuZGFzLnBlcmlvZAAAABQAAABBUlJPVzpleHRlbnNpb246bmFtZQAAAAAIAAwACAAHAAgAAAAAAAABQAAAAA=="
	// pa.schema([("a", pa.int64())], metadata={"pandas": <a's numpy_type Float64>})
	arrowPandasFloat64A = "/////1ABAAAQAAAAAAAKAA4ABgAFAAgACgAAAAABBAAQAAAAAAAKAAwAAAAEAAgACgAAANQAAAAEAAAAAQAAAAwAAAAIAAwABAAIAAgAAACsAAAABAAAAJ0AAAB7ImluZGV4X2NvbHVtbnMiOiBbXSwgImNvbHVtbl9pbmRleGVzIjogW10sICJjb2x1bW5zIjogW3sibmFtZSI6ICJhIiwgImZpZWxkX25hbWUiOiAiYSIsICJwYW5kYXNfdHlwZSI6ICJpbnQ2NCIsICJudW1weV90eXBlIjogIkZsb2F0NjQiLCAibWV0YWRhdGEiOiBudWxsfV19AAAABgAAAHBhbmRhcwAAAQAAABQAAAAQABQACAAGAAcADAAAABAAEAAAAAAAAQIQAAAAHAAAAAQAAAAAAAAAAQAAAGEAAAAIAAwACAAHAAgAAAAAAAABQAAAAAAAAAA="
	// pa.schema([("a", pa.timestamp("us", tz="Asia/Tokyo"))])
	arrowTokyoA = "/////4gAAAAQAAAAAAAKAAwABgAFAAgACgAAAAABBAAMAAAACAAIAAAABAAIAAAABAAAAAEAAAAUAAAAEAAUAAgABgAHAAwAAAAQABAAAAAAAAEKEAAAABwAAAAEAAAAAAAAAAEAAABhAAAACAAMAAYACAAIAAAAAAACAAQAAAAKAAAAQXNpYS9Ub2t5bwAA"
	// pa.schema([("a", pa.dictionary(pa.int32(), pa.string())), ("b", pa.large_string())])
	arrowDictionaryA = "/////8gAAAAQAAAAAAAKAAwABgAFAAgACgAAAAABBAAEAAAAhP///wQAAAACAAAATAAAABQAAAAQABQACAAGAAcADAAAABAAEAAAAAAAARQQAAAAFAAAAAQAAAAAAAAAAQAAAGIAAACk////EAAYAAgABgAHAAwAEAAUABAAAAAAAAEFFAAAAEAAAAAcAAAABAAAAAAAAAABAAAAYQAAAAgACAAAAAQACAAAAAwAAAAIAAwACAAHAAgAAAAAAAABIAAAAAQABAAEAAAAAAAAAA=="
)

// TestArrowSchemaOfAParquetFileIsReadAsPyarrowReadsIt: pyarrow, and so
// pandas.read_parquet, restores Arrow types from a Parquet file's
// ARROW:schema key-value metadata, which its writer controls and DuckDB
// 1.5, Spark and Delta readers ignore. A duration over an INT64 field
// (pandas writes a timedelta so) reads 1000000 to DuckDB and
// "0 days 00:00:01" to pandas, by the field's position whatever its name;
// an extension type (pandas.period) makes it a Period; and the schema's
// own "pandas" metadata is taken over the file's key. Each check below
// passed on DuckDB's reading where pandas 3.1.1, run here, finds rows
// failing; what pyarrow writes itself (a zone over a timestamp adjusted to
// UTC, a dictionary, a large string) and a duration no check reads pass.
func TestArrowSchemaOfAParquetFileIsReadAsPyarrowReadsIt(t *testing.T) {
	const ints = "SELECT CASE WHEN i = 0 THEN 1000000 ELSE 2 END::BIGINT AS a FROM range(2) r(i)"
	const twoInts = "SELECT CASE WHEN i = 0 THEN 1000000 ELSE 2 END::BIGINT AS a, 7::BIGINT AS b FROM range(2) r(i)"
	digits := Check{Kind: KindRegex, Column: "a", Pattern: `^[0-9]+$`}
	digitsPandas := `print(int((~c.dropna().astype(str).str.contains("^[0-9]+$")).sum()))`
	cases := []struct {
		name, query, schema string
		check               Check
		pandas              string // prints the rows pandas finds failing the check, column c
		refused             bool
	}{
		{"duration_over_bigint", ints, arrowDurationA, digits, digitsPandas, true},
		{"duration_by_position_not_name", twoInts, arrowDurationSwapped, digits, digitsPandas, true},
		{"duration_under_accepted_values", ints, arrowDurationA, Check{Kind: KindAcceptedValues, Column: "a", Values: []string{"1000000", "2"}},
			`print(int((~c.dropna().isin([1000000, 2])).sum()))`, true},
		{"period_extension", ints, arrowPeriodA, digits, digitsPandas, true},
		{"pandas_metadata_in_the_arrow_schema", ints, arrowPandasFloat64A, digits, digitsPandas, true},
		{"unreadable_arrow_schema", ints, "bm90dmFsaWQ=", Check{Kind: KindNotNull, Column: "a"}, "print(int(c.isna().sum()))", true},
		{"duration_no_check_reads", twoInts, arrowDurationB, digits, digitsPandas, false},
		{"zone_over_a_timestamp_adjusted_to_utc", "SELECT TIMESTAMPTZ '2024-01-01 01:02:03+00' + i * INTERVAL 1 DAY AS a FROM range(2) r(i)", arrowTokyoA,
			Check{Kind: KindNotNull, Column: "a"}, "print(int(c.isna().sum()))", false},
		{"dictionary_and_large_string", "SELECT 'x' || i AS a, 'y' AS b FROM range(2) r(i)", arrowDictionaryA,
			Check{Kind: KindRegex, Column: "a", Pattern: `^x[0-9]$`}, `print(int((~c.dropna().astype(str).str.contains("^x[0-9]$")).sum()))`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := newBatchSource(t)
			dst := filepath.Join(src.root, "b1", "t", "a.parquet")
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				t.Fatal(err)
			}
			copySQL(t, fmt.Sprintf("COPY (%s) TO %s (FORMAT parquet, KV_METADATA {'ARROW:schema': %s})", c.query, quoteLiteral(dst), quoteLiteral(c.schema)))
			// A file pandas cannot read counts as one whose every row fails.
			script := "import sys, pandas as pd\ntry:\n    c = pd.read_parquet(sys.argv[1])[sys.argv[2]]\nexcept Exception:\n    print(1)\n    sys.exit()\n" + c.pandas
			rep, res, refused := auditLikePandas(t, src, script, []string{dst, c.check.Column}, FormatParquet, c.check, c.refused)
			if !refused {
				return
			}
			if rep.Passed || res.Status != schemas.StatusError || !strings.Contains(res.Message, "readers disagree") || !strings.Contains(res.Message, "a.parquet") {
				t.Fatalf("%s %q (%s); pandas finds rows failing: want it refused naming the file and the ARROW:schema", res.Status, res.Message, res.Observed)
			}
			t.Logf("refused: %s", res.Message)
		})
	}
}

// TestArrowSchemaPyarrowWritesIsNotRefused: files pandas 3.1.1 and
// pyarrow 26.0.1 write themselves carry an ARROW:schema that reads as
// DuckDB reads them for every ordinary type (integers of each width,
// floats, strings, large strings, booleans, naive and zoned timestamps of
// each unit, dates, date64, times, decimals, decimal256, categoricals,
// bytes, fixed-size binary, UUIDs, JSON, lists, structs, maps): a check
// reading each is not refused. A timedelta column is read otherwise
// (DuckDB reads BIGINT): a check reading it is refused, naming it. (A
// Period or Interval column's pandas metadata refuses its file already,
// and float16 its page statistics.)
func TestArrowSchemaPyarrowWritesIsNotRefused(t *testing.T) {
	python, err := testPython()
	if err != nil || testing.Short() {
		t.Skipf("runs pandas and pyarrow in Python: %v", err)
	}
	src := newBatchSource(t)
	dir := filepath.Join(src.root, "b1")
	script := `import sys, os, datetime, decimal, pandas as pd, pyarrow as pa, pyarrow.parquet as pq
d = sys.argv[1]
df = pd.DataFrame({
    "i": pd.Series([1, 2, 3], dtype="int64"), "i8": pd.Series([1, 2, 3], dtype="int8"), "i_na": pd.Series([1, None, 3], dtype="Int64"),
    "u8": pd.Series([1, 2, 3], dtype="UInt8"), "u64": pd.Series([1, 2, 3], dtype="uint64"), "f": [1.5, None, 3.0], "f32": pd.Series([1.5, 2, 3], dtype="float32"),
    "f_na": pd.Series([1.5, None, 3.0], dtype="Float64"), "b": [True, False, True], "b_na": pd.Series([True, None, False], dtype="boolean"),
    "s": ["a", None, "c"], "s_obj": pd.Series(["a", "b", "c"], dtype=object), "s_py": pd.Series(["a", None, "c"], dtype="string[python]"),
    "s_pa": pd.Series(["a", None, "c"], dtype="string[pyarrow]"),
    "ts": pd.to_datetime(["2024-01-01 01:02:03", None, "2024-01-03 00:00:00"]),
    "ts_s": pd.to_datetime(["2024-01-01 01:02:03", None, "2024-01-03 00:00:00"]).astype("datetime64[s]"),
    "ts_utc": pd.to_datetime(["2024-01-01 01:02:03", None, "2024-01-03 00:00:00"]).tz_localize("UTC"),
    "ts_tokyo": pd.to_datetime(["2024-01-01 01:02:03", None, "2024-01-03 00:00:00"]).tz_localize("Asia/Tokyo"),
    "cat": pd.Categorical(["x", "y", "x"]), "cat_ord": pd.Categorical(["x", "y", "x"], ordered=True),
    "dt": [datetime.date(2024, 1, 1), None, datetime.date(2024, 1, 3)],
    "dec": [decimal.Decimal("1.50"), None, decimal.Decimal("2.25")], "by": [b"a", None, b"c"],
    "td": pd.to_timedelta([1, 2, 3], unit="s"),
})
os.makedirs(d + "/pandas")
df.to_parquet(d + "/pandas/a.parquet")
t = pa.table({
    "lstr": pa.array(["a", "b"], pa.large_string()), "lbin": pa.array([b"a", b"b"], pa.large_binary()),
    "sview": pa.array(["a", "b"], pa.string_view()), "dict": pa.array(["a", "b"]).dictionary_encode(),
    "d64": pa.array([0, 86400000], pa.date64()), "fsb": pa.array([b"ab", b"cd"], pa.binary(2)),
    "dec256": pa.array([decimal.Decimal("1.5"), decimal.Decimal("2.25")], pa.decimal256(30, 2)),
    "dec32": pa.array([decimal.Decimal("1.5"), decimal.Decimal("2.25")], pa.decimal32(5, 2)),
    "u32": pa.array([1, 2], pa.uint32()),
    "t32": pa.array([1000, 2000], pa.time32("ms")), "t64": pa.array([1000, 2000], pa.time64("ns")),
    "ts_ms_tz": pa.array([0, 1], pa.timestamp("ms", tz="America/New_York")), "ts_ns": pa.array([0, 1], pa.timestamp("ns")),
    "uuid": pa.array([b"0123456789abcdef", b"0123456789abcdeg"], pa.uuid()), "json": pa.array(['{"a":1}', '[1]'], pa.json_()),
    "lst": pa.array([[1], [2]], pa.list_(pa.int32())), "llst": pa.array([[1], [2]], pa.large_list(pa.int32())),
    "fsl": pa.array([[1, 2], [3, 4]], pa.list_(pa.int32(), 2)),
    "mp": pa.array([[("k", 1)], [("k", 2)]], pa.map_(pa.string(), pa.int32())),
    "st": pa.array([{"a": 1, "z": "x"}, {"a": 2, "z": "y"}], pa.struct([("a", pa.int32()), ("z", pa.string())])),
})
os.makedirs(d + "/arrow")
pq.write_table(t, d + "/arrow/a.parquet")
print(",".join(df.columns) + ";" + ",".join(t.column_names))
`
	out, err := exec.Command(python, "-c", script, dir).CombinedOutput()
	if err != nil {
		t.Fatalf("pandas: %v: %s", err, out)
	}
	pandasCols, arrowCols, _ := strings.Cut(strings.TrimSpace(string(out)), ";")
	readOtherwise := map[string]bool{"td": true}
	run := func(table string, check Check) schemas.AuditReport {
		t.Helper()
		check.Name, check.Table = "c", "t"
		rep, err := newEngine(t, src, "").Run(context.Background(), Request{Dataset: "d", Repository: "repo", Ref: "b1", BaseRef: "main", BatchTime: batchTime,
			Suite: Suite{Tables: []Table{{Name: "t", Path: table + "/", Format: FormatParquet}}, Checks: []Check{check}}})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	for table, cols := range map[string]string{"pandas": pandasCols, "arrow": arrowCols} {
		var ordinary []string
		for _, c := range strings.Split(cols, ",") {
			if !readOtherwise[c] {
				ordinary = append(ordinary, c)
			}
		}
		// A not_null check reads each column: some hold a NULL (it fails
		// there), none is refused.
		rep := run(table, Check{Kind: KindNotNull, Columns: ordinary})
		if len(rep.Checks) != 1 || rep.Checks[0].Status == schemas.StatusError {
			t.Errorf("%s: refused, though pyarrow wrote it: %+v", table, rep.Checks)
		}
	}
	for c := range readOtherwise {
		rep := run("pandas", Check{Kind: KindNotNull, Column: c})
		if rep.Passed || !strings.Contains(refusal(rep), fmt.Sprintf("field %q", c)) {
			t.Errorf("%s: %s; want refused naming the field", c, refusal(rep))
		}
		t.Logf("%s: %s", c, rep.Checks[0].Message)
	}
}
