package audit

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/lakewap/lakewap/schemas"
)

// review36File is table t's one file a.parquet on branch b1, the bytes of
// testdata/name.
func review36File(t *testing.T, name string) (*dirSource, string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	src := newBatchSource(t)
	dst := filepath.Join(src.root, "b1", "t", "a.parquet")
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return src, dst
}

// TestReview36DecimalPrecisionsThatDisagreeAreRefused: a DECIMAL leaf's
// footer gives its precision twice, in the element and in its logical
// type. DuckDB 1.5 reads the element's, and into an integer of that
// precision's width, pyarrow and Spark the logical type's.
// review36_decimal_precision_4_logical_9.parquet was written by pyarrow
// 26.0.1 (DECIMAL(9,2) 1000.00 and 1.50 over INT32, without statistics),
// the element's precision forged to 4: DuckDB reads DECIMAL(4,2) -310.72
// (100000 wrapped into 16 bits), pandas 1000.00, and a range check of at
// most 100 passed.
func TestReview36DecimalPrecisionsThatDisagreeAreRefused(t *testing.T) {
	hundred := 100.0
	src, dst := review36File(t, "review36_decimal_precision_4_logical_9.parquet")
	script := "import sys, pandas as pd\nc = pd.read_parquet(sys.argv[1])[sys.argv[2]]\nprint(int((c.astype(float) > 100).sum()))"
	rep, res, _ := auditLikePandas(t, src, script, []string{dst, "a"}, FormatParquet, Check{Kind: KindRange, Column: "a", Max: &hundred}, true)
	if rep.Passed || res.Status != schemas.StatusError || !strings.Contains(res.Message, "a.parquet") || !strings.Contains(res.Message, "precision") {
		t.Fatalf("%s %q (%s); pandas finds rows failing: want it refused naming the file and the precisions", res.Status, res.Message, res.Observed)
	}
	t.Logf("refused: %s", res.Message)
}

// TestReview36DecimalBeyondItsPrecisionIsRefused: DuckDB 1.5 reads a
// DECIMAL of precision p into an integer of p's width, and a value
// stored wider and beyond the precision wraps around there; pyarrow,
// pandas and Spark read it as stored. The files in testdata:
//   - review36_decimal4_int32_beyond.parquet: written by pyarrow 26.0.1
//     (store_decimal_as_integer, no statistics), DECIMAL(4,2) 1000.00
//     and 1.50 over INT32, its footer as pyarrow wrote it: DuckDB reads
//     -310.72, pandas and PySpark 4.3.0 1000.00;
//   - review36_decimal4_int64_beyond.parquet: pyarrow's DECIMAL(10,2)
//     10000000.00 and 1.50 over INT64, both precisions forged to 4:
//     DuckDB reads -138.24;
//   - review36_decimal18_fixed16_beyond.parquet: pyarrow's DECIMAL(38,2)
//     100000000000000000.00 and 1.50 over a 16-byte FIXED_LEN_BYTE_ARRAY,
//     both precisions forged to 18: DuckDB (and PySpark) read
//     -84467440737095516.16;
//   - review36_decimal4_beyond_delta_binary_packed.parquet and
//     review36_decimal4_beyond_dict.parquet: pyarrow's DECIMAL(4,2) of
//     5,000 values over INT32, the 2,501st 1000.00, in V2 pages of zstd,
//     DELTA_BINARY_PACKED or dictionary-encoded: DuckDB reads -310.72.
//
// Each passed a range of at most 100 where pandas finds a row above it.
func TestReview36DecimalBeyondItsPrecisionIsRefused(t *testing.T) {
	hundred := 100.0
	for _, file := range []string{"review36_decimal4_int32_beyond.parquet", "review36_decimal4_int64_beyond.parquet", "review36_decimal18_fixed16_beyond.parquet",
		"review36_decimal4_beyond_delta_binary_packed.parquet", "review36_decimal4_beyond_dict.parquet"} {
		t.Run(strings.TrimSuffix(file, ".parquet"), func(t *testing.T) {
			src, dst := review36File(t, file)
			script := "import sys, pandas as pd\nc = pd.read_parquet(sys.argv[1])[sys.argv[2]]\nprint(int((c.astype(float) > 100).sum()))"
			rep, res, _ := auditLikePandas(t, src, script, []string{dst, "a"}, FormatParquet, Check{Kind: KindRange, Column: "a", Max: &hundred}, true)
			if rep.Passed || res.Status != schemas.StatusError || !strings.Contains(res.Message, "a.parquet") || !strings.Contains(res.Message, `column "a"`) || !strings.Contains(res.Message, "beyond its precision") {
				t.Fatalf("%s %q (%s); pandas finds rows failing: want it refused naming the file, the column and the value", res.Status, res.Message, res.Observed)
			}
			t.Logf("refused: %s", res.Message)
		})
	}
}

