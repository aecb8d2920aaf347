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

// pandasMetaJSON is a Parquet file's "pandas" key-value metadata naming
// each of cols (field name, name, pandas_type, numpy_type, metadata) as
// pyarrow writes it.
func pandasMetaJSON(cols ...[5]string) string {
	var entries []string
	for _, c := range cols {
		entries = append(entries, fmt.Sprintf(`{"name": %s, "field_name": %q, "pandas_type": %q, "numpy_type": %q, "metadata": %s}`, c[1], c[0], c[2], c[3], c[4]))
	}
	return `{"index_columns": [], "column_indexes": [], "columns": [` + strings.Join(entries, ", ") +
		`], "creator": {"library": "pyarrow", "version": "26.0.1"}, "pandas_version": "3.1.1"}`
}

// TestPandasMetadataOfAParquetFileIsReadAsPandasReadsIt: pandas.read_parquet
// (pyarrow's to_pandas) reads a file's "pandas" key-value metadata, which
// its writer controls: it names each column (a field id read under the
// name other: pandas' column "id" is the field "other"), restores a pandas
// dtype by its numpy_type (Float64 over a BIGINT field renders 1 as 1.0),
// and a datetimetz pandas_type moves a naive timestamp to its zone
// (2024-01-01 01:02:03 reads 2024-01-01 10:02:03+09:00). DuckDB, Spark and
// Delta readers ignore it. Each check below passed on DuckDB's reading
// where pandas 3.1.1, run here, finds rows failing; files pandas itself
// writes (the name its field's, the dtype its type's) pass.
func TestPandasMetadataOfAParquetFileIsReadAsPandasReadsIt(t *testing.T) {
	cases := []struct {
		name, query, meta string
		check             Check
		pandas            string // prints the rows pandas finds failing the check, column c
		refused           bool
	}{
		{"renamed", "SELECT i::BIGINT AS id, CASE WHEN i = 2 THEN 7 END::BIGINT AS other FROM range(3) r(i)",
			pandasMetaJSON([5]string{"id", `"ignored"`, "int64", "int64", "null"}, [5]string{"other", `"id"`, "int64", "float64", "null"}),
			Check{Kind: KindNotNull, Column: "id"}, "print(int(c.isna().sum()))", true},
		{"float64_over_bigint", "SELECT i::BIGINT AS code FROM range(1, 4) r(i)",
			pandasMetaJSON([5]string{"code", `"code"`, "int64", "Float64", "null"}),
			Check{Kind: KindRegex, Column: "code", Pattern: `^[0-9]+$`}, `print(int((~c.dropna().astype(str).str.contains("^[0-9]+$")).sum()))`, true},
		{"datetimetz_over_a_naive_timestamp", "SELECT TIMESTAMP '2024-01-01 01:02:03' + i * INTERVAL 1 DAY AS ts FROM range(2) r(i)",
			pandasMetaJSON([5]string{"ts", `"ts"`, "datetimetz", "datetime64[us]", `{"timezone": "Asia/Tokyo"}`}),
			Check{Kind: KindRegex, Column: "ts", Pattern: `^2024-01-0[12] 01:02:03$`}, `print(int((~c.dropna().astype(str).str.contains("^2024-01-0[12] 01:02:03$")).sum()))`, true},
		{"as_pandas_writes_it", "SELECT i::BIGINT AS id, 'x' || i AS name FROM range(3) r(i)",
			pandasMetaJSON([5]string{"id", `"id"`, "int64", "int64", "null"}, [5]string{"name", `"name"`, "unicode", "object", "null"}),
			Check{Kind: KindNotNull, Column: "id"}, "print(int(c.isna().sum()))", false},
		{"nullable_int_as_pandas_writes_it", "SELECT i::BIGINT AS code FROM range(1, 4) r(i)",
			pandasMetaJSON([5]string{"code", `"code"`, "int64", "Int64", "null"}),
			Check{Kind: KindRegex, Column: "code", Pattern: `^[0-9]+$`}, `print(int((~c.dropna().astype(str).str.contains("^[0-9]+$")).sum()))`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := newBatchSource(t)
			dst := filepath.Join(src.root, "b1", "t", "a.parquet")
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				t.Fatal(err)
			}
			copySQL(t, fmt.Sprintf("COPY (%s) TO %s (FORMAT parquet, KV_METADATA {pandas: %s})", c.query, quoteLiteral(dst), quoteLiteral(c.meta)))
			rep, res, refused := auditLikePandas(t, src, "import sys, pandas as pd; c = pd.read_parquet(sys.argv[1])[sys.argv[2]]; "+c.pandas,
				[]string{dst, c.check.Column}, FormatParquet, c.check, c.refused)
			if !refused {
				return
			}
			if rep.Passed || res.Status != schemas.StatusError || !strings.Contains(res.Message, "pandas") || !strings.Contains(res.Message, "readers disagree") {
				t.Fatalf("%s %q (%s); pandas finds rows failing: want it refused naming pandas' metadata", res.Status, res.Message, res.Observed)
			}
			t.Logf("refused: %s", res.Message)
		})
	}
}

