package audit

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

// TestReview61TextBesideAFileOfNoRowsIsJudged: a Parquet table whose
// part-0.parquet holds no rows, its column x of another type than text
// (what pandas writes for an empty DataFrame: pd.DataFrame({"x": []}) is a
// DOUBLE), and whose part-1.parquet holds x as text. DuckDB reads x as
// the text written; pyarrow's dataset, and so pandas.read_parquet of the
// directory (pandas 3.1.1), in the first file's type, casting the texts
// to it: 1.50 and 1.5 are 1.5 twice, 09 and 9 are 9 twice. A unique
// passed (the text rules left files of no rows out); refused, naming both
// files and the column. A check that compares no text still passes.
func TestReview61TextBesideAFileOfNoRowsIsJudged(t *testing.T) {
	for _, c := range []struct {
		name, empty, texts string
		check              Check
		refused            bool
	}{
		{"double_of_no_rows_then_texts", "0.5::DOUBLE", "['1.50', '1.5']", Check{Kind: KindUnique, Column: "x"}, true},
		{"bigint_of_no_rows_then_texts", "5::BIGINT", "['09', '9']", Check{Kind: KindUnique, Column: "x"}, true},
		{"double_of_no_rows_not_compared", "0.5::DOUBLE", "['1.50', '1.5']", Check{Kind: KindNotNull, Column: "x"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := newBatchSource(t)
			src.write(t, "b1", "t/part-0.parquet", "SELECT "+c.empty+" AS x WHERE false")
			src.write(t, "b1", "t/part-1.parquet", "SELECT unnest("+c.texts+") AS x")
			dir := filepath.Join(src.root, "b1", "t")
			script := `import sys, pandas as pd
c = pd.read_parquet(sys.argv[1])[sys.argv[2]]
print(int(c.duplicated(keep=False).sum()) if sys.argv[3] == "unique" else int(c.isna().sum()))`
			rep, res, _ := auditLikePandas(t, src, script, []string{dir, "x", c.check.Kind}, FormatParquet, c.check, c.refused)
			if !c.refused {
				return
			}
			if rep.Passed || res.Status != schemas.StatusError || !strings.Contains(res.Message, "t/part-0.parquet") || !strings.Contains(res.Message, "t/part-1.parquet") || !strings.Contains(res.Message, `"x"`) {
				t.Fatalf("%s %q (%s); pandas reads a failing value: want it refused naming both files and the column", res.Status, res.Message, res.Observed)
			}
			t.Logf("refused: %s", res.Message)
		})
	}
}