// TestReview36DecimalOfNineToFifteenBytesIsRefused: Spark reads a
// DECIMAL of at most 18 digits stored in a FIXED_LEN_BYTE_ARRAY of 9 to
// 15 bytes with its first bytes shifted out. review36_decimal18_fixed9.parquet
// is pyarrow's DECIMAL(20,2) 1.50 and 2.25 in 9 bytes, both precisions
// forged to 18: DuckDB and pandas read 1.50 and 2.25, PySpark 4.3.0 -1.06
// and -0.31 (TestReview36SparkReadsRefusedValuesOtherwise), and a range
// of at least 0 passed.
func TestReview36DecimalOfNineToFifteenBytesIsRefused(t *testing.T) {
	zero := 0.0
	src, _ := review36File(t, "review36_decimal18_fixed9.parquet")
	rep, err := newEngine(t, src, "").Run(context.Background(), Request{Dataset: "d", Repository: "repo", Ref: "b1", BaseRef: "main", BatchTime: batchTime,
		Suite: Suite{Tables: []Table{{Name: "t", Path: "t/", Format: FormatParquet}}, Checks: []Check{{Name: "c", Table: "t", Kind: KindRange, Column: "a", Min: &zero}}}})
	if err != nil {
		t.Fatal(err)
	}
	res := only(t, rep)
	if res.Status != schemas.StatusError || !strings.Contains(res.Message, "a.parquet") || !strings.Contains(res.Message, `column "a"`) || !strings.Contains(res.Message, "9 bytes") {
		t.Fatalf("%s %q (%s); Spark reads -1.06: want it refused naming the file, the column and its width", res.Status, res.Message, res.Observed)
	}
	t.Logf("refused: %s", res.Message)
}

// TestReview36HonestDecimalsAreNotRefused: DECIMALs DuckDB reads into a
// narrower integer than they are stored in, as writers write them, pass:
// pyarrow 26.0.1's DECIMAL(4,2) over INT32 (PLAIN, dictionary,
// DELTA_BINARY_PACKED, in a list, NULLs; V2 pages, zstd), Spark 4.3.0's
// (parquet-mr 1.17.0: V1 pages, V2 pages of DELTA_BINARY_PACKED, the
// legacy format's FIXED_LEN_BYTE_ARRAY, in a list), DuckDB 1.5.6's; and
// UINT_8 and UINT_16 of their whole ranges, pyarrow's (dictionary, PLAIN,
// V2 pages, zstd, NULLs) and DuckDB's.
func TestReview36HonestDecimalsAreNotRefused(t *testing.T) {
	for _, c := range []struct{ file, column string }{
		{"review36_pyarrow_decimals.parquet", "delta"}, {"review36_spark_decimals_v1.parquet", "a"}, {"review36_spark_decimals_v2.parquet", "a"},
		{"review36_spark_decimals_legacy.parquet", "a"}, {"review36_duckdb_decimals.parquet", "a"},
		{"review36_pyarrow_small_ints.parquet", "u8"}, {"review36_duckdb_small_ints.parquet", "u16"},
	} {
		t.Run(strings.TrimSuffix(c.file, ".parquet"), func(t *testing.T) {
			src, _ := review36File(t, c.file)
			one := 1.0
			rep, err := newEngine(t, src, "").Run(context.Background(), Request{Dataset: "d", Repository: "repo", Ref: "b1", BaseRef: "main", BatchTime: batchTime,
				Suite: Suite{Tables: []Table{{Name: "t", Path: "t/", Format: FormatParquet}}, Checks: []Check{{Name: "c", Table: "t", Kind: KindRange, Column: c.column, Min: &one}}}})
			if err != nil {
				t.Fatal(err)
			}
			if res := only(t, rep); res.Status == schemas.StatusError {
				t.Fatalf("%s %q: an honest file refused", res.Status, res.Message)
			}
		})
	}
}

