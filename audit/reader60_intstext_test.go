package audit

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

// TestReader60IntegerTextBesideIntegersIsRefused: a Parquet table of two
// files, part-0.parquet giving column k as a BIGINT 9 and part-1.parquet
// as the text 09. DuckDB reads them together as text, 9 and 09, and a
// unique of k passed; pyarrow's dataset, and so pandas.read_parquet of
// the directory, read the table in its first file's type, the text cast
// to it by Arrow: 9 twice, a duplicate (pandas 3.1.1). A text a file holds
// beside another file's integers, which DuckDB reads as an integer it does
// not render so (09, +9, a space), refuses its table under a check
// comparing the column's text, naming both files and the column. Texts an
// integer renders so (10) pass.
func TestReader60IntegerTextBesideIntegersIsRefused(t *testing.T) {
	for _, c := range []struct {
		name, text string
		refused    bool
	}{
		{"leading_zero", "09", true},
		{"as_rendered", "10", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := newBatchSource(t)
			src.write(t, "b1", "t/part-0.parquet", "SELECT 1::BIGINT AS id, 9::BIGINT AS k")
			src.write(t, "b1", "t/part-1.parquet", "SELECT 2::BIGINT AS id, '"+c.text+"' AS k")
			dir := filepath.Join(src.root, "b1", "t")
			script := "import sys, pandas as pd\nc = pd.read_parquet(sys.argv[1])[sys.argv[2]]\nprint(int(c.duplicated(keep=False).sum()))"
			rep, res, _ := auditLikePandas(t, src, script, []string{dir, "k"}, FormatParquet, Check{Kind: KindUnique, Column: "k"}, c.refused)
			if !c.refused {
				return
			}
			if rep.Passed || res.Status != schemas.StatusError || !strings.Contains(res.Message, "t/part-1.parquet: column \"k\" holds") || !strings.Contains(res.Message, "t/part-0.parquet") {
				t.Fatalf("%s %q (%s); pandas reads 9 twice: want it refused naming both files and the column", res.Status, res.Message, res.Observed)
			}
			t.Logf("refused: %s", res.Message)
		})
	}
}
