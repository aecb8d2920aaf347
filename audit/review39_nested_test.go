package audit

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

// TestReview39AcceptedValuesOverNestedColumnsAreRefused: lakewap's
// accepted_values compares DuckDB's text of a value, whose pandas form is
// column.astype(str).isin(values); pandas 3.1.1 renders a list as a numpy
// array ([1 2], where DuckDB's text is [1, 2]), a map as its pairs
// ([('k', 1)], DuckDB {k=1}), a struct's text in quotes ({'b': 'x'},
// DuckDB {'b': x}). An accepted_values of DuckDB's texts passed where
// pandas finds every row failing, as a regex over such a column is
// refused (pandasOtherText). The files were written by DuckDB; a struct
// of integers, which pandas renders alike, is refused with them (one rule
// for the nested types, as the regex's).
func TestReview39AcceptedValuesOverNestedColumnsAreRefused(t *testing.T) {
	cases := []struct {
		name, query string
		values      []string
	}{
		{"list", "SELECT * FROM (VALUES ([1, 2]), ([3])) v(c)", []string{"[1, 2]", "[3]"}},
		{"map", "SELECT * FROM (VALUES (MAP {'k': 1}), (MAP {'j': 2})) v(c)", []string{"{k=1}", "{j=2}"}},
		{"struct", "SELECT * FROM (VALUES ({'b': 'x'}), ({'b': 'y'})) v(c)", []string{"{'b': x}", "{'b': y}"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := newBatchSource(t)
			src.write(t, "b1", "t/a.parquet", c.query)
			script := "import sys, json, pandas as pd\nc = pd.read_parquet(sys.argv[1])['c']\nprint(int((~c.astype(str).isin(json.loads(sys.argv[2]))).sum()))"
			values := `["` + strings.Join(c.values, `", "`) + `"]`
			rep, res, _ := auditLikePandas(t, src, script, []string{filepath.Join(src.root, "b1", "t", "a.parquet"), values}, FormatParquet,
				Check{Kind: KindAcceptedValues, Column: "c", Values: c.values}, true)
			if rep.Passed || res.Status != schemas.StatusError || !strings.Contains(res.Message, `column "c"`) {
				t.Fatalf("%s %q (%s); pandas finds every row failing: want it refused naming the column", res.Status, res.Message, res.Observed)
			}
			t.Logf("refused: %s", res.Message)
		})
	}
}