// TestDecimalValuesReadInGoAreDuckDBs: the Go reading of pyarrow's and
// Spark's PLAIN and DELTA_BINARY_PACKED pages (V1 and V2, NULLs, a list's
// repetition levels) gives the values DuckDB reads, in order.
func TestDecimalValuesReadInGoAreDuckDBs(t *testing.T) {
	for _, c := range []struct{ file, leaf, expr string }{
		{"review36_pyarrow_decimals.parquet", "plain", "plain"}, {"review36_pyarrow_decimals.parquet", "delta", "delta"},
		{"review36_pyarrow_decimals.parquet", "wide", "wide"}, {"review36_pyarrow_decimals.parquet", "l.list.element", "unnest(l)"},
		{"review36_spark_decimals_v1.parquet", "a", "a"}, {"review36_spark_decimals_v1.parquet", "c", "c"},
		{"review36_spark_decimals_v2.parquet", "a", "a"}, {"review36_spark_decimals_v2.parquet", "b", "b"}, {"review36_spark_decimals_v2.parquet", "c", "c"},
	} {
		t.Run(c.file+"/"+c.leaf, func(t *testing.T) {
			path, err := filepath.Abs(filepath.Join("testdata", c.file))
			if err != nil {
				t.Fatal(err)
			}
			ft, err := readFooter(path)
			if err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			info, _ := f.Stat()
			var got []string
			for _, ch := range ft.chunks {
				if ch.path != c.leaf {
					continue
				}
				ch.ctx = context.Background()
				width := map[int32]int{ptInt32: 4, ptInt64: 8}[ch.physical]
				var zd *zstd.Decoder
				if err := chunkValues(f, info.Size(), ch, width, &zd, func(v []byte) error {
					got = append(got, decimalText(decimalValue(v, ch.physical), ch.types.scale))
					return nil
				}); err != nil {
					t.Fatal(err)
				}
			}
			db, err := sql.Open("duckdb", "")
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			var want string
			q := fmt.Sprintf("SELECT string_agg(CAST(v AS VARCHAR), ' ') FROM (SELECT %s AS v FROM read_parquet(%s)) WHERE v IS NOT NULL", c.expr, quoteLiteral(path))
			if err := db.QueryRow(q).Scan(&want); err != nil {
				t.Fatal(err)
			}
			norm := func(s string) string { // DuckDB's text of a decimal drops trailing zeros
				if strings.Contains(s, ".") {
					s = strings.TrimSuffix(strings.TrimRight(s, "0"), ".")
				}
				return s
			}
			wants := strings.Fields(want)
			if len(got) != len(wants) || len(got) == 0 {
				t.Fatalf("read %d values, DuckDB %d", len(got), len(wants))
			}
			for i := range got {
				if norm(got[i]) != norm(wants[i]) {
					t.Fatalf("value %d: read %s, DuckDB %s", i, got[i], wants[i])
				}
			}
		})
	}
}

