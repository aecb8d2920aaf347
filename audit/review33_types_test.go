package audit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

// TestReview33LogicalAndConvertedTypesThatDisagreeAreRefused: a Parquet
// leaf's footer gives a logical type and a converted type, or a DECIMAL's
// scale twice (the element's and the logical type's). DuckDB 1.5 reads
// the converted type and the element's scale (but for a UUID, TIMESTAMP,
// TIME or FLOAT16 logical type), pyarrow (parquet-cpp) and Spark
// (parquet-mr) the logical type. The files in testdata were written by
// pyarrow 26.0.1 without statistics, their footers forged:
//   - review33_int_logical_time_converted.parquet: BIGINT 1000000 and
//     1000001 under INTEGER(64, signed) and TIME_MICROS: DuckDB reads
//     00:00:01, pandas 1000000;
//   - review33_decimal_scale_3_logical_2.parquet: DECIMAL(10,2) 1.50 and
//     2.25 with the element's scale 3: DuckDB reads 0.150, pandas 1.50;
//   - review33_decimal_scale_2_logical_3.parquet: the logical type's
//     scale 3: DuckDB reads 1.50, pandas 0.150.
//
// Each passed a check pandas 3.1.1 finds rows failing.
func TestReview33LogicalAndConvertedTypesThatDisagreeAreRefused(t *testing.T) {
	one := 1.0
	cases := []struct {
		file   string
		check  Check
		pandas string // prints the rows pandas finds failing the check, column c
	}{
		{"review33_int_logical_time_converted.parquet", Check{Kind: KindAcceptedValues, Column: "a", Values: []string{"00:00:01", "00:00:01.000001"}},
			`print(int((~c.astype(str).isin(["00:00:01", "00:00:01.000001"])).sum()))`},
		{"review33_decimal_scale_3_logical_2.parquet", Check{Kind: KindRange, Column: "a", Max: &one}, `print(int((c.astype(float) > 1).sum()))`},
		{"review33_decimal_scale_2_logical_3.parquet", Check{Kind: KindRange, Column: "a", Min: &one}, `print(int((c.astype(float) < 1).sum()))`},
	}
	for _, c := range cases {
		t.Run(strings.TrimSuffix(c.file, ".parquet"), func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("testdata", c.file))
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
			script := "import sys, pandas as pd\nc = pd.read_parquet(sys.argv[1])[sys.argv[2]]\n" + c.pandas
			rep, res, _ := auditLikePandas(t, src, script, []string{dst, "a"}, FormatParquet, c.check, true)
			if rep.Passed || res.Status != schemas.StatusError || !strings.Contains(res.Message, "a.parquet") || !strings.Contains(res.Message, "converted type") && !strings.Contains(res.Message, "scale") {
				t.Fatalf("%s %q (%s); pandas finds rows failing: want it refused naming the file and the types", res.Status, res.Message, res.Observed)
			}
			t.Logf("refused: %s", res.Message)
		})
	}
}

// TestReview33LogicalTypesDuckDBDoesNotReadAreRefused: DuckDB 1.5 reads a
// leaf without a converted type by its physical type whatever its
// logical type, and a logical type of two members by the one it looks at
// first; pyarrow and Spark read the logical type (parquet-cpp its first
// member in its own order). The files in testdata were written by
// pyarrow 26.0.1 without statistics, their footers forged:
//   - review33_uint32_logical_only.parquet: UINT32 4294967295 and 2, the
//     converted type UINT_32 taken out: DuckDB reads -1, pandas 4294967295;
//   - review33_decimal_logical_only.parquet: DECIMAL(5,2) 1.50 over INT32,
//     its converted type DECIMAL taken out: DuckDB reads 150;
//   - review33_date_logical_only.parquet: DATE 2024-01-01, DATE taken
//     out: DuckDB reads 19723;
//   - review33_decimal_and_float16_logical.parquet: DECIMAL(4,2) 1.50 and
//     2.25 over FIXED_LEN_BYTE_ARRAY(2) whose logical type also holds
//     FLOAT16: DuckDB reads -0.00146484375 and -640, pandas 1.50 and 2.25.
//
// Each passed a check pandas 3.1.1 finds rows failing.
func TestReview33LogicalTypesDuckDBDoesNotReadAreRefused(t *testing.T) {
	one, ten, hundred := 1.0, 10.0, 100.0
	cases := []struct {
		file   string
		check  Check
		pandas string // prints the rows pandas finds failing the check, column c
	}{
		{"review33_uint32_logical_only.parquet", Check{Kind: KindRange, Column: "a", Max: &ten}, `print(int((c.astype(float) > 10).sum()))`},
		{"review33_decimal_logical_only.parquet", Check{Kind: KindRange, Column: "a", Min: &hundred}, `print(int((c.astype(float) < 100).sum()))`},
		{"review33_date_logical_only.parquet", Check{Kind: KindRegex, Column: "a", Pattern: `^[0-9]+$`}, `print(int((~c.astype(str).str.contains("^[0-9]+$")).sum()))`},
		{"review33_decimal_and_float16_logical.parquet", Check{Kind: KindRange, Column: "a", Max: &one}, `print(int((c.astype(float) > 1).sum()))`},
	}
	for _, c := range cases {
		t.Run(strings.TrimSuffix(c.file, ".parquet"), func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("testdata", c.file))
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
			script := "import sys, pandas as pd\nc = pd.read_parquet(sys.argv[1])[sys.argv[2]]\n" + c.pandas
			rep, res, _ := auditLikePandas(t, src, script, []string{dst, "a"}, FormatParquet, c.check, true)
			if rep.Passed || res.Status != schemas.StatusError || !strings.Contains(res.Message, "a.parquet") || !strings.Contains(res.Message, "logical type") {
				t.Fatalf("%s %q (%s); pandas finds rows failing: want it refused naming the file and the types", res.Status, res.Message, res.Observed)
			}
			t.Logf("refused: %s", res.Message)
		})
	}
}