// TestPandasMetadataPandasWritesIsNotRefused: files pandas 3.1.1 writes
// itself (to_parquet with pyarrow), of every dtype its users keep, carry
// pandas metadata that reads as DuckDB reads them: none is refused.
func TestPandasMetadataPandasWritesIsNotRefused(t *testing.T) {
	python, err := testPython()
	if err != nil || testing.Short() {
		t.Skipf("runs pandas in Python: %v", err)
	}
	src := newBatchSource(t)
	dir := filepath.Join(src.root, "b1", "t")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	script := `import sys, datetime, decimal, pandas as pd
d = sys.argv[1]
n = 3
df = pd.DataFrame({
    "i": pd.Series([1, 2, 3], dtype="int64"), "i_na": pd.Series([1, None, 3], dtype="Int64"),
    "u8": pd.Series([1, 2, 3], dtype="UInt8"), "f": [1.5, None, 3.0], "f_na": pd.Series([1.5, None, 3.0], dtype="Float64"),
    "b": [True, False, True], "b_na": pd.Series([True, None, False], dtype="boolean"),
    "s": ["a", None, "c"], "s_obj": pd.Series(["a", "b", "c"], dtype=object), "s_py": pd.Series(["a", None, "c"], dtype="string[python]"),
    "ts": pd.to_datetime(["2024-01-01 01:02:03", None, "2024-01-03 00:00:00"]),
    "ts_utc": pd.to_datetime(["2024-01-01 01:02:03", None, "2024-01-03 00:00:00"]).tz_localize("UTC"),
    "ts_tokyo": pd.to_datetime(["2024-01-01 01:02:03", None, "2024-01-03 00:00:00"]).tz_localize("Asia/Tokyo"),
    "cat": pd.Categorical(["x", "y", "x"]), "dt": [datetime.date(2024, 1, 1), None, datetime.date(2024, 1, 3)],
    "dec": [decimal.Decimal("1.50"), None, decimal.Decimal("2.25")], "by": [b"a", None, b"c"],
    "td": pd.to_timedelta([1, 2, 3], unit="s"),
})
import os
for name, frame in [("plain", df), ("named_index", df.set_index("i")), ("multi_index", df.set_index(["i", "s"])), ("kept_index", df.iloc[[2, 0]])]:
    os.makedirs(d + "/" + name)
    frame.to_parquet(d + "/" + name + "/a.parquet")
`
	if out, err := exec.Command(python, "-c", script, dir).CombinedOutput(); err != nil {
		t.Fatalf("pandas: %v: %s", err, out)
	}
	e := newEngine(t, src, "")
	for _, f := range []string{"plain", "named_index", "multi_index", "kept_index"} {
		rep, err := e.Run(context.Background(), Request{Dataset: "d", Repository: "repo", Ref: "b1", BaseRef: "main", BatchTime: batchTime,
			Suite: Suite{Tables: []Table{{Name: "t", Path: "t/" + f + "/", Format: FormatParquet}}, Checks: []Check{{Name: "c", Kind: KindNotNull, Table: "t", Column: "s_obj"}}}})
		if err != nil {
			t.Fatal(err)
		}
		if !rep.Passed {
			t.Errorf("%s: refused, though pandas wrote it: %s", f, refusal(rep))
		}
	}
}