// TestReview36SparkReadsRefusedValuesOtherwise: PySpark 4.3.0 reads
// the values of the refused files otherwise than DuckDB: an INT32's or
// INT64's as they are stored, where DuckDB reads them wrapped around, and
// a DECIMAL(18,2) in 9 bytes with its first byte shifted out (1.50 read
// -1.06, where DuckDB and pandas read as stored). (Of the 16-byte one
// beyond its precision it reads what DuckDB reads, pandas as stored.)
// And a UINT_8 or UINT_16 stored beyond its width in 32 bits: DuckDB
// and pyarrow read its low 8 or 16 bits, Spark its low 16 or 32; and a
// row group whose column chunks name each other's paths: DuckDB and
// pyarrow read a chunk by its position, Spark by its path.
func TestReview36SparkReadsRefusedValuesOtherwise(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Apache Spark; skipped with -short")
	}
	python, err := sparkPython()
	if err != nil {
		t.Skipf("skipped: %v; set LAKEWAP_SPARK_PYTHON (scripts/sparkenv.sh installs PySpark)", err)
	}
	cases := []struct{ file, column, spark, duck string }{ // its first column, as each printed it
		{"review36_decimal4_int32_beyond.parquet", "a", "1000.00 1.50", "-310.72 1.50"},
		{"review36_decimal4_int64_beyond.parquet", "a", "10000000.00 1.50", "-138.24 1.50"},
		{"review36_decimal18_fixed9.parquet", "a", "-1.06 -0.31", "1.50 2.25"},
		{"review36_uint8_beyond.parquet", "u", "4464 5", "112 5"},
		{"review36_uint16_beyond.parquet", "u", "70000 5", "4464 5"},
		{"review36_chunk_paths_swapped.parquet", "xa", "1000 2000", "1 2"},
	}
	var args []string
	for _, c := range cases {
		p, err := filepath.Abs(filepath.Join("testdata", c.file))
		if err != nil {
			t.Fatal(err)
		}
		args = append(args, p)
	}
	const read = `import sys
from pyspark.sql import SparkSession
s = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
s.sparkContext.setLogLevel("ERROR")
for f in sys.argv[1:]:
    print(" ".join(str(r[0]) for r in s.read.parquet(f).collect()))
`
	out, stderr := runPySpark(t, python, read, args)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != len(cases) {
		t.Fatalf("spark printed %d lines for %d files:\n%s\n%s", len(lines), len(cases), out, stderr)
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for i, c := range cases {
		var duck string
		if err := db.QueryRow("SELECT string_agg(CAST(" + quoteIdent(c.column) + " AS VARCHAR), ' ') FROM read_parquet(" + quoteLiteral(args[i]) + ")").Scan(&duck); err != nil {
			t.Fatal(err)
		}
		if duck != c.duck || lines[i] != c.spark {
			t.Errorf("%s: DuckDB reads %s, Spark %s; measured %s and %s", c.file, duck, lines[i], c.duck, c.spark)
		}
	}
}

// TestReview36DecimalWiderThanItsTypeIsRefused: a DECIMAL whose precision
// its physical type cannot hold (parquet.thrift: INT32 to 9 digits, INT64
// to 18, a FIXED_LEN_BYTE_ARRAY of n bytes to the digits of 2^(8n-1)) is
// read by DuckDB 1.5 as a DECIMAL, by pyarrow 26.0.1 as its physical type
// (an integer, binary), and Spark 4.3.0 fails on the footer. The files,
// pyarrow's without statistics, both precisions forged:
//   - review36_decimal12_over_int32.parquet: DECIMAL(9,2) 1000.00 and
//     -1.50 over INT32 said DECIMAL(12,2): DuckDB reads 1000.00, pandas
//     100000;
//   - review36_decimal20_over_int64.parquet: DECIMAL(18,2) alike, said
//     DECIMAL(20,2);
//   - review36_decimal10_over_fixed2.parquet: DECIMAL(4,2) 10.00 and
//     -1.50 in 2 bytes said DECIMAL(10,2): DuckDB reads 10.00, pandas
//     b'\x03\xe8'.
//
// Each passed a check pandas finds rows failing.
func TestReview36DecimalWiderThanItsTypeIsRefused(t *testing.T) {
	most := 10000.0
	cases := []struct {
		file   string
		check  Check
		pandas string // prints the rows pandas finds failing the check, column c
	}{
		{"review36_decimal12_over_int32.parquet", Check{Kind: KindRange, Column: "a", Max: &most}, `print(int((c.astype(float) > 10000).sum()))`},
		{"review36_decimal20_over_int64.parquet", Check{Kind: KindRange, Column: "a", Max: &most}, `print(int((c.astype(float) > 10000).sum()))`},
		{"review36_decimal10_over_fixed2.parquet", Check{Kind: KindAcceptedValues, Column: "a", Values: []string{"10.00", "-1.50"}}, `print(int((~c.isin(["10.00", "-1.50"])).sum()))`},
	}
	for _, c := range cases {
		t.Run(strings.TrimSuffix(c.file, ".parquet"), func(t *testing.T) {
			src, dst := review36File(t, c.file)
			script := "import sys, pandas as pd\nc = pd.read_parquet(sys.argv[1])[sys.argv[2]]\n" + c.pandas
			rep, res, _ := auditLikePandas(t, src, script, []string{dst, "a"}, FormatParquet, c.check, true)
			if rep.Passed || res.Status != schemas.StatusError || !strings.Contains(res.Message, "a.parquet") || !strings.Contains(res.Message, "precision") {
				t.Fatalf("%s %q (%s); pandas finds rows failing: want it refused naming the file and the precision", res.Status, res.Message, res.Observed)
			}
			t.Logf("refused: %s", res.Message)
		})
	}
}

