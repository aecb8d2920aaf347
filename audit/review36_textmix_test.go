package audit

import (
	"cmp"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

// TestReview36ColumnOfTextAndOtherTypesAcrossFilesIsRefused: a Parquet
// table of two files, pyarrow 26.0.1's: part-0.parquet whose columns s
// and d are text (x, y), part-1.parquet whose s is a TIMESTAMP(MILLIS)
// 2024-01-01 and d a DOUBLE 1.0. DuckDB reads them together (union by
// name) as VARCHAR, the timestamp and the double by its own text
// (2024-01-01 00:00:00, 1.0); pyarrow's dataset, and pandas.read_parquet
// of the directory, in the first file's type, casting the other file's
// with Arrow's text (2024-01-01 00:00:00.000, 1); Spark 4.3.0 fails. An
// accepted_values of s and a regex of d passed where pandas 3.1.1 finds a
// row failing. A check of id, which both files give one type, passes.
// (Left: integers beside text, files of no rows, other kinds of check.)
func TestReview36ColumnOfTextAndOtherTypesAcrossFilesIsRefused(t *testing.T) {
	cases := []struct {
		name    string
		check   Check
		pandas  string // prints the rows pandas finds failing the check, column c
		refused bool
	}{
		{"accepted_values", Check{Kind: KindAcceptedValues, Column: "s", Values: []string{"x", "2024-01-01 00:00:00"}}, `print(int((~c.astype(str).isin(["x", "2024-01-01 00:00:00"])).sum()))`, true},
		{"regex", Check{Kind: KindRegex, Column: "d", Pattern: `^(y|1\.0)$`}, `print(int((~c.astype(str).str.match(r"^(y|1\.0)$")).sum()))`, true},
		{"not_null_of_one_type", Check{Kind: KindNotNull, Column: "id"}, `print(int(c.isna().sum()))`, false},
		// A custom query, and a where condition, compare the text too
		// (review 61): DuckDB reads s as 2024-01-01 00:00:00 and d as
		// 1.0, pandas as 2024-01-01 00:00:00.000 and 1; both passed before.
		{"sql", Check{Kind: KindSQL, SQL: `SELECT * FROM t WHERE s NOT IN ('x', '2024-01-01 00:00:00')`}, `c = pd.read_parquet(sys.argv[1])["s"]
print(int((~c.astype(str).isin(["x", "2024-01-01 00:00:00"])).sum()))`, true},
		{"where", Check{Kind: KindAcceptedValues, Column: "id", Values: []string{"1"}, Where: `d <> '1.0'`}, `df = pd.read_parquet(sys.argv[1])
print(int((~df[df["d"].astype(str) != "1.0"]["id"].astype(str).isin(["1"])).sum()))`, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := newBatchSource(t)
			dir := filepath.Join(src.root, "b1", "t")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			for i, f := range []string{"review36_mixed_text.parquet", "review36_mixed_other.parquet"} {
				b, err := os.ReadFile(filepath.Join("testdata", f))
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, "part-"+string(rune('0'+i))+".parquet"), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			script := "import sys, pandas as pd\nc = pd.read_parquet(sys.argv[1])[sys.argv[2]]\n" + c.pandas
			col := cmp.Or(c.check.Column, "s")
			if c.check.Where != "" {
				col = "s" // the first column of two types; the condition reads d, also one
			}
			rep, res, _ := auditLikePandas(t, src, script, []string{dir, cmp.Or(c.check.Column, "s")}, FormatParquet, c.check, c.refused)
			if !c.refused {
				return
			}
			if rep.Passed || res.Status != schemas.StatusError || !strings.Contains(res.Message, "part-0.parquet") || !strings.Contains(res.Message, "part-1.parquet") || !strings.Contains(res.Message, `"`+col+`"`) {
				t.Fatalf("%s %q (%s); pandas finds rows failing: want it refused naming the files and the column", res.Status, res.Message, res.Observed)
			}
			t.Logf("refused: %s", res.Message)
		})
	}
}