// TestDecimalMostDigits: parquet.thrift's bound of a fixed-length byte
// array's precision, floor(log10(2^(8n-1) - 1)).
func TestDecimalMostDigits(t *testing.T) {
	for n, want := range map[int32]int32{1: 2, 2: 4, 3: 6, 4: 9, 5: 11, 8: 18, 9: 21, 16: 38, 32: 76} {
		if got := decimalMostDigits(ptFixed, n); got != want {
			t.Errorf("%d bytes: %d digits, want %d", n, got, want)
		}
	}
	if decimalMostDigits(ptInt32, 0) != 9 || decimalMostDigits(ptInt64, 0) != 18 {
		t.Error("INT32 holds 9 digits, INT64 18")
	}
}

// TestReview36UnsignedBeyondItsWidthIsRefused: a UINT_8 or UINT_16 leaf
// is stored in 32 bits (INT32); DuckDB and pyarrow read its low 8 or 16
// bits, Spark 4.3.0 (a ShortType, an IntegerType) its low 16 or 32. The
// files are pyarrow 26.0.1's (no statistics, PLAIN), a value's 4 bytes
// forged: review36_uint8_beyond.parquet's 70000 read 112 to DuckDB and
// pandas, 4464 to Spark; review36_uint16_beyond.parquet's 70000 read 4464
// and 70000. A range the audit passed Spark finds failing.
func TestReview36UnsignedBeyondItsWidthIsRefused(t *testing.T) {
	cases := []struct {
		file string
		max  float64
	}{{"review36_uint8_beyond.parquet", 200}, {"review36_uint16_beyond.parquet", 5000}}
	for _, c := range cases {
		t.Run(strings.TrimSuffix(c.file, ".parquet"), func(t *testing.T) {
			src, _ := review36File(t, c.file)
			rep, err := newEngine(t, src, "").Run(context.Background(), Request{Dataset: "d", Repository: "repo", Ref: "b1", BaseRef: "main", BatchTime: batchTime,
				Suite: Suite{Tables: []Table{{Name: "t", Path: "t/", Format: FormatParquet}}, Checks: []Check{{Name: "c", Table: "t", Kind: KindRange, Column: "u", Max: &c.max}}}})
			if err != nil {
				t.Fatal(err)
			}
			res := only(t, rep)
			if res.Status != schemas.StatusError || !strings.Contains(res.Message, "a.parquet") || !strings.Contains(res.Message, `column "u"`) || !strings.Contains(res.Message, "70000") {
				t.Fatalf("%s %q (%s); Spark reads otherwise: want it refused naming the file, the column and the value", res.Status, res.Message, res.Observed)
			}
			t.Logf("refused: %s", res.Message)
		})
	}
}

// TestReview36ChunkPathOtherThanItsLeafIsRefused: parquet-mr (Spark)
// reads a row group's column chunk by its ColumnMetaData's
// path_in_schema, DuckDB and pyarrow by its position.
// review36_chunk_paths_swapped.parquet is pyarrow 26.0.1's file of two
// BIGINT columns xa (1, 2) and xb (1000, 2000), the chunks' paths
// swapped: DuckDB and pandas read xa 1 and 2, PySpark 4.3.0 1000 and 2000
// (TestReview36SparkReadsRefusedValuesOtherwise), and a range of xa of at
// most 10 passed.
func TestReview36ChunkPathOtherThanItsLeafIsRefused(t *testing.T) {
	ten := 10.0
	src, _ := review36File(t, "review36_chunk_paths_swapped.parquet")
	rep, err := newEngine(t, src, "").Run(context.Background(), Request{Dataset: "d", Repository: "repo", Ref: "b1", BaseRef: "main", BatchTime: batchTime,
		Suite: Suite{Tables: []Table{{Name: "t", Path: "t/", Format: FormatParquet}}, Checks: []Check{{Name: "c", Table: "t", Kind: KindRange, Column: "xa", Max: &ten}}}})
	if err != nil {
		t.Fatal(err)
	}
	res := only(t, rep)
	if res.Status != schemas.StatusError || !strings.Contains(res.Message, "a.parquet") || !strings.Contains(res.Message, "path") {
		t.Fatalf("%s %q (%s); Spark reads xa 1000: want it refused naming the file and the paths", res.Status, res.Message, res.Observed)
	}
	t.Logf("refused: %s", res.Message)
}
